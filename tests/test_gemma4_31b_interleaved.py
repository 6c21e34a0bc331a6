"""What is particular to ``gemma4_31b_interleaved`` (Gemma 4 31B's interleaved template, I1-I5 of its
module): render parity where the shared generators do not reach (legacy ``tool_responses``), decode,
detection, and ``codec check``'s turns, which this template closes with the content after the calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import assert_renders_back, examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec import testing
from codec.testing.check import Unchecked, _Checker

FMT = codec.get_format("gemma4_31b_interleaved")
GEMMA4_31B = codec.get_format("gemma4_31b")
TEMPLATE = Path(__file__).resolve().parents[1].parent / "shared" / "templates" / "families" / "gemma4"
FIXTURE = TEMPLATE / "google-gemma-4-31B-it-interleaved.jinja"
USER = {"role": "user", "content": "Weather in Lisboa?"}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def _call(city: str, id_: str = "c1") -> dict[str, Any]:
    return {"id": id_, "type": "function", "function": {"name": "get_weather", "arguments": {"city": city}}}


def _fixture() -> str:
    if not FIXTURE.is_file():
        pytest.skip(f"{FIXTURE} is not available (../shared is absent)")
    return FIXTURE.read_text(encoding="utf-8")


_TEXT = st.sampled_from(["", " ", "Lisboa", "sunny <|image|>", "<|channel>x<channel|>ok"])
_CONTENT = st.one_of(st.none(), _TEXT, st.lists(st.sampled_from([{"type": "text", "text": "hi"}, {"type": "image"}])))


@st.composite
def _legacy_conversations(draw: st.DrawFn) -> dict[str, Any]:
    """Conversations with Gemma's native ``tool_responses`` (I3's continuation, I5), tool turns and reasoning."""
    messages: list[dict[str, Any]] = [USER]
    for index in range(draw(st.integers(1, 4))):
        message: dict[str, Any] = {"role": draw(st.sampled_from(["assistant", "assistant", "tool", "user"]))}
        if draw(st.booleans()):
            message["content"] = draw(_CONTENT)
        if message["role"] == "assistant":
            if draw(st.booleans()):
                message["tool_calls"] = [_call("Lisboa", f"c{index}")]
            if draw(st.booleans()):
                message["reasoning_content"] = draw(_TEXT)
            if draw(st.booleans()):
                response = draw(st.sampled_from(["rain", {"sky": "clear"}, None]))
                message["tool_responses"] = [{"name": "get_weather", "response": response}]
        messages.append(message)
    return {
        "messages": messages,
        "tools": draw(st.sampled_from([None, [WEATHER]])),
        "add_generation_prompt": draw(st.booleans()),
        "variables": draw(st.sampled_from([{}, {"enable_thinking": True}])),
    }


@examples(60)
@given(case=_legacy_conversations())
def test_renders_as_its_template_with_legacy_results_tool_turns_and_reasoning(case: dict[str, Any]) -> None:
    testing.assert_renders_like(_fixture(), FMT, case)


def test_declarations_write_literal_leading_commas() -> None:
    """I1: ``,properties:{`` / ``,items:{`` after nothing, and no comma before the type that follows them."""
    schema = {
        "type": "object",
        "properties": {
            "box": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "who": {"type": "object", "description": "d", "nullable": True, "properties": {}},
        },
    }
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": schema}}
    prompt = FMT.render([USER], [tool])
    assert 'box:{,properties:{size:{type:<|"|>INTEGER<|"|>}}type:<|"|>OBJECT<|"|>}' in prompt
    assert 'tags:{,items:{type:<|"|>STRING<|"|>}type:<|"|>ARRAY<|"|>}' in prompt
    assert 'who:{description:<|"|>d<|"|>,nullable:true,properties:{},type:<|"|>OBJECT<|"|>}' in prompt
    assert "box:{properties:{size:" in GEMMA4_31B.render([USER], [tool])  # the 31B template's layout
    back = {
        **schema,
        "properties": {**schema["properties"], "who": {"type": "object", "description": "d", "nullable": True}},
    }
    assert assert_renders_back(FMT, prompt).tools == [  # an object with no properties lists none (Q12)
        {"type": "function", "function": {"name": "f", "description": "d", "parameters": back}}
    ]


def test_tool_results_are_tool_turns_and_every_turn_is_closed() -> None:
    """I2, I3, I4: results are ``<|turn>tool`` turns, calls end with ``<turn|>``, reasoning with ``<channel|>``."""
    messages = [
        USER,
        {"role": "assistant", "content": "", "reasoning_content": "Look.", "tool_calls": [_call("Lisboa")]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
    ]
    prompt = FMT.render(messages, [WEATHER])
    assert (
        '<|turn>model\n<|channel>thought\nLook.<channel|><|tool_call>call:get_weather{city:<|"|>Lisboa<|"|>}'
        "<tool_call|><turn|>\n<|turn>tool\nsunny<turn|>\n<|turn>model\nSunny.<turn|>\n"
    ) in prompt
    decoded = assert_renders_back(FMT, prompt)
    assert [(m.role, m.content) for m in decoded.messages] == [
        ("user", "Weather in Lisboa?"),
        ("assistant", None),
        ("tool", "sunny"),
        ("assistant", "Sunny."),
    ]
    assert decoded.messages[1].reasoning_content == "Look."
    assert decoded.messages[2].tool_call_id == decoded.messages[1].tool_calls[0].id


def test_calls_after_legacy_results_continue_the_turn_and_the_prompt_is_the_empty_thought() -> None:
    """I3, I5: calls right after ``tool_responses`` open no turn; after them the generation prompt is
    the empty thought alone."""
    messages = [
        USER,
        {
            "role": "assistant",
            "tool_calls": [_call("Lisboa")],
            "tool_responses": [{"name": "get_weather", "response": "rain"}],
        },
        {"role": "assistant", "tool_calls": [_call("Porto", "c2")]},
        {"role": "assistant", "tool_responses": [{"name": "get_weather", "response": {"sky": "clear"}}]},
    ]
    prompt = FMT.render(messages, [WEATHER], add_generation_prompt=True)
    assert '<tool_response|><|tool_call>call:get_weather{city:<|"|>Porto' in prompt
    assert prompt.endswith("<tool_response|><|channel>thought\n<channel|>")
    decoded = assert_renders_back(FMT, prompt)
    assert decoded.add_generation_prompt
    assert [bool(m.tool_calls) for m in decoded.messages] == [False, True, True, False]
    assert decoded.messages[3].tool_responses == [{"name": "get_weather", "response": {"sky": "clear"}}]


def test_its_template_is_detected_and_the_other_gemma4_templates_are_not_taken_for_it() -> None:
    assert codec.detect(_fixture()) == "gemma4_31b_interleaved"
    assert codec.detect((TEMPLATE / "google-gemma-4-31B-it.jinja").read_text(encoding="utf-8")) == "gemma4_31b"


def test_check_reads_no_reply_where_the_template_writes_the_content_after_the_calls() -> None:
    """This template writes an answered turn's content after its calls, which no model does: the
    turn has no reply to read (a turn without content still does, ended by ``<turn|>``)."""
    checker = _Checker(_fixture(), FMT)

    def case(content: str) -> dict[str, Any]:
        messages = [
            USER,
            {"role": "assistant", "content": content, "tool_calls": [_call("Lisboa")]},
            {"role": "tool", "content": "sunny", "name": "get_weather"},
        ]
        return {"messages": messages, "tools": [WEATHER], "add_generation_prompt": False, "variables": {}}

    assert isinstance(checker.turns(case("Let me look.")), Unchecked)
    turns = checker.turns(case(""))
    assert not isinstance(turns, Unchecked)
    assert turns[0].reply == '<|tool_call>call:get_weather{city:<|"|>Lisboa<|"|>}<tool_call|><turn|>'
    assert checker.round_trip(case("")) is True and isinstance(checker.round_trip(case("Let me look.")), Unchecked)
