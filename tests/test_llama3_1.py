"""What is particular to ``llama3_1`` (Llama 3.1's template): its variables read back, built-in
tools, the template's errors, and bare calls streamed."""

from __future__ import annotations

from typing import Any

import pytest
from harness import run_chunks

import codec
from codec.models import ToolCallDelta, ToolCallEnd, ToolCallStart

LLAMA = codec.get_format("llama3_1")
USER = {"role": "user", "content": "Weather in Paris?"}
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}


@pytest.mark.parametrize(
    "variables",
    [
        {"tools_in_user_message": False},
        {"date_string": "02 Dec 2026", "bos_token": "<|begin_of_text|>"},
        {"builtin_tools": ["brave_search", "wolfram_alpha"]},
        {"builtin_tools": ["brave_search"], "tools_in_user_message": False},
    ],
)
def test_the_template_s_variables_come_back(variables: dict[str, Any]) -> None:
    messages = [{"role": "system", "content": "Be brief."}, USER, {"role": "assistant", "tool_calls": [CALL]}]
    prompt = LLAMA.render(messages, [TOOL], add_generation_prompt=False, **variables)
    conversation = LLAMA.decode(prompt)
    assert conversation.variables == variables
    assert conversation.tools == [TOOL]


def test_a_code_interpreter_call_brings_back_the_tool_the_system_turn_does_not_name() -> None:
    call = {"type": "function", "function": {"name": "code_interpreter", "arguments": {"code": "print(1)"}}}
    prompt = LLAMA.render([USER, {"role": "assistant", "tool_calls": [call]}], builtin_tools=["code_interpreter"])
    assert "Tools: \n\n" in prompt and '<|python_tag|>code_interpreter.call(code="print(1)")<|eom_id|>' in prompt
    assert LLAMA.decode(prompt).variables == {"builtin_tools": ["code_interpreter"]}


def test_custom_tools_stand_for_tools() -> None:
    assert LLAMA.render([USER], custom_tools=[TOOL]) == LLAMA.render([USER], [TOOL])


def test_the_template_s_errors_are_render_errors_with_its_messages() -> None:
    with pytest.raises(codec.RenderError, match="only supports single tool-calls at once"):
        LLAMA.render([USER, {"role": "assistant", "tool_calls": [CALL, CALL]}])
    with pytest.raises(codec.RenderError, match="no first user message"):
        LLAMA.render([{"role": "system", "content": "Hi"}], [TOOL])


def test_a_tool_result_is_a_json_string_literal_and_reads_back_as_its_text() -> None:
    messages = [USER, {"role": "assistant", "tool_calls": [CALL]}, {"role": "tool", "content": 'sunny, "18"'}]
    prompt = LLAMA.render(messages, [TOOL])
    assert '<|start_header_id|>ipython<|end_header_id|>\n\n"sunny, \\"18\\""<|eot_id|>' in prompt
    assert LLAMA.decode(prompt).messages[-1].content == 'sunny, "18"'


def test_a_call_arriving_in_one_delta_is_sent_whole() -> None:
    stream = LLAMA.stream(tools=[TOOL])
    events = stream.feed('{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>')
    events += stream.close()
    kinds = [type(event) for event in events]
    assert kinds[0] is ToolCallStart and ToolCallEnd in kinds
    assert "".join(e.arguments for e in events if isinstance(e, ToolCallDelta)) == '{"city": "Paris"}'
    assert not stream.result.issues


def test_parallel_calls_are_written_and_read_a_semicolon_apart() -> None:
    reply = LLAMA.render_reply({"role": "assistant", "tool_calls": [CALL, CALL]})
    one = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
    assert reply == one + "; " + one + "<|eot_id|>"
    result = LLAMA.parse(reply, tools=[TOOL])
    assert len(result.tool_calls) == 2 and not result.issues


def test_prose_quoting_a_call_object_is_text_whatever_the_chunks() -> None:
    text = 'You can call it like this: {"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>'
    for size in (1, 3, 8):
        stream = LLAMA.stream(tools=[TOOL])
        for i in range(0, len(text), size):
            stream.feed(text[i : i + size])
        stream.close()
        assert stream.result.content == text.removesuffix("<|eot_id|>") and not stream.result.tool_calls


#: Prose that holds JSON, call objects among it: no reply of these is a call (only a call object, or
#: calls joined by ';', that is the whole reply is one), whole or streamed in any chunks.
PROSE_WITH_JSON = [
    'To get the weather, the model would emit {"name": "get_weather", "parameters": {"city": "Paris"}} and wait.',
    '```json\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n```',
    'Here is an example call:\n\n```json\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n```\nUse it.',
    '{"name": "Ana", "age": 30}',
    '[{"name": "get_weather", "parameters": {"city": "Paris"}}] is a list you can send.',
    'The JSON is: {"city": "Paris"}',
    '{"city": "Paris"}',
    '{"answer": "It is sunny in Paris", "confidence": 0.9}',
    'I would call get_weather with {"city": "Paris"}.',
    '{"name": "get_weather", "parameters": {"city": "Paris"}} is how the call looks.',
    'Result:\n{"name": "get_weather", "parameters": {"city": "Paris"}}\nThat was the call I would make.',
    '{"name": "get_weather"}',
    '{"name": "get_weather", "description": "The weather", "parameters": {"type": "object"}}',
    '{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}',
    'Sure! {"name": "get_weather", "parameters": {"city": "Paris"}}',
    '{"name": "get_weather", "parameters": {"city": "Paris"}} {"name": "get_weather", "parameters": {}} and more',
]


@pytest.mark.parametrize("name", ["llama3_1", "llama3_2"])
@pytest.mark.parametrize("text", PROSE_WITH_JSON)
def test_prose_with_json_in_it_is_no_call(name: str, text: str) -> None:
    fmt = codec.get_format(name)
    reply = text + "<|eot_id|>"
    result = fmt.parse(reply, tools=[TOOL])
    assert (result.content, result.tool_calls, result.issues) == (text, [], [])
    for size in (1, 5):
        assert run_chunks(fmt, [reply[i : i + size] for i in range(0, len(reply), size)], tools=[TOOL]).result == result


def test_a_bare_call_object_naming_a_declared_tool_is_a_call() -> None:
    """The same object the prose above quotes, as the whole reply: a call."""
    result = LLAMA.parse('{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>', tools=[TOOL])
    assert [(call.function.name, call.function.arguments) for call in result.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert result.content == "" and result.issues == []


@pytest.mark.parametrize(
    "reply",
    [
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}};'
        '{"name": "get_weather", "parameters": {"city": "Rome"}}<|eom_id|>',
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}'
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Rome"}}<|eom_id|>',
    ],
)
def test_parallel_calls_arriving_in_one_delta_are_sent_in_it(reply: str) -> None:
    stream = LLAMA.stream(tools=[TOOL])
    events = stream.feed(reply)
    assert sum(isinstance(event, ToolCallEnd) for event in events) == 2
    assert stream.close() == [] and len(stream.result.tool_calls) == 2
