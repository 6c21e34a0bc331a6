"""What is particular to ``glm4_6`` and ``glm4_7`` (GLM's templates): ``enable_thinking`` and
``clear_thinking``, the generation prompts' think blocks, and replies that go on from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import assert_renders_back, examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec import testing
from codec.formats import reply_owner
from codec.testing import conversations, rich_conversations

GLM46 = codec.get_format("glm4_6")
GLM47 = codec.get_format("glm4_7")
FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "templates" / "families" / "glm"
USER = {"role": "user", "content": "Weather in Lisboa?"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
        },
    }
]
CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Lisboa", "days": 2}}}


def _template(name: str) -> str:
    path = FIXTURES / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path.read_text(encoding="utf-8")


@examples(100)
@given(case=st.one_of(conversations(), rich_conversations()))
def test_glm4_7_renders_like_its_template_with_clear_thinking_off(case: dict[str, Any]) -> None:
    case = {**case, "variables": {**case["variables"], "clear_thinking": False}}
    testing.assert_renders_like(_template("GLM-4.7-Flash.jinja"), GLM47, case)


def test_glm4_7_keeps_earlier_reasoning_with_clear_thinking_off_and_decodes_it() -> None:
    messages = [
        USER,
        {"role": "assistant", "content": "Checking.", "reasoning_content": "One city.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "Thanks!"},
    ]
    cleared = GLM47.render(messages)
    assert "<think>One city.</think>" not in cleared and "<|assistant|></think>Checking." in cleared
    kept = GLM47.render(messages, clear_thinking=False)
    assert "<|assistant|><think>One city.</think>Checking.<tool_call>get_weather<arg_key>city</arg_key>" in kept
    conversation = assert_renders_back(GLM47, kept)
    assert conversation.variables == {"clear_thinking": False}
    assert conversation.messages[1].reasoning_content == "One city."
    assert assert_renders_back(GLM47, cleared).variables == {}


@pytest.mark.parametrize(
    ("fmt", "variables", "ending"),
    [
        (GLM46, {}, "<|assistant|>"),
        (GLM46, {"enable_thinking": False}, "<|assistant|>\n<think></think>"),
        (GLM47, {}, "<|assistant|><think>"),
        (GLM47, {"enable_thinking": False}, "<|assistant|></think>"),
    ],
)
def test_the_generation_prompt_and_the_reply_that_goes_on_from_it(
    fmt: codec.Format, variables: dict[str, Any], ending: str
) -> None:
    prompt = fmt.render([USER], TOOLS, add_generation_prompt=True, **variables)
    assert prompt.endswith(ending)
    assert assert_renders_back(fmt, prompt).variables == ({} if not variables else {"enable_thinking": False})
    opened = prompt.endswith("<think>")
    reply = ("Lisboa it is.</think>" if opened else "") + "<tool_call>get_weather<arg_key>city</arg_key>"
    reply += "<arg_value>Lisboa</arg_value></tool_call><|observation|>"
    result = fmt.parse(reply, tools=TOOLS, prompt=prompt)
    assert (result.reasoning, result.content) == ("Lisboa it is." if opened else "", "")
    assert [c.function.arguments for c in result.tool_calls] == [{"city": "Lisboa"}]
    assert result.issues == []


def test_glm4_6_nothink_on_user_turns_reads_back_as_thinking_off() -> None:
    prompt = GLM46.render([USER, {"role": "user", "content": "Fast/nothink"}], enable_thinking=False)
    assert "<|user|>\nWeather in Lisboa?/nothink<|user|>\nFast/nothink" in prompt
    conversation = assert_renders_back(GLM46, prompt)
    assert conversation.variables == {"enable_thinking": False}
    assert [m.content for m in conversation.messages] == ["Weather in Lisboa?", "Fast"]


def test_both_write_one_reply_syntax_and_read_each_others_replies() -> None:
    assert reply_owner("glm4_7") == "glm4_6" and GLM46.syntax() is GLM47.syntax()
    message = {"role": "assistant", "content": "On it.", "tool_calls": [CALL]}
    for writer in (GLM46, GLM47):
        for reader in (GLM46, GLM47):
            result = reader.parse(writer.render_reply(message), tools=TOOLS)
            assert (result.content, result.issues) == ("On it.", [])
            assert result.tool_calls[0].function.arguments == {"city": "Lisboa", "days": 2}
    assert GLM47.render_reply(message) == (
        "On it.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Lisboa</arg_value>"
        "<arg_key>days</arg_key><arg_value>2</arg_value></tool_call><|observation|>"
    )


def test_glm4_7_refuses_arguments_that_are_not_a_mapping_as_its_template_does() -> None:
    call = {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Lisboa"}'}}
    with pytest.raises(codec.RenderError, match="'str object' has no attribute 'items'"):
        GLM47.render([USER, {"role": "assistant", "tool_calls": [call]}])
    with pytest.raises(codec.RenderError, match="Invalid tool call arguments passed"):
        GLM46.render([USER, {"role": "assistant", "tool_calls": [call]}])
