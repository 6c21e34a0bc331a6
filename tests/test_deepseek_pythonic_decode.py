"""Decoding ``deepseek_pythonic`` prompts: readings of ambiguous text, and where text that is no rendering
is refused.

``decode(render(case))`` equals ``deepseek_expected(case)`` (in ``formats/deepseek_pythonic.py``): the
case less what the template drops or writes alike, rule by rule; where a text holds role or think
markup, or a string argument a quote and ``,``/``)`` that may end it, the prompt reads some other way
too, and ``deepseek_reads_otherwise(case)`` names those cases. ``test_decode.py`` checks it on
generated conversations and golden renders, with the contract every format shares.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import arguments_back, assert_renders_back, decode_error_at, looked_per_char

from codec.formats.deepseek_pythonic import DeepseekPythonic

DEEPSEEK = DeepseekPythonic()


@pytest.mark.parametrize(
    "value",
    ['say "hi", x=1', 'a")', '"', 'x")y', 'p", q'],  # quotes that `, ` or `)` follow inside the string (D1)
)
def test_deepseek_unescaped_strings_come_back_where_the_rest_reads(value: str) -> None:
    assert arguments_back(DEEPSEEK, {"a": value, "n": 2}) == {"a": value, "n": 2}


def test_deepseek_a_string_that_reads_two_ways_takes_the_nearest_quote() -> None:
    """`a="x", b="y"` is one argument holding `x", b="y` or two: the nearest closing quote wins."""
    assert arguments_back(DEEPSEEK, {"a": 'x", b="y'}) == {"a": "x", "b": "y"}


def test_deepseek_thinking_switch_and_images_come_back() -> None:
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is it?"}]},
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": "Sure?"},
    ]
    text = DEEPSEEK.render(messages, add_generation_prompt=True, enable_thinking=False)
    conversation = assert_renders_back(DEEPSEEK, text)
    assert conversation.variables == {"enable_thinking": False}
    assert conversation.add_generation_prompt
    assert conversation.messages[0].content == messages[0]["content"]
    assert [m.content for m in conversation.messages[1:]] == ["A cat.", "Sure?"]


BOS = "<|begin_of_sentence|>"
DEEPSEEK_TOOLS_PROMPT = DEEPSEEK.render([{"role": "user", "content": ""}], [{"type": "function", "function": {}}])


@pytest.mark.parametrize(
    ("text", "pos"),
    [
        ("<|User|>Hi", 0),  # the prompt starts with the BOS (after its images)
        ("<image><image>x" + BOS, 14),
        (BOS + "\n\n# Tools\n\nYou have", 0),  # a cut tools preamble is system text: renders back
    ],
)
def test_deepseek_parse_error_positions(text: str, pos: int) -> None:
    if pos == 0 and text.startswith(BOS):
        assert_renders_back(DEEPSEEK, text)
    else:
        assert decode_error_at(DEEPSEEK, text) == pos


@pytest.mark.parametrize("tool", ['{"type": "function", "function": {', '{"a": }\n\n'])
def test_deepseek_broken_tools_block_is_refused_at_the_tool(tool: str) -> None:
    preamble = BOS + DEEPSEEK_TOOLS_PROMPT[len(BOS) : DEEPSEEK_TOOLS_PROMPT.index("{")]
    assert decode_error_at(DEEPSEEK, preamble + tool + "<|User|>Hi") == len(preamble)


# --------------------------------------------------------------------------- linear work


def _turns(count: int, *, calls_at_end: bool) -> list[dict[str, Any]]:
    """``count`` exchanges whose texts hold brackets and quotes, then (``calls_at_end``) one call list: each
    turn's end is searched for, and none is inside a call list."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    for index in range(count):
        messages.append({"role": "user", "content": f"q{index} [see {index}]"})
        messages.append({"role": "assistant", "content": f'a{index} ["quoted"] [f(x) "y"'})
    if calls_at_end:
        call = {"type": "function", "function": {"name": "f", "arguments": {"a": 1, "s": "x<|User|>y"}}}
        messages += [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [call]}]
        messages.append({"role": "tool", "content": "r"})
    return messages


@pytest.mark.parametrize("calls_at_end", [False, True], ids=["no_calls", "calls_at_end"])
def test_reading_a_prompt_looks_at_each_character_a_bounded_number_of_times(calls_at_end: bool) -> None:
    """Ten times the turns, the same characters looked at per character: no turn searches for its end,
    nor reads a call list, to the end of the prompt (a counted text, never the clock)."""
    small, big = (DEEPSEEK.render(_turns(count, calls_at_end=calls_at_end)) for count in (200, 2000))
    assert DEEPSEEK.decode(big).messages[-1].role == ("tool" if calls_at_end else "assistant")
    small_work, big_work = looked_per_char(DEEPSEEK.decode, small), looked_per_char(DEEPSEEK.decode, big)
    assert big_work <= small_work * 1.1
    assert big_work <= 16
