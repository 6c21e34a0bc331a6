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

from bisect import bisect_right
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from codec._lark import CompiledGrammar, Token
from codec.errors import ParseError
from codec.issues import KINDS, IssueKind
from codec.literals import json_text
from codec.models import (
    Event,
    Issue,
    ParseResult,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    built,
    parsed_call,
)
from codec.schema import tool_parameters, violations

__all__ = [
    "AUTO",
    "CONTENT",
    "LAST",
    "NEXT",
    "REASONING",
    "CallRef",
    "CallWriter",
    "InBlock",
    "Output",
    "Sink",
    "json_chars",
]

#: Where free text goes: the kinds of :meth:`Sink.text`.
CONTENT = "content"
REASONING = "reasoning"

#: ``(line, column)`` (1-based) of an offset in the reply.
LineColumn = Callable[[int], tuple[int, int]]

#: The issues of ``"note"`` and ``"repaired"`` severity one reply keeps: past them, such issues
#: are counted by kind in one ``issues_dropped`` issue at the end (a reply of a million repaired
#: calls otherwise held a million issues). ``"damaged"`` issues are always kept: an agent acts on
#: them, and a call's damaged mark (``ParseResult.intact_calls``) rests on its issues.
MAX_ISSUES = 1000


class _Issue:
    """An issue as a stream keeps it until its result is built: :class:`~codec.models.Issue`'s
    fields but ``call_index`` (which is only known then), in a light record."""

    __slots__ = ("column", "kind", "line", "message", "pos", "text")

    def __init__(self, kind: IssueKind, message: str, pos: int, line: int, column: int, text: str | None) -> None:
        self.kind = kind
        self.message = message
        self.pos = pos
        self.line = line
        self.column = column
        self.text = text

    def public(self, call_index: int | None) -> Issue:
        """The issue as a result holds it."""
        fields: dict[str, Any] = {
            "kind": self.kind,
            "message": self.message,
            "pos": self.pos,
            "line": self.line,
            "column": self.column,
            "text": self.text,
        }
        if call_index is not None:
            fields["call_index"] = call_index
        return Issue.model_construct(**fields)


class _CallRef:
    """How an issue names its call before the call's index is known (see :meth:`Sink.issue`)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


class InBlock(_CallRef):
    """The last call of the block that opened at ``pos`` (one its closer ends, made or not yet)."""

    __slots__ = ("pos",)

    def __init__(self, pos: int) -> None:
        super().__init__(f"InBlock({pos})")
        self.pos = pos


#: The call an issue's position lies in (the default).
AUTO = _CallRef("AUTO")
#: The next call the builder makes.
NEXT = _CallRef("NEXT")
#: The last call the builder made.
LAST = _CallRef("LAST")
CallRef = int | None | _CallRef


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

    def issue(self, kind: IssueKind, message: str, pos: int, text: str | None = None, *, call: CallRef = AUTO) -> None:
        """A repair or a problem at ``pos`` (``text``: reply text it concerns, kept nowhere else);
        in strict mode this raises :class:`~codec.errors.ParseError` instead.

        ``call`` says which call it concerns, for a kind that can concern one: by default the call
        its position lies in (see :meth:`Output.result`); :data:`NEXT` for an issue about the call
        the builder makes next (a wrapper read before the call inside it); or an index."""

    def call(self, name: str | None, pos: int, call_id: str | None = None) -> CallWriter:
        """A tool call starting at ``pos``; ``name`` None while its name has not been read yet.
        ``call_id``: the id the reply writes for it (None: the stream's ``call_id`` makes one)."""

    def whole_call(self, name: str, pos: int, arguments: dict[str, Any], call_id: str | None = None) -> None:
        """A tool call read whole at ``pos`` (by a fast path or a salvage): its arguments at once."""

    def block(self, pos: int) -> None:
        """A stretch of the reply whose calls the issues inside it concern starts at ``pos``: the
        stream says so at each block opener, a builder at a token it reads calls out of whole."""

    def keep_as_content(self, text: str, pos: int, error: str) -> None:
        """A block that is no usable call: reported (``error`` says why) and kept as content."""

    def tool_schema(self, name: str) -> Mapping[str, Any] | None:
        """The parameters schema of tool ``name``, if tools were given and declare it."""

    def undeclared(self, name: str) -> bool:
        """Whether tools were given and none of them is called ``name``."""

    def declared(self) -> tuple[str, ...]:
        """The names of the tools given (none without tools)."""

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
        "_id",
        "_out",
        "_streamed",
        "_streams",
        "_string",
        "_string_pos",
        "_waiting",
        "arguments",
        "index",
        "name",
        "open",
        "pos",
    )
    _string_pos: int
    _chars: list[str]
    _streams: bool

    def __init__(self, out: Output, name: str | None, pos: int, call_id: str | None = None) -> None:
        self._out = out
        self._id = call_id  # the id the reply writes for the call, if it writes one
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
        #: Whether the call is still being read (not ended, not cut).
        self.open = True
        #: Issues about this call reported before its name (and so its index) was known.
        self._waiting: list[int] = []
        if name is not None:
            self.name = name
            self.index = out.start_call(name, pos, call_id)

    # ------------------------------------------------------------------ what the builder read

    def start(self, name: str, call_id: str | None = None) -> None:
        """The call's name: the call starts (``ToolCallStart``), with the arguments read before it.
        ``call_id``: the id the reply gives it, where the name tells it (else the one given at first)."""
        out = self._out
        self.name = name
        if call_id is not None:
            self._id = call_id
        self.index = out.start_call(name, self.pos, self._id)
        out.assign(self._waiting, self.index)
        self._waiting = []
        if self._streamed and self.arguments:
            out.send(self.index, json_text(self.arguments)[:-1])

    def issue(self, kind: IssueKind, message: str, pos: int, text: str | None = None) -> None:
        """An issue about this call (see :meth:`Sink.issue`); one reported before the call's name
        is known concerns it once it starts (none, if it never does)."""
        if self.index is not None:
            self._out.issue(kind, message, pos, text, call=self.index)
            return
        at = self._out.issue_count()
        self._out.issue(kind, message, pos, text, call=None)
        if self._out.issue_count() > at:
            self._waiting.append(at)

    def argument(self, key: str, value: Any, pos: int) -> bool:
        """Argument ``key`` has ``value`` (read at ``pos``); False for a repeat, reported (the first is kept)."""
        if key in self.arguments:
            self.issue(
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
        self.open = False
        out.end_call(self.index, self.name, self.arguments, self.pos if pos is None else pos)

    def cut(self, raw: str, error: str, pos: int) -> None:
        """The reply cut the call short (``raw``: the block's text, ``error``: why): finish it with
        what was read, a string argument with its characters so far, and report it. The call's
        name must be known (a call cut before its name is no call: its builder keeps the block
        as content)."""
        if self._out.block_ran_to_end:
            if self.index is None or not self._out.give_cut_text(self.index, raw):
                self.issue("truncated_call", f"tool call {self.name!r} cut short: {error}", pos, raw)
        else:
            self.issue("broken_call", f"tool call {self.name!r} could not be read whole: {error}", pos, raw)
        if self._string is not None:
            key, text = self._string, "".join(self._chars)
            if self._streams:  # what was already sent of it
                self.arguments[key] = text
                if self._streamed:
                    assert self.index is not None
                    self._out.send(self.index, '"')
            self._string, self._chars = None, []
        self.end()
        self.open = False

    @staticmethod
    def whole(out: Output, name: str, pos: int, arguments: dict[str, Any], call_id: str | None = None) -> None:
        """A call read whole at ``pos`` (a fast path, a salvage): started, its arguments' JSON sent
        as one fragment, finished and checked, with no writer made for it (fast paths read many)."""
        index = out.start_call(name, pos, call_id)
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
        self._issues: list[_Issue] = []
        #: Issues about text as it entered the stream, before any builder read it (see entered()).
        self._entered: list[_Issue] = []
        #: Past MAX_ISSUES, the issues not kept, by kind; and how many were kept of the kinds capped.
        self._dropped: dict[str, int] = {}
        self._capped = 0
        self._first_dropped = (0, 1, 1)  # where the first issue not kept was: the summary's place
        #: Per issue, how it names its call (an index, None, AUTO or NEXT: see Sink.issue).
        self._refs: list[CallRef] = []
        self._next: list[int] = []  # the issues waiting for the next call to start
        self._ids: list[str] = []  # of the calls started, made once each
        self._starts: list[int] = []  # where each call starts in the reply
        self._blocks: list[int] = []  # where each block opener starts (the stream says)
        #: Whether the block handed to recovery ran to the end of the reply (its calls were cut)
        #: rather than to its closer or the next marker (its calls were broken): the stream says.
        self.block_ran_to_end = False
        self._open: CallWriter | None = None  # the call being read by its writer, until it ends
        self._cut: dict[int, int] = {}  # the calls reported cut by the end of the reply: their issue
        self._stopped = False  # the stop token was seen
        self._after_stop_reported = False

    def cut_call(self, index: int, pos: int) -> None:
        """The reply ended at ``pos`` inside call ``index`` (reported once per call)."""
        if index not in self._cut:
            self._cut[index] = len(self._issues)
            self.issue(
                "truncated_call", "the reply ends inside this tool call: what was read of it is kept", pos, call=index
            )

    def give_cut_text(self, index: int, raw: str) -> bool:
        """Whether call ``index`` was reported cut by the end of the reply; if so, that report
        now holds ``raw``, the block's text that its recovery could not read."""
        at = self._cut.get(index)
        if at is None:
            return False
        self._issues[at].text = raw
        return True

    def open_call(self) -> int | None:
        """The index of the call a writer is reading and has not finished, if any (a reply that
        ends there cut it)."""
        writer = self._open
        return writer.index if writer is not None and writer.open else None

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

    def issue(self, kind: IssueKind, message: str, pos: int, text: str | None = None, *, call: CallRef = AUTO) -> None:
        line, column = self._line_column(pos)
        if self._strict:
            raise ParseError(message, pos=pos, line=line, column=column, snippet=self._snippet(pos), kind=kind)
        info = KINDS[kind]
        if info.severity != "damaged":
            if self._capped >= MAX_ISSUES:
                if not self._dropped:
                    self._first_dropped = (pos, line, column)
                self._dropped[kind] = self._dropped.get(kind, 0) + 1
                return
            self._capped += 1
        if info.scope == "text":
            call = None
        elif call is NEXT:
            self._next.append(len(self._issues))
        elif call is LAST:
            call = len(self._starts) - 1 if self._starts else None
        self._issues.append(_Issue(kind, message, pos, line, column, text))
        self._refs.append(call)

    def entered(self, kind: IssueKind, message: str, pos: int) -> None:
        """An issue about text at ``pos`` as it entered the stream (a surrogate replaced): reported
        as it arrives, which is before the text before it is read, so it is kept apart and placed
        among the other issues by position in :meth:`result` (the same order for every chunking).
        It concerns the call its position lies in. In strict mode this raises, as :meth:`issue` does."""
        line, column = self._line_column(pos)
        if self._strict:
            raise ParseError(message, pos=pos, line=line, column=column, snippet=self._snippet(pos), kind=kind)
        self._entered.append(_Issue(kind, message, pos, line, column, None))

    def call(self, name: str | None, pos: int, call_id: str | None = None) -> CallWriter:
        writer = CallWriter(self, name, pos, call_id)
        self._open = writer
        return writer

    def whole_call(self, name: str, pos: int, arguments: dict[str, Any], call_id: str | None = None) -> None:
        CallWriter.whole(self, name, pos, arguments, call_id)

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

    def declared(self) -> tuple[str, ...]:
        return tuple(self._tools or ())

    def reading(self, text: str) -> ParseResult | None:
        return self._reading(text)

    # ------------------------------------------------------------------ for CallWriter and Stream

    def start_call(self, name: str, pos: int, call_id: str | None = None) -> int:
        """A call whose name is known, starting at ``pos``: its index, after its ``ToolCallStart``.
        Its id is ``call_id``, the one the reply writes, or else the stream's ``call_id(index)``."""
        index = len(self._ids)
        self._ids.append(self._call_id(index) if call_id is None else call_id)
        self._starts.append(pos)
        self.assign(self._next, index)
        self._next = []
        self.events.append(ToolCallStart(index, self._ids[index], name))
        return index

    def block(self, pos: int) -> None:
        """A block opener at ``pos``: issues after it concern the calls after it (see :meth:`result`)."""
        self._blocks.append(pos)

    def assign(self, issues: list[int], index: int) -> None:
        """Issues (by their place in the list) that concern call ``index``."""
        for at in issues:
            if KINDS[self._issues[at].kind].scope == "call":
                self._refs[at] = index

    def issue_count(self) -> int:
        """How many issues were reported so far."""
        return len(self._issues)

    def send(self, index: int, fragment: str) -> None:
        """The next fragment of call ``index``'s arguments JSON."""
        if fragment:
            self.events.append(ToolCallDelta(index, fragment))

    def end_call(self, index: int, name: str, arguments: dict[str, Any], pos: int) -> None:
        """A finished call: into the result, checked against the tools, ``ToolCallEnd`` sent."""
        done = parsed_call(self._ids[index], name, arguments)
        self._calls.append(done)
        self._check(index, name, arguments, pos)
        self.events.append(ToolCallEnd(index, done))

    def result(self) -> ParseResult:
        """What the reply decodes to so far.

        An issue that can concern a call and names none of its own concerns the call its position
        lies in: within the stretch of the reply from the last block opener before it to the next,
        the last call starting at or before it, else the first one starting after it (a wrapper's
        issue, reported where the wrapper starts), else none (the block gave no call). A call not
        finished yet is not in ``tool_calls``: an issue about it says so only once it is.
        """
        done = len(self._calls)
        issues = []
        entered, e = self._entered, 0  # in reply order: each goes before the first issue past it
        for issue, ref in zip(self._issues, self._refs, strict=True):
            while e < len(entered) and entered[e].pos < issue.pos:
                issues.append(entered[e].public(_finished(self._call_at(entered[e].pos), done)))
                e += 1
            index = (
                self._call_at(issue.pos) if ref is AUTO else self._last_in(ref.pos) if isinstance(ref, InBlock) else ref
            )
            issues.append(issue.public(_finished(index, done)))
        issues.extend(issue.public(_finished(self._call_at(issue.pos), done)) for issue in entered[e:])
        if self._dropped:
            issues.append(self._dropped_issue())
        return built(
            ParseResult,
            content="".join(self._content),
            reasoning="".join(self._reasoning),
            tool_calls=list(self._calls),
            issues=issues,
        )

    def _dropped_issue(self) -> Issue:
        """The issue that counts the ones past :data:`MAX_ISSUES` by kind: last, at the first of them."""
        total = sum(self._dropped.values())
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(self._dropped.items()))
        message = f"{total} more notes and repairs not kept (past the first {MAX_ISSUES} of a reply): {kinds}"
        return _Issue("issues_dropped", message, *self._first_dropped, None).public(None)

    def _last_in(self, pos: int) -> int | None:
        """The last call starting in the block that opened at ``pos`` (before the next block)."""
        starts, blocks = self._starts, self._blocks
        b = bisect_right(blocks, pos)
        end = bisect_right(starts, blocks[b] - 1) if b < len(blocks) else len(starts)
        return end - 1 if end and starts[end - 1] >= pos else None

    def _call_at(self, pos: int) -> int | None:
        """The call an issue at ``pos`` concerns by position (see :meth:`result`)."""
        starts, blocks = self._starts, self._blocks
        b = bisect_right(blocks, pos)
        low = blocks[b - 1] if b else -1
        high = blocks[b] if b < len(blocks) else None
        # Calls start in reply order (a call's index follows its start), so the starts are sorted.
        at = bisect_right(starts, pos)
        if at and starts[at - 1] >= low:
            return at - 1
        if at < len(starts) and (high is None or starts[at] < high):
            return at
        return None

    def last_issue(self) -> _Issue | None:
        """The last issue reported, if any (the stream extends an ``unexpected_text`` run)."""
        return self._issues[-1] if self._issues else None

    def _check(self, index: int, name: str, arguments: dict[str, Any], pos: int) -> None:
        if self._tools is None:
            return
        if name not in self._tools:
            known = ", ".join(sorted(self._tools)) or "none"
            self.issue("unknown_tool", f"tool {name!r} is not declared (declared: {known})", pos, call=index)
            return
        for problem in violations(arguments, tool_parameters(self._tools[name]) or {}):
            self.issue("schema", f"{name}: {problem}", pos, call=index)


def _finished(index: CallRef, done: int) -> int | None:
    """Call ``index``, if it names one of the ``done`` finished calls (an issue names no call
    before it is finished)."""
    return index if isinstance(index, int) and index < done else None
