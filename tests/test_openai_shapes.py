"""``codec.openai``: chat.completion.chunk objects and Responses API events, checked against the
``openai`` package's own types (``ChatCompletionChunk``, the ``ResponseStreamEvent`` union,
``Response``) on every golden reply, whole and in random chunkings, and on generated replies.

What a client assembles from the shapes must be what ``fmt.parse`` gives: the concatenated deltas
equal the ``.done`` values, and those equal the parse result's content, reasoning and calls.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import pytest
from formats import profile
from harness import GoldenCase, deep, examples, golden_formats, load_golden, reply_formats, split
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec.models import Event, ParseResult
from codec.openai import ChatChunks, ResponsesEvents, finish_reason, reasoning_as

openai = pytest.importorskip("openai", reason="the openai package (in the test extra) holds the types checked here")
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessage  # noqa: E402
from openai.types.responses import Response, ResponseStreamEvent  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

EVENT = TypeAdapter(ResponseStreamEvent)
CASES = [case for name in golden_formats() for case in load_golden(name)]


def streamed(fmt: codec.Format, chunks: list[str], **kwargs: Any) -> tuple[list[list[Event]], ParseResult]:
    """What each chunk (and the close) gives, and the stream's result."""
    stream = fmt.stream(**kwargs)
    batches = [stream.feed(chunk) for chunk in chunks]
    batches.append(stream.close())
    return batches, stream.result


def responses_events(batches: list[list[Event]], result: ParseResult, **options: Any) -> list[dict[str, Any]]:
    shapes = ResponsesEvents(model="test-model", id="resp_t", created_at=1_700_000_000, **options)
    out = shapes.start()
    for events in batches:
        out += shapes.feed(events)
    return out + shapes.close(result)


def chat_chunks(batches: list[list[Event]], **options: Any) -> list[dict[str, Any]]:
    shapes = ChatChunks(model="test-model", id="chatcmpl-t", created=1_700_000_000, **options)
    out = [chunk for events in batches for chunk in shapes.feed(events)]
    return out + shapes.close()


def check_chat(chunks: list[dict[str, Any]], result: ParseResult, field: str = "reasoning_content") -> None:
    """Every chunk is a ChatCompletionChunk of one completion; assembled, they are the parse."""
    content = reasoning = ""
    calls: dict[int, dict[str, str]] = defaultdict(lambda: {"id": "", "name": "", "arguments": ""})
    for n, chunk in enumerate(chunks):
        parsed = ChatCompletionChunk.model_validate(chunk)
        assert (parsed.id, parsed.object, parsed.created, parsed.model) == (
            "chatcmpl-t",
            "chat.completion.chunk",
            1_700_000_000,
            "test-model",
        )
        (choice,) = chunk["choices"]
        assert choice["index"] == 0
        delta = choice["delta"]
        assert ("role" in delta) == (n == 0)
        other = "reasoning" if field == "reasoning_content" else "reasoning_content"
        assert other not in delta
        if n == len(chunks) - 1:
            assert choice["finish_reason"] == ("tool_calls" if result.tool_calls else "stop")
            assert set(delta) <= {"role"}
            continue
        assert choice["finish_reason"] is None and set(delta) - {"role"}
        content += delta.get("content", "")
        reasoning += delta.get(field, "")
        for piece in delta.get("tool_calls", []):
            call = calls[piece["index"]]
            call["id"] += piece.get("id", "")
            call["name"] += piece.get("function", {}).get("name", "")
            call["arguments"] += piece["function"].get("arguments", "")
    assert (content, reasoning) == (result.content, result.reasoning)
    expected = [call.model_dump(mode="json") for call in result.tool_calls]
    assert [calls[i] for i in sorted(calls)] == [
        {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in expected
    ]


def check_responses(
    events: list[dict[str, Any]], result: ParseResult, *, dropped: frozenset[int] = frozenset()
) -> None:
    """Every event is a ResponseStreamEvent, in the order the Responses API streams them; the deltas
    add up to the .done values, which are the parse (less the ``dropped`` calls)."""
    for event in events:
        assert EVENT.validate_python(event).type == event["type"]
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    types = [event["type"] for event in events]
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"
    assert "response.created" not in types[1:] and "response.completed" not in types[:-1]
    for event in events[:2]:
        assert event["response"]["status"] == "in_progress" and event["response"]["output"] == []

    deltas: dict[str, list[str]] = defaultdict(list)
    state: dict[str, str] = {}  # item id -> "open", "done"
    items: dict[int, dict[str, Any]] = {}
    done_text: dict[str, str] = {}
    for event in events[2:-1]:
        kind = event["type"]
        if kind == "response.output_item.added":
            item = event["item"]
            assert item["id"] not in state and event["output_index"] == len(items)
            assert item["status"] == "in_progress"
            state[item["id"]] = "open"
            items[event["output_index"]] = item
            continue
        item_id = event["item"]["id"] if kind == "response.output_item.done" else event["item_id"]
        assert state.get(item_id) == "open", (kind, item_id)
        assert items[event["output_index"]]["id"] == item_id
        if kind.endswith(".delta"):
            assert event["delta"]
            deltas[item_id].append(event["delta"])
        elif kind in ("response.output_text.done", "response.reasoning_text.done"):
            done_text[item_id] = event["text"]
        elif kind == "response.function_call_arguments.done":
            done_text[item_id] = event["arguments"]
        elif kind == "response.output_item.done":
            state[item_id] = "done"
            items[event["output_index"]] = event["item"]
    assert set(state.values()) <= {"done"}
    for item_id, text in done_text.items():
        assert "".join(deltas[item_id]) == text
    ordered = [items[i] for i in range(len(items))]
    final = events[-1]["response"]
    assert Response.model_validate(final).status == "completed"
    assert final["output"] == ordered

    def texts(kind: str) -> str:
        return "".join(done_text[item["id"]] for item in ordered if item["type"] == kind)

    assert (texts("message"), texts("reasoning")) == (result.content, result.reasoning)
    for item in ordered:
        if item["type"] != "function_call":
            part = item["content"][0]
            assert part["text"] == done_text[item["id"]]
    calls = [item for item in ordered if item["type"] == "function_call"]
    kept = [call for index, call in enumerate(result.tool_calls) if index not in dropped]
    assert [(c["call_id"], c["name"], c["arguments"]) for c in calls] == [
        (call.id, call.function.name, call.function.model_dump(mode="json")["arguments"]) for call in kept
    ]
    assert all(done_text[c["id"]] == c["arguments"] for c in calls)


# --------------------------------------------------------------------------- golden replies


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_golden_replies_in_both_shapes(case: GoldenCase) -> None:
    fmt = codec.get_format(case.format)
    whole = fmt.parse(case.text, **case.kwargs())
    rng = random.Random(case.id)
    for chunks in ([case.text], *(split(case.text, rng) for _ in range(3 if deep() else 1))):
        batches, result = streamed(fmt, chunks, **case.kwargs())
        assert result == whole
        check_chat(chat_chunks(batches), whole)
        check_responses(responses_events(batches, result), whole)


@examples(150)
@given(seed=st.integers(0, 2**32), pick=st.integers(0, len(CASES) - 1), size=st.integers(1, 40))
def test_any_chunking_gives_the_parse(seed: int, pick: int, size: int) -> None:
    case = CASES[pick]
    fmt = codec.get_format(case.format)
    whole = fmt.parse(case.text, **case.kwargs())
    batches, result = streamed(fmt, split(case.text, random.Random(seed), max_size=size), **case.kwargs())
    check_chat(chat_chunks(batches, reasoning_field="reasoning"), whole, field="reasoning")
    check_responses(responses_events(batches, result), whole)


@pytest.mark.parametrize("name", reply_formats())
@examples(60)
@given(data=st.data())
def test_generated_replies_in_both_shapes(name: str, data: st.DataObject) -> None:
    """Replies each format writes for generated assistant messages (its round-trip strategy), with
    tools, in random chunkings: both shapes add up to the parse."""
    spec = profile(name).round_trip
    fmt = spec.fmt or codec.get_format(name)
    message, tools = data.draw(spec.messages(True), label="message")
    reply = fmt.render_reply(message)
    whole = fmt.parse(reply, tools=tools)
    seed = data.draw(st.integers(0, 2**32), label="seed")
    batches, result = streamed(fmt, split(reply, random.Random(seed)), tools=tools)
    assert result == whole
    check_chat(chat_chunks(batches), whole)
    check_responses(responses_events(batches, result), whole)


# --------------------------------------------------------------------------- damaged calls

CUT = (
    '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n<tool_call>\n{"name": "f", "arguments": {"x": "ab'
)


def test_a_damaged_call_appears_unless_dropped() -> None:
    fmt = codec.get_format("hermes")
    for size in (1, 5, len(CUT)):
        batches, result = streamed(fmt, split(CUT, size))
        assert result.damaged_indices == {1}
        kept = responses_events(batches, result)
        check_responses(kept, result)
        assert [i["item"]["name"] for i in kept if i["type"] == "response.output_item.done"] == ["a", "f"]
        dropped = responses_events(batches, result, drop_damaged=True)
        check_responses(dropped, result, dropped=frozenset({1}))
        names = [i["item"]["name"] for i in dropped if i["type"] == "response.output_item.added"]
        assert names == ["a"]
        # Held back, the intact call comes whole after the text, at the end.
        assert [e["type"] for e in dropped[-5:]] == [
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]


def test_text_between_calls_opens_a_new_message_item() -> None:
    fmt = codec.get_format("hermes")
    reply = (
        "<think>Two calls.</think>First.\n<tool_call>\n"
        '{"name": "a", "arguments": {}}\n</tool_call>\nThen.\n<tool_call>\n{"name": "b", "arguments": {"k": [1]}}\n'
        "</tool_call>"
    )
    batches, result = streamed(fmt, list(reply))
    events = responses_events(batches, result)
    check_responses(events, result)
    kinds = [item["type"] for item in events[-1]["response"]["output"]]
    assert kinds[0] == "reasoning" and kinds.count("function_call") == 2
    assert kinds.index("function_call") < max(i for i, kind in enumerate(kinds) if kind == "message")


# --------------------------------------------------------------------------- small contracts


def test_defaults_make_ids_and_times() -> None:
    first, second = ChatChunks(), ChatChunks()
    assert first.id.startswith("chatcmpl-") and first.id != second.id and first.model == "codec"
    assert isinstance(first.created, int) and first.created > 0
    a, b = ResponsesEvents(), ResponsesEvents()
    assert a.id.startswith("resp_") and a.id != b.id
    (created, progress) = a.start()
    assert a.start() == [] and created["response"]["id"] == a.id == progress["response"]["id"]
    with pytest.raises(ValueError, match="reasoning_field"):
        ChatChunks(reasoning_field="thinking")  # type: ignore[arg-type]


def test_a_closed_responses_stream_takes_no_more_events() -> None:
    shapes = ResponsesEvents()
    shapes.close(ParseResult())
    assert shapes.close(ParseResult()) == []
    with pytest.raises(ValueError, match="after close"):
        shapes.feed([codec.TextDelta("late")])
    with pytest.raises(ValueError, match="ToolCallDelta of call 0, which no ToolCallStart opened"):
        ResponsesEvents().feed([codec.ToolCallDelta(0, "{}")])


def test_message_shapes() -> None:
    result = codec.get_format("hermes").parse('<think>hm</think>ok<tool_call>\n{"name": "f", "arguments": {}}')
    message = result.to_message().model_dump(mode="json")
    renamed = reasoning_as(message, "reasoning")
    assert "reasoning_content" not in renamed and renamed["reasoning"] == "hm"
    assert list(renamed) == [("reasoning" if key == "reasoning_content" else key) for key in message]
    assert reasoning_as(message, "reasoning_content") is message
    ChatCompletionMessage.model_validate(message)
    assert (finish_reason(True), finish_reason(False)) == ("tool_calls", "stop")


def test_a_calls_only_message_carries_content_null() -> None:
    """As OpenAI's API writes it: agent code reads message["content"] without a KeyError."""
    result = codec.get_format("hermes").parse('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>')
    message = result.to_message().model_dump(mode="json")
    assert list(message)[:2] == ["role", "content"] and message["content"] is None
    ChatCompletionMessage.model_validate(message)
    assert codec.Message(role="assistant", content=None).model_dump() == {"role": "assistant"}  # others as they were
    assert codec.get_format("hermes").render_reply(message).startswith("<tool_call>")
