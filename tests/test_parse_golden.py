"""Golden reply cases of every format that has a ``tests/golden/<name>/`` folder.

Each case is parsed whole, one character at a time and in random chunkings (plus one with empty
chunks); every way must give exactly the same ``ParseResult`` (issues included), equal to the
case's expected values; the stream events must be append-only and rebuild the OpenAI message;
strict mode must raise ``ParseError`` exactly for the cases that expect issues.
"""

from __future__ import annotations

import pytest
from harness import (
    ASPECTS,
    GOLDEN_DIR,
    GoldenCase,
    Run,
    assert_append_only,
    assert_events_rebuild,
    assert_issue_positions,
    chunkings,
    golden_formats,
    load_golden,
    parse_char_by_char,
    parse_chunked,
    parse_whole,
    run_chunks,
    summary,
)

import codec

CASES: list[GoldenCase] = [case for name in golden_formats() for case in load_golden(name)]


def cases_for(aspect: str) -> list[pytest.ParameterSet]:
    """The golden cases as test parameters, marked xfail (strict) where the case says the aspect fails."""
    assert aspect in ASPECTS
    params = []
    for case in CASES:
        reason = case.xfail.get(aspect)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(case, id=case.id, marks=marks))
    return params


def streamed_runs(case: GoldenCase) -> dict[str, Run]:
    """The case's reply fed one character at a time, with empty chunks, and in 5 random chunkings."""
    fmt = codec.get_format(case.format)
    runs = {
        "char-by-char": parse_char_by_char(fmt, case.text, **case.kwargs()),
        "with-empty-chunks": parse_chunked(fmt, case.text, [0, 3, 0, 1, 7], **case.kwargs()),
    }
    for n, chunks in enumerate(chunkings(case.text, seed=case.id, count=5)):
        runs[f"random-{n}"] = run_chunks(fmt, chunks, **case.kwargs())
    return runs


def test_golden_folders_are_formats() -> None:
    folders = sorted(p.name for p in GOLDEN_DIR.iterdir() if p.is_dir())
    assert folders, "no golden cases at all"
    assert set(folders) <= set(codec.formats()), "a golden folder names no registered format"
    for name in folders:
        assert load_golden(name), f"golden/{name} holds no case"


@pytest.mark.parametrize("case", cases_for("expected"))
def test_whole_parse_is_expected(case: GoldenCase) -> None:
    fmt = codec.get_format(case.format)
    result = fmt.parse(case.text, **case.kwargs())
    assert summary(result) == case.expected
    if fmt.kit().reply_ids({}) is None:  # the stream's call_id made them, or the call object wrote its own
        ids = [call.id for call in result.tool_calls]
        assert all(found == fmt.default_call_id(i) or f'"{found}"' in case.text for i, found in enumerate(ids))
    else:  # the ids the reply writes (which hold the calls' names where the spec's form does), or the stream's
        assert all(
            call.function.name in call.id or call.id in case.text or call.id == fmt.default_call_id(i)
            for i, call in enumerate(result.tool_calls)
        )


@pytest.mark.parametrize("case", cases_for("streaming"))
def test_every_chunking_gives_the_whole_result(case: GoldenCase) -> None:
    fmt = codec.get_format(case.format)
    whole = fmt.parse(case.text, **case.kwargs())
    assert parse_whole(fmt, case.text, **case.kwargs()).result == whole
    for how, run in streamed_runs(case).items():
        assert "".join(run.chunks) == case.text
        assert run.result == whole, f"{how} ({run.chunks!r}) differs from the whole parse"


@pytest.mark.parametrize("case", cases_for("events"))
def test_events_are_append_only_and_rebuild_the_message(case: GoldenCase) -> None:
    fmt = codec.get_format(case.format)
    runs = {"whole": parse_whole(fmt, case.text, **case.kwargs()), **streamed_runs(case)}
    for how, run in runs.items():
        try:
            assert_append_only(run.events, run.result)
            assert_events_rebuild(run.events, run.result)
        except AssertionError as exc:
            raise AssertionError(f"{how} ({run.chunks!r}): {exc}") from exc


@pytest.mark.parametrize("case", cases_for("positions"))
def test_issue_positions_point_into_the_reply(case: GoldenCase) -> None:
    fmt = codec.get_format(case.format)
    assert_issue_positions(case.text, fmt.parse(case.text, **case.kwargs()))


@pytest.mark.parametrize("case", cases_for("strict"))
def test_strict_raises_exactly_when_issues_are_expected(case: GoldenCase) -> None:
    fmt = codec.get_format(case.format)
    if case.has_issues:
        with pytest.raises(codec.ParseError) as whole:
            fmt.parse(case.text, strict=True, **case.kwargs())
        with pytest.raises(codec.ParseError) as streamed:
            parse_char_by_char(fmt, case.text, strict=True, **case.kwargs())
        for exc in (whole.value, streamed.value):
            assert 0 <= exc.pos <= len(case.text)
            assert exc.line == case.text.count("\n", 0, exc.pos) + 1
            assert exc.column == exc.pos - (case.text.rfind("\n", 0, exc.pos) + 1) + 1
    else:
        lenient = fmt.parse(case.text, **case.kwargs())
        assert fmt.parse(case.text, strict=True, **case.kwargs()) == lenient
        assert parse_char_by_char(fmt, case.text, strict=True, **case.kwargs()).result == lenient
