"""The ``functiongemma`` test profile: gemma4's replies with FunctionGemma's markers, ``<escape>`` as the
quote token and every value ``str()``-ed between two of them; Gemma turns without line breaks between them."""

from __future__ import annotations

import itertools
import re
from typing import Any

import strategies
from harness import linked_as_json
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

from codec import jinja
from codec.schema import tool_parameters, type_text, violations
from codec.wire._gemma4_parse import scalar_schema
from formats import DEEP, MANY, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools

Q, OPEN, CLOSE = "<escape>", "<start_function_call>", "<end_function_call>"
TURN, RESPONSE = "<end_of_turn>", "<start_function_response>"
_ARG = OPEN + "call:f{a:"  # a call cut where the value of "a" starts


def _call(value: str) -> str:
    return _ARG + value + "}" + CLOSE


def _adversarial() -> dict[str, Adversarial]:
    call = _call
    texts = {
        "unterminated_string": _ARG + Q + "x" * N,
        "unterminated_string_with_markers": _ARG + Q + (CLOSE + TURN + OPEN) * (N // 56),
        "partial_quotes_as_values": _ARG + "<escape" * (N // 7),
        "partial_call_markers": "<start_function_cal" * (N // 19),
        "bare_call_prefixes_on_lines": "\ncall:" * (N // 6),
        "stop_tokens": TURN * (N // 13),
        "response_openers": RESPONSE * (N // 25),
        "orphan_call_closers": CLOSE * (N // 19),
        "deep_list": call("[" * DEEP + "]" * DEEP),
        "deep_unclosed": _ARG + "[" * DEEP,
        "many_calls": call(Q + "1" + Q) * (MANY // 50) + RESPONSE,
        "many_arguments": OPEN + "call:f{" + ",".join(f"k{i}:{Q}{i}{Q}" for i in range(MANY // 24)) + "}" + CLOSE,
        "quote_tokens_in_a_string": call(Q + ("x" + Q) * (N // 9) + ")"),
        "quotes_and_braces_in_a_string": call(Q + "\"'}) ," * (N // 6) + Q),
        "unopened_string": _ARG + "word, {x} " * (N // 10) + Q + "}" + CLOSE,
        "inline_calls_on_one_line": "See " + "call:f{a:1} " * (MANY // 12),
    }
    declared = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    found = {name: Adversarial(text) for name, text in texts.items()}
    found["inline_calls_on_one_line_declared"] = Adversarial(texts["inline_calls_on_one_line"], tools=declared)
    return found


# --------------------------------------------------------------------------- what the format can carry

#: A bare key or tool name as the grammar reads it (``NAME``).
_NAME = re.compile(r"\w[\w\-.]*")
_BARE_CALL = re.compile(r"call:[A-Za-z_][\w\-.]*[{(]")
_CALL_END = r"[ \t\r\n]{0,2}(?:<end_function_call>|<start_function_response>|<end_of_turn>|<start_function_call>|call:)"
_ENDS_A_STRING = re.compile(rf"""["'](?:[ \t\r\n]{{0,2}}[}})])?{_CALL_END}|[}})]{_CALL_END}""")
_MARKERS = (OPEN, CLOSE, TURN, RESPONSE, Q)


def written(value: Any) -> str:
    """A value as the template writes it between its ``<escape>`` tokens: ``str()``."""
    return value if isinstance(value, str) else str(value)


def text_ok(text: str) -> bool:
    """A value's text the format carries: no ``<escape>`` (nothing is escaped, gemma4's Q1), and no
    quote or brace followed by what ends a call (gemma4's ``string_ok``)."""
    return Q not in text and _ENDS_A_STRING.search(text) is None


def content_ok(text: str) -> bool:
    """Content the format carries unchanged: trimmed, no marker, no bare call (gemma4's ``content_ok``)."""
    return (
        text == text.strip()
        and not text.startswith("call:")
        and not any(marker in text for marker in _MARKERS)
        and _BARE_CALL.search(text) is None
    )


_contents = st.one_of(st.none(), strategies.texts(6).map(str.strip).filter(content_ok))
_tool_names = st.one_of(strategies.names(), st.sampled_from(("my-tool", "mcp.fs.read_file", "a.b-c")))


def _clean(arguments: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if _NAME.fullmatch(k) and text_ok(written(v))}


@st.composite
def messages(draw: DrawFn, *, with_tools: bool) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """An assistant message with content and 0-3 calls (no reasoning: the format has none); and the
    tools it calls (or None)."""
    tools = draw(strategies.tools()) if with_tools else None
    message: dict[str, Any] = {"role": "assistant", "content": draw(_contents)}
    calls = []
    for _ in range(draw(st.sampled_from((1, 0, 1, 2, 3, 2)))):
        if tools:
            function = draw(st.sampled_from(tools))["function"]
            name, parameters = function["name"], function.get("parameters")
            arguments = _clean(draw(strategies.arguments(parameters)))
            assume(not violations(arguments, parameters or {}))
        else:
            name, arguments = draw(_tool_names), _clean(draw(strategies.arguments()))
        calls.append({"type": "function", "function": {"name": name, "arguments": arguments}})
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message, tools


def read_back(value: Any, parameters: Any, key: str) -> Any:
    """A value as parsing gives it back: its text, typed by its schema where that declares no string."""
    schema = scalar_schema(parameters, key)
    if schema is None:
        return written(value)
    typed, problem = type_text(written(value), schema)
    return written(value) if problem is not None else typed


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """The content and the calls, each value its ``str()`` typed back by the tools (a string without)."""
    by_name = {tool["function"]["name"]: tool for tool in tools or ()}
    out = []
    for call in message.get("tool_calls") or []:
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        tool = by_name.get(name)
        parameters = tool_parameters(tool) if tool is not None else None
        out.append({"name": name, "arguments": {k: read_back(v, parameters, k) for k, v in arguments.items()}})
    return {"content": message["content"] or "", "reasoning": "", "tool_calls": out}


# --------------------------------------------------------------------------- decode

#: Text that makes a prompt read otherwise: turns, calls, the tools block, a tool result's head.
MARKUP = ("<start_of_turn>", TURN, OPEN, CLOSE, Q, "Available functions:", "Function result for ", "call:")


def _texts(case: dict[str, Any]) -> list[str]:
    texts = []
    for message in case["messages"]:
        texts.append(str(message.get("content")))
        texts.append(str(message.get("name")))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            texts.append(str(function.get("name")))
            texts += [str(k) + ":" + str(v) for k, v in (function.get("arguments") or {}).items()]
    for tool in case["tools"] or ():
        texts.append(str(tool))
    return texts


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back (F1-F8); None where a text holds the format's markup."""
    if any(marker in text for text in _texts(case) for marker in MARKUP):
        return None
    given = jinja.prepare_messages(case["messages"])
    shown = bool(case["tools"]) and any(m.get("role") in ("system", "developer") for m in given)
    tools = []
    for tool in (case["tools"] or []) if shown else []:
        if tool.get("type") == "function":
            function = tool["function"]
            description = function.get("description", "No description provided")
            tools.append({"name": function["name"], "description": description, "parameters": function["parameters"]})
    ids = itertools.count()
    out: list[dict[str, Any]] = []
    for message in given:
        role, content = message.get("role"), str(message.get("content", ""))
        if role in ("system", "developer"):
            out.append({"role": "system" if shown else "user", "content": content})
        elif role == "user":
            out.append({"role": "user", "content": content})
        elif role == "assistant" and message.get("tool_calls"):
            calls = [
                {
                    "id": f"call_{next(ids)}",
                    "type": "function",
                    "function": {
                        "name": str(call["function"]["name"]),
                        "arguments": {str(k): str(v) for k, v in call["function"]["arguments"].items()},
                    },
                }
                for call in message["tool_calls"]
            ]
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif role == "assistant":
            out.append({"role": "assistant", "content": content})
        elif role == "tool":
            out.append({"role": "tool", "name": str(message.get("name", "function")), "content": content})
    if not out:
        return None
    return linked_as_json(
        {
            "messages": out,
            "tools": [{"type": "function", "function": f} for f in tools],
            "add_generation_prompt": case["add_generation_prompt"],
            "variables": {},
        }
    )


PROFILE = Profile(
    markers=(OPEN, CLOSE, TURN, RESPONSE, Q),
    snippets=(
        "call:f{",
        "\ncall:f{",
        "call:f(",
        "call:",
        _call(Q + "x" + Q),
        "a:",
        Q + "x" + Q,
        Q + "7" + Q,
        Q + "True" + Q,
        Q + "{'k': 1}" + Q,
        '"x"',
        "{",
        "}",
        ",",
        "None",
        "x" + Q,
        Q + Q,
        " call:f{a:b}",
        "c",
        "cal",
    ),
    call_closer=CLOSE,
    plain_text=PLAIN_TEXT,
    broken_block=OPEN + "call:f oops" + CLOSE,
    adversarial=_adversarial,
    grammar_forbid=(),
    decode=Decode(normal_form=decode_normal_form),
    round_trip=RoundTrip(
        messages=lambda with_tools: messages(with_tools=with_tools), expected=expected, keeps_key_order=False
    ),
)
