"""What is particular to ``kimi_k2``: the calls' ids, the only place their names stand, through
parse, stream, the OpenAI shapes, render_reply and decode."""

from __future__ import annotations

import pytest
from harness import run_chunks

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


def _tool(name: str) -> dict[str, object]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}


def _section(*heads: str, opener: str = "<|tool_calls_section_begin|>") -> str:
    calls = "".join(f"<|tool_call_begin|>{head}<|tool_call_argument_begin|>{{}}<|tool_call_end|>" for head in heads)
    return opener + calls + "<|tool_calls_section_end|><|im_end|>"


# Heads real Kimi models write (SGLang pull request #21377, vLLM's kimi_k2 tool-parser tests), the
# tools declared, and the (id, name) each call reads as: the ids always in Kimi's shape.
DEVIATED_HEADS = [
    (["functionsexec5", "functionsexec6"], ["exec"], [("functions.exec:5", "exec"), ("functions.exec:6", "exec")]),
    (["functionsexec5"], None, [("functions.exec:5", "exec")]),
    (["functions.exec5"], ["exec"], [("functions.exec:5", "exec")]),
    (["exec:5"], ["exec"], [("functions.exec:5", "exec")]),
    (["functions.exec"], ["exec"], [("functions.exec:0", "exec")]),
    # A declared name that ends in digits is that name; so is a tool whose name starts with 'functions'.
    (["functions.get_v2"], ["get_v2", "get_v"], [("functions.get_v2:0", "get_v2")]),
    (["functions_list:3"], None, [("functions.functions_list:3", "functions_list")]),
    (["functionslist:3"], ["functionslist"], [("functions.functionslist:3", "functionslist")]),
    # Without tools, a counter after a name whose prefix kept its '.' stays in the name.
    (["functions.search2"], None, [("functions.search2:0", "search2")]),
]


@pytest.mark.parametrize(("heads", "declared", "calls"), DEVIATED_HEADS)
def test_deviated_heads_read_as_calls_with_ids_in_kimis_shape(
    heads: list[str], declared: list[str] | None, calls: list[tuple[str, str]]
) -> None:
    reply = _section(*heads)
    tools = [_tool(name) for name in declared] if declared is not None else None
    result = FMT.parse(reply, tools=tools)
    assert [(call.id, call.function.name) for call in result.tool_calls] == calls
    assert run_chunks(FMT, list(reply), tools=tools).result == result
    message = result.to_message().model_dump(mode="json")
    assert [call["id"] for call in message["tool_calls"]] == [call_id for call_id, _ in calls]
    # Rendered back, the reply writes those ids in the template's shape and parses to the same calls.
    again = FMT.parse(FMT.render_reply(message), tools=tools)
    assert [(call.id, call.function.name) for call in again.tool_calls] == calls
    assert again.issues == []


def test_the_singular_section_is_read_and_reported_once() -> None:
    reply = _section("functions.a:0", "functions.b:1", opener="<|tool_call_section_begin|>").replace(
        "<|tool_calls_section_end|>", "<|tool_call_section_end|>"
    )
    result = FMT.parse(reply)
    assert [(call.id, call.function.name) for call in result.tool_calls] == [
        ("functions.a:0", "a"),
        ("functions.b:1", "b"),
    ]
    assert [(issue.kind, issue.call_index) for issue in result.issues] == [("call_opener", 0)]
    assert (result.content, run_chunks(FMT, list(reply)).result) == ("", result)


def test_a_reasoning_closer_is_text_unless_a_call_ended_the_reasoning() -> None:
    assert FMT.parse("<think>a</think>b </think> c", prompt="").content == "b </think> c"
    cut = FMT.parse("<think>a" + _section("functions.f:0").replace("<|im_end|>", "</think> done"))
    assert (cut.reasoning, cut.content) == ("a", " done")
    assert [issue.kind for issue in cut.issues] == ["unclosed_reasoning", "stray_closer"]


def test_blanks_that_continue_text_in_a_section_are_the_texts_for_any_chunking() -> None:
    """Text after a call in a section left open, its blank before the next section: content however
    the chunks cut it (blanks right after a marker are layout)."""
    call = "<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}<|tool_call_end|>"
    reply = "<|tool_calls_section_begin|>" + call + "Empty args. \n" + _section("functions.g:1")
    whole = FMT.parse(reply)
    assert whole.content == "Empty args. \n" and len(whole.tool_calls) == 2
    for cut in range(len(reply) + 1):
        assert run_chunks(FMT, [reply[:cut], reply[cut:]]).result == whole, cut


def test_a_section_opener_with_text_before_any_call_is_content() -> None:
    """vLLM's expectation for '<think>This is reasoning<|tool_call_section_begin|>tool content here'."""
    reply = "<think>This is reasoning<|tool_call_section_begin|>tool content here"
    result = FMT.parse(reply)
    assert (result.reasoning, result.content) == ("This is reasoning", "<|tool_call_section_begin|>tool content here")
    assert [issue.kind for issue in result.issues] == ["unclosed_reasoning", "invalid_tool_call"]
    assert run_chunks(FMT, list(reply)).result == result


def test_a_reply_in_the_singular_section_is_told_to_be_kimis() -> None:
    reply = _section("functions.f:0", opener="<|tool_call_section_begin|>")
    assert [found.format for found in codec.detect_reply(reply)][:1] == ["kimi_k2"]
