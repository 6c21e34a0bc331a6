"""``hermes3`` render parity on conversations fitted to its template (``formats.hermes3.tool_conversations``).

The generic parity test (``test_render.py``) runs the seeds' strategies, on which this template mostly
raises (no tools, no description, ``null`` types, content parts); here most conversations render, and
each must render as the template does, or fail with its error. The template is a test fixture of
``../shared/templates``: without it the test is skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from formats.hermes3 import tool_conversations
from harness import examples
from hypothesis import given
from test_render import render_both

import codec
from codec.errors import RenderError

TEMPLATE = Path(__file__).resolve().parents[1].parent / "shared" / "templates" / "hermes3-tool-use.jinja"
FMT = codec.get_format("hermes3")


def template() -> str:
    if not TEMPLATE.is_file():
        pytest.skip(f"template {TEMPLATE} is not available (../shared is absent)")
    return TEMPLATE.read_text(encoding="utf-8")


@examples(910)  # 300 conversations in the default profile, 1,820 in the deep one
@given(case=tool_conversations())
def test_render_matches_the_template(case: dict[str, Any]) -> None:
    ours, ref = render_both(FMT, template(), case)
    assert ours == ref


TOOL = {"type": "function", "function": {"name": "f", "description": "D", "parameters": {"type": "object"}}}
USER = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("messages", "tools", "error"),
    [
        ([USER], None, "'NoneType' object is not iterable"),
        (
            [USER],
            [{"type": "function", "function": {"name": "f", "parameters": {}}}],
            "'dict object' has no attribute 'description'",
        ),
        ([USER], [{"name": "f", "description": "D"}], "'dict object' has no attribute 'parameters'"),
        ([{"role": "user"}], [], "'dict object' has no attribute 'content'"),
        ([{"role": "user", "content": [{"type": "text", "text": "x"}]}], [], 'not "list"'),
    ],
)
def test_errors_are_the_templates(messages: list[Any], tools: Any, error: str) -> None:
    with pytest.raises(RenderError, match=error):
        FMT.render(messages, tools)
    _ours, ref = render_both(
        FMT, template(), {"messages": messages, "tools": tools, "add_generation_prompt": False, "variables": {}}
    )
    assert error in ref


@pytest.mark.parametrize(
    ("schema", "written"),
    [
        ({"type": "string"}, "str"),
        ({"type": "number"}, "float"),
        ({"type": "integer"}, "int"),
        ({"type": "boolean"}, "bool"),
        ({"type": "array", "items": {"type": "string"}}, "list[Union[]]"),
        ({"type": "object"}, "dict"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "dict[str, int]"),
        ({"type": "object", "additionalProperties": False}, "dict[str, Union[]]"),
        ({"type": ["string", "integer"]}, "Union[str,int]"),
        ({"anyOf": [{"type": "string"}]}, "Union[]"),
        ({"type": 5}, "Any"),
    ],
)
def test_python_style_types(schema: dict[str, Any], written: str) -> None:
    tool = {"name": "f", "description": "D", "parameters": {"type": "object", "properties": {"a": schema}}}
    prompt = FMT.render([USER], [tool])
    assert f'"description": "f(a: {written}) - D\\n\\n    Args:\\n        a({written}): ", ' in prompt.replace(
        "\n", "\\n"
    )


def test_an_unknown_type_name_fails_as_the_template_does() -> None:
    tool = {"name": "f", "description": "D", "parameters": {"properties": {"a": {"type": ["string", "null"]}}}}
    with pytest.raises(RenderError, match="maximum recursion depth exceeded"):
        FMT.render([USER], [tool])
