"""What is particular to ``deepseek_v3_1``: a call that arrives in one delta, a V3.2 (DSML) reply,
``thinking`` in the prompts, and the template taking arguments as JSON text."""

from __future__ import annotations

from pathlib import Path

import pytest

import codec
from codec import testing
from codec.models import ToolCallDelta, ToolCallEnd, ToolCallStart

FMT = codec.get_format("deepseek_v3_1")
TEMPLATE = Path(__file__).resolve().parents[2] / "shared" / "templates" / "families" / "deepseek"
CALL = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>"
    '{"timezone": "EST"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>'
)


def test_a_call_whose_begin_and_end_arrive_in_one_delta_is_sent_whole_in_it() -> None:
    stream = FMT.stream()
    events = stream.feed("Sure." + CALL)
    kinds = [type(event) for event in events if not isinstance(event, ToolCallDelta)]
    assert kinds[-2:] == [ToolCallStart, ToolCallEnd]
    sent = "".join(event.arguments for event in events if isinstance(event, ToolCallDelta))
    assert sent == '{"timezone": "EST"}'
    assert stream.close() == []
    assert stream.result == FMT.parse("Sure." + CALL)


def test_a_dsml_reply_is_reported_and_never_read_as_calls() -> None:
    reply = '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_time">\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'
    result = FMT.parse(reply)
    assert result.tool_calls == []
    assert result.content == reply
    assert [issue.kind for issue in result.issues] == ["invalid_tool_call"]


@pytest.mark.parametrize("thinking", [True, False])
def test_thinking_picks_the_generation_prompts_think_token(thinking: bool) -> None:
    prompt = FMT.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True, thinking=thinking)
    assert prompt.endswith("<｜Assistant｜>" + ("<think>" if thinking else "</think>"))
    assert FMT.decode(prompt).variables == ({"thinking": True} if thinking else {})


def test_object_arguments_are_written_as_the_json_text_the_template_is_given() -> None:
    path = TEMPLATE / "deepseek-ai-DeepSeek-V3.1.jinja"
    if not path.is_file():
        pytest.skip("the reference template is not available (../shared is absent)")
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": "é", "b": [1]}}}
    case = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "", "tool_calls": [call]}]}
    theirs, ours = testing.render_outcomes(path.read_text(encoding="utf-8"), FMT, case)
    assert theirs == ours
    assert '<｜tool▁sep｜>{"a": "é", "b": [1]}<｜tool▁call▁end｜>' in ours


def test_calls_arriving_whole_in_one_delta_are_each_sent_in_it() -> None:
    """Two whole calls in one delta, the second's begin and end both in it (vLLM issue #48020)."""
    one = "<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
    stream = FMT.stream()
    events = stream.feed("<｜tool▁calls▁begin｜>" + one + one)
    assert [type(e) for e in events if not isinstance(e, ToolCallDelta)] == [ToolCallStart, ToolCallEnd] * 2
    stream.feed("<｜tool▁calls▁end｜><｜end▁of▁sentence｜>")
    stream.close()
    assert len(stream.result.tool_calls) == 2 and stream.result.issues == []


def test_a_closing_quote_and_brace_in_separate_deltas_end_the_arguments() -> None:
    """The chunks of vLLM pull request #38866: the string's closing quote in one delta, the
    arguments' brace with the call's end in the next."""
    chunks = [
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>",
        '{"timezone": "EST',
        '"',
        "}<｜tool▁call▁end｜>",
        "<｜tool▁calls▁end｜>",
    ]
    stream = FMT.stream()
    events = [event for chunk in chunks for event in stream.feed(chunk)] + stream.close()
    sent = "".join(event.arguments for event in events if isinstance(event, ToolCallDelta))
    assert sent == '{"timezone": "EST"}'
    assert stream.result == FMT.parse("".join(chunks)) and stream.result.issues == []
