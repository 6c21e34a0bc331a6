"""What is particular to ``gemma4_31b`` (Gemma 4 31B's template, G1-G4 of its module): render, decode,
replies after its generation prompt, and ``codec check``'s reading of a turn that fills the thought
channel the generation prompt closes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import assert_renders_back

import codec
from codec.testing.check import _Checker

FMT = codec.get_format("gemma4_31b")
GEMMA4 = codec.get_format("gemma4")
TEMPLATE = Path(__file__).resolve().parents[1].parent / "shared" / "templates" / "families" / "gemma4"
USER = {"role": "user", "content": "Weather in Lisboa?"}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def _call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}


@pytest.mark.parametrize(
    ("variables", "thought"), [({}, True), ({"enable_thinking": False}, True), ({"enable_thinking": True}, False)]
)
def test_the_generation_prompt_ends_with_an_empty_thought_unless_thinking(
    variables: dict[str, Any], thought: bool
) -> None:
    prompt = FMT.render([USER], add_generation_prompt=True, **variables)
    assert prompt.endswith("<|turn>model\n" + ("<|channel>thought\n<channel|>" if thought else ""))
    assert assert_renders_back(FMT, prompt).variables == ({} if thought else {"enable_thinking": True})
    assert GEMMA4.render([USER], add_generation_prompt=True, **variables).endswith("<|turn>model\n")


def test_parameters_named_after_schema_keys_are_left_out_at_every_level() -> None:
    schema = {
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "box": {"type": "object", "properties": {"nullable": {"type": "boolean"}, "size": {"type": "integer"}}},
        },
    }
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": schema}}
    ours, reference = FMT.render([USER], [tool]), GEMMA4.render([USER], [tool])
    assert "type:{" not in ours and "nullable:{" not in ours and "size:{" in ours
    assert "type:{" in reference and "nullable:{" in reference
    assert assert_renders_back(FMT, ours).tools


def test_system_parts_are_printed_and_a_blank_answered_turn_is_closed() -> None:
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        USER,
        {"role": "assistant", "content": " ", "tool_calls": [_call({"city": "Lisboa"})]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "user", "content": "Thanks."},
    ]
    prompt = FMT.render(messages, [WEATHER])
    assert prompt.startswith("<|turn>system\n[{'type': 'text', 'text': 'Be brief.'}]<|tool>")
    assert "<tool_response|><turn|>\n<|turn>user\nThanks." in prompt
    assert "<tool_response|><|turn>user" in GEMMA4.render(messages, [WEATHER])  # the reference leaves it open
    decoded = assert_renders_back(FMT, prompt)
    assert [(m.role, m.content) for m in decoded.messages][2:5] == [
        ("assistant", None),
        ("tool", "sunny"),
        ("assistant", ""),
    ]


def test_a_reply_after_the_empty_thought_is_content_and_calls() -> None:
    prompt = FMT.render([USER], [WEATHER], add_generation_prompt=True)
    reply = '<|tool_call>call:get_weather{city:<|"|>Lisboa<|"|>}<tool_call|><|tool_response>'
    result = FMT.parse(reply, prompt=prompt)
    assert result.reasoning == "" and result.tool_calls[0].function.arguments == {"city": "Lisboa"}
    assert FMT.syntax() is GEMMA4.syntax()


def test_check_reads_a_turn_that_fills_the_closed_thought_from_its_opener() -> None:
    """The generation prompt closes the thought channel that a turn with reasoning writes: the model's
    reply starts at the channel's opener, not inside it (where the two texts part)."""
    path = TEMPLATE / "google-gemma-4-31B-it.jinja"
    if not path.is_file():
        pytest.skip(f"{path} is not available (../shared is absent)")
    case = {
        "messages": [
            USER,
            {"role": "assistant", "reasoning_content": "hello", "tool_calls": [_call({"city": "Lisboa"})]},
            {"role": "tool", "content": "sunny", "name": "get_weather"},
        ],
        "tools": [WEATHER],
        "add_generation_prompt": False,
        "variables": {},
    }
    turns = _Checker(path.read_text(encoding="utf-8"), FMT).turns(case)
    assert turns is not None
    assert turns[0].reply.startswith("<|channel>thought\nhello\n<channel|><|tool_call>call:get_weather{")
    assert turns[0].prompt.endswith("<|turn>model\n")


def test_its_template_is_detected_and_the_interleaved_one_is_not_taken_for_it() -> None:
    if not TEMPLATE.is_dir():
        pytest.skip(f"{TEMPLATE} is not available (../shared is absent)")
    assert codec.detect((TEMPLATE / "google-gemma-4-31B-it.jinja").read_text(encoding="utf-8")) == "gemma4_31b"
    interleaved = (TEMPLATE / "google-gemma-4-31B-it-interleaved.jinja").read_text(encoding="utf-8")
    assert codec.detect(interleaved) != "gemma4_31b"
