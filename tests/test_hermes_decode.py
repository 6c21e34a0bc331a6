"""Decoding ``hermes`` prompts: what comes back, and where text that is no rendering is refused.

``decode(render(case))`` equals :func:`hermes_normal_form` of the case: the case minus what the
reference template drops or writes alike. The format-independent contract (every rendering renders
back) is in ``test_decode.py``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from harness import assert_renders_back, decoded_as_json, examples, linked_as_json, rendered
from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import conversations, rich_conversations

import codec

FMT = codec.get_format("hermes")
GOLDEN = Path(__file__).resolve().parent / "golden_renders" / "hermes"
CASES = st.one_of(conversations(), conversations(content_parts=True), rich_conversations())

#: The roles the template renders; a message of any other role leaves no trace in the prompt.
SHOWN_ROLES = ("system", "user", "assistant", "tool")
#: What decode puts where the prompt shows that messages it does not render were there.
UNSHOWN = {"role": "developer", "content": ""}
#: Sequences the template writes between the parts of a prompt: a text holding one reads as two parts.
SEPARATORS = ("<|im_end|>\n<|im_start|>", "</tool_response>\n<tool_response>", "<tool_call>\n{")


def text_of(content: Any) -> str:
    # The template writes string content as it is and any other content (parts, None) as nothing.
    return content if isinstance(content, str) else ""


def call_block(call: dict[str, Any]) -> str:
    """A call as the template writes it: name and arguments text inserted as they are."""
    function = call["function"]
    arguments = function["arguments"]
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f'<tool_call>\n{{"name": "{function["name"]}", "arguments": {text}}}\n</tool_call>'


def reads_back(call: dict[str, Any]) -> bool:
    """Whether a call's arguments are written as ``tojson`` writes their object (only then is the block a call)."""
    arguments = call["function"]["arguments"]
    return not isinstance(arguments, str) or json.dumps(json.loads(arguments), ensure_ascii=False) == arguments


def assistant_normal_form(message: dict[str, Any], ids: itertools.count[int]) -> dict[str, Any]:
    calls = message.get("tool_calls") or []
    # A call block that would not be written the same from its decoded arguments (arguments given
    # as a JSON string spelled otherwise, e.g. ASCII-escaped) stays text: with it, everything
    # before it is content too (the template writes content first).
    kept = max((i + 1 for i, call in enumerate(calls) if not reads_back(call)), default=0)
    content = text_of(message.get("content"))
    content = "\n".join(([content] if content else []) + [call_block(call) for call in calls[:kept]])
    out: dict[str, Any] = {"role": "assistant", "content": content or None}  # empty content reads as None
    if calls[kept:]:
        # Ids are not in the prompt: call_0, call_1... across the conversation.
        out["tool_calls"] = [
            {"id": f"call_{next(ids)}", "type": "function", "function": call["function"]} for call in calls[kept:]
        ]
    return out


def hermes_normal_form(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives back."""
    tools = case["tools"] or None  # an empty list of tools renders as none
    ids = itertools.count()
    messages: list[dict[str, Any]] = []
    unshown = False  # messages the template does not render since the last one it does
    for message in case["messages"]:
        role = message["role"]
        if role not in SHOWN_ROLES:
            unshown = True
            continue
        if role == "tool" and unshown and messages and messages[-1]["role"] == "tool":
            messages.append(UNSHOWN)  # results either side of them are two turns: one stands for them
        unshown = False
        if role == "assistant":
            messages.append(assistant_normal_form(message, ids))
        else:  # reasoning, tool_call_id and name are not in the prompt
            messages.append({"role": role, "content": text_of(message.get("content"))})
    first_role = case["messages"][0]["role"]
    if tools and messages and messages[0]["role"] == "system" and first_role != "system":
        messages.insert(0, UNSHOWN)  # a system message the tools header does not hold came after some
    return {
        "messages": messages or [UNSHOWN],  # a prompt of unrendered messages only: one stands for them
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {},  # the template reads no variable
    }


def texts(case: dict[str, Any]) -> list[str]:
    return [m["content"] for m in case["messages"] if isinstance(m.get("content"), str)]


# --------------------------------------------------------------------------- what comes back


@examples(300)
@given(case=CASES)
def test_decode_gives_back_the_normal_form(case: dict[str, Any]) -> None:
    text = rendered(FMT, case)
    assume(text is not None and not any(sep in t for t in texts(case) for sep in SEPARATORS))
    assert text is not None
    assert decoded_as_json(FMT.decode(text)) == linked_as_json(hermes_normal_form(case))


@pytest.mark.parametrize(
    "path",
    sorted(GOLDEN.glob("*.txt")),
    ids=lambda p: p.stem,
)
def test_golden_renders_decode_to_their_normal_form(path: Path) -> None:
    case = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    conversation = assert_renders_back(FMT, path.read_text(encoding="utf-8"))
    assert decoded_as_json(conversation) == linked_as_json(hermes_normal_form(case))


def test_block_like_text_in_content_stays_content() -> None:
    call = {"id": "x", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    fake = call_block({"function": {"name": "g", "arguments": "{'a': 1}"}})  # not JSON: not a call
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": fake, "tool_calls": [call]}]
    (_, assistant) = FMT.decode(FMT.render(messages)).messages
    assert assistant.content == fake
    assert assistant.tool_calls is not None
    assert [c.function.name for c in assistant.tool_calls] == ["f"]


DEVELOPER = {"role": "developer", "content": "be brief"}
RESULT = {"role": "tool", "content": "42"}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]


@pytest.mark.parametrize(
    ("messages", "tools"),
    [
        ([DEVELOPER], None),
        ([DEVELOPER], TOOLS),
        ([RESULT, DEVELOPER, RESULT], None),
        ([RESULT, DEVELOPER, DEVELOPER, RESULT, RESULT], None),
        ([DEVELOPER, {"role": "system", "content": "late"}], TOOLS),
        ([DEVELOPER, {"role": "system", "content": "late"}], None),
    ],
    ids=["alone", "alone with tools", "between results", "two between results", "before system", "no tools"],
)
def test_unrendered_messages_come_back_where_the_prompt_shows_them(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> None:
    case = {"messages": messages, "tools": tools, "add_generation_prompt": True, "variables": {}}
    text = FMT.render(messages, tools, add_generation_prompt=True)
    conversation = assert_renders_back(FMT, text)
    assert decoded_as_json(conversation) == linked_as_json(hermes_normal_form(case))


# --------------------------------------------------------------------------- refused text


PROMPT = FMT.render(
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
    [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}],
)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("<|im_start|>bot\nhi<|im_end|>\n", len("<|im_start|>")),  # a role the template never writes
        ("<|im_start|>user\nhi<|im_end|>\n<|im_start|>usr\nyo", len("<|im_start|>user\nhi<|im_end|>\n<|im_start|>us")),
        ("hello", 0),
        ("<|im_start|>user\nhi<|im_end|>", len("<|im_start|>user\nhi<|im_end|>")),  # no newline after it
        (PROMPT.replace('{"name": "f"', '{"name": "f",', 1), PROMPT.index('{"name": "f"') + len('{"name": "f",')),
    ],
    ids=["unknown role", "unknown later role", "no turn", "unclosed turn", "tools JSON"],
)
def test_parse_error_position(text: str, where: int) -> None:
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    assert info.value.pos == where


def test_a_tool_comes_back_exactly_as_declared() -> None:
    """The template writes each tool's JSON as given, so decode gives it back as written, odd keys and order too."""
    odd = '{"function": {"n": "f", "strict": true}, "type": "function"}'
    start = PROMPT.index('{"type": "function"')
    text = PROMPT.replace(PROMPT[start : PROMPT.index("\n", start)], odd)
    conversation = assert_renders_back(FMT, text)
    assert conversation.tools is not None
    assert json.dumps(conversation.tools[0]) == odd


def test_a_tool_that_is_no_json_object_is_refused_at_its_line() -> None:
    line = PROMPT[PROMPT.index('{"type": "function"') : PROMPT.index("\n", PROMPT.index('{"type": "function"'))]
    text = PROMPT.replace(line, "[1, 2]")
    with pytest.raises(codec.ParseError, match="not a JSON object") as info:
        FMT.decode(text)
    assert info.value.pos == text.index("[1, 2]")
