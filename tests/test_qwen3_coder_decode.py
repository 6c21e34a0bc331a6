"""Decoding ``qwen3_coder`` prompts: what comes back, and where text that is no rendering is refused.

``decode(render(case))`` equals ``qwen3_coder_normal_form`` of the case (in ``formats/qwen3_coder.py``):
the case minus what the reference template drops or writes alike; ``test_decode.py`` checks it on
generated conversations and golden renders, with the contract every format shares.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import assert_renders_back

import codec

FMT = codec.get_format("qwen3_coder")

# --------------------------------------------------------------------------- what comes back


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}
TOOL = {"type": "function", "function": {"name": "f", "parameters": SCHEMA}}


@pytest.mark.parametrize(
    ("tools", "arguments", "expected"),
    [
        ([TOOL], {"n": 7, "s": "7"}, {"n": 7, "s": "7"}),  # typed by the schema
        (None, {"n": 7, "s": "7"}, {"n": 7, "s": 7}),  # without one, JSON-looking text reads as JSON
        ([TOOL], {"n": "7.50"}, {"n": "7.50"}),  # a reading that would be written otherwise is not taken
        (None, {"s": 'say "hi"', "o": {"k": [1]}}, {"s": 'say "hi"', "o": {"k": [1]}}),
    ],
)
def test_call_values_read_as_written(
    tools: list[dict[str, Any]] | None, arguments: dict[str, Any], expected: dict[str, Any]
) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [call]}]
    (_, assistant) = assert_renders_back(FMT, FMT.render(messages, tools)).messages
    assert assistant.tool_calls is not None
    assert assistant.tool_calls[0].function.arguments == expected


# --------------------------------------------------------------------------- refused text


PROMPT = FMT.render(
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
    [{"type": "function", "function": {"name": "f", "description": "d", "parameters": SCHEMA}}],
)
CALL = FMT.render(
    [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"function": TOOL["function"]}]}]
)


def damaged(text: str, old: str, new: str) -> tuple[str, int]:
    """``text`` with its last ``old`` replaced, and the offset of the replacement."""
    at = text.rindex(old)
    return text[:at] + new + text[at + len(old) :], at


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("<|im_start|>bot\nhi<|im_end|>\n", len("<|im_start|>")),  # a role the template never writes
        ("<|im_start|>user\nhi<|im_end|>\n<|im_start|>system\nx", len("<|im_start|>user\nhi<|im_end|>\n<|im_start|>")),
        ("<|im_start|>user\n hi<|im_end|>\n", len("<|im_start|>user\n")),  # user text is written trimmed
        ("<|im_start|>user\nhi <|im_end|>\n", len("<|im_start|>user\nhi")),
        ("<|im_start|>assistant\n<|im_end|>\n", len("<|im_start|>assistant")),  # no newline before no content
        ("", 0),
        ("<|im_start|>s", len("<|im_start|>s")),  # cut inside the system turn's opener
        ("\n<tool_resp", len("\n<tool_resp")),  # cut inside a first tool result's opener
    ],
    ids=[
        "unknown role",
        "late system",
        "leading space",
        "trailing space",
        "empty content",
        "empty prompt",
        "cut system opener",
        "cut first result",
    ],
)
def test_parse_error_position(text: str, where: int) -> None:
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    assert info.value.pos == where


@pytest.mark.parametrize(("opener", "closer"), [("\n<description>", "</description>"), ("\n<type>", "</type>")])
def test_an_unclosed_declaration_element_fails_where_it_opens(opener: str, closer: str) -> None:
    text, at = damaged(PROMPT, closer, closer[:-2] + ">")
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    assert info.value.pos == text.rindex(opener, 0, at)


def test_a_wrong_declaration_element_fails_where_it_departs() -> None:
    text, at = damaged(PROMPT, "\n<parameters>", "\n<params>")
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    assert info.value.pos == at + len("\n<param")


def test_a_broken_call_with_no_content_fails_where_it_breaks() -> None:
    text, at = damaged(CALL, "</function>", "</func>")
    with pytest.raises(codec.ParseError) as info:
        FMT.decode(text)
    assert info.value.pos == at + len("</func")
