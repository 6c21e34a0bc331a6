"""The ``mistral_nemo`` test profile: a JSON list of calls after ``[TOOL_CALLS]``, ``</s>``; Nemo's prompts."""

from __future__ import annotations

import json
from typing import Any

from harness import linked_as_json
from hypothesis import strategies as st

from codec import jinja
from formats import DEEP, MANY, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats.hermes import arguments, decoded, message_texts, text_values, tool_names, tools_for

STOP = "</s>"
OPEN = "[TOOL_CALLS]"
_ARG = OPEN + '[{"name": "f", "arguments": {"a": '  # a call cut where the value of "a" starts


def _call(value: str) -> str:
    return _ARG + value + '}, "id": "abc123xyz"}]'


def _adversarial() -> dict[str, Adversarial]:
    call = _call
    element = '{"name": "f", "arguments": {"a": 1}, "id": "abc123xyz"}'
    texts = {
        "deep_list_in_arguments": call("[" * DEEP + "]" * DEEP),
        "deep_object_in_arguments": call('{"k": ' * DEEP + "1" + "}" * DEEP),
        "deep_unclosed_in_arguments": _ARG + "[" * DEEP,
        "unterminated_string": _ARG + '"' + "x" * N,
        "unterminated_string_with_markers": _ARG + '"' + "[TOOL_CALLS]</s>" * (N // 16),
        "partial_call_markers": "[TOOL_CALL" * (N // 10),
        "brackets_in_text": "[" * (N // 2),
        "braces_in_block": OPEN + "[" + "{" * (N // 5),
        "quotes_in_block": OPEN + "[" + '"' * N,
        "backslashes_odd": call('"' + "\\" * (N // 2 + 1) + '"'),
        "backslashes_even": call('"' + "\\" * (N // 2) + '"') + STOP,
        "string_full_of_markers": call('"' + "[TOOL_CALLS][{" * (N // 14) + '"'),
        "many_calls_in_one_list": OPEN + "[" + ", ".join([element] * (MANY // 56)) + "]" + STOP,
        "many_lists": (OPEN + "[" + element + "]") * (MANY // 70) + STOP,
        "many_arguments": call("0, " + ", ".join(f'"k{i}": {i}' for i in range(N // 30))),
        "stop_tokens": STOP * (N // 4),
        "empty_lists": (OPEN + "[") * (N // 13),
        "list_with_junk_elements": OPEN + "[" + (element + ', "x", ') * (MANY // 60) + "1]",
        "head_that_never_ends": OPEN + '[{"name": "' + "x" * N,
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- round trip


def content_ok(text: str) -> bool:
    """Content the format can carry: no call opener, no stop token."""
    return OPEN not in text and STOP not in text


contents = st.one_of(st.none(), st.just(""), text_values().filter(content_ok))
#: Ids as the template requires them: nine letters and digits.
ids = st.from_regex(r"[A-Za-z0-9]{9}", fullmatch=True)


@st.composite
def assistant_messages(draw: st.DrawFn) -> dict[str, Any]:
    """An OpenAI assistant message with optional content and 0-4 calls (arguments as dicts or JSON strings)."""
    calls = []
    for _ in range(draw(st.integers(0, 4))):
        args = draw(arguments())
        encoded: Any = args
        if draw(st.integers(0, 3)) == 0:  # OpenAI sends arguments as a JSON string
            encoded = json.dumps(args, ensure_ascii=draw(st.booleans()))
        function = {"name": draw(tool_names), "arguments": encoded}
        calls.append({"id": draw(ids), "type": "function", "function": function})
    message: dict[str, Any] = {"role": "assistant", "content": draw(contents)}
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """What the reply parses to: the content, the calls with their arguments decoded (their ids are
    the ones the reply writes: ``Family.reply_ids``)."""
    calls = message.get("tool_calls") or []
    content = message["content"] or ""
    if calls and content.endswith("\n"):  # a line break right before the opener is layout
        content = content[:-1]
    return {
        "content": content,
        "reasoning": "",
        "tool_calls": [
            {"name": c["function"]["name"], "arguments": decoded(c["function"]["arguments"])} for c in calls
        ],
    }


def _messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return assistant_messages().map(lambda message: (message, tools_for(message) if with_tools else None))


# --------------------------------------------------------------------------- decode

#: Text that makes a prompt read several ways that render the same: then only rendering back is checked.
AMBIGUOUS = ("[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[TOOL_CALLS]", "[TOOL_RESULTS]", '"}[/TOOL_RESULTS]')


def _tool_declared(tool: dict[str, Any]) -> dict[str, Any]:
    function = {key: value for key, value in tool["function"].items() if key != "return"}
    return {"type": "function", "function": function}


def _writes_as_json(tool: dict[str, Any]) -> bool:
    """Whether the tool's raw string values read back one way (none holds a quote)."""
    return all(not isinstance(value, str) or '"' not in value for value in tool["function"].values())


def nemo_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back, or None where the prompt reads several ways."""
    if any(marker in piece for piece in message_texts(case) for marker in AMBIGUOUS):
        return None
    messages = jinja.prepare_messages(case["messages"])
    tools = jinja.prepare_tools(case["tools"])
    system = None
    loop = messages
    if messages[0].get("role") == "system":
        system, loop = messages[0].get("content"), messages[1:]
    out: list[dict[str, Any]] = []
    eos = case["variables"].get("eos_token", STOP)  # the tokenizer's where none is given
    content_turns = 0
    call_turns = 0
    # The tools before an earlier user message equal to the last one (N3) show where the system
    # text written into the last one ends: the decoder gives it back as the system message.
    shown = tools is not None and bool(loop) and loop[-1].get("role") == "user" and loop[-1] in loop[:-1]
    if system is not None and shown:
        out.append({"role": "system", "content": system})
    for i, message in enumerate(loop):
        if message.get("role") == "user":
            content = message["content"]
            if i == len(loop) - 1 and system is not None and not shown:
                content = f"{system}\n\n{content}"
            out.append({"role": "user", "content": content})
        elif "tool_calls" in message:
            calls = [
                {"id": call["id"], "type": "function", "function": call["function"]} for call in message["tool_calls"]
            ]
            call_turns += bool(calls)
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif message.get("role") == "assistant":
            if out and out[-1].get("tool_calls"):
                return None  # the answer right after the calls: where eos_token ends reads several ways
            if out and out[-1].get("tool_calls") == [] and str(message["content"]).startswith("{"):
                return None  # an empty list of calls, then text that could be a call in it
            content_turns += 1
            out.append({"role": "assistant", "content": message["content"]})
        else:
            content = message.get("content")
            if isinstance(content, dict) and "content" in content:
                content = content["content"]
            out.append({"role": "tool", "content": str(content), "tool_call_id": message["tool_call_id"]})
    if content_turns and not call_turns and eos != STOP:
        return None  # the turns' end reads as their content's
    users = any(m["role"] == "user" for m in out)
    if users and tools is not None and not all(map(_writes_as_json, tools)):
        return None
    variables: dict[str, Any] = {}
    if case["variables"].get("bos_token"):
        variables["bos_token"] = case["variables"]["bos_token"]
    if content_turns or call_turns:
        variables["eos_token"] = eos
    return linked_as_json(
        {
            "messages": out or [{"role": "system", "content": ""}],
            "tools": [_tool_declared(tool) for tool in tools] if users and tools is not None else None,
            "add_generation_prompt": False,
            "variables": variables,
        }
    )


PROFILE = Profile(
    markers=(OPEN, STOP, "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[TOOL_RESULTS]"),
    snippets=(
        '[{"name": "f", "arguments": {"a": 1}, "id": "abc123xyz"}]',
        '{"name": "f", "arguments": {"a": 1}}',
        '{"name": "f"',
        '{"name": "f", "arguments": {"a": ',
        '"name"',
        '"arguments"',
        '"id"',
        '"f"',
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
    ),
    call_closer="}]",
    plain_text=PLAIN_TEXT,
    broken_block="[TOOL_CALLS][oops]",
    adversarial=_adversarial,
    grammar_forbid=(),
    round_trip=RoundTrip(messages=_messages, expected=expected, keeps_key_order=True),
    decode=Decode(normal_form=nemo_normal_form),
)
