"""What is particular to ``qwen2_5`` and ``qwq`` (Qwen2.5's and QwQ-32B's templates): the default system
prompt, string arguments written as a JSON string literal, reasoning cut from earlier turns, the
generation prompt's think block; render, decode and replies."""

from __future__ import annotations

from typing import Any

import pytest
from harness import assert_renders_back

import codec
from codec.formats import reply_owner

QWEN25 = codec.get_format("qwen2_5")
QWQ = codec.get_format("qwq")
DEFAULT = "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
USER = {"role": "user", "content": "Weather in Lisboa?"}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def _call(arguments: Any) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}


def test_qwen2_5_writes_its_default_system_prompt_and_reads_it_as_none() -> None:
    prompt = QWEN25.render([USER], add_generation_prompt=True)
    assert prompt == DEFAULT + "<|im_start|>user\nWeather in Lisboa?<|im_end|>\n<|im_start|>assistant\n"
    assert [m.role for m in assert_renders_back(QWEN25, prompt).messages] == ["user"]
    with_tools = QWEN25.render([USER], TOOLS)
    assert with_tools.startswith("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud.")
    assert with_tools.split("\n\n", 1)[1].startswith("# Tools\n")


def test_qwen2_5_writes_string_arguments_as_a_json_string_and_decodes_them_as_that_string() -> None:
    messages = [USER, {"role": "assistant", "content": "", "tool_calls": [_call('{"city": "Lisboa"}')]}]
    prompt = QWEN25.render(messages)
    assert '"arguments": "{\\"city\\": \\"Lisboa\\"}"}' in prompt
    (call,) = assert_renders_back(QWEN25, prompt).messages[-1].tool_calls or []
    assert call.function.arguments == '{"city": "Lisboa"}'
    as_object = QWEN25.render([USER, {"role": "assistant", "tool_calls": [_call({"city": "Lisboa"})]}])
    assert '"arguments": {"city": "Lisboa"}}' in as_object
    assert assert_renders_back(QWEN25, as_object).messages[-1].tool_calls[0].function.arguments == {"city": "Lisboa"}


def test_a_later_system_message_stays_later_when_the_first_is_the_default() -> None:
    messages = [{"role": "developer", "content": "x"}, {"role": "system", "content": "Later."}, USER]
    prompt = QWEN25.render(messages)
    assert prompt.startswith(DEFAULT + "<|im_start|>system\nLater.<|im_end|>\n")
    assert [m.role for m in assert_renders_back(QWEN25, prompt).messages] == ["developer", "system", "user"]


@pytest.mark.parametrize(
    ("variables", "ending"),
    [
        ({}, "<think>\n</think>"),
        ({"enable_thinking": False}, "<think>\n</think>"),
        ({"enable_thinking": True}, "<think>\n"),
    ],
)
def test_qwq_generation_prompt_opens_a_think_block_closed_unless_thinking(
    variables: dict[str, Any], ending: str
) -> None:
    prompt = QWQ.render([USER], add_generation_prompt=True, **variables)
    assert prompt == "<|im_start|>user\nWeather in Lisboa?<|im_end|>\n<|im_start|>assistant\n" + ending
    conversation = assert_renders_back(QWQ, prompt)
    assert conversation.variables == ({"enable_thinking": True} if ending == "<think>\n" else {})
    reply = "Sunny, I think.\n</think>\n\nSunny."
    parsed = QWQ.parse(reply, prompt=prompt)
    opened = ending == "<think>\n"
    assert (parsed.reasoning, parsed.content) == (("Sunny, I think.", "Sunny.") if opened else ("", reply))


def test_qwq_cuts_reasoning_from_turns_before_the_last_and_keeps_the_lone_newline() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": "<think>\nhidden\n</think>\n\n", "tool_calls": [_call({"city": "Lisboa"})]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "<think>\nkept\n</think>\n\nSunny."},
    ]
    prompt = QWQ.render(messages, TOOLS)
    assert "hidden" not in prompt and "<think>\nkept\n</think>\n\nSunny.<|im_end|>" in prompt
    assert "<|im_start|>assistant\n\n<tool_call>" in prompt  # the content was truthy, cut to nothing
    decoded = assert_renders_back(QWQ, prompt)
    assert decoded.messages[1].content == "\n" and decoded.messages[1].tool_calls
    with pytest.raises(codec.RenderError, match="has no attribute 'content'"):  # before the last, content is needed
        QWQ.render([USER, {"role": "assistant", "tool_calls": [_call({})]}, USER])


def test_qwq_reply_with_reasoning_is_written_in_a_think_block() -> None:
    message = {"role": "assistant", "content": "Sunny.", "reasoning_content": "Easy."}
    reply = QWQ.render_reply(message)
    assert reply == "<think>\nEasy.\n</think>\n\nSunny.<|im_end|>"
    assert (QWQ.parse(reply).reasoning, QWQ.parse(reply).content) == ("Easy.", "Sunny.")


@pytest.mark.parametrize("name", ["qwen2_5", "qwq"])
def test_replies_are_hermes_own(name: str) -> None:
    """Prompt variants: the same compiled reply syntax as hermes, so a reply names hermes."""
    assert codec.get_format(name).syntax() is codec.get_format("hermes").syntax()
    assert reply_owner(name) == "hermes"
