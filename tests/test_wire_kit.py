"""The wire kit: a toy member of every family, defined by a :class:`~codec.wire.WireSpec` alone.

Each family has a toy in ``tests/wire_toys/<family>.py``: a spec whose markers no built-in
member uses, the tools its replies call, and assistant messages. With no other code, the toy
parses, streams (whole, in chunks and char by char, events append-only) and round-trips its
messages, exports grammars that accept its replies, is detected by its reply markers, and marks
a call its reply cuts short as damaged.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
from types import ModuleType
from typing import Any

import pytest

import codec
from codec import wire
from codec.errors import ParseError, RenderError
from codec.testing import grammars
from codec.testing.assertions import assert_round_trip, assert_stream_matches_parse

FAMILIES = sorted(wire.FAMILIES)
#: The families with a toy (all of them: test_every_family_has_a_toy_member says which lacks one).
TOYS = [family for family in FAMILIES if importlib.util.find_spec(f"wire_toys.{family}") is not None]


def _toy(family: str) -> ModuleType:
    return importlib.import_module(f"wire_toys.{family}")


def _format(family: str) -> codec.Format:
    return wire.reply_format(_toy(family).SPEC, f"toy_{family}")


def _cases() -> list[tuple[str, int]]:
    return [(family, i) for family in TOYS for i in range(len(_toy(family).MESSAGES))]


def _message(family: str, index: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    entry = _toy(family).MESSAGES[index]
    return (entry, None) if "role" in entry else (entry["message"], entry["expected"])


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_has_a_toy_member_with_markers_of_its_own(family: str) -> None:
    assert family in TOYS, f"add tests/wire_toys/{family}.py: SPEC, TOOLS, MESSAGES"
    toy = _toy(family)
    assert toy.SPEC.family == family
    builtin = [codec.get_format(name).wire for name in codec.formats()]
    assert toy.SPEC not in builtin
    used = {marker for spec in builtin for marker in (*spec.call, *spec.block, spec.stop)}
    assert {*toy.SPEC.call, *toy.SPEC.block, toy.SPEC.stop} - used - {""}, "the toy must write markers of its own"
    assert wire.WireSpec.from_json(toy.SPEC.to_json()) == toy.SPEC
    assert any(m.get("tool_calls") for m in (_message(family, i)[0] for i in range(len(toy.MESSAGES))))


@pytest.mark.parametrize(("family", "index"), _cases())
def test_a_toy_reads_its_own_replies_back_whole_and_streamed(family: str, index: int) -> None:
    message, expected = _message(family, index)
    assert_round_trip(_format(family), message, _toy(family).TOOLS, expected=expected)


@pytest.mark.parametrize(("family", "index"), _cases())
def test_a_toys_grammar_accepts_its_replies(family: str, index: int) -> None:
    fmt, message = _format(family), _message(family, index)[0]
    tools = _toy(family).TOOLS
    reply = grammars.reply_without_stop(fmt, fmt.render_reply(message))
    for dialect in ("llguidance", "gbnf", "lark"):
        assert fmt.grammar(tools, dialect=dialect).strip()
    if not grammars.available():
        pytest.skip("llguidance is not installed")
    # "required" lets only reasoning come before the calls: a reply with content is an "auto" one.
    choice = "required" if message.get("tool_calls") and not message.get("content") else "auto"
    specials = fmt.grammar_special_tokens
    assert grammars.llguidance_accepts(fmt.grammar(tools, tool_choice=choice), reply, specials), reply
    if message.get("tool_calls"):
        assert not grammars.llguidance_accepts(fmt.grammar(tools, tool_choice="none"), reply, specials)


@pytest.mark.parametrize(("family", "index"), _cases())
def test_a_toys_replies_are_detected_by_its_markers(family: str, index: int) -> None:
    fmt, message = _format(family), _message(family, index)[0]
    reply = fmt.render_reply(message)
    marked = any(re.search(pattern, reply) for pattern in fmt.reply_markers)
    assert marked == bool(message.get("tool_calls")), reply


@pytest.mark.parametrize(("family", "index"), _cases())
def test_a_toy_marks_a_call_its_reply_cuts_short(family: str, index: int) -> None:
    """The reply cut in the middle of the first call's first string value: that call is damaged."""
    fmt, message = _format(family), _message(family, index)[0]
    calls = message.get("tool_calls") or []
    arguments = calls[0]["function"]["arguments"] if calls else {}
    # A word of the value: written the same in every encoding, where the value's escapes are not.
    words = [
        m[0] for value in arguments.values() if isinstance(value, str) for m in [re.search("[A-Za-z]{2,}", value)] if m
    ]
    if not words:
        pytest.skip("no string argument to cut")
    reply = fmt.render_reply(message)
    word_at = reply.index(words[0], reply.index(calls[0]["function"]["name"]))
    cut = reply[: word_at + len(words[0]) // 2]
    tools = _toy(family).TOOLS
    result = assert_stream_matches_parse(fmt, cut, tools=tools)
    assert any(issue.severity == "damaged" for issue in result.issues), (cut, result.issues)
    assert result.intact_calls == [], cut  # the cut call is the reply's first
    with pytest.raises(ParseError):
        fmt.parse(cut, tools=tools, strict=True)


@pytest.mark.parametrize("family", TOYS)
def test_a_toy_has_no_prompts_of_its_own(family: str) -> None:
    fmt = _format(family)
    with pytest.raises(RenderError, match="no prompt template"):
        fmt.render([{"role": "user", "content": "hi"}])
    with pytest.raises(ParseError, match="no prompt template"):
        fmt.decode("hi")
    template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    assert fmt.render([{"role": "user", "content": "hi"}], template=template) == "hi"


def test_a_spec_setting_what_its_family_does_not_read_is_refused() -> None:
    with pytest.raises(ValueError, match="does not read quote"):
        wire.compile_spec(wire.WireSpec("json_object", call=("<c>", "</c>"), quote="'"))
    with pytest.raises(ValueError, match="no wire family 'nope'"):
        wire.compile_spec(wire.WireSpec("nope"))
    with pytest.raises(ValueError, match="not fields of a WireSpec: colour"):
        wire.WireSpec.from_json({"family": "json_object", "colour": "red"})


def test_formats_with_the_same_spec_share_one_kit() -> None:
    assert codec.get_format("qwen3").kit() is codec.get_format("hermes").kit()
    assert codec.get_format("hermes3").syntax() is codec.get_format("hermes").syntax()
    families = {codec.get_format(name).wire.family for name in codec.formats()}
    assert families <= set(wire.FAMILIES) and len(families) < len(codec.formats())


# ---------------------------------------------------------------------------- named_json's separator

#: A named_json member whose calls are one JSON list, ``, `` apart (a separator the grammar reads).
LISTED_CALLS = wire.WireSpec(
    "named_json",
    block=("[", "]"),
    call=('{"fn": "', "}"),
    name=("", '", "args": '),
    separator=", ",
    stop="<eot>",
)
#: One whose calls stand on lines of their own in a section (a blank separator: layout).
LINED_CALLS = wire.WireSpec(
    "named_json", block=("<calls>\n", "</calls>"), call=("{{", "}}\n"), name=("", "::"), stop="<eot>"
)
_SEPARATED_TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
    for n in ("ping", "note")
]


@pytest.mark.parametrize("spec", [LISTED_CALLS, LINED_CALLS, dataclasses.replace(LINED_CALLS, separator="\n")])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_named_json_calls_a_separator_apart_read_back(spec: wire.WireSpec, count: int) -> None:
    fmt = wire.reply_format(spec, "separated")
    calls = [
        {"type": "function", "function": {"name": ("ping", "note")[i % 2], "arguments": {"n": i, "s": "a, b]"}}}
        for i in range(count)
    ]
    message = {"role": "assistant", "content": "", "tool_calls": calls}
    reply = fmt.render_reply(message)
    assert reply.count(spec.separator) >= (count - 1 if spec.separator else 0)
    assert_round_trip(fmt, message, _SEPARATED_TOOLS)
    assert_stream_matches_parse(fmt, reply, tools=_SEPARATED_TOOLS)


def test_named_json_separator_outside_a_section_is_text() -> None:
    fmt = wire.reply_format(LISTED_CALLS, "separated")
    prose = "Apples, pears, plums.<eot>"
    result = fmt.parse(prose, tools=_SEPARATED_TOOLS)
    assert result.content == "Apples, pears, plums." and not result.tool_calls and not result.issues
    assert_stream_matches_parse(fmt, prose, tools=_SEPARATED_TOOLS)
    # Written twice between two calls, the second is no separator: it is text, not dropped.
    doubled = '[{"fn": "ping", "args": {}}, , {"fn": "note", "args": {}}]<eot>'
    result = fmt.parse(doubled, tools=_SEPARATED_TOOLS)
    assert [c.function.name for c in result.tool_calls] == ["ping", "note"] and result.content.strip() == ","
    assert_stream_matches_parse(fmt, doubled, tools=_SEPARATED_TOOLS)


def test_named_json_refuses_a_separator_that_starts_with_a_blank_and_is_not_one() -> None:
    with pytest.raises(ValueError, match="separator"):
        wire.compile_spec(dataclasses.replace(LISTED_CALLS, separator=" ,"))
    assert "separator" not in wire.WireSpec("named_json").differences()  # (off by default)


# ---------------------------------------------------------------------------- named_json's Python arguments

#: A named_json member whose arguments are Python's str() of the dict (values "python_repr").
PYTHON_ARGS = wire.WireSpec(
    "named_json", call=("<<act>>", "<</act>>"), name=("", "::"), values="python_repr", stop="<eot>"
)


@pytest.mark.parametrize(
    "arguments",
    [
        {"text": 'say "hi" \\ it\'s\nline two <b>&amp;</b> {x} café'},
        {"n": 12345678901234567890, "ratio": -0.25, "on": True, "off": False, "none": None},
        {"items": [1, "two", None, [False]], "nested": {"k": {"deep": "v'\"", "e": []}}},
        {},
    ],
)
def test_named_json_python_arguments_read_back(arguments: dict[str, Any]) -> None:
    fmt = wire.reply_format(PYTHON_ARGS, "python_args")
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "note", "arguments": arguments}}],
    }
    reply = fmt.render_reply(message)
    assert repr(arguments) in reply  # (the arguments as str() writes them, which the templates write)
    assert_round_trip(fmt, message, _SEPARATED_TOOLS)
    assert_stream_matches_parse(fmt, reply, tools=_SEPARATED_TOOLS)


def test_named_json_python_arguments_are_not_json() -> None:
    fmt = wire.reply_format(PYTHON_ARGS, "python_args")
    # JSON's true is no Python literal: the call is not read as if it were True.
    result = fmt.parse("<<act>>note::{'on': true}<</act>><eot>", tools=_SEPARATED_TOOLS)
    assert not any(c.function.arguments == {"on": True} for c in result.tool_calls)
    assert result.issues
    with pytest.raises(ValueError, match="'json' or 'python_repr'"):
        wire.compile_spec(dataclasses.replace(PYTHON_ARGS, values="python"))


def test_named_json_python_arguments_constrained_as_written() -> None:
    fmt = wire.reply_format(PYTHON_ARGS, "python_args")
    params = {"type": "object", "properties": {"on": {"type": "boolean"}, "s": {"type": "string"}}, "required": ["on"]}
    tools = [{"type": "function", "function": {"name": "flag", "parameters": params}}]
    call = {"type": "function", "function": {"name": "flag", "arguments": {"on": True, "s": "it's"}}}
    reply = grammars.reply_without_stop(fmt, fmt.render_reply({"role": "assistant", "tool_calls": [call]}))
    assert "'on': True" in reply
    if not grammars.available():
        pytest.skip("llguidance is not installed")
    assert grammars.llguidance_accepts(fmt.grammar(tools, tool_choice="required"), reply, ())
    assert not grammars.llguidance_accepts(
        fmt.grammar(tools, tool_choice="required"), reply.replace("True", "true"), ()
    )


# ---------------------------------------------------------------------------- call_list without brackets

#: A call_list member whose calls stand one a line in a block, no list brackets, strings between '
#: with nothing escaped and every other value JSON (values "raw_single").
LINED_LIST = wire.WireSpec(
    "call_list",
    block=("<acts>\n", "\n</acts>"),
    arguments="python",
    values="raw_single",
    separator="\n",
    argument_separator=", ",
    brackets=False,
    stop="<eot>",
)


@pytest.mark.parametrize("values", ["raw_single", "json"])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_call_list_calls_without_brackets_read_back(values: str, count: int) -> None:
    fmt = wire.reply_format(dataclasses.replace(LINED_LIST, values=values), "lined")
    arguments = {"s": 'a "b" \\ c\nd, e)', "n": -3, "on": False, "none": None, "items": [1, "x", True], "o": {"k": 1}}
    calls = [{"type": "function", "function": {"name": "note", "arguments": arguments}} for _ in range(count)]
    message = {"role": "assistant", "content": "", "tool_calls": calls}
    reply = fmt.render_reply(message)
    assert "[" + "note(" not in reply and reply.count("\nnote(") == count
    if values == "raw_single":
        assert "'a \"b\" \\ c\nd, e)'" in reply and "on=false" in reply and "none=null" in reply
    assert_round_trip(fmt, message, _SEPARATED_TOOLS)
    assert_stream_matches_parse(fmt, reply, tools=_SEPARATED_TOOLS)


def test_call_list_without_brackets_needs_a_block_and_a_separator() -> None:
    with pytest.raises(ValueError, match="without brackets"):
        wire.compile_spec(dataclasses.replace(LINED_LIST, block=("", "")))
    with pytest.raises(ValueError, match="without brackets"):
        wire.compile_spec(dataclasses.replace(LINED_LIST, separator=""))
    assert "brackets" not in wire.WireSpec("call_list").differences()  # (brackets by default)
