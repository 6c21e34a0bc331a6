"""The issues one reply keeps: notes and repairs up to ``MAX_ISSUES``, then one summary; every
damaged issue, so that ``intact_calls`` and the damaged marks stay right past the cap."""

from __future__ import annotations

import pytest
from harness import parse_chunked

import codec
from codec.sink import MAX_ISSUES

#: A qwen3_coder call laid out with indented tags: two repairs (``indented_markup``, ``value_indentation``).
INDENTED = "  <tool_call>\n  <function=f>\n  <parameter=a>\n  1\n  </parameter>\n  </function>\n  </tool_call>\n"
#: A hermes call whose arguments repeat a key: damaged (``duplicate_argument``).
DUPLICATE = '<tool_call>\n{"name": "g", "arguments": {"a": 1, "a": 2}}\n</tool_call>\n'


def _kinds(result: codec.ParseResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for issue in result.issues:
        counts[issue.kind] = counts.get(issue.kind, 0) + 1
    return counts


def test_repairs_past_the_cap_are_counted_in_one_issue() -> None:
    calls = MAX_ISSUES  # two repairs each: twice the cap
    result = codec.get_format("qwen3_coder").parse(INDENTED * calls)
    assert len(result.tool_calls) == calls
    assert len(result.issues) == MAX_ISSUES + 1
    summary = result.issues[-1]
    assert summary.kind == "issues_dropped" and summary.severity == "note" and summary.call_index is None
    assert summary.message.startswith(f"{calls} more notes and repairs not kept")
    assert f"{calls // 2} indented_markup, {calls // 2} value_indentation" in summary.message
    first_dropped = result.issues[MAX_ISSUES - 1].pos
    assert summary.pos > first_dropped
    assert result.intact_calls == result.tool_calls


@pytest.mark.parametrize("chunk", [None, 7])
def test_damaged_calls_stay_marked_past_the_cap(chunk: int | None) -> None:
    """Damaged issues are never dropped: a damaged call past the cap is still left out of intact_calls."""
    # hermes: a call without its closer is repaired (missing_closer), one with a repeated key damaged.
    repaired = '<tool_call>\n{"name": "f", "arguments": {}}\n'
    text = repaired * (MAX_ISSUES + 10) + DUPLICATE + repaired * 5
    fmt = codec.get_format("hermes")
    result = fmt.parse(text) if chunk is None else parse_chunked(fmt, text, chunk).result
    damaged = MAX_ISSUES + 10
    assert result.damaged_indices == frozenset({damaged})
    assert len(result.intact_calls) == len(result.tool_calls) - 1
    kinds = _kinds(result)
    assert kinds["duplicate_argument"] == 1 and kinds["missing_closer"] == MAX_ISSUES and kinds["issues_dropped"] == 1
    if chunk is not None:
        assert result == fmt.parse(text)


def test_a_reply_under_the_cap_has_no_summary() -> None:
    result = codec.get_format("qwen3_coder").parse(INDENTED * 3)
    assert "issues_dropped" not in _kinds(result) and len(result.issues) == 6
