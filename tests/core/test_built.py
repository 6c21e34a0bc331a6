"""``codec.models.built``, the unvalidated constructor of the parse path, makes what ``model_construct`` makes."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from codec import get_format
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


def _calls(count: int) -> list[ToolCall]:
    """Calls a parser made: ``count`` of them, from one reply."""
    reply = "[" + ", ".join(f"f(a={i})" for i in range(count)) + "]"
    return list(get_format("deepseek_pythonic").parse(reply).tool_calls)


def test_built_models_share_their_field_names_and_empty_extras() -> None:
    # What halves a parsed call's memory: nothing per call but its values.
    first, second = _calls(2)
    assert first.model_fields_set is second.model_fields_set
    assert first.function.model_fields_set is second.function.model_fields_set
    assert first.model_extra is second.model_extra
    assert first.model_fields_set == {"id", "type", "function"}


@pytest.mark.parametrize("how", ["extra", "field", "copy", "pickle"])
def test_a_change_to_one_built_model_is_its_own(how: str) -> None:
    calls = _calls(3)
    if how == "pickle":  # models unpickled together must not share a set or extras dict
        calls = pickle.loads(pickle.dumps(calls))
    if how == "copy":
        calls[0] = calls[0].model_copy(update={"custom": 1})
    elif how == "field":
        calls[0].id = "call_x"
        calls[0].custom = 1
    else:
        calls[0].custom = 1
    assert calls[0].model_extra == {"custom": 1}
    assert "custom" in calls[0].model_fields_set
    for other in calls[1:]:
        assert other.model_extra == {}
        assert other.model_fields_set == {"id", "type", "function"}
        assert other.model_dump() == {"id": other.id, "type": "function", "function": other.function.model_dump()}
    fresh = _calls(1)[0]
    assert fresh.model_extra == {} and fresh.model_fields_set == {"id", "type", "function"}


def test_built_models_pickle_equal() -> None:
    calls = _calls(3)
    again = pickle.loads(pickle.dumps(calls))
    assert again == calls
    assert [c.model_dump_json() for c in again] == [c.model_dump_json() for c in calls]
