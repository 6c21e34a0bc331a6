"""ChatML prompts (``hermes``, ``qwen3_coder``): their markers, and reading their turns back.

ChatML templates write each turn as ``<|im_start|>ROLE\\n...<|im_end|>\\n``. A turn's text is free,
so a turn ends at the first ``<|im_end|>\\n`` that the next turn's opener (or the end of the
prompt) follows, and a content that itself holds such a sequence reads as two turns that render
the same. Offsets are into the whole prompt, so that a :class:`~codec.errors.ParseError` points
where the text stops matching.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from codec.errors import parse_error_at
from codec.formats._calls import MARKUP, THINK_MARKS, ProseText, before_stop, leading_reasoning, reads_as_text
from codec.formats._decode import expected_error
from codec.formats._reading import find_all
from codec.stream import WholeReading

# ---------------------------------------------------------------------------- markers

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
TURN_END = IM_END + "\n"
#: ``add_generation_prompt``: what ChatML templates append to open the assistant's turn.
GENERATION_PROMPT = IM_START + "assistant\n"
#: A tool result, as the templates write one in a user turn: RESPONSE_OPEN + result + RESPONSE_CLOSE.
RESPONSE_OPEN = "\n<tool_response>\n"
RESPONSE_CLOSE = "\n</tool_response>"

# ---------------------------------------------------------------------------- turns

_ROLE = re.compile(r"[A-Za-z_]+")


@dataclass(frozen=True)
class ChatMLTurn:
    """One ``<|im_start|>ROLE...<|im_end|>\\n`` turn, by offsets into the prompt."""

    role: str
    #: Offset of ``<|im_start|>``.
    start: int
    #: Offset right after the role name: the turn's own text runs from here to ``end``.
    body: int
    #: Offset of the closing ``<|im_end|>``.
    end: int

    @property
    def after(self) -> int:
        """Offset of what follows the turn's ``<|im_end|>\\n``."""
        return self.end + len(TURN_END)


def turn_end(text: str, body: int, followers: Sequence[str], closer: str = TURN_END) -> int:
    """The offset of the ``<|im_end|>`` (``closer``: another template's turn end) closing the turn
    whose text starts at ``body``.

    It is the first ``<|im_end|>\\n`` followed by the end of the prompt or by one of ``followers``
    (the openers the next turn may start with). Raises a ParseError where the next turn should
    have started, or at the end of the prompt when no ``<|im_end|>\\n`` comes at all.
    """
    last = -1
    followers = tuple(followers)
    for found in find_all(text, body, (closer,)):
        after = found + len(closer)
        if after == len(text) or text.startswith(followers, after):
            return found
        last = after
    if last < 0:
        raise parse_error_at(
            text, len(text), f"the turn is never closed by {closer!r}", expected=(closer.rstrip("\n"),)
        )
    raise expected_error(text, last, followers, "the next turn or the end of the prompt")


def read_turn(text: str, pos: int, openers: Sequence[str], followers: Sequence[str]) -> ChatMLTurn:
    """The turn at ``pos``, which starts with one of ``openers`` (``<|im_start|>`` + role + what may follow)."""
    if not text.startswith(tuple(openers), pos):
        raise expected_error(text, pos, openers, "a turn: " + " or ".join(repr(opener) for opener in openers))
    role = _ROLE.match(text, pos + len(IM_START))
    assert role is not None  # every opener names a role
    return ChatMLTurn(role.group(), pos, role.end(), turn_end(text, role.end(), followers))


def read_turns(text: str, pos: int, openers: Sequence[str]) -> tuple[list[ChatMLTurn], bool]:
    """The turns from ``pos`` to the end of the prompt, and whether it ends with the generation prompt."""
    turns: list[ChatMLTurn] = []
    while pos < len(text):
        if len(text) - pos == len(GENERATION_PROMPT) and text.startswith(GENERATION_PROMPT, pos):
            return turns, True
        turn = read_turn(text, pos, openers, openers)
        turns.append(turn)
        pos = turn.after
    return turns, False


def tool_responses(text: str, start: int, end: int) -> list[str] | None:
    """The results of ``text[start:end]`` if it is a group ``(\\n<tool_response>\\nRESULT\\n</tool_response>)+``.

    Results are split at every ``\\n</tool_response>\\n<tool_response>\\n``: one that holds that
    sequence reads as two, which render the same. None when the text is no such group.
    """
    if (
        end - start < len(RESPONSE_OPEN) + len(RESPONSE_CLOSE)
        or not text.startswith(RESPONSE_OPEN, start)
        or not text.endswith(RESPONSE_CLOSE, start, end)
    ):
        return None
    return text[start + len(RESPONSE_OPEN) : end - len(RESPONSE_CLOSE)].split(RESPONSE_CLOSE + RESPONSE_OPEN)


# ---------------------------------------------------------------------------- whole replies

#: A reader of one call block at a position: ((name, arguments), where the block ends), or None.
BlockReader = Callable[[str, int], "tuple[tuple[str, dict[str, Any]], int] | None"]


def read_whole_reply(
    text: str,
    opener: str,
    read_block: BlockReader,
    *,
    stop: str = IM_END,
    reasoning_marks: tuple[str, str] | None = THINK_MARKS,
    prose_text: ProseText | None = None,
) -> WholeReading | None:
    """A whole ChatML reply in its template's shape, read at once (``Syntax.whole``): an optional
    ``<think>\n...\n</think>\n\n`` (``reasoning_marks``; None where replies have no reasoning),
    prose, then blocks (each starting with ``opener`` and read by ``read_block``) one ``\n`` after
    the prose and after each other, then nothing or ``<|im_end|>`` (``stop``). None for anything
    else: prose holding what may be markup, reasoning that does too or starts or ends with a blank
    (where the grammar's rules decide what the blanks are), text between or after the blocks, a
    block ``read_block`` declines.

    ``prose_text`` takes prose holding markup characters (see :class:`ProseText`): prose that one
    run of the grammar's own terminal for the reply's first text reads to its end, holding none of
    the markers the stream acts on beyond the grammar and starting with none of the characters its
    fast lexers may take a shape at, is text as the rules read it."""
    lead = ("", 0) if reasoning_marks is None else leading_reasoning(text, *reasoning_marks)
    if lead is None:
        return None
    reasoning, start = lead
    last = before_stop(text, stop)
    first = text.find(opener, start, last)
    prose = text[start:last] if first < 0 else text[start : first - 1] if first > start else ""
    if MARKUP.search(prose) and not reads_as_text(text, start, prose, prose_text):
        return None
    if first < 0:
        return prose, reasoning, []
    if first > start and text[first - 1] != "\n":
        return None
    calls = []
    pos = first
    while True:
        got = read_block(text, pos)
        if got is None:
            return None
        call, end = got
        calls.append(call)
        if end == last:
            return prose, reasoning, calls
        if text[end] != "\n" or not text.startswith(opener, end + 1):
            return None
        pos = end + 1
