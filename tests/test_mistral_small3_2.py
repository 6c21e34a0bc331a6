"""What is particular to ``mistral_small3_2`` (and, where it applies, ``ministral3``): the
deviations of Mistral's models read back (``[ARGS]`` split across deltas, a JSON object of calls
written as text only where it names declared tools, never prose or other JSON), and the ids
``render_reply`` writes for calls that have none (the template's own, never an index)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import codec
from codec import testing

SMALL = codec.get_format("mistral_small3_2")
MINISTRAL = codec.get_format("ministral3")
ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT.parent / "shared" / "seeds" / SMALL.reference_template
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


@pytest.mark.parametrize("fmt", [SMALL, MINISTRAL], ids=lambda f: f.name)
def test_args_split_across_deltas_is_one_marker(fmt: codec.Format) -> None:
    head = "[TOOL_CALLS]get_weather" + ("[CALL_ID]abc123xyz" if fmt is SMALL else "")
    reply = head + '[ARGS]{"city": "Paris"}</s>'
    whole = fmt.parse(reply, tools=[WEATHER])
    assert whole.issues == [] and whole.tool_calls[0].function.arguments == {"city": "Paris"}
    cut_from = reply.index("[ARGS]")
    for cut in range(cut_from + 1, cut_from + len("[ARGS]")):
        stream = fmt.stream(tools=[WEATHER])
        events = [*stream.feed(reply[:cut]), *stream.feed(reply[cut:]), *stream.close()]
        assert stream.result == whole
        assert not any(isinstance(e, codec.TextDelta) for e in events)  # no piece of the marker leaks as text


@pytest.mark.parametrize("fmt", [SMALL, MINISTRAL], ids=lambda f: f.name)
@pytest.mark.parametrize(
    "text",
    [
        '{"answer": 42}</s>',
        '{"tool_calls": "none"}</s>',
        '{"tool_calls": [{"name": "get_weather"}]} is what I would write</s>',
        '{ "tool_calls": [{"name": "not_declared", "arguments": {}}]}</s>',
        'The object {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]} reads as a call.</s>',
    ],
)
def test_json_that_is_no_object_of_declared_calls_is_content(fmt: codec.Format, text: str) -> None:
    result = fmt.parse(text, tools=[WEATHER])
    assert result.tool_calls == [] and result.content == text.removesuffix("</s>")


def _prose() -> list[dict[str, Any]]:
    vectors = []
    for path in sorted((ROOT / "bench" / "vectors").glob("*.jsonl")):
        vectors += [v for v in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if v["kind"] == "prose"]
    return vectors


@pytest.mark.parametrize("fmt", [SMALL, MINISTRAL], ids=lambda f: f.name)
def test_no_call_is_read_out_of_the_prose_corpus(fmt: codec.Format) -> None:
    prose = _prose()
    assert prose
    assert [v["id"] for v in prose if fmt.parse(v["text"], tools=v["tools"]).tool_calls] == []


def test_render_reply_writes_the_formats_ids_for_calls_without_one() -> None:
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    message = {"role": "assistant", "content": None, "tool_calls": [call, {**call, "id": "Zx9Yw8Vu7"}]}
    reply = SMALL.render_reply(message)
    assert reply == (
        '[TOOL_CALLS]get_weather[CALL_ID]call00000[ARGS]{"city": "Paris"}'
        '[TOOL_CALLS]get_weather[CALL_ID]Zx9Yw8Vu7[ARGS]{"city": "Paris"}</s>'
    )
    assert SMALL.reply_ids(message) == [c.id for c in SMALL.parse(reply).tool_calls] == ["call00000", "Zx9Yw8Vu7"]
    # The template takes the parsed message (its ids nine long) back into a conversation.
    if TEMPLATE.is_file():
        conversation = {"messages": [{"role": "user", "content": "Hi"}, SMALL.parse(reply).to_message().model_dump()]}
        testing.assert_renders_like(TEMPLATE.read_text(encoding="utf-8"), SMALL, conversation)
