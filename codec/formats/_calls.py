"""Pieces every format's reply builder uses: the call being read, literal values, JSON text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codec.literals import json_text, number_literal
from codec.stream import BuildError


@dataclass
class Call:
    """A call whose name is known (its ToolCallStart was sent) and the arguments read so far."""

    name: str
    index: int
    pos: int
    args: dict[str, Any] = field(default_factory=dict)


def json_chars(text: str) -> str:
    """``text`` as it reads inside a JSON string (escapes apply character by character, so the
    pieces of a string streamed this way concatenate to the string's JSON text)."""
    return json_text(text)[1:-1]


class LiteralHandlers:
    """Grammar rules ``number``, ``true``, ``false`` and ``null``, shared by the builders."""

    def number(self, c: list[Any]) -> int | float:
        try:
            return number_literal(str(c[0]))
        except ValueError as exc:
            raise BuildError(str(exc), c[0].start_pos) from None

    def true(self, c: list[Any]) -> bool:
        return True

    def false(self, c: list[Any]) -> bool:
        return False

    def null(self, c: list[Any]) -> None:
        return None
