"""Decoding ``qwen3`` prompts: what comes back (reasoning after the last query, ``enable_thinking``), and
where text that is no rendering is refused.

``test_decode.py`` runs the shared contract on the shared generators, most of whose conversations this
template refuses; here the same generators, made text (``test_qwen3_render.qwen3_cases``), are decoded.
"""

from __future__ import annotations

from typing import Any

import pytest
from formats.qwen3 import decode_normal_form
from harness import assert_renders_back, decoded_as_json, examples, rendered
from hypothesis import given
from hypothesis import strategies as st
from test_qwen3_render import qwen3_cases

import codec

FMT = codec.get_format("qwen3")


@examples(900)  # 108 by default
@given(data=st.data())
def test_renderings_decode_to_their_normal_form(data: st.DataObject) -> None:
    case = qwen3_cases(data)
    text = rendered(FMT, case)
    if text is None:
        return
    conversation = assert_renders_back(FMT, text)
    expected = decode_normal_form(case, text)
    if expected is not None:
        assert decoded_as_json(conversation) == expected


def _decoded(messages: list[dict[str, Any]], **kwargs: Any) -> list[dict[str, Any]]:
    conversation = assert_renders_back(FMT, FMT.render(messages, **kwargs))
    return [m.model_dump(exclude_none=True) for m in conversation.messages]


def test_reasoning_comes_back_only_after_the_last_query() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b", "reasoning_content": "lost"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "\nd", "reasoning_content": "\nkept\n", "tool_calls": []},
        {"role": "tool", "content": "r"},
        {"role": "assistant", "content": "e"},
    ]
    assert _decoded(messages) == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d", "reasoning_content": "kept"},
        {"role": "tool", "content": "r"},
        {"role": "assistant", "content": "e", "reasoning_content": ""},
    ]


def test_thinking_disabled_comes_back_as_the_variable() -> None:
    conversation = FMT.decode(
        FMT.render([{"role": "user", "content": "hi"}], add_generation_prompt=True, enable_thinking=False)
    )
    assert conversation.variables == {"enable_thinking": False}
    assert conversation.add_generation_prompt


def test_think_tags_in_content_before_the_last_query_stay_content() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "<think>\nx\n</think>\n\ny", "reasoning_content": ""},
        {"role": "user", "content": "b"},
    ]
    assert _decoded(messages)[1] == {
        "role": "assistant",
        "content": "<think>\nx\n</think>\n\ny",
        "reasoning_content": "",
    }


def test_a_last_turn_without_its_think_block_shows_a_message_after_it() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "developer", "content": "x"},
    ]
    assert _decoded(messages)[1:] == [{"role": "assistant", "content": "b"}, {"role": "developer", "content": ""}]


@pytest.mark.parametrize(
    "text",
    [
        "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n<think>\nunclosed<|im_end|>\n",
        "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\nb<|im_end|>\n",
        "<|im_start|>tool\nb<|im_end|>\n",
        "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nb",
    ],
    ids=["unclosed think block", "think block without its blank line", "tool turn", "unclosed turn"],
)
def test_text_that_is_no_rendering_is_refused(text: str) -> None:
    with pytest.raises(codec.ParseError):
        FMT.decode(text)


def test_the_message_says_what_is_missing() -> None:
    with pytest.raises(codec.ParseError, match="no think block"):
        FMT.decode("<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n<think>\nunclosed<|im_end|>\n")
