"""``qwen3_coder_official``: parity with the official Qwen3-Coder template, its quirks, and prompts of the
reference ``qwen3_coder`` template refused (or read exactly) and the other way round."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import assert_renders_back, examples, rendered
from hypothesis import given
from hypothesis import strategies as st
from strategies import conversations, rich_conversations
from test_render import render_both

import codec

TEMPLATE = Path(__file__).resolve().parents[1].parent / "shared" / "templates" / "qwen3-coder-official.jinja"
FMT = codec.get_format("qwen3_coder_official")
BASE = codec.get_format("qwen3_coder")
CASES = st.one_of(conversations(), conversations(content_parts=True), rich_conversations())


def _template() -> str:
    if not TEMPLATE.is_file():
        pytest.skip(f"official template {TEMPLATE} is not available (../shared is absent)")
    return TEMPLATE.read_text(encoding="utf-8")


@examples(900)
@given(case=CASES)
def test_render_matches_the_official_template(case: dict[str, Any]) -> None:
    ours, ref = render_both(FMT, _template(), case)
    assert ours == ref


def test_detected() -> None:
    template = _template()
    assert codec.detect(template) == "qwen3_coder_official"
    assert codec.detect({"chat_template": template, "bos_token": None}) == "qwen3_coder_official"


CALL = {"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}
TOOL = {
    "type": "function",
    "function": {
        "name": "f",
        "parameters": {
            "type": "object",
            "properties": {"on": {"type": "boolean"}, "cfg": {"type": "object"}, "n": {"type": ["integer", "null"]}},
        },
    },
}


def test_values_written_through_str_read_back_typed() -> None:
    arguments = {"on": True, "cfg": {"a": {"b": None, "c": [1, "x"]}}, "n": None}
    call = {**CALL, "function": {"name": "f", "arguments": arguments}}
    reply = FMT.render_reply({"role": "assistant", "tool_calls": [call]})
    assert "True\n" in reply and "{'a': {'b': None, 'c': [1, 'x']}}" in reply
    result = FMT.parse(reply, tools=[TOOL])
    assert not result.issues
    assert result.tool_calls[0].function.arguments == arguments
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [call]}]
    (_, assistant) = assert_renders_back(FMT, FMT.render(messages, [TOOL])).messages
    assert assistant.tool_calls is not None
    assert assistant.tool_calls[0].function.arguments == arguments


def test_quirks() -> None:
    messages = [
        {"role": "user", "content": " hi "},
        {"role": "assistant", "content": " ok ", "tool_calls": [CALL, CALL]},
        {"role": "tool", "content": "r1"},
        {"role": "tool", "content": "r2"},
    ]
    assert FMT.render(messages) == (
        "<|im_start|>user\n hi <|im_end|>\n"  # O1: no system turn; O5: content untrimmed
        "<|im_start|>assistant\nok\n\n<tool_call>\n<function=f>\n</function>\n</tool_call>"  # O4
        "\n<tool_call>\n<function=f>\n</function>\n</tool_call><|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response>\n"  # O3
        "<|im_end|>\n"
    )


@examples(150)
@given(case=CASES)
def test_prompts_of_the_other_template_are_refused_or_read_exactly(case: dict[str, Any]) -> None:
    for writer, reader in ((BASE, FMT), (FMT, BASE)):
        text = rendered(writer, case)
        if not text:
            continue
        try:
            conversation = reader.decode(text)
        except codec.ParseError:
            continue
        again = reader.render(
            conversation.messages, conversation.tools, add_generation_prompt=conversation.add_generation_prompt
        )
        assert again == text
