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

import json
from functools import cache
from typing import Any

import pytest
from formats import Message, RoundTrip, Tools, profile, variant_params
from harness import assert_streams_like, examples, expected_message, parse_chunked, summary
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec.models import dump_arguments


def round_trip(name: str, variant: str) -> RoundTrip:
    found = profile(name)
    return found.round_trip_variants[variant] if variant else found.round_trip


@cache
def _messages(name: str, variant: str, with_tools: bool) -> st.SearchStrategy[tuple[Message, Tools]]:
    return round_trip(name, variant).messages(with_tools)


def typed(value: Any) -> str:
    """``value`` as JSON with sorted keys: equal only if the types agree too (1 / 1.0 / True, -0.0, big ints)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _arguments_decoded(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI message with each call's ``arguments`` string decoded (so that key order does not count)."""
    calls = [
        {**call, "function": {**call["function"], "arguments": json.loads(call["function"]["arguments"])}}
        for call in message.get("tool_calls") or []
    ]
    return {**message, "tool_calls": calls} if calls else message


_sizes = st.one_of(st.just([1]), st.lists(st.integers(1, 16), min_size=1, max_size=8))


@pytest.mark.parametrize("with_tools", [True, False], ids=["with_tools", "without_tools"])
@pytest.mark.parametrize(("name", "variant"), variant_params("round_trip"))
@examples(100)
@given(data=st.data())
def test_round_trip(name: str, variant: str, with_tools: bool, data: st.DataObject) -> None:
    spec = round_trip(name, variant)
    fmt = spec.fmt or codec.get_format(name)
    message, tools = data.draw(_messages(name, variant, with_tools), label="message")
    reply = fmt.render_reply(message)
    result, prompt = fmt.parse(reply, tools=tools), None
    if any(issue.kind == "reasoning_without_opener" for issue in result.issues):
        # Without a prompt, a reasoning closer before any call or stop token says that the prompt
        # opened reasoning (documented); told that it opened nothing, the reply reads as written.
        close = fmt.syntax().reasoning_close
        assert close is not None and close in (message.get("content") or "")
        result, prompt = fmt.parse(reply, tools=tools, prompt=""), ""
    want = spec.expected(message, tools)
    assert summary(result) == {**want, "issues": []}
    assert [c.id for c in result.tool_calls] == [f"call_{i}" for i in range(len(want["tool_calls"]))]
    for got, call in zip(result.tool_calls, want["tool_calls"], strict=True):
        assert typed(got.function.arguments) == typed(call["arguments"])
        if spec.keeps_key_order:
            assert dump_arguments(got.function.arguments) == dump_arguments(call["arguments"])
    dumped, wanted = result.to_message().model_dump(mode="json"), expected_message(want)
    if not spec.keeps_key_order:  # the arguments strings, as JSON values
        dumped, wanted = _arguments_decoded(dumped), _arguments_decoded(wanted)
    assert dumped == wanted
    run = parse_chunked(fmt, reply, data.draw(_sizes, label="sizes"), tools=tools, prompt=prompt)
    assert_streams_like(run, result)
