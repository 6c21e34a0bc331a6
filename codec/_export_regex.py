"""Regular expressions of the portable subset every grammar dialect can print, and the JSON-schema
``pattern`` reader.

The model (:class:`Chars`, :class:`RSeq`, :class:`RAlt`, :class:`RRep`) and its constructors
(:func:`charset`, :func:`literal`, :func:`rseq`, :func:`ralt`, :func:`star`, :func:`plus`,
:func:`optional`); :func:`pattern_regex`, a ``pattern`` read into that subset (:class:`Unsupported`
where it cannot be); :func:`json_string_regex`, the JSON string literals whose values match a
regex. :mod:`codec.export` builds its lexemes from these and re-exports them; the printers of
:mod:`codec._export_print` write them in each dialect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_CHAR = 0x10FFFF
#: Repeats written out item by item up to this count: a pattern's ``{n,m}``, an array's
#: ``minItems``/``maxItems``.
MAX_ITEMS = 64


# ---------------------------------------------------------------------------- regular expressions
# The portable subset every dialect can print: character sets, sequences, alternatives, repeats.


@dataclass(frozen=True)
class Chars:
    """A set of characters, as sorted, disjoint, inclusive code-point ranges."""

    ranges: tuple[tuple[int, int], ...]

    def __contains__(self, code: int) -> bool:
        return any(lo <= code <= hi for lo, hi in self.ranges)


@dataclass(frozen=True)
class RSeq:
    items: tuple[Regex, ...]


@dataclass(frozen=True)
class RAlt:
    options: tuple[Regex, ...]


@dataclass(frozen=True)
class RRep:
    item: Regex
    low: int
    high: int | None


Regex = Chars | RSeq | RAlt | RRep


def charset(spec: str, *, negate: bool = False) -> Chars:
    """The characters of ``spec`` (``"a-zA-Z_"``: single characters and ``x-y`` ranges)."""
    ranges: list[tuple[int, int]] = []
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            ranges.append((ord(spec[i]), ord(spec[i + 2])))
            i += 3
        else:
            ranges.append((ord(spec[i]), ord(spec[i])))
            i += 1
    merged = merge(ranges)
    return complement(merged) if negate else Chars(merged)


def merge(ranges: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """``ranges`` sorted, with those that overlap or touch joined: the ranges of a :class:`Chars`."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return tuple(out)


def complement(ranges: tuple[tuple[int, int], ...]) -> Chars:
    """The characters outside ``ranges`` (sorted and disjoint)."""
    out, start = [], 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= MAX_CHAR:
        out.append((start, MAX_CHAR))
    return Chars(tuple(out))


ANY = Chars(((0, MAX_CHAR),))
DIGIT = charset("0-9")
WORD = charset("A-Za-z0-9_")


def literal(text: str) -> Regex:
    """The regex that matches exactly ``text``."""
    items = tuple(Chars(((ord(c), ord(c)),)) for c in text)
    return items[0] if len(items) == 1 else RSeq(items)


def rseq(*items: Regex | str) -> RSeq:
    return RSeq(tuple(literal(item) if isinstance(item, str) else item for item in items))


def ralt(*options: Regex | str) -> RAlt:
    return RAlt(tuple(literal(o) if isinstance(o, str) else o for o in options))


def star(item: Regex) -> RRep:
    return RRep(item, 0, None)


def plus(item: Regex) -> RRep:
    return RRep(item, 1, None)


def optional(item: Regex | str) -> RRep:
    return RRep(literal(item) if isinstance(item, str) else item, 0, 1)


# ---------------------------------------------------------------------------- JSON-schema patterns
# A ``pattern`` (ECMA-262 syntax, matched anywhere in the string unless anchored) read into the
# portable subset above: literals, classes, ``.``, groups, ``|`` and the repeats. Lookaround,
# backreferences, word boundaries and anchors inside the pattern are no regular language of
# this subset: such a pattern is left out (and reported).

_LINE_ENDS = charset("\n\r\u2028\u2029")
_CLASS_ESCAPES = {
    "d": DIGIT,
    "w": WORD,
    "s": charset(" \t\n\r\x0b\x0c\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"),
}
_CHAR_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\x0c", "v": "\x0b", "0": "\x00"}


class Unsupported(Exception):
    """A pattern outside the portable subset, or a class of it with no character a JSON string can hold."""


def _union(*sets: Chars) -> Chars:
    return Chars(merge(r for chars in sets for r in chars.ranges))


class _PatternReader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise Unsupported("unexpected end")
        self.i += 1
        return char

    def alternatives(self) -> Regex:
        options = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else RAlt(tuple(options))

    def sequence(self) -> Regex:
        items: list[Regex] = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.repeated(self.atom()))
        return items[0] if len(items) == 1 else RSeq(tuple(items))

    def repeated(self, item: Regex) -> Regex:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.i += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
        elif char == "{" and re.match(r"\{\d+(,\d*)?\}", self.text[self.i :]):
            match = re.match(r"\{(\d+)(,(\d*))?\}", self.text[self.i :])
            assert match is not None
            self.i += match.end()
            low = int(match.group(1))
            high = low if match.group(2) is None else (int(match.group(3)) if match.group(3) else None)
            if (high is not None and high < low) or low > MAX_ITEMS or (high or 0) > MAX_ITEMS:
                raise Unsupported("repeat count")
        else:
            return item
        if self.peek() == "?":  # lazy: the same language
            self.i += 1
        return RRep(item, low, high)

    def atom(self) -> Regex:
        char = self.take()
        if char == "(":
            if self.text.startswith("?:", self.i):
                self.i += 2
            elif self.peek() == "?":
                raise Unsupported("lookaround or named group")
            inner = self.alternatives()
            if self.take() != ")":
                raise Unsupported("unbalanced group")
            return inner
        if char == "[":
            return self.char_class()
        if char == ".":
            return complement(_LINE_ENDS.ranges)
        if char == "\\":
            return self.escape(in_class=False)
        if char in "^$":
            raise Unsupported("anchor inside the pattern")
        if char in "*+?{)":
            raise Unsupported("quantifier without an item")
        return literal(char)

    def escape(self, *, in_class: bool) -> Chars:
        char = self.take()
        if char.lower() in _CLASS_ESCAPES:
            chars = _CLASS_ESCAPES[char.lower()]
            return complement(chars.ranges) if char.isupper() else chars
        if char in _CHAR_ESCAPES and not (char == "0" and self.peek().isdigit()):
            return charset(_CHAR_ESCAPES[char])
        if char in "xu":
            size = 2 if char == "x" else 4
            digits = self.text[self.i : self.i + size]
            if len(digits) != size or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise Unsupported("bad escape")
            self.i += size
            code = int(digits, 16)
            return Chars(((code, code),))
        if char.isalnum() and not (in_class and char == "b"):
            raise Unsupported(f"escape \\{char}")  # \b, \B, backreferences, \p{...}
        if in_class and char == "b":
            return charset("\b")
        return Chars(((ord(char), ord(char)),))

    def class_item(self) -> Chars:
        char = self.take()
        return self.escape(in_class=True) if char == "\\" else Chars(((ord(char), ord(char)),))

    def char_class(self) -> Chars:
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        parts: list[Chars] = []
        first = True
        while first or self.peek() != "]":
            first = False
            low = self.class_item()
            if self.peek() == "-" and self.text[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                high = self.class_item()
                if len(low.ranges) != 1 or len(high.ranges) != 1 or low.ranges[0][0] != low.ranges[0][1]:
                    raise Unsupported("class range of a class")
                if high.ranges[0][0] < low.ranges[0][0]:
                    raise Unsupported("reversed class range")
                parts.append(Chars(((low.ranges[0][0], high.ranges[0][1]),)))
            else:
                parts.append(low)
        self.take()  # "]"
        chars = _union(*parts)
        return complement(chars.ranges) if negate else chars


def pattern_regex(pattern: str) -> Regex | None:
    """A JSON-schema ``pattern`` as a regex of the whole string; None if it is outside the subset."""
    text = pattern
    start = text.startswith("^")
    end = text.endswith("$") and not text.endswith("\\$")
    body = text[1 if start else 0 : len(text) - 1 if end else len(text)]
    reader = _PatternReader(body)
    try:
        rx = reader.alternatives()
        if reader.i != len(body):
            return None
    except Unsupported:
        return None
    return rseq(*([] if start else [star(ANY)]), rx, *([] if end else [star(ANY)]))


def string_pattern(schema: Mapping[str, Any]) -> Regex | None:
    """The regex of the strings ``schema``'s ``pattern`` allows; None without one, or if it cannot be written."""
    pattern = schema.get("pattern")
    return pattern_regex(pattern) if isinstance(pattern, str) else None


def _json_chars(rx: Regex) -> Regex:
    """``rx`` over the characters of a JSON string's text: quotes, backslashes and controls escaped."""
    if isinstance(rx, Chars):
        escaped = [code for lo, hi in rx.ranges for code in range(max(lo, 0), min(hi, 0x1F) + 1)]
        escaped += [code for code in (ord('"'), ord("\\")) if code in rx]
        allowed = charset('"\\\x00-\x1f', negate=True)
        plain = [
            (max(lo, a), min(hi, b)) for lo, hi in rx.ranges for a, b in allowed.ranges if max(lo, a) <= min(hi, b)
        ]
        options: list[Regex] = [Chars(merge(plain))] if plain else []
        options += [literal(json.dumps(chr(code))[1:-1]) for code in sorted(escaped)]
        if not options:
            raise Unsupported("no character")
        return options[0] if len(options) == 1 else RAlt(tuple(options))
    if isinstance(rx, RSeq):
        return RSeq(tuple(_json_chars(item) for item in rx.items))
    if isinstance(rx, RAlt):
        return RAlt(tuple(_json_chars(option) for option in rx.options))
    return RRep(_json_chars(rx.item), rx.low, rx.high)


def json_string_regex(pattern: Regex) -> Regex:
    """A JSON string literal (quotes included) whose value is a match of ``pattern``."""
    return rseq('"', _json_chars(pattern), '"')
