"""The reply side shared by the two Python-list formats (``gemma3_tool_code``, ``deepseek_pythonic``).

Both write calls as a Python list of keyword calls (grammar ``grammars/pythonic_calls.lark``);
they differ in their frame (a ```` ```tool_code ```` fence and ``<end_of_turn>``; a ``<think>``
block and ``<|end_of_sentence|>``) and in how a string argument is written, which each format's
builder says in :meth:`PythonicBuilder.arg_string`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from codec import jinja
from codec._lark import CompiledGrammar, Token, ValueToken
from codec.errors import parse_error_at
from codec.formats._calls import MARKUP, LiteralHandlers, before_stop, leading_reasoning
from codec.formats._decode import call_id
from codec.formats._reading import Readings, find_all
from codec.literals import PLAIN_JSON_DECODER, json_value, nesting, number_literal, python_literal
from codec.models import FunctionCall, ToolCall
from codec.schema import declared_types
from codec.sink import CONTENT, CallWriter, Sink
from codec.stream import MAX_DEPTH, Builder, BuildError, Syntax, ToolsByName, WholeReading
from codec.watch import Delimiter, FastLexer, Watch

#: Frame closers a format may leave out at the end of a reply (inserted and reported).
_CLOSERS = {"THINK_CLOSE": "</think>", "FENCE_CLOSE": "```"}
#: A markdown code fence with a language tag, whose text (calls in it included) is content.
CODE_FENCE = ("CODE_OPEN", "CODE_TEXT", "CODE_CLOSE")
#: Punctuation that no terminal of either format can extend where it is read (tests check it).
CLOSED_PUNCTUATION = ("COMMA", "RPAR", "RBRACK", "RBRACE", "COLON", "EQ")


def fitting_number(text: str) -> int | float | None:
    """The value of a number literal, or None where a float cannot hold it: it overflows to
    infinity (``1e999``), or a number that is not zero underflows to zero (``1e-400``)."""
    try:
        value = number_literal(text)
    except ValueError:
        return None
    if value == 0 and isinstance(value, float) and any(digit in "123456789" for digit in re.split("[eE]", text)[0]):
        return None
    return value


#: A number whose integer part starts with a zero and goes on (``02134``, ``-007``, ``00.5``).
_LEADING_ZEROS = re.compile(r"[-+]?0[0-9]")


def leading_zeros(text: str) -> bool:
    """Whether the number literal ``text`` has leading zeros, which neither JSON nor Python reads
    (a zip code, a phone number, an id written as digits: the zeros are the value's own)."""
    return _LEADING_ZEROS.match(text) is not None


class _Padded:
    """A number written with leading zeros, until the argument it is in says how it reads."""

    __slots__ = ("pos", "text", "value")

    def __init__(self, text: str, pos: int, value: int | float) -> None:
        self.text, self.pos, self.value = text, pos, value


def padded(text: str, pos: int) -> _Padded:
    """The number ``text`` with leading zeros (see :func:`leading_zeros`), written at ``pos``."""
    return _Padded(text, pos, number_literal(text.lstrip("+")))


def resolve_padded(sink: Sink, name: str | None, key: str, value: Any) -> Any:
    """``value``, an argument ``key`` of the call ``name`` that holds numbers written with leading
    zeros: each reads as the number its digits give (``07`` is 7, as models mean a zero-padded month),
    or, as the whole value of a parameter the tools declare a string and not a number, as its text
    (``zip=02134`` is ``"02134"``); each reported (``leading_zeros``)."""
    if isinstance(value, _Padded):
        schema = sink.tool_schema(name) if name is not None else None
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        types = declared_types(properties.get(key)) if isinstance(properties, Mapping) else []
        if "string" in types and "integer" not in types and "number" not in types:
            kept = f"kept as the string {value.text!r} (the tool declares a string)"
            sink.issue("leading_zeros", f"the number {value.text} has leading zeros: {kept}", value.pos, value.text)
            return value.text
        read = f"read as {value.value!r}"
        sink.issue(
            "leading_zeros",
            f"the number {value.text} has leading zeros, which JSON does not read: {read}",
            value.pos,
            value.text,
        )
        return value.value
    if isinstance(value, list):
        return [resolve_padded(sink, None, "", item) for item in value]
    if isinstance(value, dict):
        return {k: resolve_padded(sink, None, "", item) for k, item in value.items()}
    return value


#: A surrogate code point: half of a character written as two ``\\uXXXX`` escapes (JSON's way).
_SURROGATE = re.compile("[\ud800-\udfff]")
#: The escape of one, in a string's text.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def checked_string(sink: Sink, value: str, text: str, pos: int) -> str:
    """``value``, a string decoded from ``text`` (written at ``pos``), with no surrogate code point
    left in it (no UTF-8 or JSON encoder takes one): a pair, as a Python literal decodes it, joined
    into the character it escapes (``surrogate_pair``), a lone one replaced with U+FFFD
    (``lone_surrogate``), each reported once per string."""
    if "\\" not in text or _SURROGATE.search(value) is None:
        return value
    joined = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    escape = SURROGATE_ESCAPE.search(text)
    shown = escape.group() if escape is not None else None
    if joined.count("\ufffd") > value.count("\ufffd"):
        message = "a string escapes half of a character (a lone surrogate): replaced with U+FFFD"
        sink.issue("lone_surrogate", message, pos, shown)
    else:
        message = "a string escapes a character as a surrogate pair (JSON's way) in a Python string: joined"
        sink.issue("surrogate_pair", message, pos, shown)
    return joined


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


#: The text a JSON value is first decoded in (doubled while the value may run past it).
_JSON_WINDOW = 512
#: How far before a window's end a decoder's error or end may be one the text past it would change
#: (a number or keyword cut short, an escape cut in two).
_JSON_MARGIN = 32


def raw_decode_from(decoder: json.JSONDecoder, text: str, pos: int) -> tuple[Any, int]:
    """``decoder.raw_decode(text, pos)``, handing the decoder no more text than the value needs.

    A failed decode costs what it read, not the text before it (``json`` counts the lines of the
    whole document up to an error) nor the text after it (a slice to the end): the value is decoded
    in a window from ``pos``, doubled while its error or its end lies near the window's end or a
    string runs past it. Raises ``ValueError`` as ``raw_decode`` does (positions in the window).
    """
    size = _JSON_WINDOW
    while True:
        cut = pos + size < len(text)
        window = text[pos : pos + size]
        try:
            value, end = decoder.raw_decode(window)
        except json.JSONDecodeError as exc:
            if cut and (exc.pos >= len(window) - _JSON_MARGIN or exc.msg.startswith("Unterminated")):
                size *= 2
                continue
            raise
        if cut and end >= len(window) - _JSON_MARGIN:
            size *= 2
            continue
        return value, pos + end


def lookahead_text(pattern: str, start: int) -> str:
    """The text of the lookahead group ``(?=...)`` that opens at ``pattern[start]`` (a terminal's
    closing test, shared with the code that follows the same token), its parentheses balanced."""
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


def quoted_string_value(text: str) -> str:
    """The value of a quoted string, as Python or JSON reads it (JSON first: it is what the templates write)."""
    try:
        value = json_value(text) if text.startswith('"') else python_literal(text)
    except ValueError:
        value = python_literal(text)
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value


#: Characters neither a JSON string nor (line breaks, NUL) a one-line Python string may hold raw.
_CONTROL = re.compile(r"[\x00-\x1f]")


def raw_controls_string_value(text: str) -> str | None:
    """The value of a quoted string that holds raw control characters (a raw line break), read with
    them kept as they are; None where the string reads without that or does not read even so."""
    if _CONTROL.search(text) is None:
        return None
    try:
        return quoted_string_value(_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text))
    except ValueError:
        return None


class PythonicBuilder(LiteralHandlers, Builder):
    """Builds calls from the pythonic_calls rules. Values are typed as written."""

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None  # the call being read, once started
        self._pending: tuple[str, int] | None = None  # its name and offset, before it starts
        self._done_in_block = 0  # calls completed in the current list
        self._wrapped_at = -1  # where the last statement around a call (assignment, print) was reported
        self._padded = False  # the argument being read holds a number written with leading zeros

    def arg_string(self, token: Token) -> str:
        """A string written as a keyword argument's value: each format says how it is escaped."""
        raise NotImplementedError

    # ---- calls
    def call_name(self, token: Token) -> Token:
        # The call starts (ToolCallStart) at its first argument or its ")": a name followed by
        # anything else ("see [Smith(2020)]") is not a call, and stays text.
        self._pending = (str(token), token.start_pos)
        return token

    def _started(self) -> CallWriter:
        if self._call is None:
            assert self._pending is not None
            name, pos = self._pending
            self._pending = None
            self._call = self.sink.call(name, pos)
        return self._call

    def number(self, token: Token) -> Any:
        """A number as written; one that a float cannot hold, or with leading zeros, is kept as its
        text, a string, reported."""
        text = str(token)
        if leading_zeros(text):
            self._padded = True
            return padded(text, token.start_pos)
        value = fitting_number(text)
        if value is None:
            message = f"the number {text} does not fit a float: kept as the string {text!r}"
            self.sink.issue("number_out_of_range", message, token.start_pos, text)
            return text
        return value

    def arg(self, name: Token, equals: Token, value: Any) -> None:
        call = self._started()
        if self._padded:
            self._padded = False
            value = resolve_padded(self.sink, call.name, str(name), value)
        call.argument(str(name), value, name.start_pos)

    def fast_call(self, *children: Any) -> None:
        token = children[-1]  # FAST_CALL, or (fast_next_call) the FAST_NEXT_CALL after the calls before it
        name, args, offset = token.decoded
        self._done_in_block += 1
        self.sink.whole_call(name, token.start_pos + offset, args)

    fast_next_call = fast_call

    def fast_arg(self, token: ValueToken) -> None:
        key, value = token.decoded
        self._started().argument(key, value, token.start_pos)

    def call(self, *children: Any) -> None:
        call = self._started()
        self._call = None
        self._done_in_block += 1
        call.end()

    def call_list(self, *children: Any) -> None:
        self._done_in_block = 0

    def assignment(self, target: Token, equals: Token, call: None) -> None:
        self._assignment(str(target), target.start_pos)

    def _assignment(self, target: str, pos: int) -> None:
        self._wrapped_at = pos
        message = f"the call's result is assigned to {target!r} (a Python statement); the assignment is dropped"
        self.sink.issue("assignment", message, pos, f"{target} =")

    def fast_list(self, token: ValueToken) -> None:
        self.sink.block(token.start_pos)  # a list read whole: the stream saw no opener of it
        for name, args, offset in token.decoded:
            self.sink.whole_call(name, token.start_pos + offset, args)
        self._done_in_block = 0

    # ---- values
    def string(self, token: Token) -> str:
        text = str(token)
        try:
            value = quoted_string_value(text)
        except ValueError as exc:
            controlled = raw_controls_string_value(text)
            if controlled is None:
                raise BuildError(f"invalid string: {exc}", token.start_pos) from None
            message = "a string holds raw line breaks or other control characters: read with them kept"
            self.sink.issue("raw_control_character", message, token.start_pos)
            value = controlled
        return checked_string(self.sink, value, text, token.start_pos)

    def pair(self, key: Any, colon: Token, value: Any) -> tuple[Any, Any]:
        return key, value

    def pairs(self, *children: Any) -> list[tuple[Any, Any]]:
        return _extended(children)

    def elements(self, *children: Any) -> list[Any]:
        return _extended(children)

    def dict_value(self, *children: Any) -> dict[str, Any]:
        brace = children[0]
        pairs = children[1] if len(children) > 2 and isinstance(children[1], list) else []
        for key, _ in pairs:
            if not isinstance(key, str):
                raise BuildError(f"dict key {key!r} is not a string", brace.start_pos)
        return self.mapping((key, value, brace.start_pos) for key, value in pairs)

    def list_value(self, *children: Any) -> list[Any]:
        return children[1] if len(children) > 2 and isinstance(children[1], list) else []

    def tuple_value(self, *children: Any) -> list[Any]:
        return self.list_value(*children)

    # ---- a list the grammar rejected
    def frame(self, raw: str) -> tuple[int, int]:
        """Where the calls lie in a rejected block ``raw``: past a frame opener at its start and
        before a frame closer at its end (a format with a fence says where they are)."""
        return 0, len(raw)

    def recover(self, raw: str, pos: int, error: str) -> int | None:
        self._padded = False
        call, done = self._call, self._done_in_block
        self._call, self._pending, self._done_in_block = None, None, 0
        start, stop = self.frame(raw)
        i = _skip(raw, start)
        bracketed = raw.startswith("[", i)
        cutter = _cutter(self.sink.grammar)
        elements, end = cutter.cut(raw[:stop], i + 1 if bracketed else i, bracketed)
        # A bare list ends at its "]": what follows is read again as usual. A fence covers the rest.
        used = end if start == 0 else len(raw)
        reported = False
        if 0 < done <= len(elements):  # the statement around the last call returned, if its rule did not say
            self._wrapper(*elements[done - 1], pos)
        later = elements[done:]  # the first `done` elements are the calls already returned
        if call is not None:
            piece = later.pop(0)[1] if later else ""
            if self._probe(piece) != (call.name, call.arguments):
                call.cut(raw, error, call.pos)
                reported = True
            else:
                call.end()
        found = [(pos + offset, piece, self._probe(piece)) for offset, piece in later]
        if call is None and done == 0 and not any(read for _, _, read in found):
            if used == len(raw):
                return None  # no call in it: the stream keeps the block as content
            self.sink.keep_as_content(raw[:used], pos, error)  # the list alone; the rest is read again
            return used
        for at, piece, read in found:
            if read is None:
                self.sink.issue("invalid_tool_call", "call in a broken list kept as content", at, piece)
                self.sink.text(CONTENT, piece, at)
                reported = True
                continue
            # The call is where its name is (as the rules say), past the blanks and the assignment before it.
            target = self._assigned(piece)
            if target is not None:
                self._assignment(target[1], at + target.start(1))
            name_at = at + target.end() if target is not None else at + len(piece) - len(piece.lstrip())
            self.sink.whole_call(read[0], name_at, read[1])
        tail = raw[end:stop] if start else ""
        if tail.strip():
            self.sink.issue("unexpected_text", "text after the call list, kept as content", pos + end, tail)
            self.sink.text(CONTENT, tail, pos + end)
        elif not reported:  # every call was read after all (a missing comma...): still say so
            self.sink.issue("repaired_list", f"call list repaired: {error}", pos, raw[:end])
        return used

    def _wrapper(self, offset: int, piece: str, pos: int) -> None:
        """Report the assignment or ``print(`` that ``piece`` (a call already returned, at ``pos +
        offset``) is wrapped in, unless its rule has: the grammar refuses the token after a
        statement's call (``x = f(a=1)]``) before it reduces the statement."""
        target = self._assigned(piece)
        if target is not None:
            at = pos + offset + target.start(1)
            if self._wrapped_at != at:
                self._assignment(target[1], at)
            return
        printed = self._printed(piece)
        if printed is not None and self._wrapped_at != pos + offset + printed.start(1):
            self.printed_call(pos + offset + printed.start(1), printed[1])

    def printed_call(self, pos: int, text: str) -> None:
        """Report a call inside ``print(`` (``text``, written at ``pos``)."""
        self._wrapped_at = pos
        message = "the call is printed, print(...) (a Python statement): the print is dropped"
        self.sink.issue("printed_call", message, pos, text)

    def _printed(self, piece: str) -> re.Match[str] | None:
        """The ``print(`` that ``piece`` starts with, where the format reads such statements."""
        if "printed" not in self.sink.grammar.rule_names:
            return None
        return _PRINTED.match(piece)

    def _assigned(self, piece: str) -> re.Match[str] | None:
        """The assignment ``x = `` that ``piece`` starts with (``x = f(...)``), where the format reads
        such statements (its grammar has the ``assignment`` rule); None otherwise."""
        grammar = self.sink.grammar
        if "assignment" not in grammar.rule_names:
            return None
        return _cutter(grammar).assignment.match(piece)

    def _probe(self, piece: str) -> tuple[str, dict[str, Any]] | None:
        """The call ``piece`` holds (name, arguments), read on its own as a one-call list; None
        unless it is exactly that."""
        target = self._assigned(piece)
        if target is not None:  # a statement `x = f(...)`: the call is f(...)
            piece = piece[target.end() :]
        found = self.sink.reading("[" + piece.strip() + "]")
        if found is None or len(found.tool_calls) != 1 or found.content.strip():
            return None
        function = found.tool_calls[0].function
        return function.name, function.arguments


#: A ``print(`` around a call (gemma3_tool_code's ``printed`` rule).
_PRINTED = re.compile(r"[ \t\r\n]*(print[ \t\r\n]*\()")


def _extended(children: tuple[Any, ...]) -> list[Any]:
    """A left-recursive list rule's value: ``[item]``, or the list so far with ``, item`` added."""
    if len(children) == 1:
        return [children[0]]
    children[0].append(children[2])
    return children[0]  # type: ignore[no-any-return]


class ElementCutter:
    """Cuts the inside of a rejected call list into its elements, for salvage.

    An element ends at a top-level ``,`` or right after a call's closing ``)``; the list ends at
    its ``]``. Strings are skipped with the grammar's own patterns, so brackets and commas inside
    them do not count, and a string argument is read the way the format's grammar reads it
    (ARG_STRING, and ESC_STRING first where the grammar has one), each character a bounded number
    of times.
    """

    def __init__(self, grammar: CompiledGrammar) -> None:
        self._arg_string = grammar.pattern("ARG_STRING")
        #: A string argument written with escapes, which wins over ARG_STRING where it reads (deepseek_pythonic).
        self._escaped_string = grammar.pattern("ESC_STRING") if "ESC_STRING" in grammar.terminals else None
        self._nested_string = grammar.pattern("DQ_STRING")
        self._sq_string = grammar.pattern("SQ_STRING")
        name = grammar.pattern("NAME").pattern
        #: A statement ``x = name(`` (formats whose grammar reads statements): its target, then the call.
        self.assignment = re.compile(f"[ \\t\\r\\n]*({name})[ \\t\\r\\n]*=[ \\t\\r\\n]*(?={name}[ \\t\\r\\n]*\\()")

    def cut(self, text: str, start: int, bracketed: bool) -> tuple[list[tuple[int, str]], int]:
        """The non-blank elements from ``text[start]`` (offset, text), and where the list ends."""
        elements: list[tuple[int, str]] = []
        depth, i, begin, n = 0, start, start, len(text)

        def element(end: int) -> None:
            if text[begin:end].strip():
                elements.append((begin, text[begin:end]))

        while i < n:
            ch = text[i]
            if ch == "'" or ch == '"':
                string = self._sq_string if ch == "'" else self._arg_string if depth == 1 else self._nested_string
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
def _cutter(grammar: CompiledGrammar) -> ElementCutter:
    return ElementCutter(grammar)


# --------------------------------------------------------------------------- fast path


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
    """How a format writes a string argument, as the fast paths read one: a token the grammar's rules
    read as ``ARG_STRING`` too, with no repair."""

    #: The value of a string argument token.
    decode: Callable[[str], str]
    #: A simpler pattern of the usual token, tried first: where :attr:`settled` follows it, it ends
    #: where ``ARG_STRING`` would and reads with no repair (elsewhere ``ARG_STRING`` is tried).
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
    if "\\" in text and _SURROGATE.search(value) is not None:
        raise _Unusual
    return value


class CallListReader:
    """Fast path: a whole, ordinary call list ``[f(a=1, b="x"), g()]`` read in one go.

    It reads exactly what the ``pythonic_calls`` rules read, through the grammar's own terminal
    patterns, and gives up (the rules then take the list token by token) on anything those rules
    would report, repair or refuse: a repeated argument or key, a value the builder rejects,
    tuples, containers that are not plain JSON, a list that has not arrived whole.
    """

    def __init__(self, grammar: CompiledGrammar, strings: StringArguments) -> None:
        self._name = grammar.pattern("NAME")
        self._key = re.compile(f"({self._name.pattern})[ \\t\\r\\n]*=[ \\t\\r\\n]*")
        self._arg_string = grammar.pattern("ARG_STRING")
        self._sq_string = grammar.pattern("SQ_STRING")
        self._number = grammar.pattern("NUMBER")
        self._keywords = [(grammar.pattern(t), v) for t, v in (("TRUE", True), ("FALSE", False), ("NULL", None))]
        self._strings = strings

    def lexer(self, follows: Callable[[str, int, bool], bool] | None = None, *, in_text: bool = False) -> FastLexer:
        """The fast lexer; ``follows(text, end, final)`` says whether the grammar can go on after ``]``.
        ``in_text``: the list starts in free text, where inline code (`` `[f(a=1)]` ``) is text."""

        def lex(text: str, pos: int, final: bool) -> tuple[Any, int] | None:
            if not text.startswith("[", pos):
                return None
            if in_text and _inline_code(text, pos, final):
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
            start = _skip(text, pos)
            if after_comma and start < len(text):
                if text[start] != ",":
                    return None
                start = _skip(text, start + 1)
            name = self._name.match(text, start)
            if name is None and start < len(text):
                return None
            # Blanks so far, or a call that is not whole yet: wait for a ")" (or leave it to the rules).
            if name is None or text.find(")", name.end()) < 0:
                waited = len(text) - pos
                return None if final or waited > CALL_WAIT else _NextParen(CALL_WAIT - waited)
            try:
                args, end = self._args(text, _skip(text, name.end()))
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
            if end == len(text) and not final:
                return None  # a number or a keyword may still grow
            return (key[1], value), end

        return lex

    def _list(self, text: str, pos: int) -> tuple[list[tuple[str, dict[str, Any], int]], int]:
        calls = []
        i = _skip(text, pos + 1)
        while True:
            name = self._name.match(text, i)
            if name is None:
                raise _Unusual
            args, i = self._args(text, _skip(text, name.end()))
            calls.append((name.group(), args, name.start() - pos))
            i = _skip(text, i)
            if text.startswith(",", i):
                i = _skip(text, i + 1)
                if not text.startswith("]", i):
                    continue
            if not text.startswith("]", i):
                raise _Unusual
            return calls, i + 1

    def _args(self, text: str, i: int) -> tuple[dict[str, Any], int]:
        if not text.startswith("(", i):
            raise _Unusual
        args: dict[str, Any] = {}
        i = _skip(text, i + 1)
        while not text.startswith(")", i):
            key = self._key.match(text, i)  # NAME, blanks, "=", blanks
            if key is None:
                raise _Unusual
            value, i = self._value(text, key.end())
            if key[1] in args:
                raise _Unusual  # the rules report it
            args[key[1]] = value
            i = _SEPARATOR.match(text, i).end()  # type: ignore[union-attr]
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


#: A ``[`` whose first ``]`` (on the same line, not far: the bound of the grammars' TEXT) is followed by a
#: backtick: inline code, which TEXT reads as text.
_INLINE_CODE = re.compile(r"\[[^\]\n]{0,76}\]")


def _inline_code(text: str, pos: int, final: bool) -> bool:
    """Whether the ``[`` at ``pos`` is (or, with more text, may be) inline code."""
    m = _INLINE_CODE.match(text, pos)
    if m is None:
        return False
    return text.startswith("`", m.end()) or (m.end() == len(text) and not final)


def _skip(text: str, i: int) -> int:
    if i < len(text) and text[i] not in " \t\r\n":
        return i
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def followed_by(marker: str) -> Callable[[str, int, bool], bool]:
    """A ``follows`` check for :meth:`CallListReader.lexer`: ``marker`` comes next, blanks aside."""

    def follows(text: str, pos: int, final: bool) -> bool:
        return text.startswith(marker, _skip(text, pos))

    return follows


#: How a call list starts, ``[`` and a call's name and ``(``: a marker, for the reasoning lookahead,
#: that a reply writes first only outside reasoning (names as long as the holdback's test allows).
CALL_LIST_START = re.compile(r"\[[ \t]*[A-Za-z_][\w\-.]{0,31}\(")
CALL_LIST_START_SPAN = 36


def pythonic_syntax(
    grammar: CompiledGrammar,
    builder: type[PythonicBuilder],
    *,
    text_terminals: dict[str, str],
    blocks: dict[str, str | None],
    stop: str,
    string: Delimiter,
    resync_after: tuple[str, ...] = (),
    reasoning_open: str | None = None,
    prompt_opens_reasoning: Callable[[str], bool] | None = None,
    reasoning_open_rest: str = "",
    reasoning_close: str | None = None,
    reasoning_not_opened: tuple[str | re.Pattern[str], ...] = (),
    strings: StringArguments,
    fenced_list: str | None = None,
    string_lexers: dict[str, FastLexer] | None = None,
    whole_list: tuple[str, str] = ("", ""),
    whole_reasoning: tuple[str, str] | None = None,
) -> Syntax:
    """The :class:`Syntax` both Python-list formats share, given their frame's differences.

    ``strings`` says how a string argument is written (for the fast paths); with ``fenced_list``,
    the grammar's ``FENCED_LIST`` is a whole list followed by that fence closer; ``string_lexers``
    are a format's lexers of string arguments, which wait (a watch) while where one ends is undecided.
    ``whole_list`` is what the template writes before and after the call list, ``whole_reasoning``
    around reasoning (for the whole-reply reader, :func:`whole_reader`).
    """
    reader = CallListReader(grammar, strings)
    fast: dict[str, FastLexer] = {
        **(string_lexers or {}),
        "CALL_LIST": reader.lexer(in_text=True),
        "FAST_CALL": reader.call_lexer(),
        "FAST_NEXT_CALL": reader.call_lexer(after_comma=True),
        "FAST_ARG": reader.argument_lexer(),
    }
    if fenced_list is not None:
        fast["FENCED_LIST"] = reader.lexer(followed_by(fenced_list))
    whole = whole_reader(
        fast["FENCED_LIST" if fenced_list is not None else "CALL_LIST"], stop, *whole_list, whole_reasoning
    )
    return Syntax(
        grammar=grammar,
        builder=builder,
        text_terminals=text_terminals,
        blocks=blocks,
        # An unclosed <think> (DeepSeek) or ```tool_code fence (Gemma 3) is closed at the end
        # too, like a bracket.
        autoclose={"RPAR": ")", "RBRACK": "]"}
        | {term: text for term, text in _CLOSERS.items() if term in grammar.terminals},
        autoclose_before=frozenset({"STOP"}),
        resync_after=resync_after,
        resync_before=(stop,),
        delimiters=(string, Delimiter("'", "'", "\\")),
        # Punctuation no other terminal can extend: taken as soon as it arrives, not held back.
        # (A code fence's opener and closer too: text, but not to be cut where they hold a backtick.)
        closed_terminals=frozenset({"DQ_STRING", "SQ_STRING", "STOP", "CODE_OPEN", "CODE_CLOSE", *CLOSED_PUNCTUATION}),
        # As long as the grammars' lookaheads in free text (where a "[" opens a call list).
        holdback=80,
        marker_starts="[<`\n",
        nest_open=frozenset({"LBRACK", "LPAR", "LBRACE"}),
        nest_close=frozenset({"RBRACK", "RPAR", "RBRACE"}),
        reasoning_open=reasoning_open,
        prompt_opens_reasoning=prompt_opens_reasoning,
        reasoning_open_rest=reasoning_open_rest,
        reasoning_close=reasoning_close,
        reasoning_not_opened=reasoning_not_opened,
        reasoning_marker_span=CALL_LIST_START_SPAN,
        preempt_starts=" \t\r\n<",
        fast_terminals=fast,
        whole=whole,
    )


def whole_reader(
    read_list: FastLexer, stop: str, opener: str, closer: str, reasoning_marks: tuple[str, str] | None
) -> Callable[[str, ToolsByName | None], WholeReading | None]:
    """The whole-reply reader (``Syntax.whole``) of a Python-list format: optional reasoning between
    ``reasoning_marks``, prose, then nothing, or ``opener``, a call list ``read_list`` reads whole
    (the stream's own fast path for it) and ``closer``; then nothing or ``stop``. Prose holding what
    may be markup, text after the list, a list the fast path declines: the grammar's."""

    def whole(text: str, tools: ToolsByName | None) -> WholeReading | None:
        lead = ("", 0) if reasoning_marks is None else leading_reasoning(text, *reasoning_marks)
        if lead is None:
            return None
        reasoning, start = lead
        last = before_stop(text, stop)
        first = text.find(opener or "[", start, last)
        prose = text[start:last] if first < 0 else text[start:first]
        if MARKUP.search(prose):
            return None
        if first < 0:
            return prose, reasoning, []
        got = read_list(text, first + len(opener), True)
        if not isinstance(got, tuple) or text[got[1] : last] != closer:
            return None
        return prose, reasoning, [(name, arguments) for name, arguments, _ in got[0]]

    return whole


# --------------------------------------------------------------------------- decode: exact call lists
#
# A prompt's call lists must be read back exactly: the reading has to render to the same text.
# Both templates write values that a greedy reader can misread (Gemma 3 runs keyword arguments
# together, DeepSeek leaves quotes in strings unescaped), so the reader tries each way a value may
# end, preferred one first, and keeps the first reading of the whole list that fits.

#: The readings of the value written at an offset: ``(value, end)`` pairs, the preferred one first.
ValueReadings = Callable[[str, int], Readings[Any]]
#: A call read back: its name and its arguments (keyword arguments, or positional values).
ReadCall = tuple[str, dict[str, Any] | list[Any]]

_JSON_READER = json.JSONDecoder()
_JSON_NUMBER = re.compile(r"(?P<int>-?(?:0|[1-9]\d*))(?P<frac>\.\d+)?(?P<exp>[eE][-+]?\d+)?")


def json_readings(text: str, pos: int, *, shorter_numbers: bool = False) -> Readings[Any]:
    """The JSON value at ``pos``, when ``tojson`` writes it exactly so; then, with ``shorter_numbers``,
    the shorter numbers it starts with (``1`` of ``1e5``: a key ``e5`` may follow an unseparated ``1``).
    """
    try:
        value, end = raw_decode_from(_JSON_READER, text, pos)
    except (ValueError, RecursionError):
        end = pos
    else:
        if jinja.tojson(value) == text[pos:end]:
            yield value, end
    match = _JSON_NUMBER.match(text, pos) if shorter_numbers else None
    if match is None:
        return
    for cut in sorted({match.end("int"), match.end("frac") if match["frac"] else pos}, reverse=True):
        if pos < cut < end:
            number = json.loads(text[pos:cut])
            if jinja.tojson(number) == text[pos:cut]:
                yield number, cut


def raw_string_readings(text: str, pos: int) -> Readings[str]:
    """A string written ``"`` + value + ``"`` with nothing escaped: each closing quote that ``, `` or
    ``)`` follows, the nearest first (the value itself may hold quotes).
    """
    if not text.startswith('"', pos):
        return
    for close in find_all(text, pos + 1, ('"',)):
        if text.startswith((", ", ")"), close + 1):
            yield text[pos + 1 : close], close + 1


@dataclass(frozen=True)
class CallListSyntax:
    """How a template writes a call list ``[name(key=value...), ...]``."""

    #: Between two calls.
    call_separator: str
    #: Between two keyword arguments (Gemma 3's seed writes none).
    argument_separator: str
    read_value: ValueReadings
    #: Whether a call may hold positional values, joined by ``", "`` (Gemma 3 iterates string arguments).
    positional: bool = False


def read_call_list(text: str, syntax: CallListSyntax) -> list[ReadCall] | None:
    """``text``, exactly ``[call, ...]`` as ``syntax`` writes it, read back; ``None`` if it is not one.

    Names run to their first ``(`` and keys to their first ``=`` (a key holding ``"``, ``(``, ``)`` or ``,``
    is not read: those are the list's own syntax). Where values can end in several
    places, the first reading of the whole list in the order :attr:`CallListSyntax.read_value`
    gives them wins; a reading that repeats a key is no reading (a dict cannot write it twice).
    """
    if len(text) < 2 or text[0] != "[" or text[-1] != "]":
        return None
    if text == "[]":
        return []
    try:
        return _ExactCallListReader(text, syntax).calls(1)
    except RecursionError:  # thousands of arguments: not a list this reader can follow
        return None


#: Characters no key is read to hold, though a template writes any key: they are the list's own
#: syntax, so a key spanning them (`p", q` in `a="p", q=2`) is a misreading.
_NOT_IN_KEYS = ('"', "(", ")", ",")
_Args = tuple[list[Any], list[ReadCall]]  # what a call's remaining arguments read as, and the calls after it


@dataclass
class _ExactCallListReader:
    """Backtracking reader of one call list; every state is memoized by its offset, so each is read once.

    Only the first reading of the rest from an offset matters here, which is what makes the memo
    possible: :meth:`codec.formats._reading.Reader.separated`, which gives every reading, would not.
    """

    text: str
    syntax: CallListSyntax
    _calls: dict[int, list[ReadCall] | None] = field(default_factory=dict)
    _keywords: dict[int, _Args | None] = field(default_factory=dict)
    _positionals: dict[int, _Args | None] = field(default_factory=dict)

    def calls(self, pos: int) -> list[ReadCall] | None:
        """The calls from ``pos`` (a call's name) to the closing ``]``."""
        if pos not in self._calls:
            self._calls[pos] = self._read_calls(pos)
        return self._calls[pos]

    def _read_calls(self, pos: int) -> list[ReadCall] | None:
        opening = self.text.find("(", pos, len(self.text) - 1)
        if opening < 0:
            return None
        name = self.text[pos:opening]
        if self.text.startswith(")", opening + 1) and (rest := self._after_call(opening + 2)) is not None:
            return [(name, {}), *rest]
        # Positional values first: a key may hold any text, so `f("{", "a"),g(b=1)` also reads as one
        # call with the key `"{", "a"),g(b`, but a value is never followed by `=`.
        positionals = self.positionals(opening + 1) if self.syntax.positional else None
        if positionals is not None:
            return [(name, positionals[0]), *positionals[1]]
        keywords = self.keywords(opening + 1)
        if keywords is not None:
            return [(name, dict(keywords[0])), *keywords[1]]
        return None

    def _after_call(self, pos: int) -> list[ReadCall] | None:
        """What follows a call's ``)``: the closing ``]``, or the separator and the next calls."""
        if pos == len(self.text) - 1:
            return []
        separator = self.syntax.call_separator
        return self.calls(pos + len(separator)) if self.text.startswith(separator, pos) else None

    def keywords(self, pos: int) -> _Args | None:
        """``key=value`` pairs from ``pos`` to the call's ``)``, and the calls after it."""
        if pos not in self._keywords:
            self._keywords[pos] = self._read_keywords(pos)
        return self._keywords[pos]

    def _read_keywords(self, pos: int) -> _Args | None:
        text, separator = self.text, self.syntax.argument_separator
        equals = text.find("=", pos, len(text) - 1)
        if equals < 0:
            return None
        key = text[pos:equals]
        if any(mark in key for mark in _NOT_IN_KEYS):
            return None
        for value, end in self.syntax.read_value(text, equals + 1):
            if text.startswith(")", end) and (rest := self._after_call(end + 1)) is not None:
                return [(key, value)], rest
            if text.startswith(separator, end):
                more = self.keywords(end + len(separator))
                if more is not None and all(key != other for other, _ in more[0]):
                    return [(key, value), *more[0]], more[1]
        return None

    def positionals(self, pos: int) -> _Args | None:
        """Values joined by ``", "`` from ``pos`` to the call's ``)``, and the calls after it."""
        if pos not in self._positionals:
            self._positionals[pos] = self._read_positionals(pos)
        return self._positionals[pos]

    def _read_positionals(self, pos: int) -> _Args | None:
        for value, end in self.syntax.read_value(self.text, pos):
            if self.text.startswith(")", end) and (rest := self._after_call(end + 1)) is not None:
                return [value], rest
            if self.text.startswith(", ", end) and (more := self.positionals(end + 2)) is not None:
                return [value, *more[0]], more[1]
        return None


def decoded_call(name: str, arguments: dict[str, Any] | list[Any] | str, index: int) -> ToolCall:
    """The tool call ``call_<index>`` (the prompts carry no ids) for a call read back from a prompt.

    Arguments that are not keyword arguments (Gemma 3 writes a string or a list as positional
    values) are kept as they are, without validation, so that the call renders the same again.
    """
    if isinstance(arguments, dict):
        function = FunctionCall(name=name, arguments=arguments)
    else:
        function = FunctionCall.model_construct(name=name, arguments=arguments)
    return ToolCall(id=call_id(index), function=function)


def decoded_tool(value: Any, text: str, pos: int) -> dict[str, Any]:
    """The tool whose JSON is ``value`` (read at ``pos`` of ``text``), as written; :class:`ParseError`
    unless it is a JSON object (the templates write each tool as given)."""
    if not isinstance(value, dict):
        raise parse_error_at(text, pos, "a tool in the tools block is not a JSON object")
    return value
