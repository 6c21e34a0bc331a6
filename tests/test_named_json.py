"""The ``named_json`` family beyond its built-in members: specs in Mistral's shapes, which a member
sets with spec fields alone (no section, no call closer, an optional written id that is kept)."""

from __future__ import annotations

from codec import wire
from codec.testing.assertions import assert_round_trip, assert_stream_matches_parse

WITH_IDS = wire.reply_format(
    wire.WireSpec(
        "named_json", call=("[TOOL_CALLS]", ""), name=("", "[ARGS]"), call_id=("[CALL_ID]", "{id}"), stop="</s>"
    ),
    "named_json_with_ids",
)
WITHOUT_IDS = wire.reply_format(
    wire.WireSpec(
        "named_json", call=("[TOOL_CALLS]", ""), name=("", "[ARGS]"), stop="</s>", reasoning=("[THINK]", "[/THINK]")
    ),
    "named_json_without_ids",
)


def test_a_call_without_a_closer_ends_with_its_arguments_and_keeps_its_written_id() -> None:
    reply = (
        '[TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]{"city": "Paris"}'
        "[TOOL_CALLS]get_time[CALL_ID]q1w2e3r4t[ARGS]{}</s>"
    )
    result = WITH_IDS.parse(reply)
    assert [(c.id, c.function.name, c.function.arguments) for c in result.tool_calls] == [
        ("abc123xyz", "get_weather", {"city": "Paris"}),
        ("q1w2e3r4t", "get_time", {}),
    ]
    assert result.issues == [] and result.content == ""
    assert_stream_matches_parse(WITH_IDS, reply)


def test_a_written_id_survives_the_round_trip() -> None:
    call = {"id": "abc123xyz", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    message = {"role": "assistant", "content": "Hi", "tool_calls": [call]}
    assert WITH_IDS.render_reply(message) == 'Hi[TOOL_CALLS]f[CALL_ID]abc123xyz[ARGS]{"a": 1}</s>'
    assert [c.id for c in assert_round_trip(WITH_IDS, message).tool_calls] == ["abc123xyz"]


def test_a_member_that_writes_no_ids_gets_the_streams() -> None:
    result = WITHOUT_IDS.parse('[THINK]hmm[/THINK]Sure[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}</s>')
    assert (result.reasoning, result.content) == ("hmm", "Sure")
    assert [(c.id, c.function.name) for c in result.tool_calls] == [("call_0", "get_weather")]
    assert result.issues == []
