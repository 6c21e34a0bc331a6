"""gemma4's value notation and ``render_reply`` (render parity itself is in test_render.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from codec.errors import RenderError
from codec.formats.gemma4 import Gemma4, format_value

GEMMA4 = Gemma4()


def _call(name: str, arguments: Any, id_: str = "c1") -> dict[str, Any]:
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_value_notation() -> None:
    args = {"b": 1, "A": 2.0, "a": 1e20, "Z": -0.5, "flag": False, "n": None, "big": 12345678901234567890}
    assert (
        format_value(args, quote_keys=False) == "{A:2.0,a:1e+20,b:1,big:12345678901234567890,flag:false,n:None,Z:-0.5}"
    )
    assert format_value({"k": ['x "y"\n\\', {}]}) == '{<|"|>k<|"|>:[<|"|>x "y"\n\\<|"|>,{}]}'


def test_render_reply_with_calls_stops_at_tool_response() -> None:
    message = {
        "role": "assistant",
        "reasoning_content": "Need the weather.",
        "content": "Let me check.",
        "tool_calls": [_call("get_weather", {"days": 3, "city": "Paris"}), _call("noop", {}, "c2")],
    }
    assert GEMMA4.render_reply(message) == (
        "<|channel>thought\nNeed the weather.<channel|>Let me check."
        '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>'
        "<|tool_call>call:noop{}<tool_call|><|tool_response>"
    )


def test_render_reply_without_calls_ends_the_turn() -> None:
    message = {"role": "assistant", "content": "  <|channel>thought\nold<channel|>It is sunny.  "}
    assert GEMMA4.render_reply(message) == "It is sunny.<turn|>"
    assert GEMMA4.render_reply({"role": "assistant", "content": "", "tool_calls": []}) == "<turn|>"


def test_render_reply_string_arguments_are_pasted() -> None:
    message = {"role": "assistant", "tool_calls": [_call("f", '{"a": 1}')]}
    assert GEMMA4.render_reply(message) == '<|tool_call>call:f{{"a": 1}}<tool_call|><|tool_response>'


def test_generation_prompt_follows_reply() -> None:
    """The prompt for the next reply ends with ``<|turn>model\\n``; a reply is written after it."""
    prompt = GEMMA4.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True, bos_token="<bos>")
    assert prompt == "<bos><|turn>user\nHi<turn|>\n<|turn>model\n"
    history = GEMMA4.render([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}])
    assert (
        history
        == "<|turn>user\nHi<turn|>\n<|turn>model\n"
        + GEMMA4.render_reply({"role": "assistant", "content": "Hello!"})
        + "\n"
    )


def test_unnamed_tool_result_fails_like_the_template() -> None:
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "tool_calls": [_call("f", {})]},
        {"role": "tool", "content": "x"},
    ]
    with pytest.raises(RenderError, match=re.escape('can only concatenate str (not "NoneType") to str')):
        GEMMA4.render(messages)


def test_render_reply_writes_keys_bare_whatever_their_first_letter() -> None:
    """The reply of golden/gemma4/keys_starting_with_non_ascii_letters."""
    message = {"role": "assistant", "tool_calls": [_call("f", {"été": 1, "日付": "2024-01-01"})]}
    assert (
        GEMMA4.render_reply(message)
        == '<|tool_call>call:f{été:1,日付:<|"|>2024-01-01<|"|>}<tool_call|><|tool_response>'
    )


def test_channel_marker_in_user_text_is_written_as_it_is() -> None:
    """The prompt of golden/gemma4/channel_marker_in_an_earlier_message."""
    prompt = GEMMA4.render([{"role": "user", "content": "What does <|channel> mean?"}], add_generation_prompt=True)
    assert prompt == "<|turn>user\nWhat does <|channel> mean?<turn|>\n<|turn>model\n"


class _CountedList(list[Any]):
    """A message list that counts the elements its slices copy."""

    copied = 0

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            _CountedList.copied += len(range(*index.indices(len(self))))
        return super().__getitem__(index)


def _call_turns(n: int) -> list[dict[str, Any]]:
    """``n`` rounds of a question, a call, its result and an answer."""
    messages: list[dict[str, Any]] = []
    for i in range(n):
        messages.append({"role": "user", "content": f"q{i}"})
        messages.append({"role": "assistant", "content": "", "tool_calls": [_call("f", {"a": i}, f"c{i}")]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
        messages.append({"role": "assistant", "content": "done"})
    return messages


def test_call_turns_render_without_copying_the_rest_of_the_messages() -> None:
    """Each call turn reads the tool messages after it in place, not from a copy of the rest of
    the list (one per call turn: quadratic in the number of messages)."""
    from codec.formats.gemma4 import prompt_text

    copies = []
    for n in (50, 200):
        messages = _CountedList(_call_turns(n))
        _CountedList.copied = 0
        text = prompt_text(messages, None, False, {})
        assert text == prompt_text(list(messages), None, False, {})
        assert text.count("<|tool_response>") == n
        copies.append(_CountedList.copied)
    assert copies == [0, 0]
