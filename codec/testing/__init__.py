"""Round-trip testing for a project's own chat templates: hypothesis strategies and assertions.

Install with ``pip install ".[testing]"`` from a checkout (it needs hypothesis; ``import codec`` never does).
In a test suite::

    from hypothesis import given
    import codec
    from codec import testing

    @given(testing.conversations(tools=testing.tools()))
    def test_my_template_renders_like_hermes(conversation):
        testing.assert_renders_like(MY_TEMPLATE, codec.get_format("hermes"), conversation)

:func:`conversations` and :func:`tool_calls` (and the smaller strategies they are built from, in
:mod:`codec.testing.strategies`) draw OpenAI-style conversations, tools and calls;
:func:`assert_renders_like`, :func:`assert_round_trip` and :func:`assert_stream_matches_parse`
fail with the first difference. :func:`check_template` runs all the checks of ``codec check``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codec.testing.assertions import (
    assert_append_only,
    assert_events_rebuild,
    assert_renders_like,
    assert_round_trip,
    assert_stream_matches_parse,
    render_outcomes,
    text_difference,
)
from codec.testing.strategies import (
    arguments,
    conversations,
    json_values,
    names,
    object_schemas,
    plain_texts,
    rich_conversations,
    schemas,
    texts,
    tool,
    tool_calls,
    tools,
    values,
    variables,
)

if TYPE_CHECKING:
    from codec.format import Format
    from codec.testing.check import Report

__all__ = [
    "arguments",
    "assert_append_only",
    "assert_events_rebuild",
    "assert_renders_like",
    "assert_round_trip",
    "assert_stream_matches_parse",
    "check_template",
    "conversations",
    "json_values",
    "names",
    "object_schemas",
    "plain_texts",
    "render_outcomes",
    "rich_conversations",
    "schemas",
    "text_difference",
    "texts",
    "tool",
    "tool_calls",
    "tools",
    "values",
    "variables",
]


def check_template(template: str, fmt: Format, **options: Any) -> Report:
    """:func:`codec.testing.check.check_template`: the four checks of ``codec check``."""
    from codec.testing.check import check_template as run

    return run(template, fmt, **options)
