"""Reading rendered prompts back: pieces several formats' ``_decode`` share.

Everything works on offsets into the whole prompt, so that a :class:`~codec.errors.ParseError`
points where the text stops matching. The ChatML turns of ``hermes`` and ``qwen3_coder`` are read
by :mod:`codec.formats._chatml`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from codec import jinja
from codec.errors import ParseError, RenderError, parse_error_at
from codec.format import PromptText
from codec.formats._reading import find_all
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation

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


def arguments_as_written(text: str, pos: int) -> tuple[dict[str, Any] | str, int] | None:
    """The arguments at ``pos`` written with ``tojson``, and the offset after them: an object, or the
    string a JSON string literal holds (arguments given as a JSON string, which such a template writes
    as a string literal); None where the text is neither, or not as ``tojson`` writes it."""
    try:
        value, end = PLAIN_JSON_DECODER.raw_decode(text, pos)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict | str) or jinja.tojson(value) != text[pos:end]:
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


def rendering(conversation: Conversation, prompt_text: PromptText) -> str | None:
    """The prompt ``conversation`` renders to with a format's ``prompt_text``; None where the format refuses it.

    Messages and tools are prepared exactly as :meth:`Format.render` prepares them, so a decoder
    that compares a candidate reading with its prompt sees what ``render`` would give.
    """
    try:
        return prompt_text(
            jinja.require_messages(jinja.prepare_messages(conversation.messages)),
            jinja.prepare_tools(conversation.tools),
            conversation.add_generation_prompt,
            dict(conversation.variables),
        )
    except RenderError:
        return None


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
    starts = list(find_all(text, start, (opener,), end))
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
