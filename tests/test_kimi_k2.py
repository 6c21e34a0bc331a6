"""What is particular to ``kimi_k2``: the calls' ids, the only place their names stand, through
parse, stream, the OpenAI shapes, render_reply and decode."""

from __future__ import annotations

import codec
from codec.openai import ChatChunks, ResponsesEvents
from codec.testing.assertions import assert_round_trip

FMT = codec.get_format("kimi_k2")
REPLY = (
    "Checking.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:3"
    '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
    "<|tool_call_begin|>functions.get_time:4<|tool_call_argument_begin|>{}<|tool_call_end|>"
    "<|tool_calls_section_end|><|im_end|>"
)
IDS = ["functions.get_weather:3", "functions.get_time:4"]


def test_the_reply_ids_are_the_calls_ids_whole_and_streamed() -> None:
    assert [call.id for call in FMT.parse(REPLY).tool_calls] == IDS
    assert [call.id for call in FMT.parse(REPLY, call_id=lambda i: f"x{i}").tool_calls] == IDS
    stream = FMT.stream()
    events = [event for char in REPLY for event in stream.feed(char)] + stream.close()
    assert [event.id for event in events if isinstance(event, codec.ToolCallStart)] == IDS
    assert stream.result == FMT.parse(REPLY)


def test_the_ids_survive_the_openai_shapes() -> None:
    stream = FMT.stream()
    chunks, responses = ChatChunks(), ResponsesEvents()
    sent, items = [], []
    for char in REPLY:
        events = stream.feed(char)
        sent += chunks.feed(events)
        items += responses.feed(events)
    events = stream.close()
    sent += chunks.feed(events) + chunks.close()
    items += responses.feed(events) + responses.close(stream.result)
    starts = [
        call["id"] for chunk in sent for call in chunk["choices"][0]["delta"].get("tool_calls", []) if "id" in call
    ]
    assert starts == IDS
    done = [
        event["item"]["call_id"]
        for event in items
        if event["type"] == "response.output_item.done" and event["item"]["type"] == "function_call"
    ]
    assert done == IDS
    assert [call["id"] for call in stream.result.to_message().model_dump(mode="json")["tool_calls"]] == IDS


def test_a_reply_rendered_for_a_message_writes_its_ids_back_and_round_trips() -> None:
    calls = [
        {
            "id": "functions.get_weather:7",
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Rome"}},
        },
        {"id": "call_abc", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
    ]
    message = {"role": "assistant", "content": "", "tool_calls": calls}
    reply = FMT.render_reply(message)
    assert "functions.get_weather:7<|tool_call_argument_begin|>" in reply
    assert "functions.get_time:1<|tool_call_argument_begin|>" in reply  # an id of no Kimi shape: the index
    result = assert_round_trip(FMT, message)
    assert [call.id for call in result.tool_calls] == ["functions.get_weather:7", "functions.get_time:1"]


def test_a_decoded_prompt_gives_its_calls_the_ids_the_template_writes() -> None:
    call = {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
    messages = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": "sunny"},
    ]
    prompt = FMT.render(messages)
    conversation = FMT.decode(prompt)
    assistant, result = conversation.messages[2], conversation.messages[3]
    assert assistant.tool_calls is not None and assistant.tool_calls[0].id == "functions.get_weather:0"
    assert result.tool_call_id == "functions.get_weather:0" and result.name == "get_weather"


def test_a_bare_counter_names_the_call_by_the_one_tool_its_arguments_fit() -> None:
    def tool(name: str, *keys: str) -> dict[str, object]:
        properties = {key: {"type": "string"} for key in keys}
        return {
            "type": "function",
            "function": {"name": name, "parameters": {"type": "object", "properties": properties}},
        }

    reply = (
        "<|tool_calls_section_begin|><|tool_call_begin|>2<|tool_call_argument_begin|>"
        '{"path": "a"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    result = FMT.parse(reply, tools=[tool("get_weather", "city"), tool("read_file", "path")])
    assert [(call.id, call.function.name) for call in result.tool_calls] == [("functions.read_file:2", "read_file")]
    assert [issue.kind for issue in result.issues] == ["call_opener"]
