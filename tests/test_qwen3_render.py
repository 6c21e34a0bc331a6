"""``qwen3`` render parity: the renderer against the official Qwen3 template (``../shared/templates``).

The generic parity test (test_render.py) runs the shared generators, most of whose conversations
this template refuses (content parts, assistant turns without content: quirk Q5). Here the same
generators are also given text content everywhere, so that most conversations render, and text
full of the markers the template reads (``<think>``, ``</think>``, ``<tool_response>``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import examples
from hypothesis import given
from hypothesis import strategies as st
from strategies import conversations, rich_conversations
from test_render import render_both

import codec

TEMPLATE = Path(__file__).resolve().parents[1].parent / "shared" / "templates" / "qwen3.jinja"
FMT = codec.get_format("qwen3")

#: Text the template reads: think tags, hand-written tool results, newlines it trims.
QWEN3_TEXT = ("<think>", "</think>", "<tool_response>", "</tool_response>", "\n", "\n\n", "x", "é 🙂")


def template() -> str:
    if not TEMPLATE.is_file():
        pytest.skip(f"reference template {TEMPLATE} is not available (../shared is absent)")
    return TEMPLATE.read_text(encoding="utf-8")


def _text(value: Any, data: st.DataObject) -> str:
    """``value`` as text content: parts joined, None or absent made ``""``, Qwen3 markers mixed in."""
    if isinstance(value, list):
        value = "".join(part.get("text", "") for part in value if isinstance(part, dict))
    text = value if isinstance(value, str) else ""
    pieces = data.draw(st.lists(st.sampled_from(QWEN3_TEXT), max_size=3))
    if pieces:
        at = data.draw(st.integers(0, len(text)))
        text = text[:at] + "".join(pieces) + text[at:]
    return text


def textual(case: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """The case with every system, user and assistant content made text (tool results left as they are)."""
    messages = []
    for message in case["messages"]:
        if message.get("role") in ("system", "user", "assistant"):
            message = {**message, "content": _text(message.get("content"), data)}
        messages.append(message)
    return {**case, "messages": messages}


def qwen3_cases(data: st.DataObject) -> dict[str, Any]:
    """A generated conversation, mostly made text (one in five as generated: most of those raise)."""
    case = data.draw(st.one_of(conversations(), conversations(content_parts=True), rich_conversations()))
    return case if data.draw(st.integers(0, 4)) == 0 else textual(case, data)


@examples(900)  # 108 by default
@given(data=st.data())
def test_render_matches_the_qwen3_template(data: st.DataObject) -> None:
    ours, ref = render_both(FMT, template(), qwen3_cases(data))
    assert ours == ref


@pytest.mark.parametrize("enable_thinking", [False, True, None])
def test_generation_prompt_thinking(enable_thinking: bool | None) -> None:
    variables = {} if enable_thinking is None else {"enable_thinking": enable_thinking}
    text = FMT.render([{"role": "user", "content": "hi"}], add_generation_prompt=True, **variables)
    tail = "<|im_start|>assistant\n" + ("<think>\n\n</think>\n\n" if enable_thinking is False else "")
    assert text == "<|im_start|>user\nhi<|im_end|>\n" + tail


def test_reasoning_only_after_the_last_query() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b", "reasoning_content": "dropped"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "", "reasoning_content": "kept", "tool_calls": []},
        {"role": "tool", "content": "r"},
        {"role": "assistant", "content": "\n\nd"},
    ]
    assert FMT.render(messages) == (
        "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n<|im_start|>user\nc<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nkept\n</think>\n\n<|im_end|>\n"
        "<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\nd<|im_end|>\n"
    )
