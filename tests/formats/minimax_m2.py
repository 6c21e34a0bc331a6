"""The ``minimax_m2`` test profile: ``<invoke name="NAME">`` calls, inline values (strings raw, the rest
JSON), ``]~b]ROLE`` turns and interleaved thinking."""

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
from codec.formats._render import visible_text
from codec.formats.minimax_m2 import DEFAULT_SYSTEM, split_reasoning
from codec.schema import violations
from formats import DEEP, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats.qwen3_coder import _tool, _tools_typed, declared, expected_arguments, raw_text, read_back

STOP = "[e~["
_CALL = '<minimax:tool_call>\n<invoke name="f">\n'
_ARG = _CALL + '<parameter name="a">'  # a call cut where the value of "a" starts
_END = "</parameter>\n</invoke>\n</minimax:tool_call>"


def _param(key: str, value: str) -> str:
    return f'<parameter name="{key}">{value}</parameter>\n'


def _adversarial() -> dict[str, Adversarial]:
    one = _CALL + _param("a", "1") + "</invoke>\n</minimax:tool_call>"
    texts = {
        "unterminated_value": _ARG + "x" * N,
        "value_of_less_than_signs": _ARG + "<" * N,
        "value_of_brackets": _ARG + "[" * N,
        "value_of_newlines": _ARG + "\n" * N + _END,
        "value_of_partial_closers": _ARG + "</param" * (N // 7),
        "value_of_invoke_closers": _ARG + "</invoke> x" * (N // 11) + _END,
        "value_of_other_markers": _ARG + "<minimax:tool_call><invoke name=" * (N // 32),
        "unclosed_invoke_head": '<minimax:tool_call>\n<invoke name="' + "x" * N,
        "unclosed_parameter_head": _CALL + '<parameter name="' + "x" * N,
        "partial_call_markers": "<minimax:tool_call" * (N // 18),
        "partial_stop_tokens": "[e~" * (N // 3),
        "partial_brackets": "[TOOL_CALL" * (N // 10),
        "unclosed_bracket_call": "[TOOL_CALL] {" + '"a": ' * (N // 5),
        "stop_tokens": STOP * (N // 4),
        "orphan_closers": "</minimax:tool_call>" * (N // 20),
        "empty_blocks": "<minimax:tool_call>\n" * (N // 20),
        "many_calls": (one + "\n") * (N // 90) + STOP,
        "many_invokes": "<minimax:tool_call>\n"
        + '<invoke name="f">\n<parameter name="a">1</parameter>\n</invoke>\n' * (N // 60)
        + "</minimax:tool_call>",
        "many_self_closed_invokes": "<minimax:tool_call>\n"
        + '<invoke name="f"/>\n' * (N // 18)
        + "</minimax:tool_call>",
        "many_broken_calls": ("<minimax:tool_call>\njunk\n</minimax:tool_call>\n") * (N // 40),
        "many_parameters": _CALL + "".join(_param(f"k{i}", str(i)) for i in range(N // 34)) + "</invoke>",
        "many_duplicates": _CALL + _param("a", "x") * (N // 30) + "</invoke>",
        "many_unclosed_parameters": _CALL + '<parameter name="a">1\n' * (N // 24),
        "many_drifted_closers": _CALL + '<parameter name="a">1</DSML|parameter>\n' * (N // 42),
        "many_bracket_calls": '[TOOL_CALL] {"tool": "f", "args": {"a": 1}} [/TOOL_CALL]\n' * (N // 56),
        "long_reasoning": "<think>\n" + "I think <minimax:tool_call </think \n" * (N // 36),
        "unclosed_reasoning_of_newlines": "<think>" + "\n" * N,
        "prose_mentioning_tags": 'Use <invoke name="f"> and </invoke> and [e~ here. ' * (N // 50),
    }
    out = {name: Adversarial(text) for name, text in texts.items()}
    array, obj = _tools_typed("array"), _tools_typed("object")
    out["typed_long_array"] = Adversarial(_ARG + "[" + "1, " * (N // 3) + "1]" + _END, array)
    out["typed_long_string"] = Adversarial(_CALL + '<parameter name="s">' + "é" * N + _END, array)
    out["typed_huge_integer"] = Adversarial(_CALL + '<parameter name="n">' + "9" * 5_000 + _END, array)
    out["typed_deep_array"] = Adversarial(_ARG + "[" * DEEP + "]" * DEEP + _END, array)
    out["typed_deep_unclosed_array"] = Adversarial(_ARG + "[" * DEEP + _END, array)
    out["typed_deep_object"] = Adversarial(_ARG + '{"k": ' * DEEP + "1" + "}" * DEEP + _END, obj)
    out["wrapped_arguments_deep"] = Adversarial(
        _CALL + '<parameter name="arguments">' + '{"k": ' * DEEP + "1" + "}" * DEEP + _END, array
    )
    return out


# --------------------------------------------------------------------------- round trip

#: Text that is markup wherever it is written (nothing is escaped).
_MARKERS = ("<minimax:tool_call>", "</minimax:tool_call>", "<invoke name=", "<parameter name=", "[TOOL_CALL]", STOP)
_CLOSER = re.compile(r"</[^<>\s]{0,16}parameter|</invoke>")


def representable(value: Any, schema: Any, *, typed: bool) -> bool:
    """Whether the format can carry ``value`` so that parsing gives it back (``typed``: with its schema).

    Excluded, because nothing in the format tells them apart from markup or from other values: a
    value whose text holds a marker, a parameter closer however spelled or an ``</invoke>`` (the
    template escapes nothing); with a schema, a string ``null``/``None`` where null is allowed.
    """
    text = raw_text(value)
    if any(marker in text for marker in _MARKERS) or _CLOSER.search(text):
        return False
    types = declared(schema)
    return not (typed and "null" in types and isinstance(value, str) and text.strip() in ("null", "None"))


def _text_ok(text: str) -> bool:
    """Content or reasoning the format can carry: no markers, no think tags."""
    return not any(marker in text for marker in (*_MARKERS, "<think>", "</think>"))


@st.composite
def _arguments(draw: DrawFn, tool: dict[str, Any] | None, typed: bool) -> dict[str, Any]:
    props = ((tool or {}).get("function", {}).get("parameters") or {}).get("properties")
    if props:
        arguments = {k: draw(strategies.values(v)) for k, v in props.items() if draw(st.integers(0, 4))}
    else:
        arguments = draw(strategies.arguments())
    # A lone "arguments" holding an object is read as every argument (the wrapper models write).
    arguments = {k: v for k, v in arguments.items() if k != "arguments"}
    return {
        k: v for k, v in arguments.items() if representable(v, (props or {}).get(k) if typed else None, typed=typed)
    }


@st.composite
def messages(draw: DrawFn, *, with_tools: bool) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """An assistant message with content, maybe reasoning, and 0-3 calls, and the tools it calls (or None)."""
    names = draw(st.lists(strategies.names(), min_size=1, max_size=3, unique=True))
    tools = [draw(_tool(name)) for name in names]
    content = draw(st.one_of(st.none(), strategies.texts().filter(_text_ok)))
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if draw(st.booleans()):
        reasoning = draw(strategies.texts().filter(lambda t: _text_ok(t) and t.strip("\n") == t and t != ""))
        message["reasoning_content"] = reasoning
        # The think block's closer takes the line breaks after it.
        assume(not (content or "").startswith("\n"))
    assume(not (content or "").lstrip(" \t\r\n").startswith(("<think>", "</think>")))
    if content and content.rstrip(" \t\r\n") != content:
        # The line breaks and blanks before the call wrapper (or after the content) read as layout.
        assume(content.rstrip("\n") == content and "\n" not in content[len(content.rstrip(" \t\r\n")) :])
    calls = []
    for _ in range(draw(st.sampled_from((0, 1, 1, 2, 3)))):
        tool = draw(st.sampled_from(tools))
        arguments = draw(_arguments(tool, with_tools))
        calls.append({"type": "function", "function": {"name": tool["function"]["name"], "arguments": arguments}})
        if with_tools:
            assume(not violations(arguments, tool["function"].get("parameters") or {}))
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message, tools if with_tools else None


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """The content and the reasoning as given, the calls' values typed by the tools (raw text without)."""
    calls = message.get("tool_calls") or []
    content = message["content"] or ""
    reasoning = message.get("reasoning_content") or ""
    return {
        "content": content,
        "reasoning": reasoning,
        "tool_calls": [{"name": c["function"]["name"], "arguments": expected_arguments(c, tools)} for c in calls],
    }


# --------------------------------------------------------------------------- decode

#: Text the template writes around the parts of a prompt: a text holding one may read as other parts.
MARKUP = (
    "[e~[",
    "]~b]",
    "<minimax:tool_call>",
    "</minimax:tool_call>",
    "<think>",
    "</think>",
    "<response>",
    "</response>",
    "<invoke name=",
    "</invoke>",
    "<parameter name=",
    "</parameter>",
    "<tool>",
    "</tools>",
    "# Tools",
)


def _results(message: dict[str, Any]) -> list[str]:
    """The texts of a tool message's results, as the template writes them (M6)."""
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    out = []
    for part in content or []:
        if isinstance(part, dict) and "output" in part:
            output = part["output"]
        elif isinstance(part, dict) and part.get("type") == "text" and "text" in part:
            output = part["text"]
        else:
            output = part
        out.append(("" if output is None else str(output)) + "\n")
    return out


def minimax_normal_form(case: dict[str, Any]) -> dict[str, Any]:
    """What ``decode(render(case))`` gives back."""
    tools = [{"type": "function", "function": tool.get("function", tool)} for tool in case["tools"] or ()] or None
    schemas = {tool["function"]["name"]: tool["function"].get("parameters") for tool in tools or ()}
    source = jinja.prepare_messages(case["messages"])  # as render reads them: absent content is no content
    messages: list[dict[str, Any]] = []
    if source and source[0]["role"] == "system":
        first = source.pop(0)
        if first.get("content"):
            text = visible_text(first["content"])
            if text != DEFAULT_SYSTEM:
                messages.append({"role": "system", "content": text or [{"type": "text", "text": ""}]})
    last_user = max((i for i, m in enumerate(source) if m["role"] == "user"), default=-1)
    ids = itertools.count()
    run: list[dict[str, Any]] | None = None  # the tool messages of the run being read
    for i, message in enumerate(source):
        role = message["role"]
        if role == "tool":
            if run is None:
                if messages and messages[-1]["role"] == "tool":  # a run after a run, apart
                    messages.append({"role": "system", "content": ""})
                run = []
            run += [{"role": "tool", "content": text} for text in _results(message)]
            if i == len(source) - 1 or source[i + 1]["role"] != "tool":
                messages += run or [{"role": "tool", "content": []}]
            continue
        if role not in ("user", "assistant"):
            continue  # not written (M1)
        run = None
        if role == "user":
            messages.append({"role": "user", "content": visible_text(message.get("content"))})
            continue
        reasoning, content = split_reasoning(message)
        out: dict[str, Any] = {"role": "assistant", "content": content or None}
        if reasoning and i > last_user:
            out["reasoning_content"] = reasoning
        calls = message.get("tool_calls") or []
        if calls:
            out["tool_calls"] = []
        for call in calls:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            properties = (schemas.get(name) or {}).get("properties", {})
            arguments = {key: read_back(value, properties.get(key)) for key, value in arguments.items()}
            out["tool_calls"].append(
                {"id": f"call_{next(ids)}", "type": "function", "function": {"name": name, "arguments": arguments}}
            )
        messages.append(out)
    if not messages:
        messages = [{"role": "system", "content": DEFAULT_SYSTEM}]
    return {
        "messages": messages,
        "tools": tools,
        "add_generation_prompt": case["add_generation_prompt"],
        "variables": {},
    }


def texts(case: dict[str, Any]) -> list[str]:
    out = [str(m.get("content")) for m in case["messages"]]
    out += [str(m.get("reasoning_content")) for m in case["messages"]]
    for message in case["messages"]:
        for call in message.get("tool_calls") or []:
            out += [raw_text(v) for v in call["function"]["arguments"].values()]
    out += [str(tool) for tool in case["tools"] or ()]
    return out


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(mark in t for t in texts(case) for mark in MARKUP):
        return None
    return linked_as_json(minimax_normal_form(case))


PROFILE = Profile(
    markers=(
        "<minimax:tool_call>",
        "</minimax:tool_call>",
        '<invoke name="f">',
        "</invoke>",
        '<parameter name="a">',
        "</parameter>",
        STOP,
        "<think>",
        "</think>",
        "[TOOL_CALL]",
        "[/TOOL_CALL]",
    ),
    snippets=(
        '<minimax:tool_call>\n<invoke name="f">\n',
        '<parameter name="a">',
        "</parameter>\n",
        "</invoke>\n</minimax:tool_call>",
        '<invoke name="',
        '<parameter name="',
        '<invoke name="f">\n<parameter name="a">1</parameter>\n</invoke>\n',
        '<invoke name="f"/>',
        '{"k": [1, true]}',
        "None",
        "</DSML|parameter>",
        '[TOOL_CALL] {"tool": "f", "args": {"a": 1}} [/TOOL_CALL]',
    ),
    call_closer="</invoke>",
    plain_text=PLAIN_TEXT,
    broken_block="<minimax:tool_call>\n<invoke name=>\n</minimax:tool_call>",
    adversarial=_adversarial,
    grammar_forbid=(),
    decode=Decode(normal_form=decode_normal_form),
    round_trip=RoundTrip(
        messages=lambda with_tools: messages(with_tools=with_tools), expected=expected, keeps_key_order=True
    ),
)
