"""What several formats' reply sides share: rule handlers for literal values and objects built
from pairs, and the pieces of whole-reply readers (``Syntax.whole``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from codec._lark import Token
from codec.literals import json_text, number_literal
from codec.sink import Sink
from codec.stream import BuildError


class LiteralHandlers:
    """Grammar rules ``number``, ``true``, ``false`` and ``null``, and objects from their pairs."""

    sink: Sink

    def number(self, token: Token) -> int | float:
        try:
            return number_literal(str(token))
        except ValueError as exc:
            raise BuildError(str(exc), token.start_pos) from None

    def true(self, token: Token) -> bool:
        return True

    def false(self, token: Token) -> bool:
        return False

    def null(self, token: Token) -> None:
        return None

    def mapping(self, pairs: Iterable[tuple[str, Any, int]]) -> dict[str, Any]:
        """An object value from its ``(key, value, where the key is)`` pairs: a repeated key is
        reported (``duplicate_key``) and its last value kept, as JSON decoders keep it."""
        out: dict[str, Any] = {}
        for key, value, pos in pairs:
            if key in out:  # the value dropped is the issue's text: nothing is lost silently
                message = f"key {key!r} repeated; the last value is kept"
                self.sink.issue("duplicate_key", message, pos, json_text({key: out[key]}))
            out[key] = value
        return out


# ---------------------------------------------------------------------------- whole replies

#: Characters after which prose may be markup a reply grammar reads (a tag, a fence, a JSON call,
#: a call list): a whole-reply reader leaves prose holding one to the grammar.
MARKUP = re.compile(r"[<{\[`]")
#: Reasoning as the Qwen- and DeepSeek-style templates write it before a reply: between these two.
THINK_MARKS = ("<think>\n", "\n</think>\n\n")


@dataclass(frozen=True)
class ProseText:
    """How a whole-reply reader tells that the grammar reads prose holding markup characters as
    text: ``text``, the grammar's own terminal for the reply's first text; ``markers``, what the
    stream acts on beyond the grammar (a reasoning closer it looks ahead for); ``lead``, the
    characters a fast lexer may take a shape at where the prose starts (after its blanks)."""

    text: re.Pattern[str]
    markers: tuple[str, ...]
    lead: str = ""


def reads_as_text(text: str, start: int, prose: str, prose_text: ProseText | None) -> bool:
    """Whether the rules read ``prose`` (at ``start`` of ``text``) as one run of free text."""
    if prose_text is None or not prose:
        return False
    if prose_text.lead and prose.lstrip()[:1] in prose_text.lead:
        return False
    found = prose_text.text.match(text, start)
    return (
        found is not None
        and found.end() == start + len(prose)
        and not any(marker in prose for marker in prose_text.markers)
    )


def before_stop(text: str, stop: str) -> int:
    """Where a whole reply's text ends: before ``stop`` if the reply ends with it."""
    return len(text) - len(stop) if text.endswith(stop) else len(text)


def leading_reasoning(text: str, opener: str, closer: str, markup: re.Pattern[str] = MARKUP) -> tuple[str, int] | None:
    """A whole reply's leading reasoning, as a whole-reply reader takes it: ``(reasoning, where the
    rest starts)`` for ``opener`` + reasoning + ``closer``, ``("", 0)`` for a reply without
    ``opener``, None for reasoning the grammar's rules decide about (unclosed, empty, starting or
    ending with a blank, holding ``markup``, followed by a blank)."""
    if not text.startswith(opener):
        return "", 0
    end = text.find(closer, len(opener))
    if end < 0:
        return None
    reasoning = text[len(opener) : end]
    if not reasoning or reasoning[0].isspace() or reasoning[-1].isspace() or markup.search(reasoning):
        return None
    rest = end + len(closer)
    if text[rest : rest + 1].isspace():
        return None  # blanks after the closer: the rules decide which are the closer's
    return reasoning, rest
