"""Property tests particular to ``qwen3_coder`` (hypothesis, derandomized).

The format-independent properties (bad input, truncation, chunking, linear work) are in
``test_parse_properties.py``; the golden replies in ``golden/qwen3_coder/``. Here:

* what the round trip (``test_round_trip.py``) leaves out really does not round trip: with tools,
  values come back typed by their schemas, without tools as the raw text the template wrote, and
  what the format cannot represent is excluded explicitly (``representable`` in
  ``formats/qwen3_coder.py``);
* a long string value is streamed as it arrives, in many append-only argument fragments;
* a pretty-printed call (indented tags, values indented by the layout) reads back as the call the
  template would have written, whatever the values' own indentation and blank lines, streamed too;
* schema types spelled as tools write them are checked in every format (``codec/schema.py``);
* the family compiles its markers from the spec: a member with markers of its own reads every
  golden reply, renamed, as qwen3_coder does, and a spec the family cannot read is refused.

Known parser bugs are ``xfail(strict=True)`` tests at the end, each with a minimal reproducer.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from typing import Any

import pytest
from formats.qwen3_coder import OWN_MARKERS, expected_arguments, messages, tojson
from harness import (
    GoldenCase,
    argument_fragments,
    assert_append_only,
    assert_streams_like,
    examples,
    load_golden,
    parse_chunked,
    run_chunks,
    split,
    summary,
)
from hypothesis import assume, given
from hypothesis import strategies as st

import codec
from codec import wire

FMT = codec.get_format("qwen3_coder")
STOP = "<|im_end|>"


def test_exclusions_are_real() -> None:
    """What :func:`representable` excludes really does not round trip (so the exclusions stay honest)."""
    string = {"type": "string"}
    nullable = {"type": ["string", "null"]}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    for value, schema in [
        ("a\n</parameter>\n<parameter=b>\nc", string),  # b is declared, not given yet: the next parameter
        ("x\n</function>\n</tool_call>", string),
        ("x\n</parameter>\n</function>", string),
        ("null", nullable),
        (" None ", nullable),
    ]:
        tools[0]["function"]["parameters"]["properties"] = {"a": schema, "b": string}
        message = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": value}}}]}
        result = FMT.parse(FMT.render_reply(message), tools=tools)
        assert [c.function.arguments for c in result.tool_calls] != [{"a": value}], value
    trimmed = FMT.parse(FMT.render_reply({"role": "assistant", "content": "  hi\n"}))
    assert trimmed.content == "hi"
    call = {"function": {"name": "f", "arguments": {"a": "x"}}}
    for content in ("<think>plan</think>Done.", "Here:\n```sh\nls"):
        message = {"role": "assistant", "content": content, "tool_calls": [call]}
        result = FMT.parse(FMT.render_reply(message))
        assert (result.content, result.issues) != (content, []), content


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
    fragments, sent_at_half, result = argument_fragments(FMT, FMT.render_reply(message), 4, tools=tools)
    arguments = result.to_message().model_dump(mode="json")["tool_calls"][0]["function"]["arguments"]
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


# --------------------------------------------------------------------------- markup inside a value

_WRITE = [
    {
        "type": "function",
        "function": {
            "name": "write",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            },
        },
    }
]

#: Lines a file body may hold that look like the format's markup but are text of the value there: a
#: closer no markup follows, a head of a parameter already given (or the one being read, or one the
#: tool does not declare), a function closer no call end follows, call openers, a call written whole.
_MARKUP_LINES = (
    "</parameter>",
    "<parameter=path>",
    "<parameter=content>",
    "<parameter=mode>",
    '    "</function>",',
    "</function>",
    "<tool_call>",
    "<function=write>",
    "  x = '<parameter=path>' + '</parameter>'",
)


@examples(60)
@given(
    lines=st.lists(st.one_of(st.sampled_from(_MARKUP_LINES), st.sampled_from(("text", "", "  y = 1"))), max_size=12),
    with_tools=st.booleans(),
    sizes=st.one_of(st.just([1]), st.lists(st.integers(1, 16), min_size=1, max_size=6)),
)
def test_markup_text_inside_a_value_is_read_as_text(lines: list[str], with_tools: bool, sizes: list[int]) -> None:
    """A file body holding tag-like lines that nothing confirms as markup comes back byte for byte,
    whole and in any chunking, with its fragments append-only (nothing sent is taken back)."""
    if "<function=write>" in lines:  # a call written inside the value, closed as a fixture closes it
        lines = [*lines, "</function>"]
    # A closer followed (past blank lines) by a line that confirms it is markup by the rule: the value's end.
    confirms = {"</parameter>": ("</function>", "<tool_call>"), "</function>": ("<tool_call>", "<function=write>")}
    assume(all(b not in confirms.get(a, ()) for a, b in itertools.pairwise(line for line in lines if line)))
    body = "\n".join([*lines, "end"])  # the last line is plain text: its closer is the value's own
    if not with_tools:  # without tools, only a repeated name says a head is text
        body = body.replace("<parameter=mode>", "<parameter=path>")
    message = {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "write", "arguments": {"path": "a", "content": body}}}],
    }
    reply = FMT.render_reply(message)
    tools = _WRITE if with_tools else None
    whole = FMT.parse(reply, tools=tools)
    assert [c.function.arguments for c in whole.tool_calls] == [{"path": "a", "content": body}]
    assert whole.issues == []
    assert_streams_like(parse_chunked(FMT, reply, sizes, tools=tools), whole)


def test_a_head_that_starts_the_next_parameter_streams_as_it_parses() -> None:
    """The heads that do end a string value (a declared name not given yet, a missing closer before
    it, a name too long to be decided in the lookahead) read the same whole and in every chunking."""
    long_name = "n" * 41
    cases = [
        ("content", "a\n</parameter>\n<parameter=path>\nb", {"content": "a", "path": "b"}, []),
        ("content", "a\n<parameter=path>\nb", {"content": "a", "path": "b"}, ["missing_closer"]),
        ("content", "a\n    <parameter=path>\nb", {"content": "a", "path": "b"}, ["missing_closer", "indented_markup"]),
        ("content", f"a\n</parameter>\n<parameter={long_name}>\nb", {"content": "a", long_name: "b"}, []),
    ]
    for key, text, expected, issues in cases:
        reply = f"<tool_call>\n<function=write>\n<parameter={key}>\n{text}\n</parameter>\n</function>\n</tool_call>"
        whole = FMT.parse(reply, tools=_WRITE)
        assert whole.tool_calls[0].function.arguments == expected, text
        assert [issue.kind for issue in whole.issues] == issues, text
        for size in (1, 3, 7):
            assert_streams_like(parse_chunked(FMT, reply, size, tools=_WRITE), whole)


# --------------------------------------------------------------------------- pretty-printed calls


def pretty_printed(message: dict[str, Any], step: str, blank_layout: bool) -> str:
    """The message's calls as a model that pretty-prints its XML writes them: each tag on its own line
    indented one ``step`` deeper than its parent, each line of a value two steps deeper than its tag
    (empty lines with that layout too, or left empty, as ``blank_layout`` says)."""
    layout = step * 3
    blocks = []
    for call in message.get("tool_calls") or []:
        function = call["function"]
        out = [f"<tool_call>\n{step}<function={function['name']}>\n"]
        for key, value in function["arguments"].items():
            text = value if isinstance(value, str) else tojson(value)
            lines = [layout + line if line or blank_layout else line for line in text.split("\n")]
            out.append(f"{step * 2}<parameter={key}>\n" + "\n".join(lines) + f"\n{step * 2}</parameter>\n")
        out.append(f"{step}</function>\n</tool_call>")
        blocks.append("".join(out))
    return "\n".join(blocks) + STOP


@examples(60)
@given(
    case=messages(with_tools=True),
    step=st.sampled_from(["  ", "    ", "\t", " \t"]),
    blank_layout=st.booleans(),
    sizes=st.one_of(st.just([1]), st.lists(st.integers(1, 16), min_size=1, max_size=6)),
)
def test_a_pretty_printed_call_reads_back_the_call(
    case: tuple[dict[str, Any], Any], step: str, blank_layout: bool, sizes: list[int]
) -> None:
    """The layout rule is certain for calls laid out consistently: each value comes back exactly as the
    template would have written it, its own indentation, blank lines and blanks-only lines included."""
    message, tools = case
    calls = message.get("tool_calls") or []
    reply = pretty_printed(message, step, blank_layout)
    whole = FMT.parse(reply, tools=tools)
    assert [(c.function.name, c.function.arguments) for c in whole.tool_calls] == [
        (c["function"]["name"], expected_arguments(c, tools)) for c in calls
    ]
    kinds = {issue.kind for issue in whole.issues}
    assert kinds <= {"indented_markup", "value_indentation"}
    assert ("indented_markup" in kinds) == bool(calls)
    assert_streams_like(parse_chunked(FMT, reply, sizes, tools=tools), whole)


#: String values made of what layout rules get wrong: leading blanks, blank lines and lines of blanks only.
_blanks = st.text(" \t", max_size=6)
_lines = st.one_of(st.just(""), _blanks, st.builds(str.__add__, _blanks, st.text("ab </>=\"'", min_size=1, max_size=6)))
_layout_strings = st.lists(_lines, max_size=6).map("\n".join)


@examples(100)
@given(
    values=st.lists(_layout_strings, min_size=1, max_size=3),
    step=st.sampled_from(["  ", "    ", "\t"]),
    blank_layout=st.booleans(),
    sizes=st.one_of(st.just([1]), st.lists(st.integers(1, 16), min_size=1, max_size=6)),
)
def test_a_pretty_printed_string_keeps_its_own_blanks(
    values: list[str], step: str, blank_layout: bool, sizes: list[int]
) -> None:
    arguments = {f"k{i}": value for i, value in enumerate(values)}
    message = {"tool_calls": [{"function": {"name": "f", "arguments": arguments}}]}
    reply = pretty_printed(message, step, blank_layout)
    whole = FMT.parse(reply)
    assert [c.function.arguments for c in whole.tool_calls] == [arguments]
    assert {issue.kind for issue in whole.issues} <= {"indented_markup", "value_indentation"}
    assert_streams_like(parse_chunked(FMT, reply, sizes), whole)


def test_a_long_pretty_printed_value_streams_as_it_arrives() -> None:
    body = "".join(f"        line {i}: {{x}} <b>\n" for i in range(1_500))
    reply = "<tool_call>\n  <function=w>\n    <parameter=content>\n" + body + "    </parameter>\n  </function>"
    fragments, sent_at_half, result = argument_fragments(FMT, reply, 4)
    value = "".join(f"  line {i}: {{x}} <b>\n" for i in range(1_500))[:-1]
    assert result.tool_calls[0].function.arguments == {"content": value}
    assert len(fragments) > 1_000 and len(sent_at_half) > 0.4 * len(tojson(value))


# --------------------------------------------------------------------------- schema types as tools write them


_QWEN_VALUES = {"n": "three", "on": "yes", "tags": "x"}
_QWEN_ARGUMENTS = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in _QWEN_VALUES.items())


def _tool(**types: Any) -> list[dict[str, Any]]:
    properties = {key: {"type": kind} for key, kind in types.items()}
    return [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": properties}}}]


@pytest.mark.parametrize(
    ("name", "reply"),
    [
        ("hermes", '<tool_call>\n{"name": "f", "arguments": {"n": "3", "on": 1, "tags": "x"}}\n</tool_call>'),
        ("gemma4", '<|tool_call>call:f{n:<|"|>3<|"|>,on:1,tags:<|"|>x<|"|>}<tool_call|>'),
        ("deepseek_pythonic", '[f(n="3", on=1, tags="x")]'),
        ("qwen3_coder", "<tool_call>\n<function=f>\n" + _QWEN_ARGUMENTS + "</function>\n</tool_call>"),
    ],
)
def test_every_format_checks_types_spelled_as_tools_write_them(name: str, reply: str) -> None:
    """``int``, ``BOOL`` and ``list`` are integer, boolean and array for every format's schema check."""
    result = codec.get_format(name).parse(reply, tools=_tool(n="int", on="BOOL", tags="list"))
    problems = [issue.message for issue in result.issues if issue.kind == "schema"]
    assert len(problems) == 3, problems
    assert not codec.get_format(name).parse(reply, tools=_tool(n="any", on="thing", tags="file")).issues


def test_type_names_as_tools_write_them() -> None:
    from codec.schema import declared_types, type_text

    assert declared_types({"type": ["Integer", "NONE"]}) == ["integer", "null"]
    assert declared_types({"type": "Float64", "nullable": True}) == ["number", "null"]
    assert type_text("None", {"type": "dict"}) == (None, "null where the schema allows object, read as null")
    assert type_text("['a', 1]", {"type": "tuple"}) == (["a", 1], None)
    assert type_text("null", {"type": "str"}) == ("null", None)


# --------------------------------------------------------------------------- members with markers of their own

#: qwen3_coder's markers and, after them, those of OWN_MARKERS, stems included (a drifted
#: '</parameter' and a cut '<tool_call' are renamed too).
_RENAMED = (
    ("</tool_call", "</invoke_tool"),
    ("<tool_call", "<invoke_tool"),
    ("</function", "</fn"),
    ("<function=", "<fn="),
    ("</parameter", "</arg"),
    ("<parameter=", "<arg="),
    (STOP, "<|end|>"),
    ("</think>", "</reason>"),
    ("<think>", "<reason>"),
)
#: A member of the family with markers of its own, values on lines of their own or inline.
MEMBERS = {
    "lines": wire.reply_format(OWN_MARKERS, "renamed_lines"),
    "inline": wire.reply_format(dataclasses.replace(OWN_MARKERS, value_lines=False), "renamed_inline"),
}


def _renamed(data: Any) -> Any:
    """``data`` with qwen3_coder's markers written as the members' (in strings, keys and lists alike)."""
    if isinstance(data, str):
        for old, new in _RENAMED:
            data = data.replace(old, new)
        return data
    if isinstance(data, list):
        return [_renamed(item) for item in data]
    if isinstance(data, dict):
        return {_renamed(key): _renamed(value) for key, value in data.items()}
    return data


@pytest.mark.parametrize("member", sorted(MEMBERS))
@pytest.mark.parametrize("case", load_golden("qwen3_coder"), ids=lambda case: case.name)
def test_a_member_with_markers_of_its_own_reads_the_golden_replies_renamed_alike(case: GoldenCase, member: str) -> None:
    """The family compiles its markers from the spec: every golden reply, its markers renamed, reads as
    qwen3_coder reads it (renamed), whole and in chunks, whether the member writes values inline or not."""
    fmt = MEMBERS[member]
    kwargs = {"tools": _renamed(case.tools), "prompt": _renamed(case.prompt)}
    text = _renamed(case.text)
    whole = fmt.parse(text, **kwargs)
    assert summary(whole) == _renamed(case.expected)
    assert_streams_like(parse_chunked(fmt, text, (1, 3, 7), **kwargs), whole)


def test_the_qwen3_coder_members_share_one_syntax_and_others_have_their_own() -> None:
    official = codec.get_format("qwen3_coder_official")
    assert official.syntax() is FMT.syntax() and official.kit() is not FMT.kit()
    assert MEMBERS["lines"].syntax() is not FMT.syntax()
    assert FMT.kit().content_style == "qwen_xml"  # xgrammar writes exactly these calls itself
    assert {official.kit().content_style, MEMBERS["lines"].kit().content_style} == {None}


def test_a_member_writes_its_values_inline_or_on_lines_of_their_own() -> None:
    message = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": "x", "n": 1}}}]}
    inline = "<invoke_tool>\n<fn=f>\n<arg=a>x</arg>\n<arg=n>1</arg>\n</fn>\n</invoke_tool><|end|>"
    assert MEMBERS["inline"].render_reply(message) == inline
    assert MEMBERS["lines"].render_reply(message) == inline.replace(">x<", ">\nx\n<").replace(">1<", ">\n1\n<")


def test_a_spec_the_family_cannot_read_is_refused() -> None:
    for change, problem in [
        ({"name": ("fn(", ">")}, "every marker must be a tag"),
        ({"name": ("<fn>", ">")}, "the name opener must be '<TAG='"),
        ({"parameter": ("<arg=", ">", "</arg")}, "the parameter closer must be '</TAG>'"),
        ({"parameter": ("<arg=", ">>", "</arg>")}, "the key each end with one character"),
        ({"reasoning": None}, "reasoning markers are needed"),
        ({"values": "json"}, "values must be one of"),
    ]:
        with pytest.raises(ValueError, match=re.escape(problem)):
            wire.compile_spec(dataclasses.replace(FMT.wire, **change))


# --------------------------------------------------------------------------- known parser bugs


def _tools(**props: str) -> list[dict[str, Any]]:
    properties = {k: {"type": v} for k, v in props.items()}
    return [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": properties}}}]


def test_deeply_nested_array_value_does_not_raise() -> None:
    text = "<tool_call>\n<function=f>\n<parameter=a>\n" + "[" * 5_000 + "\n</parameter>\n</function>\n</tool_call>"
    result = FMT.parse(text, tools=_tools(a="array"))
    assert [i.kind for i in result.issues] == ["schema"]
