"""Decoding ``hermes`` prompts: what comes back, and where text that is no rendering is refused.

``decode(render(case))`` equals ``hermes_normal_form`` of the case (in ``formats/hermes.py``): the case
minus what the reference template drops or writes alike; ``test_decode.py`` checks it on generated
conversations and golden renders, with the contract every format shares (every rendering renders back).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from formats.hermes import call_block, hermes_normal_form
from harness import assert_renders_back, decoded_as_json, linked_as_json

import codec

FMT = codec.get_format("hermes")

# --------------------------------------------------------------------------- what comes back


def test_block_like_text_in_content_stays_content() -> None:
    call = {"id": "x", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    fake = call_block({"function": {"name": "g", "arguments": "{'a': 1}"}})  # not JSON: not a call
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": fake, "tool_calls": [call]}]
    (_, assistant) = FMT.decode(FMT.render(messages)).messages
    assert assistant.content == fake
    assert assistant.tool_calls is not None
    assert [c.function.name for c in assistant.tool_calls] == ["f"]


DEVELOPER = {"role": "developer", "content": "be brief"}
RESULT = {"role": "tool", "content": "42"}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]


@pytest.mark.parametrize(
    ("messages", "tools"),
    [
        ([DEVELOPER], None),
        ([DEVELOPER], TOOLS),
        ([RESULT, DEVELOPER, RESULT], None),
        ([RESULT, DEVELOPER, DEVELOPER, RESULT, RESULT], None),
        ([DEVELOPER, {"role": "system", "content": "late"}], TOOLS),
        ([DEVELOPER, {"role": "system", "content": "late"}], None),
    ],
    ids=["alone", "alone with tools", "between results", "two between results", "before system", "no tools"],
)
def test_unrendered_messages_come_back_where_the_prompt_shows_them(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> None:
    case = {"messages": messages, "tools": tools, "add_generation_prompt": True, "variables": {}}
    text = FMT.render(messages, tools, add_generation_prompt=True)
    conversation = assert_renders_back(FMT, text)
    assert decoded_as_json(conversation) == linked_as_json(hermes_normal_form(case))


# --------------------------------------------------------------------------- refused text


PROMPT = FMT.render(
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
    [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}],
)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("<|im_start|>bot\nhi<|im_end|>\n", len("<|im_start|>")),  # a role the template never writes
        ("<|im_start|>user\nhi<|im_end|>\n<|im_start|>usr\nyo", len("<|im_start|>user\nhi<|im_end|>\n<|im_start|>us")),
        ("hello", 0),
        ("<|im_start|>user\nhi<|im_end|>", len("<|im_start|>user\nhi<|im_end|>")),  # no newline after it
        (PROMPT.replace('{"name": "f"', '{"name": "f",', 1), PROMPT.index('{"name": "f"') + len('{"name": "f",')),
    ],
    ids=["unknown role", "unknown later role", "no turn", "unclosed turn", "tools JSON"],
)
def test_parse_error_position(text: str, where: int) -> None:
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    assert info.value.pos == where


def test_a_tool_comes_back_exactly_as_declared() -> None:
    """The template writes each tool's JSON as given, so decode gives it back as written, odd keys and order too."""
    odd = '{"function": {"n": "f", "strict": true}, "type": "function"}'
    start = PROMPT.index('{"type": "function"')
    text = PROMPT.replace(PROMPT[start : PROMPT.index("\n", start)], odd)
    conversation = assert_renders_back(FMT, text)
    assert conversation.tools is not None
    assert json.dumps(conversation.tools[0]) == odd


def test_a_tool_that_is_no_json_object_is_refused_at_its_line() -> None:
    line = PROMPT[PROMPT.index('{"type": "function"') : PROMPT.index("\n", PROMPT.index('{"type": "function"'))]
    text = PROMPT.replace(line, "[1, 2]")
    with pytest.raises(codec.ParseError, match="not a JSON object") as info:
        FMT.decode(text)
    assert info.value.pos == text.index("[1, 2]")
