"""Rule handlers several formats' reply builders share: literal values and objects built from pairs."""

from __future__ import annotations

from collections.abc import Iterable
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
