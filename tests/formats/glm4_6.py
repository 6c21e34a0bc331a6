"""The ``glm4_6`` test profile: ``<tool_call>NAME``, an ``<arg_key>`` and an ``<arg_value>`` per argument."""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any

import strategies
from harness import linked_as_json
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

from codec import wire
from codec.formats.glm4_6 import Glm4_6
from codec.jinja import REASONING_KEYS
from codec.schema import violations
from formats import DEEP, PLAIN_TEXT, Adversarial, Decode, Message, N, Profile, RoundTrip, Tools
from formats.hermes import message_texts
from formats.qwen3_coder import _property_schemas, declared, raw_text, read_back

STOP = "<|user|>"
#: glm4_6's spec with markers of its own: another member of the family.
OWN_MARKERS = dataclasses.replace(
    Glm4_6.wire,
    call=("<invoke_call>", "</invoke_call>"),
    stop="<|done|>",
    reasoning=("<reason>", "</reason>"),
    parameter=("<k>", "</k>", "</v>"),
)
_CALL = "<tool_call>f\n"
_ARG = _CALL + "<arg_key>a</arg_key>\n<arg_value>"  # a call cut where the value of "a" starts
_END = "</arg_value>\n</tool_call>"


def _pair(key: str, value: str) -> str:
    return f"<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>\n"


def _tools_typed(kind: str) -> list[dict[str, Any]]:
    props = {"a": {"type": kind}, "s": {"type": "string"}, "n": {"type": "integer"}}
    return [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": props}}}]


def _adversarial() -> dict[str, Adversarial]:
    one = _CALL + _pair("a", "1") + "</tool_call>"
    texts = {
        "unterminated_value": _ARG + "x" * N,
        "value_of_value_closers": _ARG + "</arg_value>x" * (N // 13) + _END,
        "value_of_partial_closers": _ARG + "</arg_val" * (N // 9),
        "value_of_less_than_signs": _ARG + "<" * N,
        "value_of_newlines": _ARG + "\n" * N + _END,
        "value_of_key_tags": _ARG + "<arg_key>" * (N // 9) + _END,
        "value_of_call_closers": _ARG + "</tool_call>x" * (N // 13) + _END,
        "unclosed_key": _CALL + "<arg_key>" + "x" * N,
        "long_name": "<tool_call>" + "x" * N,
        "partial_call_markers": "<tool_call" * (N // 10),
        "partial_markers_after_newlines": "\n<tool_" * (N // 7),
        "stop_tokens": STOP * (N // 8),
        "orphan_closers": "</tool_call>" * (N // 12),
        "empty_blocks": "<tool_call>\n" * (N // 12),
        "many_calls": (one + "\n") * (N // 60) + STOP,
        "many_broken_calls": (_CALL + "<arg_value>junk</arg_value>\n</tool_call>\n") * (N // 50),
        "many_arguments": _CALL + "".join(_pair(f"k{i}", str(i)) for i in range(N // 40)) + "</tool_call>",
        "many_duplicates": _CALL + _pair("a", "x") * (N // 40) + "</tool_call>",
        "many_stray_closers": _CALL + "</arg_value>\n" * (N // 13) + "</tool_call>",
        "many_keys_without_openers": _CALL + "a</arg_key>\n<arg_value>1</arg_value>\n" * (N // 35) + "</tool_call>",
        "many_values_without_openers": _CALL + "<arg_key>a</arg_key>\n1</arg_value>\n" * (N // 35) + "</tool_call>",
        "many_unclosed_values": _CALL + "<arg_key>a</arg_key>\n<arg_value>1\n" * (N // 35),
        "long_reasoning": "<think>\n" + "I think <tool_call </think \n" * (N // 27),
        "unclosed_reasoning_of_newlines": "<think>" + "\n" * N,
        "prose_mentioning_tags": "Use <arg_key> then <arg_value> and </tool_call>. " * (N // 48),
    }
    out = {name: Adversarial(text) for name, text in texts.items()}
    array, obj = _tools_typed("array"), _tools_typed("object")
    out["glued_keys"] = Adversarial(
        ("<tool_call>fa</arg_key>\n<arg_value>1</arg_value>\n</tool_call>\n") * (N // 60), array
    )
    out["typed_long_array"] = Adversarial(_ARG + "[" + "1, " * (N // 3) + "1]" + _END, array)
    out["typed_long_python_list"] = Adversarial(_ARG + "[" + "'x', " * (N // 5) + "None]" + _END, array)
    out["typed_long_string"] = Adversarial(_CALL + "<arg_key>s</arg_key>\n<arg_value>" + "é" * N + _END, array)
    out["typed_huge_integer"] = Adversarial(_CALL + "<arg_key>n</arg_key>\n<arg_value>" + "9" * 5_000 + _END, array)
    out["typed_deep_array"] = Adversarial(_ARG + "[" * DEEP + "]" * DEEP + _END, array)
    out["typed_deep_object"] = Adversarial(_ARG + '{"k": ' * DEEP + "1" + "}" * DEEP + _END, obj)
    out["typed_escaped_object"] = Adversarial(_ARG + '{\\"k\\": ' * (N // 9) + "1" + "}" * (N // 9) + _END, obj)
    return out


# --------------------------------------------------------------------------- round trip

#: Text a value cannot hold: it ends the value (or the call), and the template escapes nothing.
VALUE_ENDS = ("</arg_value>", "<arg_key>", "</tool_call>", STOP)


def untyped(text: str) -> Any:
    """A value without a declared type, read back: the JSON value other than a string it reads as, else the text."""
    try:
        value = json.loads(text.strip())
    except ValueError:
        return text
    return text if isinstance(value, str) else value


def representable(value: Any, schema: Any, *, typed: bool) -> bool:
    """Whether the format can carry ``value`` so that parsing gives it back (``typed``: with its schema).

    Excluded: a value whose text holds what ends a value (:data:`VALUE_ENDS`); with a schema, a
    string ``null``/``None`` where null is allowed (it reads as null); without one, a string
    that reads as ``NaN`` or ``Infinity`` (JSON that no value writes).
    """
    text = raw_text(value)
    if any(end in text for end in VALUE_ENDS):
        return False
    if typed and declared(schema):
        return not ("null" in declared(schema) and isinstance(value, str) and text.strip() in ("null", "None"))
    return text.strip().lstrip("-") not in ("NaN", "Infinity")


def _schema_of(tools: Tools, name: str, key: str) -> Any:
    for tool in tools or []:
        function = tool["function"]
        if function["name"] == name:
            props = (function.get("parameters") or {}).get("properties")
            return props.get(key) if isinstance(props, dict) else None
    return None


def content_ok(text: str) -> bool:
    """Content the format can carry: no call, reasoning or stop markers (nothing is escaped)."""
    return not any(marker in text for marker in ("<tool_call>", "</tool_call>", "<think>", "</think>", STOP))


@st.composite
def _tool(draw: DrawFn, name: str) -> dict[str, Any]:
    """A tool with 0-4 parameters of any schema (unions cut to one type), rarely none declared."""
    function: dict[str, Any] = {"name": name}
    if draw(st.integers(0, 7)):
        props = draw(st.dictionaries(strategies.names(), _property_schemas, max_size=4))
        function["parameters"] = {"type": "object", "properties": props}
    return {"type": "function", "function": function}


@st.composite
def _arguments(draw: DrawFn, tool: dict[str, Any] | None, typed: bool) -> dict[str, Any]:
    props = ((tool or {}).get("function", {}).get("parameters") or {}).get("properties")
    if props:
        arguments = {k: draw(strategies.values(v)) for k, v in props.items() if draw(st.integers(0, 4))}
    else:
        arguments = draw(strategies.arguments())
    return {
        k: v for k, v in arguments.items() if representable(v, (props or {}).get(k) if typed else None, typed=typed)
    }


@st.composite
def messages(draw: DrawFn, *, with_tools: bool) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """An assistant message with content and 0-3 calls, and the tools it calls (or None)."""
    names = draw(st.lists(strategies.names(), min_size=1, max_size=3, unique=True))
    tools = [draw(_tool(name)) for name in names]
    content = draw(st.one_of(st.none(), strategies.texts().map(str.strip).filter(content_ok)))
    message: dict[str, Any] = {"role": "assistant", "content": content}
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


def expected_arguments(call: dict[str, Any], tools: Tools) -> dict[str, Any]:
    """The arguments a perfect parse gives: typed where the tool declares a type, else read as JSON or text."""
    name, arguments = call["function"]["name"], call["function"]["arguments"]
    return {k: v if declared(_schema_of(tools, name, k)) else untyped(raw_text(v)) for k, v in arguments.items()}


def expected(message: Message, tools: Tools) -> dict[str, Any]:
    """What the reply parses to: the trimmed content, no reasoning, the calls' values typed."""
    calls = message.get("tool_calls") or []
    return {
        "content": message["content"] or "",
        "reasoning": "",
        "tool_calls": [{"name": c["function"]["name"], "arguments": expected_arguments(c, tools)} for c in calls],
    }


# --------------------------------------------------------------------------- decode

#: What a text of a conversation may not hold for its prompt to read one way only: GLM's markup.
MARKUP = ("<|", "<tool_call>", "</tool_call>", "tool_response>", "think>", "<arg_", "</arg_", "/nothink")


def visible(content: Any) -> str:
    """The template's ``visible_text``: a string, or its text parts and strings joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p["text"] if isinstance(p, dict) else p for p in content if isinstance(p, str) or p.get("type") == "text"
        ]
        return "".join(str(p) for p in parts)
    return "" if content is None else str(content)


def _reasoning(message: dict[str, Any]) -> Any:
    return next((message[key] for key in REASONING_KEYS if message.get(key) is not None), None)


def glm4_6_normal_form(case: dict[str, Any]) -> dict[str, Any] | None:
    """What ``decode(render(case))`` gives back, or None where the case is one this does not model."""
    tools = json.loads(json.dumps(case["tools"])) if case["tools"] else None
    schemas = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools or () if "function" in t}
    variables = case["variables"]
    off = "enable_thinking" in variables and not variables["enable_thinking"]
    raw = case["messages"]
    last_user = max((i for i, m in enumerate(raw) if m["role"] == "user"), default=-1)
    ids = itertools.count()
    out: list[dict[str, Any]] = []
    for i, message in enumerate(raw):
        role = message["role"]
        if role in ("system", "user"):
            text = visible(message.get("content"))
            if role == "user" and off and not text.endswith("/nothink"):
                text += "/nothink"
            out.append({"role": role, "content": text})
        elif role == "assistant":
            reasoning = _reasoning(message)
            if reasoning is not None and not isinstance(reasoning, str):
                return None
            entry: dict[str, Any] = {"role": "assistant", "content": visible(message.get("content")).strip() or None}
            calls = []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or call
                arguments = function.get("arguments") or {}
                properties = (schemas.get(function["name"]) or {}).get("properties") or {}
                arguments = {k: read_back(v, properties.get(k)) for k, v in arguments.items()}
                calls.append(
                    {
                        "id": f"call_{next(ids)}",
                        "type": "function",
                        "function": {"name": function["name"], "arguments": arguments},
                    }
                )
            if calls:
                entry["tool_calls"] = calls
            if i > last_user and reasoning and reasoning.strip():
                entry["reasoning_content"] = reasoning.strip()
            out.append(entry)
        elif role == "tool":
            content = message.get("content")
            if isinstance(content, str):
                out.append({"role": "tool", "content": content})
            else:
                return None
        else:
            return None
    messages = out
    gen = case["add_generation_prompt"]
    if gen and off:  # <|assistant|>\n<think></think> reads as an empty answer, unless the users say otherwise
        messages.append({"role": "assistant", "content": None})
        gen = False
    decoded_variables: dict[str, Any] = {}
    users = [m for m in messages if m["role"] == "user"]
    if users and all(m["content"].endswith("/nothink") for m in users):
        for message in users:
            message["content"] = message["content"][: -len("/nothink")]
        decoded_variables["enable_thinking"] = False
        if not gen and messages[-1]["role"] == "assistant" and _empty(messages[-1]):
            messages.pop()
            gen = True
    return {"messages": messages, "tools": tools, "add_generation_prompt": gen, "variables": decoded_variables}


def _empty(message: dict[str, Any]) -> bool:
    return not message.get("content") and not message.get("tool_calls") and not message.get("reasoning_content")


def decode_normal_form(case: dict[str, Any], text: str) -> dict[str, Any] | None:
    if any(marker in t for t in message_texts(case) for marker in MARKUP):
        return None
    if any(isinstance(m.get("content"), list) and m["role"] == "tool" for m in case["messages"]):
        return None
    form = glm4_6_normal_form(case)
    return None if form is None else linked_as_json(form)


PROFILE = Profile(
    markers=(
        "<tool_call>",
        "</tool_call>",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        STOP,
        "<|observation|>",
        "<think>",
        "</think>",
    ),
    snippets=(
        "<tool_call>f\n",
        "<arg_key>a</arg_key>\n",
        "<arg_value>",
        "</arg_value>\n",
        "</tool_call>",
        "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
        "<tool_call>fa</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
        '{"k": [1, true]}',
        "['x', None]",
        '{\\"k\\": 1}',
        "True",
        "1e5",
        "02134",
    ),
    call_closer="</tool_call>",
    plain_text=PLAIN_TEXT,
    broken_block="<tool_call>fk</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
    adversarial=_adversarial,
    grammar_forbid=(),
    decode=Decode(normal_form=decode_normal_form),
    round_trip=RoundTrip(
        messages=lambda with_tools: messages(with_tools=with_tools), expected=expected, keeps_key_order=True
    ),
    round_trip_variants={
        "own_markers": RoundTrip(
            messages=lambda with_tools: messages(with_tools=with_tools),
            expected=expected,
            keeps_key_order=True,
            fmt=wire.reply_format(OWN_MARKERS, "glm4_6_own_markers"),
        )
    },
)
