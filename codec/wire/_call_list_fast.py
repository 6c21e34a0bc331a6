"""The fast paths of the ``call_list`` family: whole lists, calls and arguments read in one go, the lexers
of string arguments, and the cutter that salvages the calls of a rejected list.

Each reads exactly what the grammar's rules read (through the grammar's own terminal patterns) and
gives up, leaving the text to the rules, on anything they would report, repair or refuse.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import regex

from codec._lark import CompiledGrammar
from codec.literals import PLAIN_JSON_DECODER, nesting
from codec.stream import MAX_DEPTH
from codec.watch import Delimiter, FastLexer, JsonScan, Watch
from codec.wire._call_list_values import (
    SURROGATE,
    SURROGATE_ESCAPE,
    fitting_number,
    leading_zeros,
    quoted_string_value,
    raw_decode_from,
)


def lookahead_text(pattern: str, start: int) -> str:
    """The text of the lookahead group ``(?=...)`` (or ``(?!...)``) that opens at ``pattern[start]``
    (a terminal's test, shared with the code that follows the same token), its parentheses balanced."""
    depth, i, in_class = 0, start, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return pattern[start + 3 : i]
        i += 1
    raise ValueError(f"no lookahead group at {start} of {pattern!r}")


def _fitting_float(text: str) -> float:
    value = fitting_number(text)
    if value is None:
        raise ValueError(f"number out of range: {text}")
    return float(value)


#: The fast path's JSON decoder: the plain one (a repeated key, NaN and infinity are left to the
#: rules) that also leaves to the rules a number that does not fit, which they report.
_JSON_DECODER = json.JSONDecoder(
    object_pairs_hook=PLAIN_JSON_DECODER.object_pairs_hook,
    parse_float=_fitting_float,
    parse_constant=PLAIN_JSON_DECODER.parse_constant,
)


# --------------------------------------------------------------------------- whole lists, calls, arguments


#: How far a streamed call is awaited whole before the rules take it token by token.
CALL_WAIT = 256


class _NextParen:
    """Wakes the lexer when a ``)`` arrives, or once ``budget`` more characters have."""

    def __init__(self, budget: int) -> None:
        self.budget = budget

    def scan(self, text: str) -> bool:
        self.budget -= len(text)
        return ")" in text or self.budget < 0


class _Unusual(Exception):
    """Text the fast path leaves to the grammar's rules."""


_WS = re.compile(r"[ \t\r\n]*")
_SEPARATOR = re.compile(r"[ \t\r\n]*(?:,[ \t\r\n]*)?")


@dataclass(frozen=True)
class StringArguments:
    """How a member writes a string argument, as the fast paths read one: a token the grammar's rules
    read as :attr:`terminal` too, with no repair."""

    #: The grammar's terminal of a string argument (``ARG_STRING``, ``RAW_STRING``).
    terminal: str
    #: The value of a string argument token.
    decode: Callable[[str], str]
    #: A simpler pattern of the usual token, tried first: where :attr:`settled` follows it, it ends
    #: where :attr:`terminal` would and reads with no repair (elsewhere :attr:`terminal` is tried).
    shortcut: re.Pattern[str] | None = None
    #: Whether a token reads as the template writes it, with no repair (None: every token does): the
    #: fast paths leave the others to the rules, which report the repair.
    plain: Callable[[str], bool] | None = None
    #: What must follow a token (which its own lookahead already accepted) for more text not to change
    #: where it ends; None where nothing can (a token closed by its quote).
    settled: re.Pattern[str] | None = None


def _unescaped(value: str, text: str) -> str:
    """A string the fast paths decoded from ``text``, unless it holds a surrogate code point (the
    rules read it and report it)."""
    if "\\" in text and SURROGATE.search(value) is not None:
        raise _Unusual
    return value


class CallListReader:
    """Fast path: a whole, ordinary call list ``[f(a=1, b="x"), g()]`` read in one go.

    It reads exactly what the ``call_list`` rules read, through the grammar's own terminal
    patterns, and gives up (the rules then take the list token by token) on anything those rules
    would report, repair or refuse: a repeated argument or key, a value the builder rejects,
    tuples, containers that are not plain JSON, a list that has not arrived whole.
    """

    def __init__(self, grammar: CompiledGrammar, strings: StringArguments, *, commas: bool = False) -> None:
        #: Free text, which outranks a list: a ``[`` it takes (``[f(x) for x in xs]``) opens none.
        self._text = grammar.pattern("TEXT")
        #: Whether arguments are separated by commas (an argument without one is the rules' to report).
        self._commas = commas
        self._name = grammar.pattern("NAME")
        self._key = re.compile(f"({self._name.pattern})[ \\t\\r\\n]*=[ \\t\\r\\n]*")
        self._arg_string = grammar.pattern(strings.terminal)
        self._sq_string = grammar.pattern("SQ_STRING")
        self._number = grammar.pattern("NUMBER")
        #: NUMBER as the ``regex`` module reads it, for partial matching (see :meth:`_number_grows`).
        self._number_prefix = regex.compile(self._number.pattern)
        self._keywords = [(grammar.pattern(t), v) for t, v in (("TRUE", True), ("FALSE", False), ("NULL", None))]
        self._strings = strings

    def lexer(self, follows: Callable[[str, int, bool], bool] | None = None, *, in_text: bool = False) -> FastLexer:
        """The fast lexer; ``follows(text, end, final)`` says whether the grammar can go on after ``]``.
        ``in_text``: the list starts in free text, where inline code (`` `[f(a=1)]` ``) is text."""

        def lex(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
            if not text.startswith("[", pos):
                return None
            if in_text and (_inline_code(text, pos, final) or self._text.match(text, pos, pos + TEXT_LOOKAHEAD)):
                return None  # text, or it may still be: the rules decide
            try:
                calls, end = self._list(text, pos)
            except (_Unusual, ValueError, RecursionError, IndexError):
                return None
            if follows is not None and not follows(text, end, final):
                return None
            return calls, end

        return lex

    def call_lexer(self, *, after_comma: bool = False) -> FastLexer:
        """The fast lexer of one whole call ``name(...)`` (FAST_CALL), blanks before it included (the
        grammar ignores them; taken here, they are not held back as a token of their own), or with
        ``after_comma`` of a comma and the call after it (FAST_NEXT_CALL). While a call is still
        arriving it waits for the next ``)`` (up to :data:`CALL_WAIT` characters; past that, or where
        the call does not read, the rules take it token by token)."""

        def lex(text: str, pos: int, final: bool) -> tuple[Any, int] | Watch | None:
            start = skip_blanks(text, pos)
            if after_comma and start < len(text):
                if text[start] != ",":
                    return None
                start = skip_blanks(text, start + 1)
            name = self._name.match(text, start)
            if name is None and start < len(text):
                return None
            # Blanks so far, or a call that is not whole yet: wait for a ")" (or leave it to the rules).
            if name is None or text.find(")", name.end()) < 0:
                waited = len(text) - pos
                return None if final or waited > CALL_WAIT else _NextParen(CALL_WAIT - waited)
            try:
                args, end = self._args(text, skip_blanks(text, name.end()))
            except (_Unusual, ValueError, RecursionError, IndexError):
                return None
            return (name.group(), args, name.start() - pos), end

        return lex

    def argument_lexer(self) -> FastLexer:
        """The fast lexer of one whole keyword argument ``name=value`` (FAST_ARG), once its value has
        arrived whole: what a streamed call list mostly goes through (the rules take the rest)."""

        def lex(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
            key = self._key.match(text, pos)
            if key is None:
                return None
            try:
                value, end = self._value(text, key.end())
            except (_Unusual, ValueError, RecursionError, IndexError):
                return None
            if not final and (end == len(text) or self._number_grows(text, key.end())):
                return None  # a number or a keyword may still grow
            return (key[1], value), end

        return lex

    def _number_grows(self, text: str, i: int) -> bool:
        """Whether the rest of ``text`` from ``i`` may still grow into one number: a number cut
        before its exponent or fraction (``1e``, ``2.``, ``1e+``) reads as a shorter one until the
        rest arrives."""
        return self._number_prefix.fullmatch(text, i, partial=True) is not None

    def _list(self, text: str, pos: int) -> tuple[list[tuple[str, dict[str, Any], int]], int]:
        calls = []
        i = skip_blanks(text, pos + 1)
        while True:
            name = self._name.match(text, i)
            if name is None:
                raise _Unusual
            args, i = self._args(text, skip_blanks(text, name.end()))
            calls.append((name.group(), args, name.start() - pos))
            i = skip_blanks(text, i)
            if text.startswith(",", i):
                i = skip_blanks(text, i + 1)
                if not text.startswith("]", i):
                    continue
            if not text.startswith("]", i):
                raise _Unusual
            return calls, i + 1

    def _args(self, text: str, i: int) -> tuple[dict[str, Any], int]:
        if not text.startswith("(", i):
            raise _Unusual
        args: dict[str, Any] = {}
        i = skip_blanks(text, i + 1)
        while not text.startswith(")", i):
            key = self._key.match(text, i)  # NAME, blanks, "=", blanks
            if key is None:
                raise _Unusual
            value, i = self._value(text, key.end())
            if key[1] in args:
                raise _Unusual  # the rules report it
            args[key[1]] = value
            after = _SEPARATOR.match(text, i).end()  # type: ignore[union-attr]
            if self._commas and not text.startswith(")", after) and text.find(",", i, after) < 0:
                raise _Unusual  # an argument without the comma before it: the rules report it
            i = after
        return args, i + 1

    def _value(self, text: str, i: int) -> tuple[Any, int]:
        first = text[i]
        if first == '"':
            strings = self._strings
            if strings.shortcut is not None:
                m = strings.shortcut.match(text, i)
                if m is not None and (strings.settled is None or strings.settled.match(text, m.end())):
                    written = m.group()
                    value = strings.decode(written)
                    return (_unescaped(value, written) if "\\" in written else value), m.end()
            m = self._arg_string.match(text, i)
            if m is None or (strings.plain is not None and not strings.plain(m.group())):
                raise _Unusual
            if strings.settled is not None and strings.settled.match(text, m.end()) is None:
                raise _Unusual  # where it ends may still change: the rules wait for it
            written = m.group()
            value = strings.decode(written)
            return (_unescaped(value, written) if "\\" in written else value), m.end()
        if first == "'":
            m = _PLAIN_SQ_STRING.match(text, i)
            if m is not None:  # no escape, no control character: the text between the quotes, as Python reads it
                return m.group()[1:-1], m.end()
            m = self._sq_string.match(text, i)
            if m is None:
                raise _Unusual
            return _unescaped(quoted_string_value(m.group()), m.group()), m.end()
        if first in "{[":
            value, end = raw_decode_from(_JSON_DECODER, text, i)
            if SURROGATE_ESCAPE.search(text, i, end) is not None:
                raise _Unusual  # a string escapes a surrogate: the rules read it and report it
            opened = text.count("[", i, end) + text.count("{", i, end)  # cheap bound on the nesting
            if opened + 2 > MAX_DEPTH and nesting(value) + 2 > MAX_DEPTH:
                raise _Unusual  # the rules refuse it
            return value, end
        m = self._number.match(text, i)
        if m is not None:
            written = m.group()
            zeros = written[0] == "0" or written.startswith("-0")  # (cheap test first: most numbers have none)
            number = None if zeros and leading_zeros(written) else fitting_number(written)
            if number is None:
                raise _Unusual  # the rules report it
            return number, m.end()
        for keyword, literal in self._keywords:
            m = keyword.match(text, i)
            if m is not None:
                return literal, m.end()
        raise _Unusual


#: A single-quoted string with no backslash and no control character in it: its value is its text.
_PLAIN_SQ_STRING = re.compile(r"'[^'\\\x00-\x1f]*'")


#: A ``[`` whose first ``]`` (on the same line, not far: the bound of the grammars' TEXT) is followed by a
#: backtick: inline code, which TEXT reads as text.
_INLINE_CODE = re.compile(r"\[[^\]\n]{0,76}\]")


def _inline_code(text: str, pos: int, final: bool) -> bool:
    """Whether the ``[`` at ``pos`` is (or, with more text, may be) inline code."""
    m = _INLINE_CODE.match(text, pos)
    if m is None:
        return False
    return text.startswith("`", m.end()) or (m.end() == len(text) and not final)


def skip_blanks(text: str, i: int) -> int:
    if i < len(text) and text[i] not in " \t\r\n":
        return i
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def followed_by(marker: str) -> Callable[[str, int, bool], bool]:
    """A ``follows`` check for :meth:`CallListReader.lexer`: ``marker`` comes next, blanks aside."""

    def follows(text: str, pos: int, final: bool) -> bool:
        return text.startswith(marker, skip_blanks(text, pos))

    return follows


#: How far free text's tests at a ``[`` read (TEXT's lookaheads: "every lookahead fits in the
#: holdback", the grammar says), and so how far a call list's start (:func:`call_list_start`) reaches.
TEXT_LOOKAHEAD = 80


def call_list_start(grammar: CompiledGrammar) -> re.Pattern[str]:
    """How a call list starts, as ``grammar``'s free text tells it: a ``[`` that TEXT's first test
    does not take as text (``[``, a name and ``(``, with the blanks and the name's length it allows).
    A marker, for the reasoning lookahead, that a reply writes first only outside reasoning; it
    matches at most :data:`TEXT_LOOKAHEAD` characters."""
    pattern = grammar.pattern("TEXT").pattern
    return re.compile(r"\[" + lookahead_text(pattern, pattern.index(r"\[(?!") + 2))


# --------------------------------------------------------------------------- string arguments


#: How far past a quote the lexers look to tell whether a string argument closes there (the closing
#: tests need at most 102 characters for JSON strings, 114 for raw ones).
STRING_LOOKAHEAD = 120
#: A string argument up to its first unescaped quote: how JSON reads it, and the template writes it.
JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
#: Text up to the next unescaped quote (or to the end, or to a backslash the text ends with).
_TO_QUOTE = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*')
#: A quote in a string's body, or an escape (kept as it is).
QUOTE_OR_ESCAPE = re.compile(r'\\.|"', re.DOTALL)


class _ClosingQuoteWatch:
    """Follows a string argument whose closing quote is undecided, each character once (escapes
    understood): wakes the lexer once a quote that ``closes`` accepts has :data:`STRING_LOOKAHEAD`
    characters after it, when the test is sure."""

    def __init__(self, closes: re.Pattern[str], text: str) -> None:
        self.closes = closes
        self.text = text  # from the first quote not decided yet, or a backslash cut by the end so far

    def scan(self, text: str) -> bool:
        joined = self.text + text
        i = 0
        while True:
            at = _TO_QUOTE.match(joined, i).end()  # type: ignore[union-attr]
            if at == len(joined) or joined[at] != '"':
                self.text = joined[at:]  # "" or a trailing backslash
                return False
            if len(joined) - at - 1 < STRING_LOOKAHEAD:
                self.text = joined[at:]
                return False
            if self.closes.match(joined, at + 1):
                return True
            i = at + 1


def first_closing_quote(text: str, pos: int, closes: re.Pattern[str]) -> int | None:
    """Right after the first quote past ``text[pos]`` that ``closes`` accepts what follows of (escapes
    skipped), or None where none does. Scans started right after two quotes of one text meet at
    the later one, so where one found none, none is found from any quote after its start."""
    i = pos + 1
    while True:
        at = _TO_QUOTE.match(text, i).end()  # type: ignore[union-attr]
        if at == len(text) or text[at] != '"':
            return None
        if closes.match(text, at + 1):
            return at + 1
        i = at + 1


def closing_quote(text: str, pos: int, closes: re.Pattern[str]) -> int | None:
    """Where the string opened at ``text[pos]`` ends in a complete text, as ARG_STRING's regex reads
    it: right after the first quote ``closes`` accepts, else after its first quote; None where it
    has none. Each character is looked at once, plus ``closes``'s bounded lookahead at each quote."""
    end = first_closing_quote(text, pos, closes)
    if end is not None:
        return end
    first = JSON_STRING.match(text, pos)
    return None if first is None else first.end()


def arg_string_closes(grammar: CompiledGrammar) -> re.Pattern[str]:
    """What must follow a quote for it to close ARG_STRING in ``grammar`` (its closing lookahead)."""
    pattern = grammar.pattern("ARG_STRING").pattern
    return re.compile(lookahead_text(pattern, pattern.index('"(?=') + 1))


def closing_quote_lexer(closes: re.Pattern[str]) -> FastLexer:
    """The lexer of ARG_STRING: the token once the quote it closes at is decided (the first that
    ``closes`` accepts, with :data:`STRING_LOOKAHEAD` characters after it, or the end of the reply), as
    ARG_STRING's regex reads the whole reply; a watch while undecided."""

    def lex(text: str, pos: int, final: bool) -> tuple[Any, int] | Watch | None:
        if not text.startswith('"', pos):
            return None
        if final:
            end = closing_quote(text, pos, closes)
            return None if end is None else (None, end)
        i = pos + 1
        while True:
            at = _TO_QUOTE.match(text, i).end()  # type: ignore[union-attr]
            if at == len(text) or text[at] != '"' or len(text) - at - 1 < STRING_LOOKAHEAD:
                return _ClosingQuoteWatch(closes, text[at:])
            if closes.match(text, at + 1):
                return None, at + 1
            i = at + 1

    return lex


#: A string argument's escaped reading (ESC_STRING) from its opening quote: characters other than a
#: quote, a backslash or a raw control character, and the escapes it takes (JSON's, less ``\/``,
#: ``\b`` and ``\f``, which raw text holds far more often: regexes, paths).
_ESCAPED_BODY = re.compile(r'"(?:[^"\\\x00-\x1f]+|\\["\\nrt]|\\u[0-9a-fA-F]{4})*')
#: What may still grow into such an escape at the end of the text read so far.
_PARTIAL_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")


def _escaped_reading(text: str, pos: int) -> tuple[str, int]:
    """How far the escaped reading of the string opened at ``text[pos]`` goes: ``("closed", end)``
    after its closing quote, ``("refused", at)`` where it meets what it does not take (a raw control
    character, another backslash sequence), ``("open", at)`` where the text ends first (``at``: a
    backslash escape still arriving, or the end)."""
    at = _ESCAPED_BODY.match(text, pos).end()  # type: ignore[union-attr]
    if at == len(text) or _PARTIAL_ESCAPE.match(text, at):
        return "open", at
    if text[at] == '"':
        return "closed", at + 1
    return "refused", at


class _EscapedStringWatch:
    """Follows a string argument while its escaped reading is undecided, each character once: wakes the
    lexer when that reading is refused, or :data:`STRING_LOOKAHEAD` characters after its closing quote."""

    def __init__(self, rest: str, after: int) -> None:
        self.rest = rest  # a backslash escape cut by the end of the text so far
        self.after = after  # characters after the closing quote (-1: none found yet)

    def scan(self, text: str) -> bool:
        if self.after >= 0:
            self.after += len(text)
            return self.after >= STRING_LOOKAHEAD
        state, at = _escaped_reading('"' + self.rest + text, 0)
        if state == "open":
            self.rest = (self.rest + text)[at - 1 :]
            return False
        if state == "refused":
            return True
        self.after = len(self.rest) + len(text) + 1 - at
        return self.after >= STRING_LOOKAHEAD


def escaped_string_lexer(closes: re.Pattern[str]) -> FastLexer:
    """The lexer of ESC_STRING where the grammar's rules could take either it or RAW_STRING: the
    escaped token once its reading is decided and wins (it must read up to a quote that ``closes``
    accepts), None when the raw reading wins (the rules then take RAW_STRING), and a watch while
    undecided: a raw token is never taken while the escaped one may still come."""

    def lex(text: str, pos: int, final: bool) -> tuple[Any, int] | Watch | None:
        if not text.startswith('"', pos):
            return None
        state, at = _escaped_reading(text, pos)
        if state == "refused":
            return None
        if state == "open":
            return None if final else _EscapedStringWatch(text[at:], -1)
        if not final and len(text) - at < STRING_LOOKAHEAD:
            return _EscapedStringWatch("", len(text) - at)
        if text.find("\\", pos, at) < 0 or closes.match(text, at) is None:
            return None  # the same as the raw reading, or no closing quote
        return None, at

    return lex


def string_terminal(grammar: CompiledGrammar) -> str:
    """The terminal a member's grammar reads a string argument as: ``RAW_STRING`` where strings are
    written raw (values ``"json_raw"``), else ``ARG_STRING``."""
    return "RAW_STRING" if "RAW_STRING" in grammar.terminals else "ARG_STRING"


def raw_string(token: str) -> str:
    """A raw string argument's value: the text between its quotes, unescaped."""
    return token[1:-1]


#: After a JSON string argument the fast paths read, what makes sure more text would not move its
#: end: ARG_STRING's closing test, less the end of the reply, with what follows a ``)`` (no quote);
#: ``%s`` takes the frame's ends (the stop token, the block's closer) as the grammar's ``FRAME_ENDS``.
_JSON_SETTLED = (
    r"[ \t\r\n]{0,16}(?:,[ \t\r\n]{0,16}(?:[A-Za-z_][\w\-.]{0,63}[ \t\r\n]{0,4}=|\))"
    r'|\)(?:[ \t\r\n]{0,16}[^" \t\r\n]|[ \t\r\n]{17})%s)'
    r"|(?:[ \t]{0,16}[\r\n][ \t\r\n]{0,16})?(?:[A-Za-z_][\w\-.]{0,63}[ \t\r\n]{0,4}=|[A-Za-z_][\w\-.]{64})"
)
#: After a raw string argument the fast paths read, what makes sure more text would not move its end:
#: ``, name=``, ``,)``, or a ``)`` and what follows it (no quote).
_RAW_SETTLED = re.compile(
    r"[ \t\r\n]{0,16}(?:,[ \t\r\n]{0,16}(?:[A-Za-z_][\w\-.]{0,63}[ \t\r\n]{0,16}=|\))"
    r'|\)(?:[ \t\r\n]{0,16}[^" \t\r\n]|[ \t\r\n]{17}))'
)
#: The usual raw string argument: no quote or backslash inside.
_PLAIN_STRING = re.compile(r'"[^"\\]*"')


@dataclass(frozen=True)
class StringReading:
    """How the stream reads a member's string arguments: the fast paths' view of them, the lexers
    that wait while where one ends is undecided, and the delimiter of the stream's watch."""

    arguments: StringArguments
    lexers: dict[str, FastLexer]
    delimiter: Delimiter


def string_reading(grammar: CompiledGrammar, frame_ends: str) -> StringReading:
    """The :class:`StringReading` of ``grammar``'s string arguments; ``frame_ends`` is the regex
    alternatives (``|<end_of_turn>|```...``) the grammar's ARG_STRING closes before."""
    if string_terminal(grammar) == "RAW_STRING":
        pattern = grammar.pattern("RAW_STRING").pattern
        closes = lookahead_text(pattern, pattern.rindex("(?="))  # what must follow a closing quote
        return StringReading(
            # The fast paths read strings without a backslash (with one, the escaped reading may win).
            StringArguments(
                "RAW_STRING",
                raw_string,
                shortcut=_PLAIN_STRING,
                plain=lambda token: "\\" not in token,
                settled=_RAW_SETTLED,
            ),
            {"ESC_STRING": escaped_string_lexer(re.compile(closes))},
            # A closing quote counts only where `, name=` or `)` follows: wake the lexer only there.
            Delimiter('"', '"', lookahead=STRING_LOOKAHEAD, follows=closes),
        )
    quote_closes = arg_string_closes(grammar)
    return StringReading(
        # The fast paths read strings as JSON does, up to their first quote (a string with a quote left
        # unescaped in it is the rules' to read and report), once what follows settles where they end.
        StringArguments(
            "ARG_STRING",
            quoted_string_value,
            shortcut=JSON_STRING,
            plain=lambda token: JSON_STRING.fullmatch(token) is not None,
            settled=re.compile(_JSON_SETTLED % frame_ends),
        ),
        {"ARG_STRING": closing_quote_lexer(quote_closes)},
        Delimiter('"', '"', "\\"),
    )


# --------------------------------------------------------------------------- salvage


class ElementCutter:
    """Cuts the inside of a rejected call list into its elements, for salvage.

    An element ends at a top-level ``,`` or right after a call's closing ``)``; the list ends at
    its ``]``. Strings are skipped with the grammar's own patterns, so brackets and commas inside
    them do not count, and a string argument is read the way the member's grammar reads it
    (ARG_STRING, or RAW_STRING and ESC_STRING first), each character a bounded number of times.
    """

    def __init__(self, grammar: CompiledGrammar) -> None:
        self._arg_string = grammar.pattern(string_terminal(grammar))
        #: ARG_STRING's closing test, where the member's strings are JSON's: read by a scan, linear
        #: (the regex costs the rest of the text at each string, a rejected list of many strings
        #: quadratic time).
        self._arg_closes = arg_string_closes(grammar) if string_terminal(grammar) == "ARG_STRING" else None
        #: A string argument written with escapes, which wins over RAW_STRING where it reads (values "json_raw").
        self._escaped_string = grammar.pattern("ESC_STRING") if "ESC_STRING" in grammar.terminals else None
        self._nested_string = grammar.pattern("DQ_STRING")
        self._sq_string = grammar.pattern("SQ_STRING")
        #: The block's opener at a rejected block's start, and its closer at its end (members with a block).
        self.block_open = grammar.pattern("FENCE_OPEN") if "FENCE_OPEN" in grammar.terminals else None
        closer = grammar.pattern("FENCE_CLOSE").pattern if "FENCE_CLOSE" in grammar.terminals else None
        self.block_close = re.compile(f"(?:{closer})\\Z") if closer is not None else None
        name = grammar.pattern("NAME").pattern
        #: A statement ``x = name(`` (formats whose grammar reads statements): its target, then the call.
        self.assignment = re.compile(f"[ \\t\\r\\n]*({name})[ \\t\\r\\n]*=[ \\t\\r\\n]*(?={name}[ \\t\\r\\n]*\\()")

    def cut(self, text: str, start: int, bracketed: bool) -> tuple[list[tuple[int, str]], int]:
        """The non-blank elements from ``text[start]`` (offset, text), and where the list ends."""
        elements: list[tuple[int, str]] = []
        depth, i, begin, n = 0, start, start, len(text)
        none_closes_from = n + 1

        def element(end: int) -> None:
            if text[begin:end].strip():
                elements.append((begin, text[begin:end]))

        while i < n:
            ch = text[i]
            if ch == "'" or ch == '"':
                string = self._sq_string if ch == "'" else self._arg_string if depth == 1 else self._nested_string
                if string is self._arg_string and self._arg_closes is not None:
                    # ARG_STRING's reading (closing_quote), with what an earlier scan found kept: past
                    # where one found no closing quote, none is looked for again (linear overall).
                    end = first_closing_quote(text, i, self._arg_closes) if i + 1 < none_closes_from else None
                    if end is None:
                        none_closes_from = min(none_closes_from, i + 1)
                        first = JSON_STRING.match(text, i)  # no quote closes: the first one does
                        end = first.end() if first is not None else None
                    i = end if end is not None else n
                    continue
                escaped = self._escaped_string if string is self._arg_string else None
                m = (escaped and escaped.match(text, i)) or string.match(text, i)
                i = m.end() if m is not None else n
                continue
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                if depth == 0 and ch == "]" and bracketed:
                    element(i)
                    return elements, i + 1
                depth = max(depth - 1, 0)
                if depth == 0 and ch == ")":  # a call closed
                    element(i + 1)
                    begin = i + 1
            elif ch == "," and depth == 0:
                element(i)
                begin = i + 1
            i += 1
        element(n)
        return elements, n


@functools.cache
def element_cutter(grammar: CompiledGrammar) -> ElementCutter:
    """The :class:`ElementCutter` of ``grammar``, made once."""
    return ElementCutter(grammar)


# --------------------------------------------------------------------------- JSON call objects

#: The keys a JSON call object may give its arguments under (the ``json_calls`` recovery).
JSON_ARGUMENT_KEYS = ("parameters", "arguments")


def json_call(value: Any) -> tuple[str, dict[str, Any]] | None:
    """A JSON call object's name and arguments, or None for any other value: an object with a
    non-empty ``name``, its arguments an object under one of :data:`JSON_ARGUMENT_KEYS`, and no other
    key but ``"type": "function"`` (an object of another shape is data, not a call)."""
    if not isinstance(value, dict):
        return None
    name = value.get("name")
    keys = [key for key in JSON_ARGUMENT_KEYS if key in value]
    if not isinstance(name, str) or not name.strip() or len(keys) != 1:
        return None
    if set(value) - {"name", "type", keys[0]} or value.get("type", "function") != "function":
        return None
    arguments = value[keys[0]]
    return (name, arguments) if isinstance(arguments, dict) else None


class _LeadScan(JsonScan):
    """A :class:`~codec.watch.JsonScan` of a JSON value after blanks that also wakes at a first
    character that opens no such value (the text is then no JSON call)."""

    def __init__(self, openers: str) -> None:
        super().__init__()
        self.openers = openers
        self.seen = False

    def scan(self, text: str) -> bool:
        if not self.seen:
            first = skip_blanks(text, 0)
            if first < len(text):
                self.seen = True
                if text[first] not in self.openers:
                    return True
        return super().scan(text)


def _element_starts(text: str, start: int, count: int) -> list[int]:
    """Where each of the ``count`` elements of the JSON array at ``text[start]`` (decoded already) starts."""
    starts, i = [], start + 1
    for _ in range(count):
        i = skip_blanks(text, i)
        starts.append(i)
        _, i = PLAIN_JSON_DECODER.raw_decode(text, i)
        i = skip_blanks(text, i) + 1  # past the comma (or the closing bracket)
    return starts


def json_calls_lexer(*, many: bool) -> FastLexer:
    """A fast lexer for a JSON call object (:func:`json_call`) after blanks, or with ``many`` for
    a non-empty JSON array of them too: its value, ``[(name, arguments, offset)]`` (the offset of
    each object from the token's start). Anything else, JSON or not, is left to the rules (None);
    while the value is still arriving, a watch waits for its end."""
    openers = "{[" if many else "{"

    def lex(text: str, pos: int, final: bool) -> tuple[Any, int] | Watch | None:
        start = skip_blanks(text, pos)
        if start < len(text):
            if text[start] not in openers:
                return None
            try:
                value, end = PLAIN_JSON_DECODER.raw_decode(text, start)
            except (ValueError, RecursionError):
                value, end = None, -1
            if end >= 0:
                found = [json_call(value)] if isinstance(value, dict) else [json_call(v) for v in value or [None]]
                if not isinstance(value, (dict, list)) or any(call is None for call in found):
                    return None
                offsets = [start] if isinstance(value, dict) else _element_starts(text, start, len(found))
                calls = [(*call, at - pos) for call, at in zip(found, offsets, strict=True) if call is not None]
                return calls, end
        if final:
            return None
        watch = _LeadScan(openers)
        return None if watch.scan(text[pos:]) else watch

    return lex
