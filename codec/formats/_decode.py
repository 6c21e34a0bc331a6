"""Reading rendered prompts back: pieces several formats' ``_decode`` share.

Everything works on offsets into the whole prompt, so that a :class:`~codec.errors.ParseError`
points where the text stops matching. The ChatML helpers cover the templates that write turns as
``<|im_start|>ROLE\\n...<|im_end|>\\n`` (``hermes``, ``qwen3_coder``): a turn's text is free, so a
turn ends at the first ``<|im_end|>\\n`` that the next turn's opener (or the end of the prompt)
follows, and a content that itself holds such a sequence reads as two turns that render the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from codec import jinja
from codec.errors import ParseError, parse_error_at
from codec.literals import PLAIN_JSON_DECODER

Block = TypeVar("Block")

# ---------------------------------------------------------------------------- literals


def mismatch(text: str, pos: int, expected: Iterable[str]) -> int:
    """The offset where ``text`` stops matching the longest-matching of the ``expected`` literals at ``pos``."""
    best = pos
    for literal in expected:
        n = 0
        limit = min(len(literal), len(text) - pos)
        while n < limit and text[pos + n] == literal[n]:
            n += 1
        best = max(best, pos + n)
    return best


def expected_error(text: str, pos: int, expected: Sequence[str], what: str | None = None) -> ParseError:
    """A ParseError where ``text`` stops matching ``expected`` at ``pos``, saying what was expected.

    ``what`` describes it; by default the literals are listed.
    """
    shown = what or " or ".join(repr(literal) for literal in expected)
    return parse_error_at(text, mismatch(text, pos, expected), f"expected {shown}", expected=expected)


def expect(text: str, pos: int, literal: str) -> int:
    """The offset after ``literal``, which must be at ``pos``; a ParseError where the text departs from it."""
    if not text.startswith(literal, pos):
        raise expected_error(text, pos, (literal,))
    return pos + len(literal)


def until(text: str, pos: int, closer: str, end: int, opened_at: int) -> int:
    """The offset of the first ``closer`` in ``text[pos:end]``; a ParseError at ``opened_at`` if there is none."""
    found = text.find(closer, pos, end)
    if found < 0:
        raise parse_error_at(text, opened_at, f"this element is never closed by {closer!r}", expected=(closer,))
    return found


def json_as_written(text: str) -> Any:
    """The value that ``tojson`` writes as exactly ``text`` if that value is not a string, else ``text`` itself.

    Templates write string values raw and everything else as JSON, so ``42`` reads as the number
    and ``say "hi"`` as the string. A string that looks like JSON (``"42"``) reads as the JSON value.
    """
    try:
        value = PLAIN_JSON_DECODER.decode(text)
        return text if isinstance(value, str) or jinja.tojson(value) != text else value
    except (ValueError, RecursionError):
        return text


def json_object_as_written(text: str, pos: int) -> tuple[dict[str, Any], int] | None:
    """The JSON object at ``pos`` and the offset after it, if ``tojson`` writes that object as exactly that text."""
    try:
        value, end = PLAIN_JSON_DECODER.raw_decode(text, pos)
        if not isinstance(value, dict) or jinja.tojson(value) != text[pos:end]:
            return None
    except (ValueError, RecursionError):
        return None
    return value, end


def assistant_message(content: str | None, calls: Sequence[tuple[str, Any]], ids: Iterator[int]) -> dict[str, Any]:
    """An assistant message with ``content`` (empty reads as ``None``) and ``calls`` (name, arguments),
    numbered by ``ids``."""
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = [
            {"id": call_id(next(ids)), "type": "function", "function": {"name": name, "arguments": arguments}}
            for name, arguments in calls
        ]
    return message


#: The longest text read as a BOS token before a prompt's first turn.
MAX_BOS = 32


def bos_token(prompt: str, first_turn: int, opener: str) -> str:
    """The text before a prompt's first turn (at ``first_turn``), read as the ``bos_token`` variable.

    A BOS token is one short token with no blank in it: anything else there (another format's
    prompt, prose) is no rendering of the format, and raises :class:`ParseError` at its start.
    """
    bos = prompt[:first_turn]
    if len(bos) > MAX_BOS or any(c.isspace() for c in bos):
        raise parse_error_at(prompt, 0, f"expected a BOS token and the first turn ({opener!r})", expected=[opener])
    return bos


def call_id(index: int) -> str:
    """The id of the ``index``-th tool call of a conversation whose prompt carries no ids (``call_0``...)."""
    return f"call_{index}"


# ---------------------------------------------------------------------------- ChatML turns

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
TURN_END = IM_END + "\n"
#: ``add_generation_prompt``: what ChatML templates append to open the assistant's turn.
GENERATION_PROMPT = IM_START + "assistant\n"
_ROLE = re.compile(r"[A-Za-z_]+")


@dataclass(frozen=True)
class Turn:
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


def turn_end(text: str, body: int, followers: Sequence[str]) -> int:
    """The offset of the ``<|im_end|>`` closing the turn whose text starts at ``body``.

    It is the first ``<|im_end|>\\n`` followed by the end of the prompt or by one of ``followers``
    (the openers the next turn may start with). Raises a ParseError where the next turn should
    have started, or at the end of the prompt when no ``<|im_end|>\\n`` comes at all.
    """
    pos, last = body, -1
    followers = tuple(followers)
    while (found := text.find(TURN_END, pos)) >= 0:
        after = found + len(TURN_END)
        if after == len(text) or text.startswith(followers, after):
            return found
        pos, last = found + 1, after
    if last < 0:
        raise parse_error_at(text, len(text), f"the turn is never closed by {TURN_END!r}", expected=(IM_END,))
    raise expected_error(text, last, followers, "the next turn or the end of the prompt")


def read_turn(text: str, pos: int, openers: Sequence[str], followers: Sequence[str]) -> Turn:
    """The turn at ``pos``, which starts with one of ``openers`` (``<|im_start|>`` + role + what may follow)."""
    if not text.startswith(tuple(openers), pos):
        raise expected_error(text, pos, openers, "a turn: " + " or ".join(repr(opener) for opener in openers))
    role = _ROLE.match(text, pos + len(IM_START))
    assert role is not None  # every opener names a role
    return Turn(role.group(), pos, role.end(), turn_end(text, role.end(), followers))


def read_turns(text: str, pos: int, openers: Sequence[str]) -> tuple[list[Turn], bool]:
    """The turns from ``pos`` to the end of the prompt, and whether it ends with the generation prompt."""
    turns: list[Turn] = []
    while pos < len(text):
        if len(text) - pos == len(GENERATION_PROMPT) and text.startswith(GENERATION_PROMPT, pos):
            return turns, True
        turn = read_turn(text, pos, openers, openers)
        turns.append(turn)
        pos = turn.after
    return turns, False


RESPONSE_OPEN = "\n<tool_response>\n"
RESPONSE_CLOSE = "\n</tool_response>"


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


# ---------------------------------------------------------------------------- calls after content


def trailing_blocks(
    text: str,
    start: int,
    end: int,
    opener: str,
    read_block: Callable[[str, int, int], tuple[Block, int] | None],
    content_may_end: Callable[[int], bool],
) -> tuple[int, list[Block]]:
    """Split ``text[start:end]`` into content and the run of blocks (tool calls) that ends it.

    The blocks are joined by one newline and reach ``end``; each starts with ``opener`` and
    ``read_block(text, pos, end)`` reads one exactly (its value and the offset after it, or
    None). Of the offsets where such a run could start, the first that ``content_may_end``
    accepts is taken: block-like text in the content stays content only where it has to.
    Returns ``(offset where the run starts, blocks)``, or ``(end, [])`` when there is no run.
    """
    starts: list[int] = []
    pos = text.find(opener, start, end)
    while pos >= 0:
        starts.append(pos)
        pos = text.find(opener, pos + 1, end)
    # For each start (last first): its block and where the rest of the run starts (``end``: no rest).
    runs: dict[int, tuple[Block, int]] = {}
    for pos in reversed(starts):
        got = read_block(text, pos, end)
        if got is None:
            continue
        block, after = got
        if after == end or (text.startswith("\n", after) and after + 1 in runs):
            runs[pos] = (block, after + 1 if after < end else end)
    for pos in starts:
        if pos in runs and content_may_end(pos):
            blocks: list[Block] = []
            at = pos
            while at < end:
                block, at = runs[at]
                blocks.append(block)
            return pos, blocks
    return end, []
