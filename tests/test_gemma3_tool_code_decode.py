"""Decoding ``gemma3_tool_code`` prompts (the seed template and ``Gemma3ToolCode(corrected=True)``):
readings of ambiguous text, and where text that is no rendering is refused.

``decode(render(case))`` equals ``gemma3_expected(case)`` (in ``formats/gemma3_tool_code.py``): the
case less what the template drops or writes alike, rule by rule; where a text holds the format's own
markup (a role marker inside a message...), the prompt reads some other way too, and
``gemma3_reads_otherwise(case)`` names those cases. ``test_decode.py`` checks it on generated
conversations and golden renders, with the contract every format shares.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import arguments_back, assert_renders_back, decode_error_at, looked_per_char

from codec.formats.gemma3_tool_code import TOOLS_PROMPT as GEMMA3_TOOLS_PROMPT
from codec.formats.gemma3_tool_code import Gemma3ToolCode

GEMMA3 = Gemma3ToolCode()
CORRECTED = Gemma3ToolCode(corrected=True)


@pytest.mark.parametrize("fmt", [GEMMA3, CORRECTED], ids=["seed", "corrected"])
@pytest.mark.parametrize(
    "arguments",
    [
        {"n": 1, "e5": 2, "E": 0.5},  # unseparated (seed): `n=1e5=2E=0.5`, and tojson never writes 1e5
        {"s": 'say "hi"\n', "flag": False, "none": None, "list": [1, {"k": "v"}], "big": 12345678901234567890},
        '{"city": "Paris"}',  # a JSON string: its characters are written one by one (G7)
        ["a", 1, None],  # a list: its items, positionally
    ],
)
def test_gemma3_arguments_come_back(fmt: Gemma3ToolCode, arguments: Any) -> None:
    assert arguments_back(fmt, arguments) == arguments


def test_gemma3_tools_without_a_system_message_are_lost() -> None:
    """G4: the template writes the tools only into the system prefix."""
    tools = [{"type": "function", "function": {"name": "f"}}]
    text = GEMMA3.render([{"role": "user", "content": "Hi"}], tools)
    assert assert_renders_back(GEMMA3, text).tools is None


TURN = "<start_of_turn>user\nHi<end_of_turn>\n"
TOOLS_TURN = "<start_of_turn>user\nS" + GEMMA3_TOOLS_PROMPT


@pytest.mark.parametrize(
    ("text", "pos"),
    [
        ("<start_of_turn>user\nHel", 23),  # truncated: the turn never closes
        ("<start_of_turn>user", 19),  # the role is never followed by a line break
        ("<start_of_turn>assistant\nHi<end_of_turn>\n", 15),  # assistant turns are written `model`
        (TURN + "junk", len(TURN)),  # after a turn, another turn or the end
        ("<start_of_turn>user\n Hi<end_of_turn>\n", 20),  # turn text is trimmed
        ("<start_of_turn>system\nHi<end_of_turn>\n", 22),  # other roles' turns hold no text
        (TURN + TURN, len(TURN)),  # a user turn must be followed by the model's (G5)
        (TOOLS_TURN + "[{]\n\nHi<end_of_turn>\n", len(TOOLS_TURN)),  # the tools block is not JSON
        (TOOLS_TURN + '[{"a": 1}]\n\nHi<end_of_turn>\n', len(TOOLS_TURN)),  # nor a list of OpenAI tools
    ],
)
def test_gemma3_parse_error_positions(text: str, pos: int) -> None:
    assert decode_error_at(GEMMA3, text) == pos


def test_gemma3_tools_json_not_written_as_the_template_does_is_refused() -> None:
    text = TOOLS_TURN + '[{"type": "function", "function": {"name": "f"}}]\n\nHi<end_of_turn>\n'
    assert decode_error_at(GEMMA3, text) == len(TOOLS_TURN)  # not indented by 4


# --------------------------------------------------------------------------- linear work


def test_a_system_text_of_many_paragraphs_is_read_in_linear_work() -> None:
    """The first turn may start with the system text, which ends at one of its blank lines: ten times the
    paragraphs, the same characters looked at per character (a counted text, never the clock)."""

    def prompt(paragraphs: int) -> str:
        system = "\n\n".join(f"rule {index}: be brief" for index in range(paragraphs))
        messages = [{"role": "system", "content": system}, {"role": "user", "content": "hi"}]
        return GEMMA3.render([*messages, {"role": "assistant", "content": "hello"}])

    small, big = prompt(500), prompt(5000)
    read = GEMMA3.decode(big)
    assert GEMMA3.render(read.messages, read.tools, add_generation_prompt=read.add_generation_prompt) == big
    small_work, big_work = looked_per_char(GEMMA3.decode, small), looked_per_char(GEMMA3.decode, big)
    assert big_work <= small_work * 1.1
    assert big_work <= 16
