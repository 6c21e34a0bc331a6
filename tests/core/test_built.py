"""``codec.models.built``, the unvalidated constructor of the parse path, makes what ``model_construct`` makes."""

from __future__ import annotations

from typing import Any

import pytest

from codec.models import FunctionCall, Issue, ParseResult, ToolCall, built

_CALL = {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2.5, None]}}


@pytest.mark.parametrize(
    ("cls", "fields"),
    [
        (FunctionCall, _CALL),
        (ToolCall, {"id": "call_0", "type": "function", "function": FunctionCall(**_CALL)}),
        (
            ParseResult,
            {
                "content": "Hi.",
                "reasoning": "",
                "tool_calls": [ToolCall(id="call_0", type="function", function=FunctionCall(**_CALL))],
                "issues": [Issue(kind="schema", message="m", pos=3, line=1, column=4)],
            },
        ),
    ],
)
def test_built_is_model_construct(cls: Any, fields: dict[str, Any]) -> None:
    made, constructed = built(cls, **fields), cls.model_construct(**fields)
    assert type(made) is cls
    assert made == constructed and constructed == made
    assert made.model_dump() == constructed.model_dump()
    assert made.model_dump(mode="json") == constructed.model_dump(mode="json")
    assert made.model_dump_json() == constructed.model_dump_json()
    assert made.model_fields_set == constructed.model_fields_set == set(fields)
    assert repr(made) == repr(constructed)
    assert made.model_copy(update={}) == constructed
    assert cls.model_validate(made.model_dump()) == cls.model_validate(constructed.model_dump())
    made.custom = 1  # extra="allow": extras can be set as on any instance
    assert made.model_extra == {"custom": 1}
