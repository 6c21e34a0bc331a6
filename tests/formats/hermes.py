"""The ``hermes`` test profile: JSON calls between ``<tool_call>`` tags, ChatML's stop token."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from formats import DEEP, PLAIN_TEXT, Adversarial, Message, N, Profile, RoundTrip, Tools

STOP = "<|im_end|>"
OPEN, CLOSE = "<tool_call>\n", "\n</tool_call>"
_ARG = OPEN + '{"name": "f", "arguments": {"a": '  # a call cut where the value of "a" starts


def _call(value: str) -> str:
    return _ARG + value + "}}" + CLOSE


def _adversarial() -> dict[str, Adversarial]:
    call = _call
    texts = {
        "deep_list_in_arguments": call("[" * DEEP + "]" * DEEP),
        "deep_object_in_arguments": call('{"k": ' * DEEP + "1" + "}" * DEEP),
        "deep_unclosed_in_arguments": _ARG + "[" * DEEP,
        "unterminated_string": _ARG + '"' + "x" * N,
        "unterminated_string_with_markers": _ARG + '"' + "</tool_call><|im_end|>" * (N // 22),
        "partial_call_markers": "<tool_call" * (N // 10),
        "partial_markers_after_newlines": "\n<tool_" * (N // 7),
        "braces_in_text": "{" * (N // 5),
        "braces_in_block": OPEN + "{" * (N // 5),
        "quotes_in_block": OPEN + '"' * N,
        "backslashes_odd": call('"' + "\\" * (N // 2 + 1) + '"'),
        "backslashes_even": call('"' + "\\" * (N // 2) + '"') + STOP,
        "string_full_of_markers": call('"' + "</tool_call><tool_call>" * (N // 23) + '"'),
        "unclosed_reasoning": "<think>" + "pensando " * (N // 9),
        "many_calls": (call("1") + "\n") * (N // 60) + STOP,
        "many_arguments": call("0, " + ", ".join(f'"k{i}": {i}' for i in range(N // 30))),
        "stop_tokens": STOP * (N // 10),
        "python_literal_calls": (OPEN + '{"name": "f", "arguments": {"a": True}}' + CLOSE + "\n") * (N // 100),
        "empty_blocks": OPEN * (N // 12),
    }
    return {name: Adversarial(text) for name, text in texts.items()}


# --------------------------------------------------------------------------- round trip

#: Text that looks like markup: the format's markers, their fragments, escapes and JSON syntax.
MARKER_TEXT = (
    "<tool_call>",
    "</tool_call>",
    "<|im_end|>",
    "<|im_start|>",
    "<think>",
    "</think>",
    '{"name": "f", "arguments": {}}',
    "\\",
    '"',
    "'",
    "\\n",
    "\\u00e9",
    "\\ud83d",
    "\n",
    "\r\n",
    "\t",
    "\x00",
    "\x1f",
    "\u2028",
    "é",
    "日本語",
    "🙂",
    "{",
    "}",
    "[",
    "]",
    ": ",
    ", ",
)
CHARS = st.characters(codec="utf-8")  # every code point but the surrogates


def text_values(max_pieces: int = 6) -> st.SearchStrategy[str]:
    """Strings with unicode, quotes, backslashes, newlines and marker text."""
    piece = st.one_of(st.sampled_from(MARKER_TEXT), st.text(CHARS, max_size=8))
    return st.lists(piece, max_size=max_pieces).map("".join)


def json_values(strings: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Any]:
    """JSON values as OpenAI arguments hold them: big ints, finite floats, nested lists and dicts."""
    strings = strings if strings is not None else text_values()
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False),
        strings,
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(strings, inner, max_size=4)),
        max_leaves=12,
    )


def arguments(strings: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    strings = strings if strings is not None else text_values()
    return st.dictionaries(strings, json_values(strings), max_size=5)


tool_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,20}", fullmatch=True)


def content_ok(text: str) -> bool:
    """Content the format can carry: no markers, no leading reasoning block (the format cannot escape them)."""
    return "<tool_call>" not in text and STOP not in text and not text.lstrip(" \t\r\n").startswith("<think>")


contents = st.one_of(st.none(), st.just(""), text_values().filter(content_ok))


@st.composite
def assistant_messages(draw: st.DrawFn) -> dict[str, Any]:
    """An OpenAI assistant message with optional content and 0-4 calls (arguments as dicts or JSON strings)."""
    calls = []
    for _ in range(draw(st.integers(0, 4))):
        args = draw(arguments())
        encoded: Any = args
        if draw(st.integers(0, 3)) == 0:  # OpenAI sends arguments as a JSON string
            encoded = json.dumps(args, ensure_ascii=draw(st.booleans()))
        calls.append(
            {"id": f"x{len(calls)}", "type": "function", "function": {"name": draw(tool_names), "arguments": encoded}}
        )
    message: dict[str, Any] = {"role": "assistant", "content": draw(contents)}
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message


def _schema(value: Any) -> dict[str, Any]:
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        return {"type": "array"}
    return {"type": "object"}


def decoded(arguments: Any) -> dict[str, Any]:
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def tools_for(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Tools that declare every called function with a schema its arguments satisfy."""
    calls = message.get("tool_calls") or []
    seen: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        seen.setdefault(call["function"]["name"], []).append(decoded(call["function"]["arguments"]))
    tools = []
    for name, all_args in seen.items():
        params: dict[str, Any] = {"type": "object"}
        if len(all_args) == 1:
            params["properties"] = {k: _schema(v) for k, v in all_args[0].items()}
            params["required"] = list(all_args[0])
        tools.append({"type": "function", "function": {"name": name, "parameters": params}})
    return tools


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """What the reply parses to: the content, no reasoning (the reply does not write it), the calls with
    their arguments decoded."""
    calls = message.get("tool_calls") or []
    return {
        "content": message["content"] or "",
        "reasoning": "",
        "tool_calls": [
            {"name": c["function"]["name"], "arguments": decoded(c["function"]["arguments"])} for c in calls
        ],
    }


def _messages(with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return assistant_messages().map(lambda message: (message, tools_for(message) if with_tools else None))


PROFILE = Profile(
    markers=("<tool_call>", "</tool_call>", STOP, "<|im_start|>", "<think>", "</think>"),
    snippets=(
        '{"name": "f", "arguments": {"a": 1}}',
        '{"name": "f", "arguments": {"a": ',
        '"name"',
        '"arguments"',
        '"parameters"',
        '"f"',
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
    ),
    call_closer="</tool_call>",
    plain_text=PLAIN_TEXT,
    broken_block="<tool_call>\noops\n</tool_call>",
    adversarial=_adversarial,
    grammar_forbid=(),
    round_trip=RoundTrip(messages=_messages, expected=expected, keeps_key_order=True),
)
