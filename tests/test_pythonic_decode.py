"""Decoding Gemma 3 ``tool_code`` and DeepSeek-pythonic prompts back into conversations.

The property tests state, one normalization function per format, exactly what the template
drops or writes alike: ``decode(render(case))`` equals ``<format>_expected(case)``. Where a text
holds the format's own markup (a role marker inside a message, a quote and ``)`` inside an
unescaped string...), the prompt reads some other way too; ``<format>_reads_otherwise(case)``
names those cases, and for them only the round trip to the same text is asserted.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import assert_renders_back, examples, rendered
from hypothesis import given
from hypothesis import strategies as st
from strategies import conversations, rich_conversations

import codec
from codec import jinja
from codec.formats.deepseek_pythonic import DeepseekPythonic
from codec.formats.gemma3_tool_code import TOOLS_PROMPT as GEMMA3_TOOLS_PROMPT
from codec.formats.gemma3_tool_code import Gemma3ToolCode

GEMMA3 = Gemma3ToolCode()
CORRECTED = Gemma3ToolCode(corrected=True)
DEEPSEEK = DeepseekPythonic()
GOLDEN = Path(__file__).resolve().parent / "golden_renders"
CASES = st.one_of(conversations(), conversations(content_parts=True), rich_conversations())


def decoded(fmt: codec.Format, text: str) -> dict[str, Any]:
    """``fmt.decode(text)`` as plain data (arguments as Python values), after checking it renders back."""
    data: dict[str, Any] = assert_renders_back(fmt, text).model_dump(mode="python")
    data.setdefault("tools", None)
    return data


def linked(expected: dict[str, Any]) -> dict[str, Any]:
    """``expected`` with each tool result given the id and name of the call it answers, in call order, as
    decode links them (the prompts of both formats carry neither, so linking never changes a rendering)."""
    calls: list[dict[str, Any]] = []
    for message in expected["messages"]:
        if message["role"] != "tool":
            calls = list(message.get("tool_calls") or []) if message["role"] == "assistant" else []
        elif calls:
            call = calls.pop(0)
            message.setdefault("tool_call_id", call["id"])
            message.setdefault("name", call["function"]["name"])
    return expected


def message_texts(case: dict[str, Any]) -> Iterator[str]:
    """Every text a case's messages hold: contents, text parts, reasoning, top-level string arguments."""
    for message in case["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            yield content
        elif isinstance(content, list):
            yield from (part["text"] for part in content if isinstance(part.get("text"), str))
        for key in jinja.REASONING_KEYS:
            if isinstance(message.get(key), str):
                yield message[key]
        for call in message.get("tool_calls") or ():
            arguments = call["function"]["arguments"]
            if isinstance(arguments, dict):
                yield from (value for value in arguments.values() if isinstance(value, str))


def expected_calls(calls: list[dict[str, Any]], ids: Iterator[int], *, strings: str) -> list[dict[str, Any]]:
    """Calls as they come back: ids ``call_0``, ``call_1``... across the conversation (no prompt carries them).

    ``strings``: what JSON-string ``arguments`` come back as: ``"kept"`` (Gemma 3 writes their
    characters, G7) or ``"empty"`` (DeepSeek renders only ``""``, as ``f()``).
    """
    out = []
    for call in calls:
        arguments = call["function"]["arguments"]
        if isinstance(arguments, str):
            arguments = arguments if strings == "kept" and arguments else {}
        function = {"name": call["function"]["name"], "arguments": arguments}
        out.append({"id": f"call_{next(ids)}", "type": "function", "function": function})
    return out


# --------------------------------------------------------------------------- gemma3_tool_code


def gemma3_text(content: Any) -> str:
    """A user or assistant message's text as written: trimmed; text parts trimmed and joined, images as tokens (G8)."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    kinds = {"image": lambda part: "<start_of_image>", "text": lambda part: part["text"].strip()}
    return "".join(kinds[part["type"]](part) for part in content if part.get("type") in kinds)


def gemma3_message(message: dict[str, Any], ids: Iterator[int]) -> dict[str, Any]:
    """A message as it comes back from its own turn."""
    role = message["role"]
    if role == "assistant" and "tool_calls" in message:  # G6: the content next to calls is dropped
        return {"role": role, "tool_calls": expected_calls(message["tool_calls"], ids, strings="kept")}
    if role in ("user", "assistant"):  # reasoning is never written (G8)
        return {"role": role, "content": gemma3_text(message.get("content"))}
    if role == "tool":  # a tool result: its trimmed text in a fence; no id or name (G8)
        return {"role": role, "content": str(message.get("content", "")).strip()}
    return {"role": role}  # any other role: a turn of its name, without its content (G6)


def gemma3_system_split(prefix: str, first: dict[str, Any]) -> list[dict[str, Any]]:
    """The system prefix (text + blank line, no tools block) and the first turn's message, as they come back.

    Nothing marks where the system text ends (G4). A tool result or calls after it show it; else
    the system text reads as the start of the turn's text where that text can hold it (no
    surrounding whitespace), and otherwise ends at the first blank line after which it can.
    """
    if first["role"] == "tool" or "tool_calls" in first:
        return [{"role": "system", "content": prefix[:-2]}, first]
    has_text = first["role"] in ("user", "assistant")
    body = prefix + first.get("content", "")
    if has_text and body == body.strip():
        return [{**first, "content": body}]
    blank = body.find("\n\n")
    while blank >= 0:
        rest = body[blank + 2 :]
        if (rest == rest.strip()) if has_text else not rest:
            return [{"role": "system", "content": body[:blank]}, {**first, "content": rest} if has_text else first]
        blank = body.find("\n\n", blank + 1)
    raise AssertionError("a rendered first turn always splits")


def gemma3_expected(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives for Gemma 3 (both variants), rule by rule."""
    messages = case["messages"]
    bos = case["variables"].get("bos_token")
    variables = {"bos_token": bos} if bos else {}  # the only variable the template writes
    system = messages[0] if messages[0]["role"] == "system" else None  # G4: only messages[0] counts
    turns = messages[1:] if system is not None else messages
    expected: dict[str, Any] = {"tools": None, "add_generation_prompt": case["add_generation_prompt"]}
    if not turns:  # a lone system message writes nothing at all (G4)
        return {**expected, "messages": [{"role": "system", "content": ""}], "variables": variables}
    ids = itertools.count()
    out = [gemma3_message(message, ids) for message in turns]
    if system is not None:
        content = system["content"]
        text = content if isinstance(content, str) else content[0]["text"]  # G4: a list's first part
        if case["tools"] is not None:  # the tools block marks the system text's end
            expected["tools"] = case["tools"]
            out.insert(0, {"role": "system", "content": text})
        else:
            out[:1] = gemma3_system_split(text + "\n\n", out[0])
    return {**expected, "messages": out, "variables": variables}


GEMMA3_MARKUP = ("<end_of_turn>\n", "```tool_response\n", "```tool_code\n", GEMMA3_TOOLS_PROMPT)


def gemma3_reads_otherwise(case: dict[str, Any]) -> bool:
    """A text holds turn or fence markup, so the prompt has other readings (one is chosen, documented)."""
    return any(markup in text for text in message_texts(case) for markup in GEMMA3_MARKUP)


@pytest.mark.parametrize("fmt", [GEMMA3, CORRECTED], ids=["seed", "corrected"])
@examples(400)
@given(case=CASES)
def test_gemma3_decode_gives_back_the_conversation_up_to_what_the_template_loses(
    fmt: Gemma3ToolCode, case: dict[str, Any]
) -> None:
    text = rendered(fmt, case)
    if text is None:
        return
    conversation = decoded(fmt, text)
    if not gemma3_reads_otherwise(case):
        assert conversation == linked(gemma3_expected(case))


# --------------------------------------------------------------------------- deepseek_pythonic

TOOL_RESULT_PREFIXES = ("tool_response", "<tool_response>")


def deepseek_text(content: Any) -> str:
    """A message's text as written: a string as is (never trimmed), else its text parts joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(part["text"] for part in content if part.get("type") == "text")


def last_query(messages: list[dict[str, Any]]) -> int:
    """The index of the last user message that is not a tool result by its text (D8), else the last index."""
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index].get("content")
        is_result = isinstance(content, str) and content.startswith(TOOL_RESULT_PREFIXES)
        if messages[index]["role"] == "user" and not is_result:
            return index
    return len(messages) - 1


def deepseek_assistant(message: dict[str, Any], shows_think: bool, ids: Iterator[int]) -> tuple[dict[str, Any], bool]:
    """An assistant message as it comes back, and whether its turn is plain (no think block written)."""
    content, reasoning = message.get("content"), message.get("reasoning_content")
    if reasoning is None:  # D7: the template cuts the content at its last </think>, then takes the
        reasoning = ""  # reasoning from what is left
        if isinstance(content, str) and "</think>" in content:
            content = content.split("</think>")[-1].lstrip("\n")
            reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
    out: dict[str, Any] = {"role": "assistant"}
    text = deepseek_text(content)
    plain = not (shows_think and reasoning)
    if not plain:  # D8: written only after the last query; its surrounding line breaks are lost
        out["reasoning_content"] = reasoning.strip("\n")
    elif "</think>" in text:  # the reasoning comes back set, so that the template keeps this content whole
        out["reasoning_content"] = ""
    calls = message.get("tool_calls")
    if calls:  # D3: an empty list writes nothing
        out["tool_calls"] = expected_calls(calls, ids, strings="empty")
    out["content"] = text or (None if calls else "")
    return {key: value for key, value in out.items() if value is not None}, plain


def deepseek_expected(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives for DeepSeek-pythonic, rule by rule."""
    messages = jinja.prepare_messages(case["messages"])  # reasoning under any key is reasoning_content
    thinking = case["variables"].get("enable_thinking")
    systems = [message["content"] for message in messages if message["role"] == "system"]
    out: list[dict[str, Any]] = []
    if systems and systems[-1]:  # D6: only the last system message, first, its content through str()
        out.append({"role": "system", "content": str(systems[-1])})
    query, ids, plain_turns, in_text_run = last_query(messages), itertools.count(), 0, False
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "user":
            out.append({"role": "user", "content": deepseek_text(message.get("content"))})
        elif role == "assistant":
            assistant, plain = deepseek_assistant(message, index > query, ids)
            out.append(assistant)
            plain_turns += plain
        elif role == "tool":
            content = message["content"]
            opens_run = index == 0 or messages[index - 1]["role"] != "tool"
            if opens_run:  # a run right after a run (a dropped message between) reads as a user's text (D5)
                in_text_run = bool(out) and out[-1]["role"] == "tool"
            if in_text_run:
                line = '{ "output": ' + json.dumps(content, ensure_ascii=False) + " }\n"
                if opens_run:
                    out.append({"role": "user", "content": "tool_response\n"})
                out[-1]["content"] += line
            else:  # tool results carry no id or name
                out.append({"role": "tool", "content": content})
        # D6: developer messages (any other role) are dropped
    add_generation_prompt = case["add_generation_prompt"]
    last = out[-1] if out else {}
    if add_generation_prompt:  # D8: the generation prompt shows enable_thinking
        variables = {} if thinking is None else {"enable_thinking": thinking}
    elif last.get("role") == "assistant" and last.get("content") == "" and len(last) == 2:
        # An empty last answer writes `<|Assistant|>` (`</think>` with thinking off): the generation prompt.
        out.pop()
        add_generation_prompt = True
        variables = {"enable_thinking": False} if thinking is False else {}
    else:  # only a plain assistant turn shows it, and only when it is false
        variables = {"enable_thinking": False} if thinking is False and plain_turns else {}
    images = sum(
        part.get("type") == "image"
        for message in messages
        if message["role"] == "user" and isinstance(message.get("content"), list)
        for part in message["content"]
    )
    users = [message for message in out if message["role"] == "user"]
    if images:  # all images are written before the BOS: they come back in the first user message
        text = users[0]["content"]
        users[0]["content"] = [{"type": "image"}] * images + ([{"type": "text", "text": text}] if text else [])
    tools = case["tools"] or None  # D6: an empty list writes nothing
    return {
        "messages": out or [{"role": "system", "content": ""}],
        "tools": tools,
        "add_generation_prompt": add_generation_prompt,
        "variables": variables,
    }


def deepseek_reads_otherwise(case: dict[str, Any]) -> bool:
    """A text holds role or think markup, or a string argument the quote and ``,``/``)`` that may end it."""
    markup = ("<|User|>", "<|Assistant|>", "<think>\n", "\n</think>\n\n", '", ', '")', "]<|end_of_sentence|>")
    if any(piece in text for text in message_texts(case) for piece in markup):
        return True
    # A text that is only markup the generation prompt also writes, or a reasoning of nothing but line breaks.
    return any(text in ("<think>", "</think>") or (text and not text.strip("\n")) for text in message_texts(case))


@examples(400)
@given(case=CASES)
def test_deepseek_decode_gives_back_the_conversation_up_to_what_the_template_loses(case: dict[str, Any]) -> None:
    text = rendered(DEEPSEEK, case)
    if text is None:
        return
    conversation = decoded(DEEPSEEK, text)
    if not deepseek_reads_otherwise(case):
        assert conversation == linked(deepseek_expected(case))


# --------------------------------------------------------------------------- golden renders


def golden_prompts() -> list[Any]:
    cases = [(GEMMA3, path) for path in sorted((GOLDEN / "gemma3_tool_code").glob("*.txt"))]
    cases += [(DEEPSEEK, path) for path in sorted((GOLDEN / "deepseek_pythonic").glob("*.txt"))]
    return cases


@pytest.mark.parametrize(("fmt", "path"), golden_prompts(), ids=lambda v: getattr(v, "stem", getattr(v, "name", "")))
def test_golden_renders_decode_and_render_back(fmt: codec.Format, path: Path) -> None:
    assert_renders_back(fmt, path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- readings of ambiguous text


def _call(name: str, arguments: Any) -> dict[str, Any]:
    return {"id": "x", "type": "function", "function": {"name": name, "arguments": arguments}}


def _arguments_back(fmt: codec.Format, arguments: Any) -> Any:
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "tool_calls": [_call("f", arguments)]}]
    conversation = assert_renders_back(fmt, fmt.render(messages, None))
    calls = conversation.messages[1].tool_calls
    assert calls is not None
    return calls[0].function.arguments


@pytest.mark.parametrize("fmt", [GEMMA3, CORRECTED], ids=["seed", "corrected"])
@pytest.mark.parametrize(
    "arguments",
    [
        {"n": 1, "e5": 2, "E": 0.5},  # unseparated (seed): `n=1e5=2E=0.5`, and tojson never writes 1e5
        {"s": 'say "hi"\n', "flag": False, "none": None, "list": [1, {"k": "v"}], "big": 12345678901234567890},
        '{"city": "Paris"}',  # a JSON string: its characters are written one by one (G7)
        ["a", 1, None],  # a list: its items, positionally
    ],
)
def test_gemma3_arguments_come_back(fmt: Gemma3ToolCode, arguments: Any) -> None:
    assert _arguments_back(fmt, arguments) == arguments


@pytest.mark.parametrize(
    "value",
    ['say "hi", x=1', 'a")', '"', 'x")y', 'p", q'],  # quotes that `, ` or `)` follow inside the string (D1)
)
def test_deepseek_unescaped_strings_come_back_where_the_rest_reads(value: str) -> None:
    assert _arguments_back(DEEPSEEK, {"a": value, "n": 2}) == {"a": value, "n": 2}


def test_deepseek_a_string_that_reads_two_ways_takes_the_nearest_quote() -> None:
    """`a="x", b="y"` is one argument holding `x", b="y` or two: the nearest closing quote wins."""
    assert _arguments_back(DEEPSEEK, {"a": 'x", b="y'}) == {"a": "x", "b": "y"}


def test_deepseek_thinking_switch_and_images_come_back() -> None:
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is it?"}]},
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": "Sure?"},
    ]
    text = DEEPSEEK.render(messages, add_generation_prompt=True, enable_thinking=False)
    conversation = assert_renders_back(DEEPSEEK, text)
    assert conversation.variables == {"enable_thinking": False}
    assert conversation.add_generation_prompt
    assert conversation.messages[0].content == messages[0]["content"]
    assert [m.content for m in conversation.messages[1:]] == ["A cat.", "Sure?"]


def test_gemma3_tools_without_a_system_message_are_lost() -> None:
    """G4: the template writes the tools only into the system prefix."""
    tools = [{"type": "function", "function": {"name": "f"}}]
    text = GEMMA3.render([{"role": "user", "content": "Hi"}], tools)
    assert assert_renders_back(GEMMA3, text).tools is None


# --------------------------------------------------------------------------- text that is no rendering


def _error_at(fmt: codec.Format, text: str) -> int:
    with pytest.raises(codec.ParseError) as caught:
        fmt.decode(text)
    assert 0 <= caught.value.pos <= len(text)
    return caught.value.pos


TURN = "<start_of_turn>user\nHi<end_of_turn>\n"
TOOLS_TURN = "<start_of_turn>user\nS" + GEMMA3_TOOLS_PROMPT


@pytest.mark.parametrize(
    ("text", "pos"),
    [
        ("<start_of_turn>user\nHel", 23),  # truncated: the turn never closes
        ("<start_of_turn>user", 19),  # the role is never followed by a line break
        ("<start_of_turn>assistant\nHi<end_of_turn>\n", 15),  # assistant turns are written `model`
        (TURN + "junk", len(TURN)),  # after a turn, another turn or the end
        ("<start_of_turn>user\n Hi<end_of_turn>\n", 20),  # turn text is trimmed
        ("<start_of_turn>system\nHi<end_of_turn>\n", 22),  # other roles' turns hold no text
        (TURN + TURN, len(TURN)),  # a user turn must be followed by the model's (G5)
        (TOOLS_TURN + "[{]\n\nHi<end_of_turn>\n", len(TOOLS_TURN)),  # the tools block is not JSON
        (TOOLS_TURN + '[{"a": 1}]\n\nHi<end_of_turn>\n', len(TOOLS_TURN)),  # nor a list of OpenAI tools
    ],
)
def test_gemma3_parse_error_positions(text: str, pos: int) -> None:
    assert _error_at(GEMMA3, text) == pos


def test_gemma3_tools_json_not_written_as_the_template_does_is_refused() -> None:
    text = TOOLS_TURN + '[{"type": "function", "function": {"name": "f"}}]\n\nHi<end_of_turn>\n'
    assert _error_at(GEMMA3, text) == len(TOOLS_TURN)  # not indented by 4


BOS = "<|begin_of_sentence|>"
DEEPSEEK_TOOLS_PROMPT = DEEPSEEK.render([{"role": "user", "content": ""}], [{"type": "function", "function": {}}])


@pytest.mark.parametrize(
    ("text", "pos"),
    [
        ("<|User|>Hi", 0),  # the prompt starts with the BOS (after its images)
        ("<image><image>x" + BOS, 14),
        (BOS + "\n\n# Tools\n\nYou have", 0),  # a cut tools preamble is system text: renders back
    ],
)
def test_deepseek_parse_error_positions(text: str, pos: int) -> None:
    if pos == 0 and text.startswith(BOS):
        assert_renders_back(DEEPSEEK, text)
    else:
        assert _error_at(DEEPSEEK, text) == pos


@pytest.mark.parametrize("tool", ['{"type": "function", "function": {', '{"a": }\n\n'])
def test_deepseek_broken_tools_block_is_refused_at_the_tool(tool: str) -> None:
    preamble = BOS + DEEPSEEK_TOOLS_PROMPT[len(BOS) : DEEPSEEK_TOOLS_PROMPT.index("{")]
    assert _error_at(DEEPSEEK, preamble + tool + "<|User|>Hi") == len(preamble)
