"""The round trip, for every format: ``parse(render_reply(message), tools)`` gives back the message.

Each format's profile (``tests/formats/<name>.py``) says which generated assistant messages it
carries, with and without tools (``RoundTrip.messages``: what it cannot carry is left out
explicitly, and the format's own tests check that each exclusion is real), and what parsing gives
back (``RoundTrip.expected``: the content, reasoning and calls the format keeps, values typed as the
format types them). The parse must give exactly that, with no issue, ids ``call_0``, ``call_1``...,
the values' types (``1`` / ``1.0`` / ``True``, ``-0.0``, big ints) and, where the format keeps it,
the arguments' key order; and the reply streamed in random chunkings (one character at a time
among them) must give the same result, with append-only events that rebuild the message.
"""

from __future__ import annotations

from functools import cache

import pytest
from formats import Message, RoundTrip, Tools, profile, variant_params
from harness import examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec import testing


def round_trip(name: str, variant: str) -> RoundTrip:
    found = profile(name)
    return found.round_trip_variants[variant] if variant else found.round_trip


@cache
def _messages(name: str, variant: str, with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return round_trip(name, variant).messages(with_tools)


_sizes = st.one_of(st.just([1]), st.lists(st.integers(1, 16), min_size=1, max_size=8))


@pytest.mark.parametrize("with_tools", [True, False], ids=["with_tools", "without_tools"])
@pytest.mark.parametrize(("name", "variant"), variant_params("round_trip"))
@examples(100)
@given(data=st.data())
def test_round_trip(name: str, variant: str, with_tools: bool, data: st.DataObject) -> None:
    spec = round_trip(name, variant)
    fmt = spec.fmt or codec.get_format(name)
    message, tools = data.draw(_messages(name, variant, with_tools), label="message")
    testing.assert_round_trip(
        fmt,
        message,
        tools,
        expected=spec.expected(message, tools),
        keeps_key_order=spec.keeps_key_order,
        chunk_sizes=data.draw(_sizes, label="sizes"),
        char_by_char=False,
    )
