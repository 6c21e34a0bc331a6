"""Many broken call lists in a row (``"[f(a=[1,})] " * n``) in linear work, the copying counted.

A bare list has no closing marker, so a rejected one was handed the rest of the reply to recover
from, which was read again after it: every broken list copied the rest of the reply (2 MB took
minutes). The stream's ``work`` counts the text copied out for recovery and re-read, so a copy
per block shows up as work that grows with the square of the length; here it must grow linearly.
"""

from __future__ import annotations

import pytest
from harness import CHUNK, WHOLE_WORK, WORK_SLACK, parse_chunked, parse_whole

import codec
from codec.wire.call_list import CallListBuilder

#: The call-list formats, bare lists and fenced ones.
FORMATS = ("deepseek_pythonic", "gemma3_tool_code")
BROKEN = "[f(a=[1,})] "


def _work(name: str, n: int, chunk: int | None = None) -> int:
    fmt = codec.get_format(name)
    text = BROKEN * n
    run = parse_whole(fmt, text) if chunk is None else parse_chunked(fmt, text, chunk)
    assert len(run.result.issues) == n  # each list is reported, kept as content
    assert run.result.content == text
    return run.work


@pytest.mark.parametrize("chunk", [None, CHUNK])
@pytest.mark.parametrize("name", FORMATS)
def test_broken_lists_in_a_row_take_linear_work(name: str, chunk: int | None) -> None:
    small, big = _work(name, 100, chunk), _work(name, 400, chunk)
    # (4x the lists: about 4x the work; one copy of the rest per list made it 16x.)
    assert big <= 4.25 * small + WORK_SLACK, f"work {small} for 100 lists, {big} for 400: it grows faster than the text"
    assert big <= 2 * WHOLE_WORK * len(BROKEN) * 400 + WORK_SLACK


def test_the_work_counter_sees_the_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard for the test above: handed the rest of the reply again (no reach), the broken lists
    cost work quadratic in their number."""
    monkeypatch.setattr(CallListBuilder, "reach", lambda self, text, start: None)
    small, big = _work("deepseek_pythonic", 100), _work("deepseek_pythonic", 400)
    assert big > 8 * small
