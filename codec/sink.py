"""The output of one stream: what its builder reads out of a reply, kept as a result and sent as events.

A builder never writes events, ids or argument JSON itself. It tells its :class:`Sink` what it
read (text, the stop token, an issue, a tool call) and, for a call, tells the call's
:class:`CallWriter` what it read of it: "argument K has value V", "string argument K starts / has
more characters / ends", "the call ends", "the reply cut the call short". The writer is the only
code that writes argument JSON, so the promise of the stream (the fragments of a call's arguments
concatenate to exactly its final arguments' JSON, and nothing sent is ever taken back) has one
owner. :class:`Output` is the sink a :class:`~codec.stream.Stream` gives its builder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from codec._lark import CompiledGrammar, Token
from codec.errors import ParseError
from codec.literals import json_text
from codec.models import (
    Event,
    FunctionCall,
    Issue,
    ParseResult,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from codec.schema import tool_parameters, violations

__all__ = ["CONTENT", "REASONING", "CallWriter", "Output", "Sink", "json_chars"]

#: Where free text goes: the kinds of :meth:`Sink.text`.
CONTENT = "content"
REASONING = "reasoning"

#: ``(line, column)`` (1-based) of an offset in the reply.
LineColumn = Callable[[int], tuple[int, int]]


def json_chars(text: str) -> str:
    """``text`` as it reads inside a JSON string (escapes apply character by character, so the
    pieces of a string streamed this way concatenate to the string's JSON text)."""
    return json_text(text)[1:-1]


class Sink(Protocol):
    """What a builder may do with what it reads out of a reply."""

    @property
    def grammar(self) -> CompiledGrammar:
        """The grammar the reply is parsed with (for a builder's own use of its terminals)."""

    def text(self, kind: str, text: str, pos: int) -> None:
        """Free text at offset ``pos``: ``kind`` is :data:`CONTENT` or :data:`REASONING`."""

    def stop(self, token: Token) -> None:
        """The format's stop token."""

    def issue(self, kind: str, message: str, pos: int, text: str | None = None) -> None:
        """A repair or a problem at ``pos`` (``text``: reply text it concerns, kept nowhere else);
        in strict mode this raises :class:`~codec.errors.ParseError` instead."""

    def call(self, name: str | None, pos: int) -> CallWriter:
        """A tool call starting at ``pos``; ``name`` None while its name has not been read yet."""

    def whole_call(self, name: str, pos: int, arguments: dict[str, Any]) -> None:
        """A tool call read whole at ``pos`` (by a fast path or a salvage): its arguments at once."""

    def keep_as_content(self, text: str, pos: int, error: str) -> None:
        """A block that is no usable call: reported (``error`` says why) and kept as content."""

    def tool_schema(self, name: str) -> Mapping[str, Any] | None:
        """The parameters schema of tool ``name``, if tools were given and declare it."""

    def undeclared(self, name: str) -> bool:
        """Whether tools were given and none of them is called ``name``."""

    def reading(self, text: str) -> ParseResult | None:
        """What ``text`` reads as on its own, strictly and without tools; None where strict
        parsing refuses it (a builder's probe of a piece of a rejected block)."""


class CallWriter:
    """One tool call as its builder reads it, and the only writer of its arguments' JSON text.

    The builder says what it read, in reply order: an argument and its value (:meth:`argument`), a
    string argument arriving in pieces (:meth:`string_start`, :meth:`string_more`,
    :meth:`string_end`), the name when it comes after arguments (:meth:`start`), then either the
    end of the call (:meth:`end`) or that the reply cut it short (:meth:`cut`). The writer:

    * sends ``ToolCallStart`` once the name is known, then the arguments' JSON as append-only
      ``ToolCallDelta`` fragments as they are read (nothing while the name is unknown, all of it
      at once when it arrives), so that they concatenate to exactly the final arguments' JSON;
    * keeps the first value of an argument given twice, reporting the repeat (``duplicate_argument``);
    * finishes a cut call with what was read (a string argument with the characters read so far),
      reporting it (``truncated_call``);
    * checks the finished call against its tool's schema (``unknown_tool``, ``schema``) and
      sends ``ToolCallEnd``.

    A whole parse reads no events, so there the fragments are not written at all.
    """

    __slots__ = (
        "_chars",
        "_out",
        "_streamed",
        "_streams",
        "_string",
        "_string_pos",
        "arguments",
        "index",
        "name",
        "pos",
    )
    _string_pos: int
    _chars: list[str]
    _streams: bool

    def __init__(self, out: Output, name: str | None, pos: int) -> None:
        self._out = out
        self._streamed = out.streamed  # whether to write the JSON fragments at all
        #: The call's name, once read.
        self.name: str | None = None
        #: Its entry in the result's ``tool_calls`` (and the events' ``index``), once started.
        self.index: int | None = None
        #: Where the call starts in the reply.
        self.pos = pos
        #: The arguments read so far.
        self.arguments: dict[str, Any] = {}
        #: The string argument being read (string_start() sets what goes with it: where it
        #: started, its characters so far, whether they are sent as they arrive).
        self._string: str | None = None
        if name is not None:
            self.name = name
            self.index = out.start_call(name)

    # ------------------------------------------------------------------ what the builder read

    def start(self, name: str) -> None:
        """The call's name: the call starts (``ToolCallStart``), with the arguments read before it."""
        out = self._out
        self.name = name
        self.index = out.start_call(name)
        if self._streamed and self.arguments:
            out.send(self.index, json_text(self.arguments)[:-1])

    def argument(self, key: str, value: Any, pos: int) -> bool:
        """Argument ``key`` has ``value`` (read at ``pos``); False for a repeat, reported (the first is kept)."""
        if key in self.arguments:
            self._out.issue(
                "duplicate_argument", f"argument {key!r} repeated; the first value is kept", pos, json_text(value)
            )
            return False
        if self.index is not None and self._streamed:
            self._out.send(self.index, self._key(key) + json_text(value))
        self.arguments[key] = value
        return True

    def string_start(self, key: str, pos: int) -> None:
        """String argument ``key`` starts at ``pos``; its characters follow (:meth:`string_more`)."""
        self._string, self._string_pos, self._chars = key, pos, []
        # A repeat is collected silently and reported at its end; a call whose name is not known
        # yet sends nothing: either way the string is recorded whole, by argument().
        self._streams = self.index is not None and key not in self.arguments
        if self._streams and self._streamed:
            assert self.index is not None
            self._out.send(self.index, self._key(key) + '"')

    def string_more(self, text: str) -> None:
        """The next characters of the string argument being read."""
        self._chars.append(text)
        if self._streams and self._streamed:
            assert self.index is not None
            self._out.send(self.index, json_chars(text))

    def string_end(self) -> str:
        """The string argument being read is complete; returns its value."""
        key, text = self._string, "".join(self._chars)
        assert key is not None, "string_end() without string_start()"
        self._string, self._chars = None, []
        if not self._streams:
            self.argument(key, text, self._string_pos)
            return text
        self.arguments[key] = text
        if self._streamed:
            assert self.index is not None
            self._out.send(self.index, '"')
        return text

    def extends(self, arguments: dict[str, Any]) -> bool:
        """Whether ``arguments``' JSON starts with what was sent of this call's (a salvaged reading
        of the call may replace what was read only if it takes nothing back)."""
        return json_text(arguments).startswith(self._sent_json())

    def end(self, pos: int | None = None, arguments: dict[str, Any] | None = None) -> None:
        """The call is complete: its arguments are those read, or ``arguments`` (read whole by a
        fast path or a salvage; they must :meth:`extends` what was read). ``pos`` is where problems
        the schema check finds are reported (the call's start by default)."""
        out = self._out
        assert self.name is not None and self.index is not None, "a call ends once its name is known"
        assert self._string is None, "a call ends after its string arguments"
        if arguments is not None:
            if self._streamed:
                sent = self._sent_json()
                text = json_text(arguments)
                assert text.startswith(sent), f"call {self.index}: {text!r} takes back what was sent ({sent!r})"
                out.send(self.index, text[len(sent) :])
            self.arguments = arguments
        elif self._streamed:
            out.send(self.index, "}" if self.arguments else "{}")
        out.end_call(self.index, self.name, self.arguments, self.pos if pos is None else pos)

    def cut(self, raw: str, error: str, pos: int) -> None:
        """The reply cut the call short (``raw``: the block's text, ``error``: why): finish it with
        what was read, a string argument with its characters so far, and report it. The call's
        name must be known (a call cut before its name is no call: its builder keeps the block
        as content)."""
        self._out.issue("truncated_call", f"tool call {self.name!r} cut short: {error}", pos, raw)
        if self._string is not None:
            key, text = self._string, "".join(self._chars)
            if self._streams:  # what was already sent of it
                self.arguments[key] = text
                if self._streamed:
                    assert self.index is not None
                    self._out.send(self.index, '"')
            self._string, self._chars = None, []
        self.end()

    @staticmethod
    def whole(out: Output, name: str, pos: int, arguments: dict[str, Any]) -> None:
        """A call read whole at ``pos`` (a fast path, a salvage): started, its arguments' JSON sent
        as one fragment, finished and checked, with no writer made for it (fast paths read many)."""
        index = out.start_call(name)
        if out.streamed:
            out.send(index, json_text(arguments))
        out.end_call(index, name, arguments, pos)

    # ------------------------------------------------------------------ JSON text

    def _key(self, key: str) -> str:
        """The fragment that opens argument ``key``: ``{"key": `` first, ``, "key": `` after."""
        return ("{" if not self.arguments else ", ") + json_text(key) + ": "

    def _sent_json(self) -> str:
        """What was sent (or, in a whole parse, would have been) of the arguments' JSON so far."""
        if self.index is None:
            return ""
        text = json_text(self.arguments)[:-1] if self.arguments else ""
        if self._string is not None and self._streams:
            text += self._key(self._string) + '"' + json_chars("".join(self._chars))
        return text


class Output:
    """The sink of one stream: the content, reasoning, calls and issues read so far, the events of
    the current ``feed``, call ids, the tools to check calls against, and the policy for text
    after the stop token (kept as content, reported once per stop)."""

    def __init__(
        self,
        grammar: CompiledGrammar,
        *,
        tools: dict[str, Mapping[str, Any]] | None,
        strict: bool,
        events: bool,
        call_id: Callable[[int], str],
        line_column: LineColumn,
        snippet: Callable[[int], str],
        reading: Callable[[str], ParseResult | None],
    ) -> None:
        self._grammar = grammar
        self._tools = tools
        self._strict = strict
        #: Whether the caller reads the events: a whole parse does not, and no argument JSON is
        #: written for it.
        self.streamed = events
        self._call_id = call_id
        self._line_column = line_column
        self._snippet = snippet
        self._reading = reading
        #: The events since the stream's last ``feed`` began.
        self.events: list[Event] = []
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[ToolCall] = []
        self._issues: list[Issue] = []
        self._ids: list[str] = []  # of the calls started, made once each
        self._stopped = False  # the stop token was seen
        self._after_stop_reported = False

    # ------------------------------------------------------------------ Sink

    @property
    def grammar(self) -> CompiledGrammar:
        return self._grammar

    def text(self, kind: str, text: str, pos: int) -> None:
        if not text:
            return
        if kind == REASONING:
            self._reasoning.append(text)
            self.events.append(ReasoningDelta(text))
            return
        if self._stopped and not self._after_stop_reported:
            self._after_stop_reported = True
            self.issue("text_after_stop", "text after the stop token (kept as content)", pos)
        self._content.append(text)
        self.events.append(TextDelta(text))

    def stop(self, token: Token) -> None:
        if self._stopped:
            self.issue("repeated_stop", "stop token repeated", token.start_pos, str(token))
        self._stopped = True
        self._after_stop_reported = False

    def issue(self, kind: str, message: str, pos: int, text: str | None = None) -> None:
        line, column = self._line_column(pos)
        if self._strict:
            raise ParseError(message, pos=pos, line=line, column=column, snippet=self._snippet(pos), kind=kind)
        self._issues.append(Issue(kind=kind, message=message, pos=pos, line=line, column=column, text=text))

    def call(self, name: str | None, pos: int) -> CallWriter:
        return CallWriter(self, name, pos)

    def whole_call(self, name: str, pos: int, arguments: dict[str, Any]) -> None:
        CallWriter.whole(self, name, pos, arguments)

    def keep_as_content(self, text: str, pos: int, error: str, *, lead: str = "") -> None:
        """See :meth:`Sink.keep_as_content`; ``lead`` is markup before the block (the blanks the
        grammar ignores before an opener), content again with it."""
        self.issue("invalid_tool_call", f"tool call kept as content: {error}", pos)
        self.text(CONTENT, lead + text, pos - len(lead))

    def tool_schema(self, name: str) -> Mapping[str, Any] | None:
        if self._tools is None or name not in self._tools:
            return None
        return tool_parameters(self._tools[name])

    def undeclared(self, name: str) -> bool:
        return self._tools is not None and name not in self._tools

    def reading(self, text: str) -> ParseResult | None:
        return self._reading(text)

    # ------------------------------------------------------------------ for CallWriter and Stream

    def start_call(self, name: str) -> int:
        """A call whose name is known: its index, after its ``ToolCallStart``."""
        index = len(self._ids)
        self._ids.append(self._call_id(index))
        self.events.append(ToolCallStart(index, self._ids[index], name))
        return index

    def send(self, index: int, fragment: str) -> None:
        """The next fragment of call ``index``'s arguments JSON."""
        if fragment:
            self.events.append(ToolCallDelta(index, fragment))

    def end_call(self, index: int, name: str, arguments: dict[str, Any], pos: int) -> None:
        """A finished call: into the result, checked against the tools, ``ToolCallEnd`` sent."""
        # Built without validation: the name is a str and the arguments a JSON-able dict by construction.
        function = FunctionCall.model_construct(name=name, arguments=arguments)
        done = ToolCall.model_construct(id=self._ids[index], type="function", function=function)
        self._calls.append(done)
        self._check(name, arguments, pos)
        self.events.append(ToolCallEnd(index, done))

    def result(self) -> ParseResult:
        """What the reply decodes to so far."""
        return ParseResult.model_construct(
            content="".join(self._content),
            reasoning="".join(self._reasoning),
            tool_calls=list(self._calls),
            issues=list(self._issues),
        )

    def last_issue(self) -> Issue | None:
        """The last issue reported, if any (the stream extends an ``unexpected_text`` run)."""
        return self._issues[-1] if self._issues else None

    def _check(self, name: str, arguments: dict[str, Any], pos: int) -> None:
        if self._tools is None:
            return
        if name not in self._tools:
            known = ", ".join(sorted(self._tools)) or "none"
            self.issue("unknown_tool", f"tool {name!r} is not declared (declared: {known})", pos)
            return
        for problem in violations(arguments, tool_parameters(self._tools[name]) or {}):
            self.issue("schema", f"{name}: {problem}", pos)
