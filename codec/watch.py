"""Waiting for a long token to end without re-lexing it on every chunk.

When a token that can be long (a string value, a whole JSON object) is still arriving, the
stream hands the new text to a :class:`Watch` instead of running the lexer again over the
growing token: each character is examined once, and the token is lexed once, when the watch
says it is complete. Fast lexers (``Syntax.fast_terminals``) return a watch for a token that
has started but not ended.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Delimiter", "FastLexer", "JsonScan", "Watch", "json_fast_lexer"]


class Watch(Protocol):
    """Follows the text that arrives after an incomplete token."""

    def scan(self, text: str) -> bool:
        """Examine newly arrived text; True once the awaited token may be complete."""


#: ``lexer(text, pos, final)``: ``(decoded value, end)`` for a complete token at ``pos``; a
#: :class:`Watch` when one has started but not ended (never when ``final``); None when the text
#: at ``pos`` is not such a token (the grammar's regular terminals then lex it). A lexer may
#: say which characters its tokens start with as a string attribute ``first``: text starting with
#: another is then not held back for it near the end of what arrived.
FastLexer = Callable[[str, int, bool], "tuple[Any, int] | Watch | None"]


@dataclass(frozen=True)
class Delimiter:
    """A regex-lexed token that runs from ``open`` to ``close`` and may be long (a string value).

    ``escape`` makes the next character literal (JSON's backslash); it needs a one-character
    ``close``. With ``lookahead`` set, a closer ends the token only where what follows it
    matches ``follows`` (a regex that never needs more than ``lookahead`` characters, the same
    test as the token's own regex): the watch wakes the lexer only at such a closer, deciding
    each closer once, when ``follows`` matches or that much text after it has arrived.
    """

    open: str
    close: str
    escape: str | None = None
    lookahead: int = 0
    follows: str = ""

    def __post_init__(self) -> None:
        if self.escape is not None and len(self.close) != 1:
            raise ValueError("an escaped delimiter must close with one character")
        if bool(self.lookahead) != bool(self.follows):
            raise ValueError("lookahead and follows go together")

    def watch(self, text: str, start: int) -> tuple[Watch | None, int]:
        """A watch for the token opened at ``text[start]`` (None if it is already closed there),
        and how many characters were examined. A ``lookahead`` delimiter always gets a watch."""
        body = start + len(self.open)
        if self.lookahead:
            watch = _LookaheadWatch(self)
            if watch.scan(text[body:]):
                return None, len(text) - body
            return watch, len(text) - body
        d = _DelimiterWatch(self)
        end = d.find(text, body)
        if end >= 0:
            return None, end - body
        keep = len(self.close) - 1
        if self.escape is None and keep:  # a closer may be split across the next chunk
            d.tail = text[max(body, len(text) - keep) :]
        return d, len(text) - body


class _LookaheadWatch:
    """Wakes the lexer at the first closer that ``follows`` confirms; each closer is tested once."""

    def __init__(self, delim: Delimiter) -> None:
        self.close = delim.close
        self.lookahead = delim.lookahead
        self.follows = re.compile(delim.follows)
        self.text = ""  # from the first closer not decided yet (too little text after it)

    def scan(self, text: str) -> bool:
        joined = self.text + text
        at = joined.find(self.close)
        while at >= 0:
            after = at + len(self.close)
            if self.follows.match(joined, after):
                self.text = ""
                return True
            if len(joined) - after < self.lookahead:  # undecided: test it again with more text
                self.text = joined[at:]
                return False
            at = joined.find(self.close, after)
        keep = len(self.close) - 1  # a closer may be split across chunks
        self.text = joined[-keep:] if keep else ""  # at most keep characters (fewer may have arrived)
        return False


class _DelimiterWatch:
    def __init__(self, delim: Delimiter) -> None:
        self.delim = delim
        self.escaped = False
        self.tail = ""  # the end of the text seen so far, for a closer split across chunks
        self._search = re.compile(re.escape(delim.escape or "") + "|" + re.escape(delim.close))

    def find(self, text: str, start: int) -> int:
        """The index just after the closer in ``text[start:]``, or -1 (sets the escape state)."""
        delim = self.delim
        if delim.escape is None:
            j = text.find(delim.close, start)
            return j + len(delim.close) if j >= 0 else -1
        j = start
        while True:
            if j > len(text):
                self.escaped = True
                return -1
            m = self._search.search(text, j)
            if m is None:
                self.escaped = False
                return -1
            if m.group() == delim.escape:
                j = m.end() + 1
                continue
            return m.end()

    def scan(self, text: str) -> bool:
        delim = self.delim
        if delim.escape is None:
            joined = self.tail + text
            if delim.close in joined:
                return True
            keep = len(delim.close) - 1
            self.tail = joined[-keep:] if keep else ""  # at most keep characters (fewer may have arrived)
            return False
        j = 1 if self.escaped else 0
        self.escaped = False
        while True:
            if j > len(text):
                self.escaped = True
                return False
            m = self._search.search(text, j)
            if m is None:
                return False
            if m.group() == delim.escape:
                j = m.end() + 1
                continue
            return True


_OUTSIDE = re.compile(r'["{}\[\]<]')
_INSIDE = re.compile(r'["\\]')


class JsonScan:
    """Finds where a JSON object or array ends, one chunk at a time (strings and escapes understood).

    It gives up (reports an end) at a ``<`` outside a string, which no JSON value holds: a
    malformed value next to a closing marker must not keep the stream waiting to the end.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.started = False

    def scan(self, text: str) -> bool:
        i = 0
        n = len(text)
        if self.escaped:
            i, self.escaped = 1, False
        while i < n:
            if self.in_string:
                m = _INSIDE.search(text, i)
                if m is None:
                    return False
                if m.group() == "\\":
                    i = m.end() + 1
                    if i > n:
                        self.escaped = True
                    continue
                self.in_string = False
                i = m.end()
                continue
            m = _OUTSIDE.search(text, i)
            if m is None:
                return False
            ch = m.group()
            i = m.end()
            if ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
                self.started = True
            elif ch == "<":
                return True
            else:
                self.depth -= 1
                if self.depth <= 0 and self.started:
                    return True
        return False


def json_fast_lexer(decoder: json.JSONDecoder, accept: Callable[[Any], bool] = lambda _: True) -> FastLexer:
    """A fast lexer for a JSON object or array at ``pos``, decoded by ``decoder`` (C speed).

    ``decoder`` raises for anything the grammar's own rules would treat differently (a repeated
    key, a non-finite number...); such values, and those ``accept`` refuses, are left to the
    grammar by returning None.
    """

    def lex(text: str, pos: int, final: bool) -> tuple[Any, int] | Watch | None:
        if pos >= len(text) or text[pos] not in "{[":
            return None
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            if final:
                return None
            incomplete = exc.pos >= len(text) - 5 or exc.msg.startswith("Unterminated string")
            if not incomplete:
                return None
            watch = JsonScan()
            return None if watch.scan(text[pos:]) else watch
        except (ValueError, RecursionError):
            return None
        return (value, end) if accept(value) else None

    return lex
