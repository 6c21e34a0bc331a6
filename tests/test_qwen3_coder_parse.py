"""Property tests particular to ``qwen3_coder`` (hypothesis, derandomized).

The format-independent properties (bad input, truncation, chunking, linear work) are in
``test_parse_properties.py``; the golden replies in ``golden/qwen3_coder/``. Here:

* round trip with tools: ``parse(render_reply(msg), tools)`` gives back the content, the names
  and the typed arguments of generated calls whose values fit their schemas;
* round trip without tools: every value comes back as the raw text the template wrote;
* a long string value is streamed as it arrives, in many append-only argument fragments.

What the format cannot represent is excluded explicitly (see :func:`representable`). Known
parser bugs are ``xfail(strict=True)`` tests at the end, each with a minimal reproducer.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import strategies
from harness import assert_append_only, assert_events_rebuild, examples, parse_chunked, run_chunks, split
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

import codec
from codec.models import ToolCallDelta, dump_arguments
from codec.schema import violations

FMT = codec.get_format("qwen3_coder")
STOP = "<|im_end|>"


def tojson(value: Any) -> str:
    """The template's ``tojson``: how a non-string value is written."""
    return json.dumps(value, ensure_ascii=False)


def raw_text(value: Any) -> str:
    """A value as the template writes it between the parameter tags: strings raw, the rest JSON."""
    return value if isinstance(value, str) else tojson(value)


def declared(schema: Any) -> list[str]:
    """The JSON types a property schema names (``type``, ``nullable``, ``anyOf``/``oneOf``, string ``enum``)."""
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    types = [kind] if isinstance(kind, str) else list(kind or [])
    if schema.get("nullable") is True:
        types.append("null")
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key) or []:
            types += declared(option)
    if not types and isinstance(schema.get("enum"), list) and all(isinstance(v, str) for v in schema["enum"]):
        types = ["string"]
    return list(dict.fromkeys(types))


def representable(value: Any, schema: Any, *, typed: bool) -> bool:
    """Whether the format can carry ``value`` so that parsing gives it back (``typed``: with its schema).

    Excluded, because nothing in the format can tell them apart from markup or from other values:

    * a value whose text holds ``<parameter=`` or ``</function>``: either ends the value (a string
      holding ``\\n</parameter>\\n<parameter=`` is the case FORMATS.md X2 names), and the template
      escapes nothing;
    * a value holding ``<|im_end|>``: a model cannot write its stop token inside a value;
    * with a schema, a string ``null``/``None`` (blanks around allowed) where null is allowed: it
      reads as null.
    """
    text = raw_text(value)
    if "<parameter=" in text or "</function>" in text or STOP in text:
        return False
    types = declared(schema)
    return not (typed and "null" in types and isinstance(value, str) and text.strip() in ("null", "None"))


def unambiguous(schema: Any) -> Any:
    """``schema`` with every union of several non-null types cut to its first one.

    The raw text of a value is read by the first declared type that accepts it (``anyOf:
    [string, integer]`` reads ``5`` as the string "5"), so a value of a later type cannot round
    trip; golden/qwen3_coder/typed_unions.json covers such unions instead.
    """
    if isinstance(schema, list):
        return [unambiguous(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: unambiguous(v) for k, v in schema.items()}
    for key in ("anyOf", "oneOf"):
        options = out.get(key)
        if isinstance(options, list) and len([t for t in declared({key: options}) if t != "null"]) > 1:
            kept = [o for o in options if "null" in declared(o)]
            first = next(o for o in options if [t for t in declared(o) if t != "null"])
            out[key] = [first, *kept]
    kind = out.get("type")
    if isinstance(kind, list) and len([t for t in kind if t != "null"]) > 1:
        out["type"] = [next(t for t in kind if t != "null"), *(["null"] if "null" in kind else [])]
    return out


def _schema_of(tools: list[dict[str, Any]] | None, name: str, key: str) -> Any:
    for tool in tools or []:
        function = tool["function"]
        if function["name"] == name:
            props = (function.get("parameters") or {}).get("properties")
            return props.get(key) if isinstance(props, dict) else None
    return None


def _content_ok(text: str) -> bool:
    """Content the format can carry: no call or stop markers (nothing is escaped)."""
    return not any(marker in text for marker in ("<tool_call>", "</tool_call>", "<function=", STOP))


#: Property schemas, mostly scalars (with enums, nullables and unions), sometimes arrays and objects.
_property_schemas = st.one_of(strategies.schemas(0), strategies.schemas(0), strategies.schemas(1)).map(unambiguous)


@st.composite
def _tool(draw: DrawFn, name: str) -> dict[str, Any]:
    """A tool with 0-4 parameters of any schema (unions cut by :func:`unambiguous`), rarely none declared."""
    function: dict[str, Any] = {"name": name}
    if draw(st.integers(0, 7)):
        props = draw(st.dictionaries(strategies.names(), _property_schemas, max_size=4))
        function["parameters"] = {"type": "object", "properties": props}
    return {"type": "function", "function": function}


@st.composite
def _arguments(draw: DrawFn, tool: dict[str, Any] | None, typed: bool) -> dict[str, Any]:
    """Arguments for ``tool`` (most declared parameters, values fitting them), or free ones.

    Values the format cannot carry (see :func:`representable`) are left out.
    """
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
    # The template trims content: only trimmed content can come back unchanged.
    content = draw(st.one_of(st.none(), strategies.texts().map(str.strip).filter(_content_ok)))
    message: dict[str, Any] = {"role": "assistant", "content": content}
    calls = []
    for _ in range(draw(st.sampled_from((0, 1, 1, 2, 3)))):
        tool = draw(st.sampled_from(tools))
        arguments = draw(_arguments(tool, with_tools))
        calls.append({"type": "function", "function": {"name": tool["function"]["name"], "arguments": arguments}})
        if with_tools:  # nested values fit their schemas too, or the parse reports them
            assume(not violations(arguments, tool["function"].get("parameters") or {}))
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message, tools if with_tools else None


def expected_arguments(call: dict[str, Any], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The arguments a perfect parse gives: typed where the tool declares a type, raw text otherwise."""
    name, arguments = call["function"]["name"], call["function"]["arguments"]
    return {k: v if declared(_schema_of(tools, name, k)) else raw_text(v) for k, v in arguments.items()}


def check_round_trip(message: dict[str, Any], tools: list[dict[str, Any]] | None) -> None:
    reply = FMT.render_reply(message)
    result = FMT.parse(reply, tools=tools)
    calls = message.get("tool_calls") or []
    assert result.issues == []
    assert result.content == (message["content"] or "")
    assert [c.id for c in result.tool_calls] == [f"call_{i}" for i in range(len(calls))]
    assert [c.function.name for c in result.tool_calls] == [c["function"]["name"] for c in calls]
    for got, call in zip(result.tool_calls, calls, strict=True):
        want = expected_arguments(call, tools)
        assert got.function.arguments == want
        # types and key order survive too (1 vs 1.0 vs True, -0.0, big ints)
        assert dump_arguments(got.function.arguments) == dump_arguments(want)


# --------------------------------------------------------------------------- round trip


@examples(100)
@given(pair=messages(with_tools=True))
def test_round_trip_with_tools_gives_typed_arguments(pair: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    check_round_trip(*pair)


@examples(100)
@given(pair=messages(with_tools=False))
def test_round_trip_without_tools_gives_raw_strings(pair: tuple[dict[str, Any], None]) -> None:
    message, _ = pair
    check_round_trip(message, None)
    for got in FMT.parse(FMT.render_reply(message)).tool_calls:
        assert all(isinstance(v, str) for v in got.function.arguments.values())


@examples(100)
@given(pair=messages(with_tools=True), sizes=st.lists(st.integers(1, 12), min_size=1, max_size=6))
def test_round_trip_streams_like_it_parses(pair: tuple[dict[str, Any], list[dict[str, Any]]], sizes: list[int]) -> None:
    message, tools = pair
    reply = FMT.render_reply(message)
    run = parse_chunked(FMT, reply, sizes, tools=tools)
    assert run.result == FMT.parse(reply, tools=tools)
    assert_append_only(run.events, run.result)
    assert_events_rebuild(run.events, run.result)


def test_exclusions_are_real() -> None:
    """What :func:`representable` excludes really does not round trip (so the exclusions stay honest)."""
    string = {"type": "string"}
    nullable = {"type": ["string", "null"]}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    for value, schema in [
        ("a\n</parameter>\n<parameter=b>\nc", string),
        ("x</function>y", string),
        ("null", nullable),
        (" None ", nullable),
    ]:
        tools[0]["function"]["parameters"]["properties"] = {"a": schema}
        message = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": value}}}]}
        result = FMT.parse(FMT.render_reply(message), tools=tools)
        assert [c.function.arguments for c in result.tool_calls] != [{"a": value}], value
    trimmed = FMT.parse(FMT.render_reply({"role": "assistant", "content": "  hi\n"}))
    assert trimmed.content == "hi"


# --------------------------------------------------------------------------- streaming a long value


@pytest.mark.parametrize("typed", [False, True], ids=["without_tools", "string_schema"])
def test_long_string_value_streams_in_many_fragments(typed: bool) -> None:
    value = "".join(f'line {i}: código "{i}" \\ <tag> {{x}}\n' for i in range(600))[:20_000]
    tools = None
    if typed:
        props = {"path": {"type": "string"}, "content": {"type": "string"}}
        tools = [
            {"type": "function", "function": {"name": "write", "parameters": {"type": "object", "properties": props}}}
        ]
    message = {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "write", "arguments": {"path": "a.txt", "content": value}}}],
    }
    reply = FMT.render_reply(message)
    chunks = split(reply, 4)
    stream = FMT.stream(tools=tools)
    fragments: list[str] = []
    sent_at_half = ""
    for n, chunk in enumerate(chunks):
        fragments += [e.arguments for e in stream.feed(chunk) if isinstance(e, ToolCallDelta)]
        if n == len(chunks) // 2:
            sent_at_half = "".join(fragments)
    fragments += [e.arguments for e in stream.close() if isinstance(e, ToolCallDelta)]
    arguments = stream.result.to_message().model_dump(mode="json")["tool_calls"][0]["function"]["arguments"]
    assert "".join(fragments) == arguments
    assert json.loads(arguments) == {"path": "a.txt", "content": value}
    assert len(fragments) > 1_000, "the value must arrive as it is generated, not in one burst"
    assert max(len(f) for f in fragments) < 200
    # Half-way through the reply, about half of the value has been sent already.
    assert len(sent_at_half) > 0.4 * len(tojson(value))


def test_typed_value_is_sent_once_complete() -> None:
    """A value typed by its schema (here an array) can only be sent once its text is complete."""
    tools = [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "array"}}}},
        }
    ]
    reply = (
        "<tool_call>\n<function=f>\n<parameter=a>\n["
        + ", ".join(map(str, range(2_000)))
        + "]\n</parameter>\n</function>\n</tool_call>"
    )
    run = run_chunks(FMT, split(reply, 4), tools=tools)
    assert run.result.tool_calls[0].function.arguments == {"a": list(range(2_000))}
    assert_append_only(run.events, run.result)


# --------------------------------------------------------------------------- known parser bugs


def _tools(**props: str) -> list[dict[str, Any]]:
    properties = {k: {"type": v} for k, v in props.items()}
    return [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": properties}}}]


@pytest.mark.parametrize("tools", [None, _tools(a="integer")], ids=["without_tools", "typed"])
def test_truncation_in_the_next_parameter_head_keeps_finished_arguments(tools: Any) -> None:
    """A finished parameter is stored when the reply breaks off in the next one's head (the stream
    makes the reductions any continuation would make before it gives the call up)."""
    text = "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=b"
    result = FMT.parse(text, tools=tools)
    assert [c.function.arguments for c in result.tool_calls] == [{"a": 1 if tools else "1"}]


def test_truncation_after_a_complete_function_head_keeps_the_call() -> None:
    result = FMT.parse("<tool_call>\n<function=f>\n<")
    assert [(c.function.name, c.function.arguments) for c in result.tool_calls] == [("f", {})]


def test_stop_token_ends_an_unclosed_value() -> None:
    """The stop token ends a value whose closers are missing; the line break before it frames the value."""
    result = FMT.parse("<tool_call>\n<function=f>\n<parameter=a>\nParis\n<|im_end|>")
    assert [c.function.arguments for c in result.tool_calls] == [{"a": "Paris"}]
    assert [i.kind for i in result.issues] == ["missing_closer"] * 3


def test_deeply_nested_array_value_does_not_raise() -> None:
    text = "<tool_call>\n<function=f>\n<parameter=a>\n" + "[" * 5_000 + "\n</parameter>\n</function>\n</tool_call>"
    result = FMT.parse(text, tools=_tools(a="array"))
    assert [i.kind for i in result.issues] == ["schema"]
