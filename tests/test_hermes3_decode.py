"""Decoding ``hermes3`` prompts: conversations fitted to the template decode to their normal form
(``decode_normal_form`` in ``formats/hermes3.py``) and render back; what is no rendering is refused."""

from __future__ import annotations

from typing import Any

import pytest
from formats.hermes3 import decode_normal_form, tool_conversations
from harness import assert_renders_back, examples, rendered
from hypothesis import assume, given

import codec
from codec.errors import ParseError

FMT = codec.get_format("hermes3")
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": 'Weather "now".\nTwo lines.',
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": " The city. "}}},
    },
}
USER = {"role": "user", "content": "hi"}


@examples(300)
@given(case=tool_conversations())
def test_decode_gives_back_the_normal_form(case: dict[str, Any]) -> None:
    text = rendered(FMT, case)
    assume(text is not None)
    assert text is not None
    conversation = assert_renders_back(FMT, text)
    expected = decode_normal_form(case, text)
    if expected is not None:
        assert {"tools": None, **conversation.model_dump(mode="json")} == expected


def test_tools_come_back_from_their_lines() -> None:
    tools = [TOOL, {"name": "now", "description": "Time.", "return": {"type": "string"}, "parameters": {}}]
    conversation = assert_renders_back(FMT, FMT.render([USER], tools, bos_token="<|begin_of_text|>"))
    assert conversation.tools == [
        TOOL,
        {
            "type": "function",
            "function": {"name": "now", "description": "Time.", "return": {"type": "string"}, "parameters": {}},
        },
    ]
    assert conversation.variables == {"bos_token": "<|begin_of_text|>"}


def test_string_arguments_come_back_as_written() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
    text = FMT.render([USER, {"role": "assistant", "content": "dropped", "tool_calls": [call]}], [])
    conversation = assert_renders_back(FMT, text)
    assert conversation.messages[1].content is None
    assert conversation.messages[1].tool_calls[0].function.arguments == '{"a":1}'  # type: ignore[index]


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("<|im_start|>user\nhi<|im_end|>\n", "the system turn with the tools instructions"),
        ("hello world " + FMT.render([USER], []), "BOS token"),
        (FMT.render([USER], []).replace(" </tools>", " </tool>"), "never closed"),
        (FMT.render([USER], [TOOL]).replace("city: str", "city: int"), "does not read back"),
        (FMT.render([USER], []) + "<|im_start|>user\nunclosed", "never closed"),
        (FMT.render([USER], []) + "trailing", "the next message or the end of the prompt"),
        (FMT.render([USER], []) + "<|im_start|>tool\n<tool_response>\nx", "never closed"),
    ],
)
def test_what_is_no_rendering_is_refused(prompt: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        FMT.decode(prompt)


def test_a_call_without_arguments_is_refused_clearly() -> None:
    assistant = {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f"}}]}
    with pytest.raises(ParseError, match="without arguments"):
        FMT.decode(FMT.render([USER, assistant], []))


DEVELOPER = {"role": "developer", "content": "be brief"}
CALLS = {
    "role": "assistant",
    "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": {}}}],
}


def result(content: str) -> dict[str, Any]:
    return {"role": "tool", "content": content}


@pytest.mark.parametrize(
    ("messages", "roles"),
    [
        ([result("a"), result("b"), USER], ["tool", "tool", "user"]),  # the first message: no opener
        ([DEVELOPER, result("a")], ["developer", "tool"]),  # an opener with nothing before it
        ([USER, CALLS, result("1"), DEVELOPER, result("2")], ["user", "assistant", "tool", "developer", "tool"]),
        ([USER, CALLS, result("1"), DEVELOPER], ["user", "assistant", "tool", "developer"]),  # results not last
        ([USER, CALLS, result("1"), DEVELOPER, USER], ["user", "assistant", "tool", "user"]),  # nothing shows it
        ([DEVELOPER], ["developer"]),
    ],
)
@pytest.mark.parametrize("generation_prompt", [False, True])
def test_messages_written_as_nothing(messages: list[Any], roles: list[str], generation_prompt: bool) -> None:
    text = FMT.render(messages, [], add_generation_prompt=generation_prompt)
    conversation = assert_renders_back(FMT, text)
    assert [m.role for m in conversation.messages] == roles
    assert conversation.add_generation_prompt is generation_prompt
