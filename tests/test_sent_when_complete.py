"""A call is sent in the delta that completes it, not when the next text (or the end) arrives.

A server relays each delta's events at once: a call held back until more text comes is latency
the user waits for, and a call that arrives whole in the last delta before the stream's end is
sent only at ``close()``, where some servers never look. For every golden reply whose calls each
end with its format's call closer (one closer per call, none damaged), the reply is fed in
pieces that end right after each closer: after the k-th piece, k calls have ended. Replies that
are repaired (a closer inserted) are left out: the repair may wait for what follows.
"""

from __future__ import annotations

from typing import Any

import pytest
from formats import PROFILES
from harness import GoldenCase, golden_formats, load_golden

import codec
from codec.models import TextDelta, ToolCallEnd

#: Formats whose call closer does not end a call by itself, and why (the test names them, so that
#: a format that starts meeting the contract is noticed).
WAITS = {
    # A bare Python list: ``)`` ends a call inside it, but whether the list is calls or prose is
    # known only where it ends (the rest of the reply, the stop token).
    "deepseek_pythonic": "a bare list's calls are known to be calls only at its end",
    # Calls in a list are built when the list closes: a rejected list is recovered whole.
    "gemma3_tool_code": "a list's calls are sent when the list closes, not at each call's ')'",
    # Bare call objects are calls only where they are the whole reply: known at the stop token or the end.
    "llama3_1": "bare calls are known to be the whole reply only at the stop token or the end",
    "lfm2": "a list's calls are sent when the list closes, not at each call's ')'",
    "llama4_pythonic": "a bare list's calls are known to be calls only at its end",
}


def _cases() -> list[Any]:
    params = []
    for name in golden_formats():
        if name not in PROFILES or name in WAITS:
            continue
        closer = PROFILES[name].call_closer
        for case in load_golden(name):
            if case.xfail or not closer:
                continue
            # The case's expected parse, which the golden tests hold the parse to (a case with an
            # xfail is left out above): no parse at collection time, in every worker.
            calls = len(case.expected["tool_calls"])
            if calls and case.text.count(closer) == calls and not case.expected["issues"]:
                params.append(pytest.param(case, closer, id=case.id))
    return params


@pytest.mark.parametrize("alone", [False, True], ids=["with_the_call", "closer_alone"])
@pytest.mark.parametrize(("case", "closer"), _cases())
def test_each_call_is_sent_in_the_delta_that_closes_it(case: GoldenCase, closer: str, alone: bool) -> None:
    """Also where the closer is a delta of its own (a token, as servers feed it), after text the
    stream may still hold back (the line break before it)."""
    stream = codec.get_format(case.format).stream(**case.kwargs())
    ends, start = 0, 0
    for k in range(case.text.count(closer)):
        at = case.text.index(closer, start)
        end = at + len(closer)
        if alone:
            ends += sum(isinstance(e, ToolCallEnd) for e in stream.feed(case.text[start:at]))
            start = at
        ends += sum(isinstance(e, ToolCallEnd) for e in stream.feed(case.text[start:end]))
        assert ends == k + 1, f"after the closer of call {k} (offset {end}), {ends} calls were sent"
        start = end
    stream.feed(case.text[start:])
    stream.close()


def test_the_formats_that_wait_are_registered() -> None:
    assert set(WAITS) <= set(codec.formats())


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_text_is_held_back_only_as_far_as_a_marker_could_start(name: str) -> None:
    """Content is released as soon as it cannot be the start of a marker: after plain text and the
    start of any of the format's markers, all the plain text has been sent, whatever the holdback:
    a ``<`` that no marker starts with (``< 2``) is not held."""
    fmt, profile = codec.get_format(name), PROFILES[name]
    plain = profile.plain_text + " (1 < 2) "
    for prefix in sorted({marker[:k] for marker in profile.markers for k in range(1, len(marker))}):
        stream = fmt.stream(prompt="")
        sent = "".join(e.text for e in stream.feed(plain + prefix) if isinstance(e, TextDelta))
        assert sent.startswith(plain), f"after {prefix!r}, {len(plain) - len(sent)} characters of plain text held back"
