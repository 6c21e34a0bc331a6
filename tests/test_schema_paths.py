"""The shortcuts of the per-parse tool checks give what their general paths give: a property's
schema of one type name checked inline (``codec.schema._object_violations``) against the value
checked alone, and tools in a list read at once (``codec._whole_reply.tools_by_name``) against the
same tools read by :func:`codec.tools.normalize_tools` (a tuple of them), and a surrogate found by
encoding (``has_surrogate``) against the regex that finds it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from harness import examples
from hypothesis import given
from hypothesis import strategies as st

from codec._whole_reply import SURROGATE, has_surrogate, tools_by_name
from codec.errors import ToolError
from codec.schema import TYPE_NAMES, violations

#: JSON-ish values of every type a check tells apart (bools, ints, integral floats, None...).
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
TYPE_SPELLINGS = st.sampled_from([*TYPE_NAMES, "String", " int ", "unknown", "Object"])


#: A value of each kind the type checks tell apart.
KINDS = [None, True, False, 0, 3, -1, 2.0, 2.5, "", "x", [], [1], {}, {"a": 1}]


@pytest.mark.parametrize("declared", [*TYPE_NAMES, "String", " int ", "unknown", "Object"])
def test_a_one_type_property_is_checked_as_the_value_alone(declared: str) -> None:
    schema = {"type": "object", "properties": {"key": {"type": declared}}}
    for value in KINDS:
        for path in ("", "options"):
            alone = violations(value, {"type": declared}, f"{path}.key" if path else "key")
            assert violations({"key": value}, schema, path) == alone, value


@examples(300)
@given(value=VALUES, declared=TYPE_SPELLINGS)
def test_a_one_type_property_holding_any_value_is_checked_as_the_value_alone(value: Any, declared: str) -> None:
    schema = {"type": "object", "properties": {"key": {"type": declared}}}
    assert violations({"key": value}, schema) == violations(value, {"type": declared}, "key")


@examples(100)
@given(
    values=st.dictionaries(st.sampled_from(["a", "b", "c"]), VALUES, max_size=3),
    declared=st.lists(TYPE_SPELLINGS, min_size=3, max_size=3),
    extra=st.sampled_from([True, False, {"type": "string"}]),
)
def test_an_object_of_one_type_properties_reports_each_problem(values: Any, declared: list[str], extra: Any) -> None:
    """Every property's problem, in the value's order, and the unknown ones as additionalProperties says."""
    properties = {key: {"type": kind} for key, kind in zip(["a", "b"], declared, strict=False)}
    schema = {"type": "object", "properties": properties, "additionalProperties": extra}
    expected: list[str] = []
    for key, item in values.items():
        if key in properties:
            expected += violations(item, properties[key], key)
        elif extra is False:
            expected.append(f"{key}: unknown argument")
        elif isinstance(extra, dict):
            expected += violations(item, extra, key)
    assert violations(values, schema) == expected


_FUNCTION = {"name": "f", "parameters": {"type": "object"}}
TOOLS = st.sampled_from(
    [
        {"type": "function", "function": _FUNCTION},
        {"function": {"name": "g"}},
        {"type": "function", "function": {"name": ""}},
        {"type": "function", "function": {"name": 3}},
        {"type": "function", "function": {"description": "no name"}},
        {"type": "web_search", "function": _FUNCTION},
        {"type": "function", "function": "f"},
        {"type": "function", "name": "flat", "parameters": {}},
        {"name": "bare", "parameters": {}},
        {"name": "anthropic", "input_schema": {}},
        {"foo": 1},
        "not a tool",
    ]
)


@examples(200)
@given(tools=st.lists(TOOLS, max_size=4))
def test_tools_in_a_list_are_read_as_normalize_tools_reads_them(tools: list[Any]) -> None:
    try:
        expected: Any = tools_by_name(tuple(tools))
    except (ToolError, TypeError) as error:
        with pytest.raises(type(error), match=re.escape(str(error))):
            tools_by_name(tools)
        return
    assert tools_by_name(tools) == expected


@examples(200)
@given(text=st.text(alphabet=st.characters(codec="utf-8") | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)))
def test_a_surrogate_is_found_as_the_regex_finds_it(text: str) -> None:
    assert has_surrogate(text) == (SURROGATE.search(text) is not None)
    assert has_surrogate("abc" + text + "\uff5c") == (SURROGATE.search(text) is not None)
