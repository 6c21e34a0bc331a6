"""The ``gemma4`` family's parser: the builder of its grammar's rules, the reader of whole replies
and the reader of calls inside a line of prose, for the markers of one member
(:class:`codec.wire.gemma4.Markers`; the messages below name Gemma 4's where they give an example).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from codec._lark import Token
from codec.formats._calls import MARKUP, LiteralHandlers, ProseText, before_stop, leading_reasoning, reads_as_text
from codec.issues import IssueKind
from codec.literals import PLAIN_JSON_DECODER, json_text, json_value, python_literal
from codec.schema import declared_types, tool_parameters, type_text
from codec.sink import CONTENT, REASONING, CallWriter, Sink
from codec.stream import Builder, BuildError, Stream, Syntax, ToolsByName, WholeReading
from codec.watch import Watch
from codec.wire._call_list_values import checked_string, leading_zeros, padded, resolve_padded

if TYPE_CHECKING:
    from codec.wire.gemma4 import Markers

__all__ = [
    "BARE_HEAD",
    "CHARS",
    "CONTENT",
    "RAW",
    "REASONING",
    "Gemma4Builder",
    "InlineCalls",
    "WholeReplies",
    "opens_reasoning",
]


#: Text kinds of a string value's characters: between quote tokens (CHARS), or unquoted (RAW,
#: the value's opening quote token left out or every special token stripped). The builder streams
#: or collects them.
CHARS = "chars"
RAW = "raw"


def _stripped_hint(quote: str) -> str:
    return (
        f" (a reply without any {quote} was probably decoded with its special tokens stripped: "
        "decode with skip_special_tokens=False)"
    )


class _Key(str):
    """An argument or object key, with where it was written."""

    pos: int

    def __new__(cls, text: str, pos: int) -> _Key:
        key = super().__new__(cls, text)
        key.pos = pos
        return key


class _Streamed(str):
    """A string argument's value that streamed to the call's writer as it arrived."""


@dataclass(frozen=True)
class _Inline:
    """What ``call:NAME{...}`` inside a line of prose reads as on its own: the call, and the issues
    its reading reports (kind, message, offset in the call's text, text)."""

    name: str
    arguments: dict[str, Any]
    issues: tuple[tuple[IssueKind, str, int, str | None], ...]


def scalar_schema(parameters: Any, key: str) -> Any:
    """The schema of argument ``key`` in a tool's ``parameters`` where it declares types and no
    string among them, else None: a quoted value of it is typed by it where the member writes
    ``values="python_str"``."""
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    schema = properties.get(key) if isinstance(properties, Mapping) else None
    types = declared_types(schema)
    return schema if types and "string" not in types else None


def typed_value(parameters: Any, key: str, value: Any) -> Any:
    """Argument ``key``'s ``value`` as the builder gives it back: a string typed by its schema where
    :func:`scalar_schema` finds one and the text fits it, else as it is."""
    schema = scalar_schema(parameters, key) if isinstance(value, str) else None
    if schema is None:
        return value
    typed, problem = type_text(value, schema)
    return value if problem is not None else typed


def typed_arguments(parameters: Any, arguments: Any) -> Any:
    """``arguments`` with each value :func:`typed_value` (the whole-reply reader's, as the builder's)."""
    if not isinstance(arguments, dict):
        return arguments
    return {key: typed_value(parameters, key, value) for key, value in arguments.items()}


class Gemma4Builder(LiteralHandlers, Builder):
    """Builds calls from the gemma4 grammar. Values are typed as written; nothing is coerced.

    A member's syntax subclasses it with its :attr:`markers`."""

    #: The member's markers.
    markers: ClassVar[Markers]

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None
        self._key: _Key | None = None  # the last key read
        self._in_argument = False  # the string being read is an argument's value (it streams)
        self._raw_at: int | None = None  # where the unquoted argument value being read starts
        self._end = 0  # where the last character of the string being read ends
        self._quote_seen = False  # a quote token was read as data in the string being read
        self._chars: list[str] = []  # the characters of a nested string being read
        self._padded = False  # the argument being read holds a number written with leading zeros
        #: The schema of the argument being read where its quoted text is typed by it
        #: (``values="python_str"``): its text is then collected, not streamed.
        self._typed: Any = None
        self._typed_text: list[str] = []

    # ---- frame
    def call_open(self, token: Token) -> None:
        head = self.markers.call_head
        if str(token) != head:
            self.sink.issue("call_opener", f"call opened with {str(token)!r} instead of {head!r}", token.start_pos)

    def bare_open(self, token: Token) -> None:
        self.sink.issue("bare_call", f"call:NAME{{...}} without {self.markers.call_open} accepted", token.start_pos)

    def call_head(self, token: Token) -> None:
        self._call = self.sink.call(str(token), token.start_pos)

    def paren_body(self, lpar: Token, *rest: Any) -> None:
        self.sink.issue("parentheses", "call written with (...) instead of {...}", lpar.start_pos)

    def call(self, opener: None, head: None, body: None, closer: Token) -> None:
        self._end_call()

    def bare_call(self, opener: None, head: None, body: None) -> None:
        self._end_call()

    def _end_call(self) -> None:
        call, self._call = self._call, None
        assert call is not None
        call.end()

    def stray_close(self, token: Token) -> None:
        self.sink.issue(
            "stray_closer", f"{str(token).strip()!r} with nothing open, ignored", token.start_pos, str(token)
        )

    def partial_call(self, token: Token) -> None:
        self.sink.text(CONTENT, str(token), token.start_pos)

    def prose_call(self, text: Token, token: Token) -> None:
        """``call:NAME{...}`` inside a line of prose: a call of NAME if the tools declare it, else text."""
        pos, found = token.start_pos, token.decoded
        assert isinstance(found, _Inline)
        if not self._declared(found.name):
            self.sink.text(CONTENT, str(token), pos)
            return
        self.sink.block(pos)  # the line's call: what is reported below concerns it
        self.sink.issue(
            "inline_call", f"call:{found.name}{{...}} inside a line of text read as a call of a declared tool", pos
        )
        for kind, message, offset, text in found.issues:
            self.sink.issue(kind, message, pos + offset, text)
        self.sink.whole_call(found.name, pos, found.arguments)

    def _declared(self, name: str) -> bool:
        """Whether tools were given (a name none of them has is undeclared) and one is called ``name``."""
        return not self.sink.undeclared(name) and self.sink.undeclared(name + "\0")

    # ---- arguments
    def key(self, token: Token) -> _Key:
        text = str(token)
        if token.type == "GSTRING":
            quote = len(self.markers.quote)
            text = text[quote:-quote]
        elif token.type in ("JSTRING", "SSTRING"):
            text = self._quoted(token)
        self._key = _Key(text, token.start_pos)
        return self._key

    def arg(self, key: _Key, separator: Token, value: Any) -> _Key:
        call = self._call
        assert call is not None
        if separator.type == "EQUALS":
            self._key_equals(key, separator)
        if self._padded:
            self._padded = False
            value = resolve_padded(self.sink, call.name, str(key), value)
        if type(value) is not _Streamed:  # a streamed string is the writer's already
            call.argument(str(key), value, key.pos)
        return key

    def missing_comma(self, args: Any, key: _Key) -> None:
        self.sink.issue("missing_comma", f"argument {str(key)!r} written without ',' before it", key.pos)

    def _key_equals(self, key: _Key, separator: Token) -> None:
        self.sink.issue("key_equals", f"argument {str(key)!r} written with '=' instead of ':'", separator.start_pos)

    # ---- string arguments: they stream as they arrive
    def string_open(self, token: Token) -> None:
        self._start_string(token.start_pos + len(token))

    def _start_string(self, pos: int) -> None:
        call, key = self._call, self._key
        assert call is not None and key is not None
        self._in_argument, self._end, self._quote_seen = True, pos, False
        self._typed = self._scalar_schema(call, str(key)) if self.markers.quoted_scalars else None
        if self._typed is None:
            call.string_start(str(key), key.pos)
        else:
            self._typed_text = []

    def _scalar_schema(self, call: CallWriter, key: str) -> Any:
        """The schema of argument ``key`` of ``call`` where it declares types and no string among
        them (its quoted text is then typed by it, ``values="python_str"``), else None."""
        return scalar_schema(self.sink.tool_schema(call.name or ""), key)

    def _more(self, text: str) -> None:
        """The next characters of the string argument being read: streamed, or collected to be typed."""
        if self._typed is not None:
            self._typed_text.append(text)
        else:
            assert self._call is not None
            self._call.string_more(text)

    def _string_value(self) -> Any:
        """The string argument just read: streamed already (a :class:`_Streamed`), or its text typed
        by its schema (kept a string where it fits none of its types)."""
        call = self._call
        assert call is not None
        if self._typed is None:
            return _Streamed(call.string_end())
        schema, text = self._typed, "".join(self._typed_text)
        self._typed, self._typed_text = None, []
        value, problem = type_text(text, schema)  # as typed_value types it
        return text if problem is not None else value

    def on_text(self, kind: str, text: str, pos: int) -> None:
        if kind in (CHARS, RAW):
            if self._in_argument:
                self._end = pos + len(text)
                self._more(text)
            elif kind == RAW:  # an unquoted argument value starts
                self._raw_at = pos
                self._start_string(pos)
                self.on_text(kind, text, pos)
            else:
                self._chars.append(text)
        else:
            super().on_text(kind, text, pos)

    def string_data(self, *children: Any) -> None:
        """A data token of a string argument (a quote, a brace or a quote token that closes nothing)."""
        token: Token = children[-1]
        assert self._call is not None
        if token.type == "GQ_DATA":
            self._quote_in_string(token)
        self._end = token.start_pos + len(token)
        self._more(str(token))

    def _quote_in_string(self, token: Token) -> None:
        if not self._quote_seen:  # once per string
            self._quote_seen = True
            self.sink.issue(
                "quote_in_string",
                f"{self.markers.quote} inside a string, not followed by structure, kept as text",
                token.start_pos,
            )

    def stream_string(self, opener: None, *rest: Any) -> Any:
        self._in_argument = False
        return self._string_value()

    def quote_closed_string(self, opener: None, *rest: Any) -> Any:
        closer: Token = rest[-1]
        message = f"string opened with {self.markers.quote} closed with {str(closer)!r}"
        self.sink.issue("mixed_quotes", message, closer.start_pos)
        return self._end_string()

    def unclosed_string(self, opener: None, *rest: Any) -> Any:
        message = f"string without its closing {self.markers.quote}, ended with the call"
        self.sink.issue("missing_close_quote", message, self._end)
        return self._end_string()

    def unopened_string(self, chars: None, closer: Token) -> Any:
        assert self._raw_at is not None
        message = f"string without its opening {self.markers.quote}, read up to its closer"
        self.sink.issue("missing_open_quote", message, self._raw_at)
        return self._end_string()

    def raw_string(self, chars: None) -> Any:
        return self._end_string(unquoted=True)

    def _end_string(self, unquoted: bool = False) -> Any:
        at = self._raw_at
        self._in_argument, self._raw_at = False, None
        value = self._string_value()
        if unquoted and isinstance(value, str):
            assert at is not None
            hint = _stripped_hint(self.markers.quote)
            self.sink.issue("unquoted_value", f"value {value!r} is not quoted; read as a string{hint}", at)
        return value

    def mixed_string(self, token: Token) -> str:
        """A value opened with ``"`` or ``'`` and closed with the quote token: the text between them,
        as written (a quote token's string is never escaped), less a closing quote of the opening
        kind right before the quote token (a quoted value followed by a dangling quote token)."""
        quote = self.markers.quote
        text = str(token)[: -len(quote)]
        opener = text[0]
        self.sink.issue("mixed_quotes", f"string opened with {opener!r} closed with {quote}", token.start_pos)
        return text[1:-1] if len(text) > 1 and text[-1] == opener else text[1:]

    # ---- values
    def number(self, token: Token) -> Any:
        """A number as written; one with leading zeros (``zip:02134``) is kept as its text, a string, reported."""
        if leading_zeros(str(token)):
            self._padded = True
            return padded(str(token), token.start_pos)
        return super().number(token)

    def string(self, opener: Token, *rest: Any) -> str:
        text = "".join(self._chars)
        self._chars, self._quote_seen = [], False
        return text

    def nested_quote(self, *children: Any) -> None:
        token: Token = children[-1]
        self._quote_in_string(token)
        self._chars.append(str(token))

    def jstring(self, token: Token) -> str:
        message = f'string written with JSON "quotes" instead of {self.markers.quote}'
        self.sink.issue("quoted_string", message, token.start_pos)
        return self._quoted(token)

    def sstring(self, token: Token) -> str:
        message = f"string written with 'single quotes' instead of {self.markers.quote}"
        self.sink.issue("quoted_string", message, token.start_pos)
        return self._quoted(token)

    def unopened_nested(self, token: Token) -> str:
        """A nested value without its opening quote token, read up to its closer (UNOPENED)."""
        message = f"string without its opening {self.markers.quote}, read up to its closer"
        self.sink.issue("missing_open_quote", message, token.start_pos)
        return str(token)[: -len(self.markers.quote)]

    def bareword(self, token: Token) -> str:
        message = f"value {str(token)!r} is not quoted; read as a string{_stripped_hint(self.markers.quote)}"
        self.sink.issue("unquoted_value", message, token.start_pos)
        return str(token)

    def _quoted(self, token: Token) -> str:
        try:
            value = json_value(str(token)) if str(token).startswith('"') else python_literal(str(token))
        except ValueError as exc:
            raise BuildError(f"invalid quoted string: {exc}", token.start_pos) from None
        if not isinstance(value, str):
            raise BuildError("invalid quoted string", token.start_pos)
        return checked_string(self.sink, value, str(token), token.start_pos)

    def object(self, *children: Any) -> dict[str, Any]:
        return self.mapping((str(key), value, key.pos) for key, value in children[1:-1:2])  # { pair , pair ... }

    def pair(self, key: _Key, separator: Token, value: Any) -> tuple[_Key, Any]:
        if separator.type == "EQUALS":
            self._key_equals(key, separator)
        return key, value

    def array(self, *children: Any) -> list[Any]:
        return list(children[1:-1:2])  # [ value , value ... ]

    # ---- a block the grammar rejected
    def recover(self, raw: str, pos: int, error: str) -> int | None:
        call = self._call
        self._call, self._key, self._in_argument, self._raw_at = None, None, False, None
        self._chars, self._quote_seen, self._padded = [], False, False
        self._typed, self._typed_text = None, []
        if call is None:
            return None
        call.cut(raw, error, pos)  # a string argument being read keeps what was already sent of it
        return len(raw)


def opens_reasoning(markers: Markers) -> Callable[[str], bool]:
    """Whether a prompt ends inside an open reasoning channel (the reply then starts in reasoning):
    after its opener, with or without the channel's name."""
    ends = tuple(dict.fromkeys((markers.channel[0], markers.reasoning_open)))

    def opens(prompt: str) -> bool:
        return prompt.rstrip().endswith(ends)

    return opens


#: ``call:NAME{`` or ``call:NAME(``, as a bare call starts (a name of at most 32 characters).
BARE_HEAD = r"call:[A-Za-z_][\w\-.]{0,31}[{(]"
_INLINE_HEAD = re.compile(BARE_HEAD)
#: What a call read inside a line of prose must not report: it is then no call, and stays text.
_NOT_A_CALL = frozenset({"truncated_call", "invalid_tool_call", "unexpected_text"})
#: How far a call inside a line of prose may run: a decision the stream waits for is bounded.
_INLINE_LIMIT = 1024


class _InlineWatch:
    """Wakes the stream once the text a call inside a line of prose is read from has arrived, or
    once ``budget`` more characters have (the call is then read from that much)."""

    def __init__(self, calls: InlineCalls, tail: str, budget: int) -> None:
        self.calls = calls
        self.tail = tail  # the end of what was searched, for a stop split across chunks
        self.budget = budget

    def scan(self, text: str) -> bool:
        self.budget -= len(text)
        joined = self.tail + text
        if self.calls.stop.search(joined) or self.budget <= 0:
            return True
        self.tail = joined[-(self.calls.longest - 1) :]
        return False


class InlineCalls:
    """The fast lexer of INLINE_CALL: ``call:NAME{...}`` inside a line of prose, read as a reply of
    its own (by the syntax ``syntax`` gives for ``markers``, the member's own).

    The call and its issues, if the text from ``call:`` to the last ``}`` or ``)`` before the end
    of its line (or the next marker or ``call:``, and within ``_INLINE_LIMIT`` characters) holds
    no quote token (the special tokens were stripped) and reads as exactly one complete call,
    followed at most by text."""

    #: What its tokens start with (``call:``): see ``codec.watch.FastLexer``.
    first = "c"

    def __init__(self, markers: Markers, syntax: Callable[[Markers], Syntax]) -> None:
        self.markers = markers
        self.syntax = syntax
        #: What ends the text a call inside a line of prose can be read from: the end of the
        #: line, a marker, or the next ``call:``.
        ends = ("\n", *markers.frame, "call:")
        self.stop = re.compile("|".join(re.escape(marker) for marker in ends))
        self.longest = max(len(marker) for marker in ends)

    def __call__(self, text: str, pos: int, final: bool) -> tuple[_Inline, int] | Watch | None:
        if _INLINE_HEAD.match(text, pos) is None:
            return None
        limit = min(len(text), pos + _INLINE_LIMIT)
        stop = self.stop.search(text, pos + len("call:"), limit)
        if stop is None and not final and limit < pos + _INLINE_LIMIT:
            tail = text[max(pos + len("call:"), len(text) - self.longest + 1) :]
            return _InlineWatch(self, tail, pos + _INLINE_LIMIT - len(text))
        line = text[pos : stop.start() if stop is not None else limit]
        candidate = line[: max(line.rfind("}"), line.rfind(")")) + 1]
        if not candidate or self.markers.quote in candidate:
            return None
        stream = Stream(self.syntax(self.markers), events=False)
        stream.feed(candidate)
        stream.close()
        result = stream.result
        if len(result.tool_calls) != 1 or result.reasoning or not candidate.endswith(result.content):
            return None
        if any(issue.kind in _NOT_A_CALL for issue in result.issues):
            return None
        (call,) = result.tool_calls
        issues = tuple(
            (issue.kind, issue.message, issue.pos, issue.text) for issue in result.issues if issue.kind != "bare_call"
        )
        arguments = call.function.arguments
        assert isinstance(arguments, dict)
        return _Inline(call.function.name, arguments, issues), pos + len(candidate) - len(result.content)


#: A bare key, a JSON number, a literal, punctuation: the tokens of a call's arguments as the
#: template writes them (no blanks) besides strings between quote tokens.
_WHOLE_TOKENS = (
    r"|([A-Za-z_][\w\-.]*):|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
    r"|(true|false|None)|([{}\[\],])"
)
_LITERALS = {"true": "true", "false": "false", "None": "null"}
#: The deepest nesting a whole-reply reader takes (well within the grammar's bound).
_WHOLE_DEPTH = 16


class WholeReplies:
    """A whole reply in the template's shape, read at once (see ``Syntax.whole``): an optional
    ``<|channel>thought\n...<channel|>``, prose, then calls one after the other and what ends a
    turn's calls (``<|tool_response>``), or no call and the stop token (or neither).

    Arguments are read only where they are spelled as the template writes them (bare keys, quoted
    strings holding neither ``call:`` nor a marker that may end a call, JSON numbers,
    ``true``/``false``/``None``, no blanks), as JSON with no repeated key; anything else is the
    grammar's."""

    def __init__(self, markers: Markers, text: re.Pattern[str]) -> None:
        m = self.markers = markers
        self.head = re.compile(re.escape(m.call_head) + r"([A-Za-z_][\w\-.]*)\{")
        # (A string, from its quote token to the next, is found by str.find: a lazy ``(.*?)``
        # before a quote token tries the token at every character of a long value.)
        self.token = re.compile(_WHOLE_TOKENS.removeprefix("|"))
        # Prose that may be markup or a call the grammar reads: besides MARKUP's characters, a
        # marker that starts with another, and ``call:`` where bare calls are read.
        others = [re.escape(marker) for marker in m.frame if not MARKUP.match(marker)]
        self.markup = re.compile("|".join([MARKUP.pattern, *others, *(["call:"] if m.bare else [])]))
        # Such prose is still text where one run of the grammar's TEXT reads it, holding no
        # reasoning marker and no ``call:`` (where an inline call's fast lexer may take one).
        reasoning = (m.channel[0], m.reasoning_close) if m.reasoning_open else ()
        self.prose = ProseText(text, (*reasoning, *(["call:"] if m.bare else [])))
        #: What the grammar may read as the end of a string where a quote or brace precedes it.
        self.string_ends = ("call:", *m.call_ends)

    def _markup(self, text: str, start: int, prose: str) -> bool:
        """Whether ``prose`` (at ``start`` of ``text``) may be markup the grammar reads otherwise than as text."""
        return self.markup.search(prose) is not None and not reads_as_text(text, start, prose, self.prose)

    def __call__(self, text: str, tools: ToolsByName | None) -> WholeReading | None:
        m = self.markers
        if m.reasoning_open:
            lead = leading_reasoning(text, m.reasoning_open + "\n", m.reasoning_close, self.markup)
            if lead is None:
                return None
            reasoning, start = lead
        else:
            reasoning, start = "", 0
        first = text.find(m.call_open, start)
        if first < 0:
            last = before_stop(text, m.stop)
            prose = text[start:last]
            return None if self._markup(text, start, prose) else (prose, reasoning, [])
        prose = text[start:first]
        if self._markup(text, start, prose):
            return None
        last = before_stop(text, m.calls_close or m.stop)
        calls = []
        pos = first
        while pos < last:
            head = self.head.match(text, pos)
            if head is None:
                return None
            out = ["{"]
            depth = 1
            pos = head.end()
            quote = m.quote
            while depth:
                if text.startswith(quote, pos):
                    end = text.find(quote, pos + len(quote))
                    if end < 0:
                        return None
                    string = text[pos + len(quote) : end]
                    if any(stop in string for stop in self.string_ends):
                        return None  # the grammar may read a call's head (f(x)call:g) or a marker there
                    out.append(json_text(string))
                    pos = end + len(quote)
                    continue
                token = self.token.match(text, pos)
                if token is None:
                    return None
                key, number, literal, mark = token.groups()
                if mark is not None:
                    depth += 1 if mark in "{[" else -1 if mark in "}]" else 0
                    if depth > _WHOLE_DEPTH:
                        return None  # deep nesting is the grammar's to bound and report
                    out.append(mark)
                elif key is not None:
                    out.append(json_text(key) + ":")
                else:
                    out.append(number if number is not None else _LITERALS[literal])
                pos = token.end()
            if not text.startswith(m.call_close, pos):
                return None
            pos += len(m.call_close)
            try:
                arguments = PLAIN_JSON_DECODER.decode("".join(out))
            except ValueError:  # a repeated key, a number out of range, a misplaced comma or key
                return None
            if m.quoted_scalars and tools and head.group(1) in tools:
                arguments = typed_arguments(tool_parameters(tools[head.group(1)]), arguments)
            calls.append((head.group(1), arguments))
        return prose, reasoning, calls
