"""Grammars for constrained decoding: a format's reply syntax, specialised to the tools.

:meth:`codec.Format.grammar` builds one grammar per request: only the declared tool names, only
their parameter names, required parameters required, and each value constrained by its
parameter's JSON schema in the format's own notation. It is printed in one of three dialects:

* ``"llguidance"``: llguidance's Lark dialect (vLLM and SGLang with the guidance backend;
  xgrammar's ``Grammar.from_lark`` refuses it: it takes no terminal intersection). Markers that
  are special tokens in the model's tokenizer (Gemma 4's ``<|tool_call>``, ``<|"|>``...) are
  written as tokens.
* ``"lark"``: the ``lark`` package's dialect, for ``Lark(text, parser="lalr")``.
* ``"gbnf"``: llama.cpp's GBNF (also xgrammar's ``Grammar.from_ebnf``, and what
  :func:`request_fields` sends to every server).

:func:`structural_tag` wraps the same calls in xgrammar's structural tag, and
:func:`request_fields` in the fields of a server's request.

A grammar is built once, as a small tree of expressions (:class:`Lit`, :class:`Term`,
:class:`Text`, :class:`Head`, :class:`Seq`...), and printed per dialect. Each format module
describes its calls with a :class:`CallSyntax`; the frame around them (free text, reasoning, one
or several calls, ``tool_choice``) is built here the same way for every format.

What a dialect cannot say is built differently rather than left out:

* *Free text that must not contain a marker* (the text before a call, a reasoning block, a
  Gemma 4 string, a Qwen3-Coder string value). ``lark`` uses a negative lookahead per
  character; ``gbnf`` has no lookaround, so the text is a small automaton, one rule per state,
  that never completes a marker; llguidance has no lookaround and its lexer never backs up, so
  the text is an intersection ``/[\\s\\S]*/ & ~/[\\s\\S]*MARKER[\\s\\S]*/`` and the marker that
  ends it is part of the same lexeme (:class:`Head`): the lexeme ends at the first marker.
* *Priorities* (which lexeme wins where two could match): none are used. A reply that starts
  with a reasoning block cannot be read as free text, because that text is forbidden to start
  with the reasoning marker.
* *Lazy repetition*: never needed, for the same reason (text up to the first marker).

Whitespace is exactly what the format's renderer writes (``{"name": "f", "arguments": {...}}``
with ``", "`` and ``": "``): the model is held to the form it was trained on. Properties come in
the order the schema lists them (Gemma 4: sorted, as its template writes them); optional ones
may be left out. The stop token that ends the reply (``<|im_end|>``, ``<turn|>``,
``<|tool_response>``...) is not part of the grammar: the server stops on it.

JSON-schema keywords used: ``type`` (a name or a list), ``nullable``, ``enum``, ``const``,
``properties``, ``required``, ``additionalProperties`` (a schema for objects without
``properties``), ``items``, ``anyOf``/``oneOf`` (both read as "one of these"), ``allOf`` with one
entry; ``pattern`` for strings written as JSON (:func:`pattern_regex` reads the subset every
dialect can print), ``minItems``/``maxItems`` up to :data:`MAX_ITEMS`, an integer's bounds over at
most :data:`MAX_RANGE` values or a lone minimum of 0 or 1. A schema without a usable type allows
any value; an object with ``properties`` allows only those; a tool without ``parameters`` takes no
arguments. Every other keyword, and those above where a notation cannot hold them, is left out
and reported: :func:`schema_gaps` lists them with their place, and the public functions give one
:class:`GrammarWarning` per call.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from codec import jinja
from codec.errors import GrammarWarning
from codec.models import Tool
from codec.schema import tool_name, tool_parameters

if TYPE_CHECKING:
    from codec.format import Format

DIALECTS = ("llguidance", "lark", "gbnf")
#: The string forms of ``tool_choice``; OpenAI's named form ``{"type": "function", "function":
#: {"name": NAME}}`` is taken too.
TOOL_CHOICES = ("auto", "required", "none")
SERVERS = ("vllm", "sglang", "llama.cpp")
MAX_CHAR = 0x10FFFF
#: Integer ranges written out value by value (``minimum``..``maximum``) up to this many values.
MAX_RANGE = 256
#: ``minItems``/``maxItems`` written out item by item up to this count.
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
    merged = _merge(ranges)
    return _complement(merged) if negate else Chars(merged)


def _merge(ranges: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(ranges: tuple[tuple[int, int], ...]) -> Chars:
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


class _Unsupported(Exception):
    """A pattern outside the portable subset."""


def _union(*sets: Chars) -> Chars:
    return Chars(_merge(r for chars in sets for r in chars.ranges))


class _PatternReader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise _Unsupported("unexpected end")
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
                raise _Unsupported("repeat count")
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
                raise _Unsupported("lookaround or named group")
            inner = self.alternatives()
            if self.take() != ")":
                raise _Unsupported("unbalanced group")
            return inner
        if char == "[":
            return self.char_class()
        if char == ".":
            return _complement(_LINE_ENDS.ranges)
        if char == "\\":
            return self.escape(in_class=False)
        if char in "^$":
            raise _Unsupported("anchor inside the pattern")
        if char in "*+?{)":
            raise _Unsupported("quantifier without an item")
        return literal(char)

    def escape(self, *, in_class: bool) -> Chars:
        char = self.take()
        if char.lower() in _CLASS_ESCAPES:
            chars = _CLASS_ESCAPES[char.lower()]
            return _complement(chars.ranges) if char.isupper() else chars
        if char in _CHAR_ESCAPES and not (char == "0" and self.peek().isdigit()):
            return charset(_CHAR_ESCAPES[char])
        if char in "xu":
            size = 2 if char == "x" else 4
            digits = self.text[self.i : self.i + size]
            if len(digits) != size or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise _Unsupported("bad escape")
            self.i += size
            code = int(digits, 16)
            return Chars(((code, code),))
        if char.isalnum() and not (in_class and char == "b"):
            raise _Unsupported(f"escape \\{char}")  # \b, \B, backreferences, \p{...}
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
                    raise _Unsupported("class range of a class")
                if high.ranges[0][0] < low.ranges[0][0]:
                    raise _Unsupported("reversed class range")
                parts.append(Chars(((low.ranges[0][0], high.ranges[0][1]),)))
            else:
                parts.append(low)
        self.take()  # "]"
        chars = _union(*parts)
        return _complement(chars.ranges) if negate else chars


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
    except _Unsupported:
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
        options: list[Regex] = [Chars(_merge(plain))] if plain else []
        options += [literal(json.dumps(chr(code))[1:-1]) for code in sorted(escaped)]
        if not options:
            raise _Unsupported("no character")
        return options[0] if len(options) == 1 else RAlt(tuple(options))
    if isinstance(rx, RSeq):
        return RSeq(tuple(_json_chars(item) for item in rx.items))
    if isinstance(rx, RAlt):
        return RAlt(tuple(_json_chars(option) for option in rx.options))
    return RRep(_json_chars(rx.item), rx.low, rx.high)


def json_string_regex(pattern: Regex) -> Regex:
    """A JSON string literal (quotes included) whose value is a match of ``pattern``."""
    return rseq('"', _json_chars(pattern), '"')


def _integral(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def _bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """An integer schema's inclusive bounds (``minimum``, ``exclusiveMinimum``...), rounded inward."""
    low = high = None
    for key, floor in (("minimum", True), ("exclusiveMinimum", True), ("maximum", False), ("exclusiveMaximum", False)):
        value = schema.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        bound = math.ceil(value) if floor else math.floor(value)
        if key.startswith("exclusive") and bound == value:
            bound += 1 if floor else -1
        if floor:
            low = bound if low is None else max(low, bound)
        else:
            high = bound if high is None else min(high, bound)
    return low, high


def integer_range(schema: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(low, high)`` when an integer schema bounds both ends of a range of at most MAX_RANGE values."""
    low, high = _bounds(schema)
    if low is None or high is None or not 0 <= high - low < MAX_RANGE:
        return None
    return low, high


def integer_floor(schema: Mapping[str, Any]) -> int | None:
    """0 or 1 when an integer schema's only bound is that minimum (the naturals, the positive integers)."""
    low, high = _bounds(schema)
    return low if high is None and low in (0, 1) else None


def item_counts(schema: Mapping[str, Any]) -> tuple[int, int | None]:
    """An array schema's ``minItems``/``maxItems`` when the grammar can write them out, else ``(0, None)``."""
    low = _integral(schema.get("minItems", 0))
    high = _integral(schema["maxItems"]) if "maxItems" in schema else None
    if low is None or low < 0 or ("maxItems" in schema and high is None):
        return 0, None
    if low > MAX_ITEMS or (high is not None and (high < low or high > MAX_ITEMS)):
        return 0, None
    return low, high


# ---------------------------------------------------------------------------- grammar expressions


@dataclass(frozen=True)
class Lit:
    """Literal text."""

    text: str


@dataclass(frozen=True)
class Marker:
    """A marker: a token in llguidance when the format's tokenizer has it as a special token, else text."""

    text: str


@dataclass(frozen=True)
class Term:
    """A named lexeme (strings, numbers, names): one terminal in the Lark dialects."""

    name: str
    regex: Regex


@dataclass(frozen=True)
class Text:
    """Free text (maybe empty) that contains none of ``forbid`` and does not start with ``forbid_start``.

    ``forbid_markers`` are markers (text, or special tokens that no text can contain anyway).
    """

    name: str
    forbid_markers: tuple[str, ...] = ()
    forbid: tuple[Regex, ...] = ()
    forbid_start: tuple[str, ...] = ()


@dataclass(frozen=True)
class Head:
    """:class:`Text` followed by ``end``, which must be able to end it (``end`` starts with a forbidden match).

    In llguidance this is one lexeme (it ends at the first ``end``).
    """

    name: str
    text: Text
    end: str


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Seq:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Expr, ...]


@dataclass(frozen=True)
class Rep:
    item: Expr
    low: int  # 0 or 1
    high: int | None  # 1 or None


Expr = Lit | Marker | Term | Text | Head | Ref | Seq | Alt | Rep
EMPTY = Seq(())


def seq(*items: Expr | str) -> Expr:
    """The items in order (strings are literal text); nested sequences and empty text are flattened.

    Adjacent literals stay apart: merged, the same closing bracket would be a different lexeme in
    each place it is used, which an LALR parser cannot always tell apart.
    """
    out: list[Expr] = []
    for item in items:
        expr = Lit(item) if isinstance(item, str) else item
        if isinstance(expr, Seq):
            out.extend(expr.items)
        elif not (isinstance(expr, Lit) and not expr.text):
            out.append(expr)
    return out[0] if len(out) == 1 else Seq(tuple(out))


def alt(*options: Expr | str) -> Expr:
    """One of the options (duplicates dropped); an empty option makes the rest optional."""
    out: list[Expr] = []
    for option in options:
        expr = seq(option)
        for one in expr.options if isinstance(expr, Alt) else (expr,):
            if one not in out:
                out.append(one)
    nullable = EMPTY in out
    rest = [o for o in out if o != EMPTY]
    if not rest:
        return EMPTY
    body = rest[0] if len(rest) == 1 else Alt(tuple(rest))
    return maybe(body) if nullable else body


def maybe(item: Expr) -> Expr:
    return EMPTY if item == EMPTY else Rep(item, 0, 1)


def many(item: Expr) -> Expr:
    return Rep(item, 0, None)


class GrammarBuilder:
    """Named rules and lexemes of one grammar, with unique names."""

    def __init__(self, specials: Iterable[str] = ()) -> None:
        self.specials = frozenset(specials)
        self.rules: dict[str, Expr] = {}
        self._texts: dict[tuple[Any, ...], Text] = {}
        self._heads: dict[tuple[Text, str], Head] = {}
        self._terms: dict[Regex, Term] = {}
        self._counts: dict[str, int] = {}
        #: (id of a schema, what) for the schema constraints this grammar expresses ("pattern",
        #: "range", "items"): what :func:`schema_gaps` does not report.
        self.expressed: set[tuple[int, str]] = set()

    def name(self, hint: str) -> str:
        base = "".join(c if c.isalnum() else "_" for c in hint.lower()).strip("_") or "r"
        if not base[0].isalpha():
            base = "r_" + base
        count = self._counts.get(base, 0)
        self._counts[base] = count + 1
        return base if count == 0 and base != "start" else f"{base}_{count}"

    def rule(self, hint: str, expr: Expr) -> Ref:
        """A new rule named after ``hint``."""
        name = self.name(hint)
        self.rules[name] = expr
        return Ref(name)

    def recursive(self, name: str, build: Callable[[Ref], Expr]) -> Ref:
        """The rule called ``name``, built once by ``build(ref)`` (which may refer to itself)."""
        ref = Ref(name)
        if name not in self.rules:
            self.rules[name] = EMPTY  # placeholder while it is built
            self.rules[name] = build(ref)
        return ref

    def text(
        self, forbid_markers: Sequence[str] = (), forbid: Sequence[Regex] = (), forbid_start: Sequence[str] = ()
    ) -> Text:
        key = (tuple(forbid_markers), tuple(forbid), tuple(forbid_start))
        if key not in self._texts:
            self._texts[key] = Text(self.name("TEXT").upper(), *key)
        return self._texts[key]

    def term(self, hint: str, regex: Regex) -> Term:
        """A lexeme for ``regex``, named after ``hint`` (one per distinct regex)."""
        if regex not in self._terms:
            self._terms[regex] = Term(self.name(hint).upper(), regex)
        return self._terms[regex]

    def head(self, text: Text, end: str) -> Head:
        if (text, end) not in self._heads:
            self._heads[text, end] = Head(self.name(text.name + "_END").upper(), text, end)
        return self._heads[text, end]


# ---------------------------------------------------------------------------- values


STRING = Term(
    "STRING",
    rseq(
        '"',
        star(
            ralt(
                charset('"\\\x00-\x1f', negate=True),
                rseq("\\", charset('"\\/bfnrt')),
                rseq("\\u", RRep(charset("0-9a-fA-F"), 4, 4)),
            )
        ),
        '"',
    ),
)
_POSITIVE = rseq(charset("1-9"), star(DIGIT))
_UNSIGNED = ralt("0", _POSITIVE)
INTEGER = Term("INTEGER", rseq(optional("-"), _UNSIGNED))
NUMBER = Term(
    "NUMBER",
    rseq(
        optional("-"),
        _UNSIGNED,
        optional(rseq(".", plus(DIGIT))),
        optional(rseq(charset("eE"), optional(charset("+-")), plus(DIGIT))),
    ),
)
NAME = Term("NAME", rseq(charset("A-Za-z_"), star(ralt(WORD, charset("-.")))))


def schema_types(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a schema names (``type`` and ``nullable``), else the ones its keywords imply."""
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else [t for t in declared or () if isinstance(t, str)]
    if not types:
        if isinstance(schema.get("properties"), Mapping) or isinstance(schema.get("additionalProperties"), Mapping):
            types = ["object"]
        elif "items" in schema:
            types = ["array"]
    if types and schema.get("nullable") is True and "null" not in types:
        types.append("null")
    return types


def ordered_items(items: Sequence[tuple[Expr, bool]], separator: Expr | str) -> Expr:
    """``items`` in order, each ``(expr, required)``: optional ones may be left out, ``separator`` between."""
    tail: list[Expr] = []
    for index in range(len(items)):
        expr, required = items[index]
        tail.append(seq(separator, expr) if required else maybe(seq(separator, expr)))
    firsts: list[Expr] = []
    for index, (expr, required) in enumerate(items):  # the first item written
        firsts.append(seq(expr, *tail[index + 1 :]))
        if required:
            break
    else:
        firsts.append(EMPTY)
    return alt(*firsts)


class JsonValues:
    """Values in JSON as ``json.dumps`` writes them (``", "`` and ``": "``), constrained by JSON schemas."""

    #: Names this notation's rules (``any_json_value``).
    tag = "json"
    true, false, null = "true", "false", "null"
    object_open, object_close, array_open, array_close = "{", "}", "[", "]"
    item_separator = ", "

    def __init__(self, builder: GrammarBuilder) -> None:
        self.b = builder

    # -- how values are written
    def write(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    def key(self, name: str) -> str:
        return json.dumps(name, ensure_ascii=False) + ": "

    def free_key(self) -> Expr:
        return seq(STRING, ": ")

    def order(self, names: list[str]) -> list[str]:
        return names

    def string(self) -> Expr:
        return STRING

    def integer(self) -> Expr:
        return INTEGER

    def number(self) -> Expr:
        return NUMBER

    # -- schemas
    def value(self, schema: Any) -> Expr:
        """The values ``schema`` allows."""
        if not isinstance(schema, Mapping):
            return self.any()
        nullable = schema.get("nullable") is True
        if "const" in schema:
            return Lit(self.write(schema["const"]))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            extra = [None] if nullable and None not in schema["enum"] else []
            return alt(*(self.literal(v) for v in [*schema["enum"], *extra]))
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return alt(*(self.value(o) for o in options), *([self.null] if nullable else []))
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.value(all_of[0])
        types = schema_types(schema)
        if not types or all_of:
            return self.any()
        return alt(*(self.typed(schema, kind) for kind in types))

    def literal(self, value: Any) -> Expr:
        return Lit(self.write(value))

    def typed(self, schema: Mapping[str, Any], kind: str) -> Expr:
        if kind == "string":
            pattern = string_pattern(schema)
            # Only where strings are JSON: a notation with strings of its own leaves the pattern out.
            if pattern is not None and type(self).string is JsonValues.string:
                try:
                    term = self.b.term("PATTERN", json_string_regex(pattern))
                except _Unsupported:  # a class no character matches: left out, reported
                    return self.string()
                self.b.expressed.add((id(schema), "pattern"))
                return term
            return self.string()
        if kind == "integer":
            bounds = integer_range(schema)
            if bounds is not None:
                self.b.expressed.add((id(schema), "range"))
                return alt(*(Lit(str(n)) for n in range(bounds[0], bounds[1] + 1)))
            if integer_floor(schema) is not None:
                self.b.expressed.add((id(schema), "range"))
                floor = integer_floor(schema)
                return self.b.term("NATURAL" if floor == 0 else "POSITIVE", _UNSIGNED if floor == 0 else _POSITIVE)
            return self.integer()
        if kind == "number":
            return self.number()
        if kind == "boolean":
            return alt(self.true, self.false)
        if kind == "null":
            return Lit(self.null)
        if kind == "array":
            low, high = item_counts(schema)
            if (low, high) != (0, None):
                self.b.expressed.add((id(schema), "items"))
            return self.array(self.value(schema["items"]) if "items" in schema else self.any(), low, high)
        if kind == "object":
            return self.object(schema)
        return self.any()

    def array(self, item: Expr, low: int = 0, high: int | None = None) -> Expr:
        """An array of ``item``, from ``low`` to ``high`` items (None: no upper bound)."""
        after = seq(self.item_separator, item)
        if high is None:
            rest: Expr = many(after)
        else:
            rest = EMPTY
            for _ in range(high - max(low, 1)):
                rest = maybe(seq(after, rest))
        items = seq(item, *([after] * (max(low, 1) - 1)), rest)
        if high == 0:
            return seq(self.array_open, self.array_close)
        return seq(self.array_open, items if low > 0 else maybe(items), self.array_close)

    def object(self, schema: Mapping[str, Any]) -> Expr:
        """An object: the declared properties in order (required ones required), else free keys."""
        declared = properties(schema)
        if declared is None:
            extra = schema.get("additionalProperties")
            return self.free_object(self.value(extra) if isinstance(extra, Mapping) else self.any())
        props, required = declared
        items = [(seq(self.key(name), self.value(props[name])), name in required) for name in self.order(list(props))]
        return seq(self.object_open, ordered_items(items, self.item_separator), self.object_close)

    def free_object(self, value: Expr) -> Expr:
        pair = seq(self.free_key(), value)
        return seq(self.object_open, maybe(seq(pair, many(seq(self.item_separator, pair)))), self.object_close)

    def any(self) -> Ref:
        """Any value (a recursive rule)."""

        def build(ref: Ref) -> Expr:
            scalars = alt(self.string(), self.number(), self.true, self.false, self.null)
            return alt(scalars, self.array(ref), self.free_object(ref))

        return self.b.recursive(f"any_{self.tag}_value", build)


def parameters_schema(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """A tool's parameters schema; a tool without ``parameters`` takes no arguments (as OpenAI reads it)."""
    params = tool_parameters(tool)
    return params if params is not None else {"type": "object", "properties": {}}


def properties(schema: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]] | None:
    """The declared properties of an object schema (in order) and the required names; None if it declares none."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return None
    required = schema.get("required")
    names = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    return {k: v for k, v in props.items() if isinstance(k, str)}, names


# ---------------------------------------------------------------------------- calls and frames


@dataclass(frozen=True)
class Reasoning:
    """A reasoning block: ``open`` (a marker), then ``open_rest`` text, free text, then ``close``."""

    open: str
    close: str
    open_rest: str = ""
    #: Markers the reasoning text may not contain either (besides ``close``).
    forbid_markers: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallSyntax:
    """A format's tool calls, specialised to the tools: what a format module hands to :func:`build`.

    A reply is: maybe a reasoning block, free text (``tool_choice="auto"``), then maybe calls.
    The first call starts with one of ``triggers`` (a marker) followed by its expression; more
    calls (``parallel``) each follow as ``more``; ``tail`` closes the list of calls.
    """

    triggers: tuple[tuple[str, Expr], ...]
    more: Expr
    tail: Expr = EMPTY
    #: What free text may not contain: markers and patterns that would start a call (or end the reply).
    text_forbid_markers: tuple[str, ...] = ()
    text_forbid: tuple[Regex, ...] = ()
    #: Markers free text may not start with (a bare call at the start of a reply, say).
    text_forbid_start: tuple[str, ...] = ()
    reasoning: Reasoning | None = None
    #: Markers that end the reply (stop tokens): not part of the grammar, the server stops on them.
    stops: tuple[str, ...] = ()


WHITESPACE = Term("WS", plus(charset(" \t\r\n")))


def frame(b: GrammarBuilder, calls: CallSyntax, *, tool_choice: str, parallel: bool) -> None:
    """Add the ``start`` rule: reasoning, free text and the calls, as ``tool_choice`` and ``parallel`` say.

    ``tool_choice`` is ``"auto"`` or ``"required"`` (``"none"`` is ``"auto"`` with no calls).
    """
    rest = _rest(calls, parallel)
    reasoning = _reasoning(b, calls.reasoning)
    if tool_choice == "required":
        first = alt(*(seq(Marker(trigger), body) for trigger, body in calls.triggers))
        lead = seq(reasoning, maybe(WHITESPACE)) if reasoning != EMPTY else EMPTY
        b.rules["start"] = seq(maybe(lead) if lead != EMPTY else EMPTY, first, rest)
        return

    def content(forbid_start: tuple[str, ...]) -> Expr:
        text = b.text(calls.text_forbid_markers, calls.text_forbid, (*calls.text_forbid_start, *forbid_start))
        if not calls.triggers:
            return text
        first = alt(*(seq(b.head(text, trigger), body) for trigger, body in calls.triggers))
        return alt(text, seq(first, rest))

    if calls.reasoning is None:
        b.rules["start"] = content(())
    else:
        b.rules["start"] = alt(seq(reasoning, content(())), content((calls.reasoning.open,)))


def _rest(calls: CallSyntax, parallel: bool) -> Expr:
    return seq(many(calls.more) if parallel else EMPTY, calls.tail)


def calls_frame(b: GrammarBuilder, calls: CallSyntax, *, parallel: bool, after: str | None = None) -> None:
    """Add a ``start`` rule of the calls alone: from a trigger on (a lazy grammar, which a server
    starts at the trigger), or, with ``after``, what follows that trigger (a structural tag's content)."""
    rest = _rest(calls, parallel)
    if after is None:
        b.rules["start"] = seq(alt(*(seq(Marker(trigger), body) for trigger, body in calls.triggers)), rest)
    else:
        b.rules["start"] = seq(next(body for trigger, body in calls.triggers if trigger == after), rest)


def _reasoning(b: GrammarBuilder, reasoning: Reasoning | None) -> Expr:
    if reasoning is None:
        return EMPTY
    text = b.text((reasoning.close, *reasoning.forbid_markers))
    return seq(Marker(reasoning.open), reasoning.open_rest, b.head(text, reasoning.close))


def check_tools(tools: Any) -> list[dict[str, Any]]:
    """The tools as plain dicts; the errors :meth:`Format.render` and the models give for invalid ones."""
    if isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
        raise TypeError(f"tools must be a list of tools, not {type(tools).__name__}")
    prepared = jinja.prepare_tools(tools) or []
    seen: set[str] = set()
    for tool in prepared:
        Tool.model_validate(tool)
        name = tool_name(tool)
        assert name is not None  # the model requires it
        if name in seen:
            raise ValueError(f"tool {name!r} is declared twice")
        seen.add(name)
    return prepared


def choose_tools(tool_choice: Any, tools: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """``tool_choice`` read as ``("auto" | "required" | "none", the tools a call may use)``.

    OpenAI's named form ``{"type": "function", "function": {"name": NAME}}`` is ``"required"``
    with that tool alone; ``"none"`` leaves no tool to call.
    """
    if isinstance(tool_choice, str):
        if tool_choice not in TOOL_CHOICES:
            raise ValueError(
                f"unknown tool_choice {tool_choice!r}; choose one of: {', '.join(TOOL_CHOICES)}, or "
                '{"type": "function", "function": {"name": NAME}}'
            )
        if tool_choice == "required" and not tools:
            raise ValueError('tool_choice="required" needs at least one tool')
        return tool_choice, [] if tool_choice == "none" else tools
    function = tool_choice.get("function") if isinstance(tool_choice, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(tool_choice, Mapping) or tool_choice.get("type") != "function" or not isinstance(name, str):
        raise ValueError(
            f"unknown tool_choice {tool_choice!r}; a named tool_choice is "
            '{"type": "function", "function": {"name": NAME}}'
        )
    chosen = [tool for tool in tools if tool_name(tool) == name]
    if not chosen:
        declared = ", ".join(repr(tool_name(t)) for t in tools) or "none"
        raise ValueError(f"tool_choice names {name!r}, which is not a declared tool (declared: {declared})")
    return "required", chosen


def _choice_title(tool_choice: Any) -> str:
    return tool_choice if isinstance(tool_choice, str) else f"function {tool_choice['function']['name']}"


# ---------------------------------------------------------------------------- what a grammar leaves out

#: Schema keywords no grammar here expresses.
LEFT_OUT = (
    "format", "minLength", "maxLength", "multipleOf", "minProperties", "maxProperties", "uniqueItems",
    "$ref", "not", "if", "then", "else", "patternProperties", "propertyNames", "prefixItems", "contains",
    "minContains", "maxContains", "dependentRequired", "dependentSchemas", "unevaluatedProperties",
    "unevaluatedItems",
)  # fmt: skip
#: Keywords expressed in some cases, by what :class:`JsonValues` notes in ``GrammarBuilder.expressed``.
_SOMETIMES = {
    "pattern": "pattern",
    "minimum": "range", "maximum": "range", "exclusiveMinimum": "range", "exclusiveMaximum": "range",
    "minItems": "items", "maxItems": "items",
}  # fmt: skip


def schema_gaps(b: GrammarBuilder, tools: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(where, keyword)`` for each schema keyword of ``tools`` the grammar built in ``b`` leaves out.

    ``where`` is the tool's name and the path to the value (``get_weather.days``, ``f.tags[]``).
    A schema with ``enum`` or ``const`` is its values, whatever else it says.
    """
    gaps: list[tuple[str, str]] = []

    def walk(schema: Any, where: str) -> None:
        if not isinstance(schema, Mapping):
            return
        if "enum" not in schema and "const" not in schema:
            for key in schema:
                if key in LEFT_OUT or (key in _SOMETIMES and (id(schema), _SOMETIMES[key]) not in b.expressed):
                    gaps.append((where, key))
            all_of = schema.get("allOf")
            if isinstance(all_of, list) and len(all_of) > 1:
                gaps.append((where, "allOf"))
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for name, sub in props.items():
                walk(sub, f"{where}.{name}")
        if isinstance(schema.get("items"), Mapping):
            walk(schema["items"], where + "[]")
        if isinstance(schema.get("additionalProperties"), Mapping):
            walk(schema["additionalProperties"], where + ".*")
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(schema.get(key), list):
                for sub in schema[key]:
                    walk(sub, where)

    for tool in tools:
        walk(tool_parameters(tool), str(tool_name(tool)))
    return list(dict.fromkeys(gaps))


def warn_gaps(fmt: Format, gaps: Sequence[tuple[str, str]], *, stacklevel: int) -> None:
    """One :class:`GrammarWarning` listing ``gaps`` (nothing when there are none)."""
    if not gaps:
        return
    by_place: dict[str, list[str]] = {}
    for where, keyword in gaps:
        by_place.setdefault(where, []).append(keyword)
    listed = "; ".join(f"{where}: {', '.join(keywords)}" for where, keywords in by_place.items())
    message = f"the {fmt.name} grammar does not constrain these schema keywords (values may break them): {listed}"
    warnings.warn(message, GrammarWarning, stacklevel=stacklevel + 1)


# ---------------------------------------------------------------------------- grammars


def build(
    fmt: Format, tools: Any, *, tool_choice: Any = "auto", parallel: bool = True, dialect: str = "llguidance"
) -> str:
    """The grammar text of ``fmt``'s replies for ``tools`` (see :meth:`codec.Format.grammar`)."""
    text, gaps = grammar_text(fmt, tools, tool_choice=tool_choice, parallel=parallel, dialect=dialect)
    warn_gaps(fmt, gaps, stacklevel=3)
    return text


def grammar_text(
    fmt: Format,
    tools: Any,
    *,
    tool_choice: Any = "auto",
    parallel: bool = True,
    dialect: str = "llguidance",
    calls_only: bool = False,
    after: str | None = None,
) -> tuple[str, list[tuple[str, str]]]:
    """The grammar text and the schema keywords it leaves out (:func:`schema_gaps`).

    ``calls_only``: the calls alone, from a trigger on (:func:`calls_frame`); ``after``: what
    follows that trigger.
    """
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}; choose one of: {', '.join(DIALECTS)}")
    mode, chosen = choose_tools(tool_choice, check_tools(tools))
    b, calls = call_syntax(fmt, chosen)
    if not chosen:  # no call can be made: free text (and reasoning) only
        calls = replace(calls, triggers=(), more=EMPTY, tail=EMPTY)
    if calls_only or after is not None:
        calls_frame(b, calls, parallel=parallel, after=after)
        what = f"calls after {after!r}" if after is not None else "calls"
    else:
        frame(b, calls, tool_choice="auto" if mode == "none" else mode, parallel=parallel)
        what = "replies"
    title = f"{fmt.name} {what}, tool_choice={_choice_title(tool_choice)}, parallel={parallel}"
    return print_grammar(b, dialect, title=title), schema_gaps(b, chosen)


def call_syntax(fmt: Format, tools: list[dict[str, Any]]) -> tuple[GrammarBuilder, CallSyntax]:
    """``fmt``'s calls for these (checked) tools, and the builder holding their rules."""
    b = GrammarBuilder(fmt.grammar_special_tokens)
    return b, fmt.kit().grammar_calls(b, tools)


# ---------------------------------------------------------------------------- servers
# xgrammar's structural tag, as xgrammar 0.2.9 reads it (``xgrammar/structural_tag.py``): the tree
# ``{"type": "structural_tag", "format": {...}}`` with ``triggered_tags``, ``tag``, ``json_schema``
# (``style`` ``"json"`` or ``"qwen_xml"``), ``grammar`` (EBNF, which codec's GBNF is), ``any_text``,
# ``sequence``, ``optional`` and ``regex`` formats.


def _content_style(fmt: Format) -> str | None:
    """The ``json_schema`` style xgrammar writes ``fmt``'s arguments in, or None (codec's grammar then)."""
    return fmt.kit().content_style


def standard_schema(schema: Any) -> Any:
    """``schema`` in JSON Schema's own words, for a reader that does not take OpenAPI's ``nullable``
    (xgrammar): ``nullable: true`` becomes ``"null"`` among the types (or the options, or the enum)."""
    if isinstance(schema, list):
        return [standard_schema(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {key: standard_schema(value) for key, value in schema.items() if key != "nullable"}
    if schema.get("nullable") is not True:
        return out
    declared = out.get("type")
    if isinstance(declared, str):
        out["type"] = [declared, "null"] if declared != "null" else declared
    elif isinstance(declared, list):
        out["type"] = declared if "null" in declared else [*declared, "null"]
    for key in ("anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = [*out[key], {"type": "null"}]
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def structural_tag(
    fmt: Format, tools: Any, *, tool_choice: Any = "auto", parallel: bool = True
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """xgrammar's structural tag for ``fmt``'s calls (see :meth:`codec.Format.structural_tag`), and the
    schema keywords codec's grammar contents leave out (none for ``json_schema`` contents)."""
    mode, chosen = choose_tools(tool_choice, check_tools(tools))
    _, calls = call_syntax(fmt, chosen)
    triggers = [trigger for trigger, _ in calls.triggers] if chosen else []
    if not chosen:  # text only: codec's grammar, which keeps call openers (and ``[name(``) out of the text
        text_only, _ = grammar_text(fmt, [], tool_choice="none", dialect="gbnf")
        return {"type": "structural_tag", "format": {"type": "grammar", "grammar": text_only}}, []
    style = _content_style(fmt)
    gaps: list[tuple[str, str]] = []
    tags: list[dict[str, Any]] = []
    if style is None:
        for trigger in triggers:
            gbnf, found = grammar_text(fmt, chosen, tool_choice=tool_choice, parallel=parallel, dialect="gbnf",
                                       after=trigger)  # fmt: skip
            gaps += [gap for gap in found if gap not in gaps]
            tags.append({"type": "tag", "begin": trigger, "content": {"type": "grammar", "grammar": gbnf}, "end": ""})
    for tool in chosen if style is not None else ():
        content = {"type": "json_schema", "json_schema": standard_schema(parameters_schema(tool)), "style": style}
        ends = fmt.kit().schema_tag(str(tool_name(tool)))
        assert ends is not None, "a family with a content style writes its tags"
        tags.append({"type": "tag", "begin": ends[0], "content": content, "end": ends[1]})
    calls_format: dict[str, Any] = {
        "type": "triggered_tags",
        "triggers": triggers,
        "tags": tags,
        "at_least_one": mode == "required",
        # codec's grammar contents hold every call of the reply: one tag.
        "stop_after_first": style is None or not parallel,
    }
    if mode != "required" or calls.reasoning is None:
        return {"type": "structural_tag", "format": calls_format}, gaps
    # With at_least_one, xgrammar takes no text before the first call: a reasoning block may lead.
    reasoning = calls.reasoning
    block = {
        "type": "tag",
        "begin": reasoning.open + reasoning.open_rest,
        "content": {"type": "any_text"},
        "end": reasoning.close,
    }
    lead = {"type": "sequence", "elements": [block, {"type": "regex", "pattern": "[ \\t\\r\\n]*"}]}
    tree = {"type": "sequence", "elements": [{"type": "optional", "content": lead}, calls_format]}
    return {"type": "structural_tag", "format": tree}, gaps


def request_fields(
    fmt: Format, tools: Any, *, server: str, tool_choice: Any = "auto", parallel: bool = True
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The JSON fields to merge into a request to ``server`` (see :meth:`codec.Format.request_fields`),
    and the schema keywords the grammar leaves out."""
    if server not in SERVERS:
        raise ValueError(f"unknown server {server!r}; choose one of: {', '.join(SERVERS)}")
    mode, chosen = choose_tools(tool_choice, check_tools(tools))
    if server != "llama.cpp":
        gbnf, gaps = grammar_text(fmt, tools, tool_choice=tool_choice, parallel=parallel, dialect="gbnf")
        # vLLM: StructuredOutputsParams.grammar (vllm/sampling_params.py); its xgrammar backend
        # compiles GBNF there (compile_grammar), its guidance backend converts it (read at vLLM
        # commit 0160cf0). SGLang: the ``ebnf`` request field (xgrammar backend, compile_grammar).
        return ({"structured_outputs": {"grammar": gbnf}} if server == "vllm" else {"ebnf": gbnf}), gaps
    # llama-server (tools/server, common/common.h at llama.cpp commit 001d906): ``grammar_triggers`` items are
    # {"type": COMMON_GRAMMAR_TRIGGER_TYPE_*, "value": ...}: 0 token (with "token": id), 1 word,
    # 2 pattern, 3 full pattern. A word that is one token must be in ``preserved_tokens``.
    _, calls = call_syntax(fmt, chosen)
    triggers = [trigger for trigger, _ in calls.triggers] if chosen else []
    markers = [*triggers, *fmt.grammar_special_tokens]
    if calls.reasoning is not None:
        markers += [calls.reasoning.open, calls.reasoning.close]
    preserved = list(dict.fromkeys(markers))
    if mode == "auto" and chosen:  # lazy: free until a call opener, then the calls
        gbnf, gaps = grammar_text(fmt, tools, tool_choice=tool_choice, parallel=parallel, dialect="gbnf",
                                  calls_only=True)  # fmt: skip
        fields: dict[str, Any] = {
            "grammar": gbnf,
            "grammar_lazy": True,
            "grammar_triggers": [{"type": 1, "value": trigger} for trigger in triggers],
            "preserved_tokens": preserved,
        }
        return fields, gaps
    gbnf, gaps = grammar_text(fmt, tools, tool_choice=tool_choice, parallel=parallel, dialect="gbnf")
    return ({"grammar": gbnf, "preserved_tokens": preserved} if preserved else {"grammar": gbnf}), gaps


# ---------------------------------------------------------------------------- printing


def print_grammar(b: GrammarBuilder, dialect: str, *, title: str = "") -> str:
    """The grammar in ``dialect``: ``start``/``root`` first, then the rules, then the lexemes."""
    printer = _GbnfPrinter(b) if dialect == "gbnf" else _LarkPrinter(b, tokens=dialect == "llguidance")
    header = f"// {title} ({dialect})\n" if dialect != "gbnf" else f"# {title} ({dialect})\n"
    return header + printer.print()


def _reachable(b: GrammarBuilder) -> list[str]:
    order, todo = [], ["start"]
    while todo:
        name = todo.pop(0)
        if name in order:
            continue
        order.append(name)
        todo.extend(_refs(b.rules[name]))
    return order


def _refs(expr: Expr) -> list[str]:
    if isinstance(expr, Ref):
        return [expr.name]
    if isinstance(expr, Seq):
        return [r for item in expr.items for r in _refs(item)]
    if isinstance(expr, Alt):
        return [r for option in expr.options for r in _refs(option)]
    if isinstance(expr, Rep):
        return _refs(expr.item)
    return []


# -- regexes for the Lark dialects (the syntax Python's re and Rust's regex share)

_META = set("\\.^$|?*+()[]{}/")
_CLASS_META = set("\\]-[^&~/")


def _re_char(code: int, meta: set[str]) -> str:
    char = chr(code)
    if char == '"':
        # lark's grammar loader reads \" in a regexp as ", which took the escaped backslash
        # before a quote (JSON's \" escape) away: spelled so, no dialect can misread it.
        return "\\x22"
    if char in meta:
        return "\\" + char
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return char


def _re_class(chars: Chars) -> str:
    if chars == ANY:
        return "[\\s\\S]"
    negate = chars.ranges[-1][1] == MAX_CHAR
    ranges = _complement(chars.ranges).ranges if negate else chars.ranges
    if not negate and len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _re_char(ranges[0][0], _META)
    body = "".join(
        _re_char(lo, _CLASS_META) + ("" if lo == hi else ("" if hi == lo + 1 else "-") + _re_char(hi, _CLASS_META))
        for lo, hi in ranges
    )
    return f"[{'^' if negate else ''}{body}]"


def regex(rx: Regex) -> str:
    """``rx`` in the regex syntax of Python's ``re`` and Rust's ``regex``."""
    if isinstance(rx, Chars):
        return _re_class(rx)
    if isinstance(rx, RSeq):
        return "".join(f"(?:{regex(i)})" if isinstance(i, RAlt) else regex(i) for i in rx.items)
    if isinstance(rx, RAlt):
        return "|".join(regex(o) for o in rx.options)
    inner = regex(rx.item)
    if not (isinstance(rx.item, Chars) or (isinstance(rx.item, RSeq) and not rx.item.items)):
        inner = f"(?:{inner})"
    return inner + _repeat(rx.low, rx.high)


def _repeat(low: int, high: int | None) -> str:
    if (low, high) == (0, None):
        return "*"
    if (low, high) == (1, None):
        return "+"
    if (low, high) == (0, 1):
        return "?"
    if high is None:
        return f"{{{low},}}"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


class _LarkPrinter:
    """llguidance's Lark dialect (``tokens``) or the lark package's."""

    def __init__(self, b: GrammarBuilder, *, tokens: bool) -> None:
        self.b = b
        self.tokens = tokens
        self.terminals: dict[str, str] = {}
        self.priorities: set[str] = set()

    def print(self) -> str:
        rules = [f"{name}: {self.expr(self.b.rules[name], top=True)}" for name in _reachable(self.b)]
        terminals = [f"{n}{'.2' if n in self.priorities else ''}: {d}" for n, d in self.terminals.items()]
        return "\n".join(rules) + "\n\n" + "\n".join(terminals) + "\n"

    def special(self, marker: str) -> bool:
        return self.tokens and marker in self.b.specials

    def expr(self, e: Expr, top: bool = False) -> str:
        if isinstance(e, Lit):
            return json.dumps(e.text, ensure_ascii=False)
        if isinstance(e, Marker):
            return e.text if self.special(e.text) else json.dumps(e.text, ensure_ascii=False)
        if isinstance(e, Term):
            self.terminals.setdefault(e.name, "/" + regex(e.regex) + "/")
            return e.name
        if isinstance(e, Text):
            self.define_text(e)
            return e.name if self.tokens else e.name + "?"
        if isinstance(e, Head):
            return self.head(e)
        if isinstance(e, Ref):
            return e.name
        if isinstance(e, Seq):
            return " ".join(self.expr(i) for i in e.items) if e.items else '""'
        if isinstance(e, Alt):
            body = " | ".join(self.expr(o) for o in e.options)
            return body if top else f"({body})"
        inner = self.expr(e.item)
        if (isinstance(e.item, Seq) and len(e.item.items) > 1) or (isinstance(e.item, Text) and not self.tokens):
            inner = f"({inner})"
        return inner + _repeat(e.low, e.high)

    def forbidden(self, text: Text) -> tuple[list[Regex], list[Regex]]:
        inside = [literal(m) for m in text.forbid_markers if not self.special(m)] + list(text.forbid)
        start = [literal(m) for m in text.forbid_start if not self.special(m)]
        return inside, start

    def define_text(self, text: Text) -> None:
        if text.name in self.terminals:
            return
        inside, start = self.forbidden(text)
        if self.tokens:
            definition = "/[\\s\\S]*/"
            if inside:
                definition += f" & ~/[\\s\\S]*(?:{regex(RAlt(tuple(inside)))})[\\s\\S]*/"
            if start:
                definition += f" & ~/(?:{regex(RAlt(tuple(start)))})[\\s\\S]*/"
        else:
            definition = "/" + self.lookahead_text(inside, start) + "+/"
        self.terminals[text.name] = definition

    @staticmethod
    def lookahead_text(inside: list[Regex], start: list[Regex]) -> str:
        lead = f"(?!{regex(RAlt(tuple(start)))})" if start else ""
        char = f"(?:(?!{regex(RAlt(tuple(inside)))})[\\s\\S])" if inside else "[\\s\\S]"
        return lead + char

    def head(self, head: Head) -> str:
        if self.special(head.end):
            return f"{self.expr(head.text)} {head.end}"
        if head.name not in self.terminals:
            if self.tokens:
                self.define_text(head.text)
                self.terminals[head.name] = f"{head.text.name} {json.dumps(head.end, ensure_ascii=False)}"
            else:
                inside, start = self.forbidden(head.text)
                end = regex(literal(head.end))
                # lark's lexer takes the first terminal that matches, not the longest: the text that
                # reaches its end marker goes first (it matches only where that marker follows).
                self.terminals[head.name] = "/" + self.lookahead_text(inside, start) + "*" + end + "/"
                self.priorities.add(head.name)
        return head.name


# -- GBNF


_GBNF_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _gbnf_char(code: int, meta: str) -> str:
    char = chr(code)
    if char in meta:
        return "\\" + char
    if char in _GBNF_ESCAPES:
        return _GBNF_ESCAPES[char]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02X}"
    return char


def _gbnf_class_char(code: int) -> str:
    # Class metacharacters as hex escapes: the one escape every GBNF reader takes in a class.
    return f"\\x{code:02X}" if chr(code) in "]\\-^[" else _gbnf_char(code, "")


def _hex_safe(atoms: Iterable[str]) -> str:
    """The printed characters joined, a hex digit after a ``\\xHH`` escape escaped too: xgrammar reads
    ``\\x`` with every hex digit that follows (``\\x5Cb`` is U+05CB), llama.cpp with two."""
    out: list[str] = []
    for atom in atoms:
        if out and re.search(r"\\x[0-9A-F]{2}$", out[-1]) and len(atom) == 1 and atom in "0123456789abcdefABCDEF":
            atom = f"\\x{ord(atom):02X}"
        out.append(atom)
    return "".join(out)


def gbnf_literal(text: str) -> str:
    return '"' + _hex_safe(_gbnf_char(ord(c), '"\\') for c in text) + '"'


def _gbnf_class(chars: Chars) -> str:
    if len(chars.ranges) == 1 and chars.ranges[0][0] == chars.ranges[0][1]:
        return gbnf_literal(chr(chars.ranges[0][0]))
    negate = chars.ranges[-1][1] == MAX_CHAR
    ranges = _complement(chars.ranges).ranges if negate else chars.ranges
    atoms = [
        atom
        for lo, hi in ranges
        for atom in ([_gbnf_class_char(lo)] if lo == hi else [_gbnf_class_char(lo), "-", _gbnf_class_char(hi)])
    ]
    body = _hex_safe(atoms)
    return f"[{'^' if negate else ''}{body}]"


def gbnf_regex(rx: Regex) -> str:
    """``rx`` as a GBNF expression."""
    if isinstance(rx, Chars):
        return _gbnf_class(rx)
    if isinstance(rx, RSeq):
        return "(" + " ".join(gbnf_regex(i) for i in rx.items) + ")"
    if isinstance(rx, RAlt):
        return "(" + " | ".join(gbnf_regex(o) for o in rx.options) + ")"
    return gbnf_regex(rx.item) + _repeat(rx.low, rx.high)


class _GbnfPrinter:
    def __init__(self, b: GrammarBuilder) -> None:
        self.b = b
        self.extra: dict[str, str] = {}

    @staticmethod
    def rule_name(name: str) -> str:
        return "root" if name == "start" else name.lower().replace("_", "-")

    def print(self) -> str:
        rules = [f"{self.rule_name(n)} ::= {self.expr(self.b.rules[n])}" for n in _reachable(self.b)]
        return "\n".join(rules + [f"{n} ::= {d}" for n, d in self.extra.items()]) + "\n"

    def expr(self, e: Expr) -> str:
        if isinstance(e, Lit):
            return gbnf_literal(e.text)
        if isinstance(e, Marker):  # char by char, as a text's end (see Head)
            return "(" + " ".join(gbnf_literal(c) for c in e.text) + ")"
        if isinstance(e, Term):
            name = self.rule_name(e.name)
            self.extra.setdefault(name, gbnf_regex(e.regex))
            return name
        if isinstance(e, Text):
            return self.text(e)
        if isinstance(e, Head):
            # The end char by char: the same language, and a reader that lexes literals greedily
            # (llguidance's GBNF import) cannot take a longer literal where the text goes on.
            return " ".join([self.text(e.text), *(gbnf_literal(c) for c in e.end)])
        if isinstance(e, Ref):
            return self.rule_name(e.name)
        if isinstance(e, Seq):
            return "(" + " ".join(self.expr(i) for i in e.items) + ")" if e.items else '""'
        if isinstance(e, Alt):
            return "(" + " | ".join(self.expr(o) for o in e.options) + ")"
        return self.expr(e.item) + _repeat(e.low, e.high)

    def text(self, text: Text) -> str:
        name = self.rule_name(text.name)
        if name not in self.extra:
            inside = [literal(m) for m in text.forbid_markers] + list(text.forbid)
            start = [literal(m) for m in text.forbid_start]
            states = avoiding_automaton(inside, start)

            def state(index: int) -> str:
                return name if index == 0 else f"{name}-s{index}"

            for index, moves in enumerate(states):
                options = ['""'] + [f"{_gbnf_class(chars)} {state(target)}" for chars, target in moves]
                self.extra[state(index)] = " | ".join(options)
        return name


# ---------------------------------------------------------------------------- text that avoids patterns
# GBNF has no lookahead: "text that contains no match of P anywhere and does not start with a
# match of S" is the complement of a regular language, written as its deterministic automaton
# (subset construction over a Thompson NFA), one rule per state. States that complete a
# forbidden match are left out, so the text can never contain one.


class _Nfa:
    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.moves: list[list[tuple[Chars, int]]] = []

    def state(self) -> int:
        self.eps.append([])
        self.moves.append([])
        return len(self.eps) - 1

    def add(self, rx: Regex, start: int) -> int:
        """Wire ``rx`` from ``start``; return its end state."""
        if isinstance(rx, Chars):
            end = self.state()
            self.moves[start].append((rx, end))
            return end
        if isinstance(rx, RSeq):
            for item in rx.items:
                start = self.add(item, start)
            return start
        if isinstance(rx, RAlt):
            end = self.state()
            for option in rx.options:
                self.eps[self.add(option, start)].append(end)
            return end
        for _ in range(rx.low):
            start = self.add(rx.item, start)
        if rx.high is None:
            loop = self.state()
            self.eps[start].append(loop)
            self.eps[self.add(rx.item, loop)].append(loop)
            return loop
        end = self.state()
        self.eps[start].append(end)
        for _ in range(rx.high - rx.low):
            start = self.add(rx.item, start)
            self.eps[start].append(end)
        return end

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        seen, todo = set(states), list(states)
        while todo:
            for nxt in self.eps[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return frozenset(seen)


def avoiding_automaton(inside: Sequence[Regex], start: Sequence[Regex]) -> list[list[tuple[Chars, int]]]:
    """The automaton of texts with no match of ``inside`` and no leading match of ``start``.

    One entry per state (state 0 first): its moves as (characters, next state). Every state
    accepts (the text may end anywhere).
    """
    nfa = _Nfa()
    anywhere, anchored = nfa.state(), nfa.state()
    finals = set()
    for rx in inside:
        finals.add(nfa.add(rx, anywhere))
    for rx in start:
        finals.add(nfa.add(rx, anchored))
    points = {0, MAX_CHAR + 1}
    for moves in nfa.moves:
        for chars, _ in moves:
            for lo, hi in chars.ranges:
                points.update((lo, hi + 1))
    cuts = sorted(points)
    intervals = list(zip(cuts[:-1], [c - 1 for c in cuts[1:]], strict=True))
    first = nfa.closure([anywhere, anchored])
    index = {first: 0}
    table: list[list[tuple[Chars, int]]] = []
    todo = [first]
    while todo:
        current = todo.pop(0)
        targets: dict[int, list[tuple[int, int]]] = {}
        for lo, hi in intervals:
            moved = [to for s in current for chars, to in nfa.moves[s] if lo in chars]
            nxt = nfa.closure([*moved, anywhere])
            if nxt & finals:
                continue
            if nxt not in index:
                index[nxt] = len(index)
                todo.append(nxt)
            targets.setdefault(index[nxt], []).append((lo, hi))
        table.append([(Chars(_merge(ranges)), target) for target, ranges in sorted(targets.items())])
    return table
