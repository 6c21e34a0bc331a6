"""What grammars make of tool_choice ("none", OpenAI's named form) and of the schema keywords they
express (``pattern``, ``minItems``/``maxItems``, small integer ranges) or leave out (a warning)."""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import pytest
from harness import examples
from hypothesis import assume, given
from hypothesis import strategies as st
from test_export import FORMATS, SETTINGS, Grammars, all_accept, all_reject, reply_of, requests

import codec
from codec import GrammarWarning, export
from codec.export import json_string_regex, pattern_regex
from codec.formats import reply_owner


def _tool(name: str, properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required or list(properties)}
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def _reply(fmt: codec.Format, *calls: dict[str, Any], content: str = "") -> str:
    return reply_of(fmt, {"role": "assistant", "content": content, "tool_calls": list(calls) or None})


def _quiet_grammars(fmt: codec.Format, tool_list: list[dict[str, Any]], **options: Any) -> Grammars:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        return Grammars(fmt, tool_list, **options)


# ---------------------------------------------------------------------------- tool_choice


@pytest.mark.parametrize("fmt_name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_tool_choice_none_is_text_only(fmt_name: str, data: st.DataObject) -> None:
    fmt, tool_list, _, reply = data.draw(requests(fmt_name))
    grammars = _quiet_grammars(fmt, tool_list, tool_choice="none")
    all_reject(grammars, reply)
    text = reply_of(fmt, {"role": "assistant", "content": "Nothing to call."})
    all_accept(grammars, text)


@pytest.mark.parametrize("fmt_name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_named_tool_choice_takes_that_tool_alone(fmt_name: str, data: st.DataObject) -> None:
    fmt, tool_list, message, reply = data.draw(requests(fmt_name, with_content=False, max_calls=1))
    called = message["tool_calls"][0]["function"]["name"]
    named = {"type": "function", "function": {"name": called}}
    all_accept(_quiet_grammars(fmt, tool_list, tool_choice=named), reply)
    others = [t for t in tool_list if t["function"]["name"] != called]
    if others:
        other = {"type": "function", "function": {"name": others[0]["function"]["name"]}}
        all_reject(_quiet_grammars(fmt, tool_list, tool_choice=other), reply)
    text = reply_of(fmt, {"role": "assistant", "content": "Hi."})
    all_reject(_quiet_grammars(fmt, tool_list, tool_choice=named), text)


# ---------------------------------------------------------------------------- patterns

#: Patterns in the subset grammars write, and the texts they are tried on.
PATTERNS = [
    r"^[A-Z][a-z]+$",
    r"^\d{3}-\d{4}$",
    r"^(?:foo|ba+r)?x*$",
    r"^[^\s@]+@[^\s@]+\.[a-z]{2,4}$",
    r"ab|cd",
    r"^a.c",
    r'^["\\]+$',
    r"^\w+(,\w+)*$",
    r"^[\x41-\x43\-]{1,3}$",
    r"q$",
]
ALPHABET = st.sampled_from(list('abcdfoxrqAZ019-@., "\\\n\t'))


def ecma(pattern: str) -> re.Pattern[str]:
    """``pattern`` for Python's ``re`` as ECMA-262 reads it: ``\\d`` and ``\\w`` are ASCII, a final ``$``
    is the end (no newline before it)."""
    return re.compile(pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern, re.ASCII)


#: Whitespace that ECMA-262's ``\\s`` matches (and the grammars with it) but ``re.ASCII``'s does not:
#: strings drawn to match :func:`ecma` leave it out, where the two readings differ.
UNICODE_SPACE = re.compile("[\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]")


def ecma_matches(pattern: str) -> st.SearchStrategy[str]:
    """Strings that ``pattern`` matches, as ECMA-262 reads it."""
    return st.from_regex(ecma(pattern)).filter(lambda s: UNICODE_SPACE.search(s) is None)


@pytest.mark.parametrize("pattern", PATTERNS)
@examples(60)
@given(text=st.text(ALPHABET, max_size=12))
def test_pattern_regex_matches_what_the_pattern_searches(pattern: str, text: str) -> None:
    """JSON schema's patterns are searched (unanchored), the grammar's regex matches the whole string."""
    rx = pattern_regex(pattern)
    assert rx is not None
    assert bool(re.fullmatch(export.regex(rx), text)) == bool(ecma(pattern).search(text))


@pytest.mark.parametrize("pattern", PATTERNS)
@examples(30)
@given(data=st.data())
def test_json_string_regex_matches_the_json_of_matching_strings(pattern: str, data: st.DataObject) -> None:
    text = data.draw(ecma_matches(pattern))
    rx = pattern_regex(pattern)
    assert rx is not None
    assert re.fullmatch(export.regex(json_string_regex(rx)), json.dumps(text, ensure_ascii=False))


@pytest.mark.parametrize("pattern", [r"(?=a)b", r"(a)\1", r"\bword", r"a^b", r"[z-a]", r"\p{L}", r"a{2,1}", "(ab"])
def test_patterns_outside_the_subset_are_not_written(pattern: str) -> None:
    assert pattern_regex(pattern) is None


@pytest.mark.parametrize("fmt_name", ["hermes", "qwen3", "gemma3_tool_code"])
@examples(20)
@given(data=st.data())
def test_a_pattern_constrains_json_strings(fmt_name: str, data: st.DataObject) -> None:
    """Where strings are JSON, the grammar takes the strings that match the pattern and no other."""
    pattern = data.draw(st.sampled_from([p for p in PATTERNS if "\\\\" not in p and "\\n" not in p]))
    fmt = codec.get_format(fmt_name)
    tool = _tool("f", {"s": {"type": "string", "pattern": pattern}})
    grammars = _quiet_grammars(fmt, [tool], tool_choice="required")
    good = data.draw(ecma_matches(pattern).filter(lambda s: "\n" not in s and "`" not in s))
    all_accept(grammars, _reply(fmt, _call("f", s=good)))
    bad = data.draw(st.text(ALPHABET, max_size=8))
    assume(not ecma(pattern).search(bad) and "\n" not in bad)
    all_reject(grammars, _reply(fmt, _call("f", s=bad)))


# ---------------------------------------------------------------------------- item counts and ranges


@pytest.mark.parametrize("fmt_name", FORMATS)
@examples(20)
@given(low=st.integers(0, 3), span=st.integers(0, 2), count=st.integers(0, 6))
def test_item_counts_bound_arrays(fmt_name: str, low: int, span: int, count: int) -> None:
    fmt = codec.get_format(fmt_name)
    tool = _tool("f", {"xs": {"type": "array", "items": {"type": "integer"}, "minItems": low, "maxItems": low + span}})
    if fmt.wire.family == "xml_params" and fmt.wire.values == "python_str":  # lists as str() text: not constrained
        assert _warnings_of(lambda: fmt.grammar([tool])) == [
            f"the {fmt_name} grammar does not constrain these schema keywords (values may break them): "
            "f.xs: minItems, maxItems"
        ]
        return
    grammars = _quiet_grammars(fmt, [tool], tool_choice="required")
    reply = _reply(fmt, _call("f", xs=list(range(count))))
    (all_accept if low <= count <= low + span else all_reject)(grammars, reply)


@pytest.mark.parametrize("fmt_name", FORMATS)
@examples(20)
@given(low=st.integers(-5, 5), span=st.integers(0, 12), value=st.integers(-20, 20))
def test_small_integer_ranges_bound_integers(fmt_name: str, low: int, span: int, value: int) -> None:
    fmt = codec.get_format(fmt_name)
    tool = _tool("f", {"n": {"type": "integer", "minimum": low, "maximum": low + span}})
    grammars = _quiet_grammars(fmt, [tool], tool_choice="required")
    (all_accept if low <= value <= low + span else all_reject)(grammars, _reply(fmt, _call("f", n=value)))


@pytest.mark.parametrize(("minimum", "value", "ok"), [(0, 0, True), (0, -1, False), (1, 0, False), (1, 12, True)])
def test_a_lone_minimum_of_0_or_1_bounds_integers(minimum: int, value: int, ok: bool) -> None:
    fmt = codec.get_format("hermes")
    tool = _tool("f", {"n": {"type": "integer", "minimum": minimum}})
    with warnings.catch_warnings():
        warnings.simplefilter("error", GrammarWarning)  # expressed: no warning
        grammars = Grammars(fmt, [tool], tool_choice="required")
    (all_accept if ok else all_reject)(grammars, _reply(fmt, _call("f", n=value)))


# ---------------------------------------------------------------------------- warnings


def _warnings_of(call: Any) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, GrammarWarning)]


WIDE = [
    _tool(
        "book",
        {
            "when": {"type": "string", "format": "date-time"},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "seats": {"type": "integer", "minimum": 1, "maximum": 1000},
            "price": {"type": "number", "minimum": 0},
            "names": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 9},
            "ref": {"$ref": "#/$defs/x"},
            "kind": {"type": "string", "enum": ["a", "b"], "pattern": "^a$"},
        },
        required=["when"],
    )
]


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_keywords_left_out_are_named_once_with_their_place(fmt_name: str) -> None:
    fmt = codec.get_format(fmt_name)
    for dialect in export.DIALECTS:
        messages = _warnings_of(lambda d=dialect: fmt.grammar(WIDE, dialect=d))
        assert len(messages) == 1, messages
        message = messages[0]
        for where in ("book.when: format", "book.seats: minimum, maximum", "book.price: minimum", "book.ref: $ref"):
            assert where in message, message
        assert "book.names[]: maxLength" in message
        assert "book.kind" not in message  # an enum is its values
        # written out, but in qwen3_coder_official's str() lists, which are not constrained
        assert ("book.names: maxItems" in message) == (
            fmt.wire.family == "xml_params" and fmt.wire.values == "python_str"
        ), message
        # JSON strings hold the pattern; gemma4's <|"|> strings, raw and single-quoted string arguments do not.
        raw = reply_owner(fmt_name) in (
            *("gemma4", "glm4_6", "qwen3_coder", "qwen3_coder_official", "deepseek_pythonic", "minimax_m2", "lfm2"),
            *("deepseek_v3_2", "llama4_pythonic", "functiongemma", "seed_oss"),
        )
        assert ("book.code: pattern" in message) == raw, message


def test_no_warning_when_every_keyword_is_expressed() -> None:
    tool = _tool("f", {"n": {"type": "integer", "minimum": 1, "maximum": 7}, "xs": {"type": "array", "minItems": 1}})
    fmt = codec.get_format("hermes")
    assert _warnings_of(lambda: fmt.grammar([tool])) == []
    assert _warnings_of(lambda: fmt.request_fields([tool], server="llama.cpp")) == []


@pytest.mark.parametrize("fmt_name", ["hermes", "gemma4"])
def test_the_warning_points_at_the_caller(fmt_name: str) -> None:
    fmt = codec.get_format(fmt_name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fmt.grammar(WIDE)
        fmt.request_fields(WIDE, server="llama.cpp")
        fmt.request_fields(WIDE, server="vllm", tool_choice="required")
        fmt.structural_tag(WIDE)  # gemma4: codec's grammar contents; hermes: xgrammar reads the schema
    assert [w.filename for w in caught] == [__file__] * (4 if fmt_name == "gemma4" else 3)
