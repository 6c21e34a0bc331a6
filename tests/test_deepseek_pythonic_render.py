"""Hand-checked rendering of ``deepseek_pythonic``: what has no reference template (``render_reply``)
and the template quirks worth spelling out. Parity with the reference templates is in test_render.py."""

from __future__ import annotations

from typing import Any

import pytest

from codec.errors import RenderError
from codec.formats.deepseek_pythonic import DeepseekPythonic

DEEPSEEK = DeepseekPythonic()
USER = {"role": "user", "content": "Hi"}


def _call(name: str, arguments: Any, id_: str = "c1") -> dict[str, Any]:
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_deepseek_render_reply() -> None:
    message = {
        "role": "assistant",
        "reasoning_content": "\nNeed it.\n",
        "content": "Let me check.",
        "tool_calls": [_call("f", {"s": 'a "b"\n', "n": 1, "o": {"k": None}}), _call("g", {})],
    }
    assert DEEPSEEK.render_reply(message) == (
        '<think>\nNeed it.\n</think>\n\nLet me check.[f(s="a "b"\n", n=1, o={"k": null}), g()]<|end_of_sentence|>'
    )
    assert DEEPSEEK.render_reply({"role": "assistant", "content": " Hello "}) == " Hello "


def test_deepseek_render_reply_splits_inline_reasoning_without_the_template_bug() -> None:
    message = {"role": "assistant", "content": "<think>\nhidden\n</think>\n\nIt is sunny."}
    assert DEEPSEEK.render_reply(message) == "<think>\nhidden\n</think>\n\nIt is sunny."
    # the template itself writes the answer twice (D7)
    assert DEEPSEEK.render([USER, message]).endswith("<|Assistant|><think>\nIt is sunny.\n</think>\n\nIt is sunny.")


@pytest.mark.parametrize("thinking", [None, True, False])
def test_deepseek_prompt_plus_reply_is_the_history(thinking: bool | None) -> None:
    variables = {} if thinking is None else {"enable_thinking": thinking}
    reply = {"role": "assistant", "reasoning_content": "R", "tool_calls": [_call("f", {"a": "x"})]}
    prompt = DEEPSEEK.render([USER], add_generation_prompt=True, **variables)
    history = DEEPSEEK.render([USER, reply], **variables)
    generated = DEEPSEEK.render_reply(reply)
    if thinking:  # the prompt already holds the opening <think>
        assert prompt.endswith("<|Assistant|><think>")
        generated = generated.removeprefix("<think>")
    # thinking off: the prompt ends "</think>", but the history shows the reasoning of its last turn
    assert history == prompt.removesuffix("</think>") + generated


def test_deepseek_string_arguments_fail_like_the_template() -> None:
    message = {"role": "assistant", "tool_calls": [_call("f", '{"a": 1}')]}
    with pytest.raises(RenderError, match=r"^Object of type Undefined is not JSON serializable$"):
        DEEPSEEK.render([USER, message])
    assert DEEPSEEK.render_reply({"role": "assistant", "tool_calls": [_call("f", "")]}) == "[f()]<|end_of_sentence|>"
