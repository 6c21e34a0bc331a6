"""The format-agnostic incremental parser behind ``Format.parse`` and ``Format.stream``.

A format describes its reply syntax with a :class:`Syntax`: a lark grammar (the judge of what a
reply means) and a :class:`Builder` whose rule handlers turn reductions into content, reasoning
and tool calls, written to a :class:`~codec.sink.Sink`. :class:`Stream` lexes the text itself,
one terminal at a time with a scanner for the current LALR state, and feeds a
:class:`~codec._lark.Parser` token by token, so the work over a whole reply is O(n) whatever the
chunking. ``parse(text)`` is ``feed(text)`` then ``close()``: one code path for batch and stream.

Three objects share the work, along the seams of h11's reader:

* :class:`Stream` holds the buffer and the lexing loop (what has arrived, what is committed,
  what waits for more text);
* :class:`~codec._lark.Parser` is lark's LALR parser behind named questions (``accepts``,
  ``choices``, ``checkpoint``...), the only code that touches lark's internals;
* :class:`~codec.sink.Output` is the sink the builder writes to: content, reasoning, calls,
  issues, events and ids, and the one writer of argument JSON (:class:`~codec.sink.CallWriter`).

Words used here and in the format modules:

block
    A tool call's text, from its opener to its closer (``<tool_call>...</tool_call>``, or a
    ``[`` whose nesting closes): the unit the stream can reject and recover without losing the
    rest of the reply.
marker
    Fixed text that opens or closes a block or a frame part (``<tool_call>``, ``<|im_end|>``).
frame
    What surrounds the calls: free text, reasoning, fences, the stop token.
holdback
    Characters that must follow a token before it is committed (``Syntax.holdback``): longer
    than any marker, so a token cannot still grow into one. Free text is held back only from the
    first character that could start a marker (``Syntax.marker_starts``).
closed terminal
    A terminal complete as soon as it matches (it ends in its own closing delimiter, or nothing
    can extend it): committed without holdback.
preempt
    Where a marker allowed only there outranks free text (an opening ``<think>``), text that
    could start it is held back like any other token.
watch
    A long delimited token (a string value) that has started but not ended: instead of re-lexing
    it on every chunk, a :class:`~codec.watch.Watch` follows the new text for its end.
fast lexer
    A function that lexes a whole value or call in one step (a C-speed JSON decoder), giving a
    token that means exactly what the grammar's rules make of the same text.
autoclose
    Inserting a missing closer (``}``, ``</tool_call>``) where the grammar accepts one, at the end
    of the reply or before a marker that cannot come inside the block; reported.
resync
    After an error inside a block, skipping to the format's next resync marker to find where the
    block ends.
recover
    Handing a rejected block's raw text to the builder, which makes what calls it can of it
    (:meth:`Builder.recover`); what it cannot use is kept as content, reported.
settle
    Making the reductions every continuation would make, so that a block's finished parts (a
    parameter, a call's head) are built before the block is given up.
reread
    Text after the part of a rejected block its recovery covered: lexed again as usual.
reasoning lookahead
    A prompt may open a reasoning block that the reply closes (``...</think>``). Given the
    prompt, the stream knows; without it, it reads the answer from the reply's start, holding the
    text back until a closer without an opener, a marker only a reply outside reasoning writes
    first, the end of the lookahead or the end of the reply decides it.
whole reply
    A complete reply in the shape its template writes (prose, then calls with ordinary values),
    read at once by the format's :attr:`Syntax.whole` reader with C-speed searches and decoders
    instead of token by token. It only ever says what the grammar's path says: where it is not
    sure (any marker in the prose, a value the rules might read otherwise, anything to report) it
    declines and the grammar's path reads the reply. ``Format.parse`` tries it; streams cannot.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from codec._lark import (
    Checkpoint,
    CompiledGrammar,
    Parser,
    Refused,
    Token,
    ValueToken,
    make_token,
    make_value_token,
)
from codec._lookahead import TextProbe, text_probe
from codec._whole_reply import (
    SURROGATE,
    ToolsByName,
    WholeReading,
    default_call_id,
    has_surrogate,
    read_whole,
    tools_by_name,
)
from codec.errors import CodecError, ParseError, caret_snippet, expected_words
from codec.literals import nesting
from codec.models import Event, ParseResult
from codec.sink import CONTENT, LAST, REASONING, InBlock, Output, Sink
from codec.watch import Delimiter, FastLexer, Watch

__all__ = [
    "CONTENT",
    "MAX_DEPTH",
    "REASONING",
    "BuildError",
    "Builder",
    "Stream",
    "Syntax",
    "ToolsByName",
    "WholeReading",
    "read_whole",
]

#: The deepest nesting of lists and objects accepted in a block, in every format: deeper input
#: is an error the stream reports, not a RecursionError later.
MAX_DEPTH = 200


@dataclass(frozen=True)
class Syntax:
    """Everything the stream needs to know about one format's replies.

    Built once per format; the terminals it names are checked against its grammar, and its
    builder's handlers against the grammar's rules, when it is built.
    """

    grammar: CompiledGrammar
    builder: type[Builder]
    #: Free-text terminals and where their text goes (``"content"``, ``"reasoning"``, or a kind of
    #: the builder's own that its ``on_text`` takes).
    text_terminals: Mapping[str, str]
    #: Terminals that open a block (a tool call) and close it.
    #: (A closer of None: the block ends where its nesting closes, for blocks without a marker.)
    blocks: Mapping[str, str | None]
    #: Terminals the stream may insert where they are missing, with their spelling for the Issue:
    #: at the end of the reply, or before a token of ``autoclose_before`` that the parser refused.
    autoclose: Mapping[str, str] = field(default_factory=dict)
    autoclose_before: frozenset[str] = frozenset()
    #: The terminal of ``autoclose`` that closes reasoning, where the reasoning text stops at a
    #: call opener: a reply that opens a call without closing its reasoning first ended it there.
    #: Inserted before a token, it is reported as ``unclosed_reasoning``; at the end of the reply
    #: (the reasoning merely cut), as ``missing_closer``.
    reasoning_closer: str | None = None
    #: After an error in a block, the block ends after the first ``resync_after`` marker, or
    #: before the first ``resync_before`` marker, whichever comes first.
    resync_after: tuple[str, ...] = ()
    resync_before: tuple[str, ...] = ()
    delimiters: tuple[Delimiter, ...] = ()
    #: Terminals complete as soon as they match (they end in their own closing delimiter).
    closed_terminals: frozenset[str] = frozenset()
    #: Characters that must follow a token before it is committed: longer than any marker.
    holdback: int = 16
    #: Characters that can begin a marker (or a lookahead) inside free text: text is held back
    #: only from the first of them near the end of what has arrived.
    marker_starts: str = "<\n"
    #: Nesting terminals and the deepest nesting accepted in a block (deeper input is an error,
    #: not a RecursionError later).
    nest_open: frozenset[str] = frozenset()
    nest_close: frozenset[str] = frozenset()
    max_depth: int = MAX_DEPTH
    #: Terminals lexed by a function rather than a regex, for speed (see ``codec.watch.FastLexer``).
    #: A fast token must mean exactly what the grammar's regular rules make of the same text (a
    #: C-speed JSON decoder standing in for the JSON rules, say), so that results do not depend
    #: on which path a chunking happened to take.
    fast_terminals: Mapping[str, FastLexer] = field(default_factory=dict)
    #: The characters a terminal that outranks free text can start with (see "preempt" above):
    #: text starting with another character is held back only as usual.
    preempt_starts: str = ""
    #: The terminal fed first when the prompt ends inside an open reasoning block.
    reasoning_open: str | None = None
    prompt_opens_reasoning: Callable[[str], bool] | None = None
    #: What a reply starts with, after a prompt that opened reasoning, that is still the opener's
    #: markup (the line break a template writes after ``<think>``): dropped, as the opener drops it.
    reasoning_open_rest: str = ""
    #: Without a prompt, the reply says whether its prompt opened reasoning: it did if the reply
    #: holds ``reasoning_close`` (a closer with no opener, ``</think>``) starting within its first
    #: ``reasoning_lookahead`` characters and before any of ``reasoning_not_opened`` (markers a
    #: reply writes first only outside reasoning: the opener, a call, the stop token). Until that
    #: is decided the reply's text is held back (see "reasoning lookahead" above). A marker given
    #: as a pattern (a call that no fixed string starts) matches at most ``reasoning_marker_span``
    #: characters, so that the search can resume where it stopped.
    reasoning_close: str | None = None
    reasoning_not_opened: tuple[str | re.Pattern[str], ...] = ()
    reasoning_marker_span: int = 0
    reasoning_lookahead: int = 4096
    #: Before a rejected block goes to the builder's recovery, make the reductions that any
    #: continuation would make, so that its finished parts (a parameter, a call's head) are built.
    settle_rejected_blocks: bool = False
    #: Terminals that end a call inside a block that may hold several (an ``</invoke>`` in a call
    #: wrapper): after one, the stream makes the reductions any continuation would make, so that
    #: the call is sent in the delta that completed it, not when the next token arrives.
    settle_after: frozenset[str] = frozenset()
    #: A reader of whole replies in the shape the format's template writes them (see "whole
    #: reply" above), or None. Given the reply and the tools by name (None: no tools), it gives the
    #: reply's content, reasoning and calls (name, arguments) where it is sure the grammar's path
    #: reads the same and reports nothing, else None; a complete parse then takes the grammar's
    #: path. Tests hold it to that, reply by reply.
    whole: Callable[[str, ToolsByName | None], WholeReading | None] | None = None
    #: Per LALR state, the fast lexers of the terminals it has an action for (derived).
    fast_by_state: Mapping[Any, tuple[tuple[str, FastLexer], ...]] = field(init=False, repr=False, compare=False)
    #: Per LALR state with fast lexers, the characters their tokens can start with, or None where
    #: one of them does not say (its ``first`` attribute; see ``codec.watch.FastLexer``) (derived).
    fast_first: Mapping[Any, str | None] = field(init=False, repr=False, compare=False)
    #: The (state, text terminal) pairs where a terminal outranking the text is allowed (derived).
    preempted: frozenset[tuple[Any, str]] = field(init=False, repr=False, compare=False)
    #: Per text terminal, where its text could still end earlier once more arrives (derived; None:
    #: its shape is not one a probe judges, and its text is held from the first marker start).
    text_probes: Mapping[str, TextProbe | None] = field(init=False, repr=False, compare=False)
    #: The resync markers as one pattern, ``resync_after``'s first (derived): one search finds the
    #: first of them, so a recovery looking for its end costs the text it searches once, not once
    #: per marker.
    resync: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        g = self.grammar
        named = {
            *self.text_terminals,
            *self.blocks,
            *(closer for closer in self.blocks.values() if closer is not None),
            *self.autoclose,
            *self.autoclose_before,
            *self.closed_terminals,
            *self.nest_open,
            *self.nest_close,
            *self.fast_terminals,
            *self.settle_after,
            *([self.reasoning_open] if self.reasoning_open else []),
        }
        unknown = sorted(named - g.terminal_names)
        if unknown:
            raise ValueError(f"the syntax names terminals its grammar does not have: {', '.join(unknown)}")
        if self.reasoning_closer is not None and self.reasoning_closer not in self.autoclose:
            raise ValueError("reasoning_closer must be one of autoclose: the closer the stream inserts")
        if self.reasoning_close is not None and self.reasoning_open is None:
            raise ValueError("reasoning_close needs reasoning_open: the terminal fed when the prompt opened reasoning")
        if self.reasoning_marker_span <= 0 and any(not isinstance(m, str) for m in self.reasoning_not_opened):
            raise ValueError("a reasoning_not_opened pattern needs reasoning_marker_span: how long its matches can be")
        g.handlers(self.builder)  # a handler that cannot take its rule's children raises here
        fast = {
            state: tuple((t, lexer) for t, lexer in self.fast_terminals.items() if t in actions)
            for state, actions in g.states.items()
        }
        preempted = frozenset(
            (state, t)
            for state, actions in g.states.items()
            for t in self.text_terminals
            if self.preempt_starts and t in actions and t in g.terminals and g.outranks(state, t)
        )
        probes = {
            t: text_probe(g.terminals[t].pattern.to_regexp(), self.holdback)
            for t in self.text_terminals
            if t in g.terminals
        }
        object.__setattr__(self, "fast_by_state", fast)
        first = {state: _first_chars(lexers) for state, lexers in fast.items() if lexers}
        object.__setattr__(self, "fast_first", first)
        object.__setattr__(self, "preempted", preempted)
        object.__setattr__(self, "text_probes", probes)
        # Alternatives in this order: where several markers start at one place, the first listed
        # wins (an after-marker before a before-marker), as the block's end is defined.
        markers = tuple(dict.fromkeys(m for m in (*self.resync_after, *self.resync_before) if m))
        object.__setattr__(self, "resync", re.compile("|".join(map(re.escape, markers))) if markers else None)

    def opened_reasoning(self, prompt: str | None) -> bool:
        """Whether ``prompt`` (None: not given) ends inside a reasoning block that the reply goes on."""
        opens = self.prompt_opens_reasoning
        return prompt is not None and opens is not None and bool(self.reasoning_open) and opens(prompt)


class BuildError(Exception):
    """Raised by a builder handler when a block is grammatical but unusable (e.g. a call without a name)."""

    def __init__(self, message: str, pos: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


class Builder:
    """Turns one stream's grammar reductions into content, reasoning and calls, told to its sink.

    Subclasses add handlers named after grammar rules (or their aliases); each takes the rule's
    children as arguments (tokens, with absolute ``start_pos``, and the values of sub-rules) and
    returns the rule's value (see :class:`~codec._lark.CompiledGrammar`).
    """

    def __init__(self, sink: Sink) -> None:
        self.sink = sink

    def on_text(self, kind: str, text: str, pos: int) -> None:
        """Free text from the grammar's text terminals (a builder's own kinds are its to take)."""
        self.sink.text(kind, text, pos)

    def stop(self, token: Token) -> None:
        """The format's stop token (rule ``stop``)."""
        self.sink.stop(token)

    def recover(self, raw: str, pos: int, error: str) -> int | None:
        """A block the grammar rejected: ``raw`` is its text from its opener, at offset ``pos``,
        and ``error`` says where and why the grammar refused it.

        Returns how many characters of ``raw`` the builder made something of (calls, and content
        or issues for what it could not use): the stream reads the rest again. None: the block
        means nothing the builder can use, and the stream keeps all of it as content, reported.
        Either way the builder drops the state of the unfinished block, finishing (or cutting)
        any call it already started.
        """
        return None

    def start_cut(self) -> None:
        """The reply ends inside the block being read: start the call whose head was read but
        that is not started yet (a builder that starts a call only once more of it arrives), so
        that it is reported cut like any call being read."""

    def reach(self, text: str, start: int) -> int | None:
        """Where a rejected block that opens at ``text[start]``, with no resync marker after it,
        ends at the latest: its :meth:`recover` reads nothing of the text past it, so it is given
        the text up to there, not the rest of the reply (which the stream reads again anyway).
        None: the recovery may read all of ``text``. A block without a closing marker (a bare list)
        is otherwise handed the rest of the reply, and many of them in a row cost O(n^2)."""
        return None


@dataclass
class _Block:
    """A block being parsed: where it started, how to undo it, and its text so far."""

    pos: int
    closer: str | None
    checkpoint: Checkpoint
    depth: int
    pieces: list[str] = field(default_factory=list)
    #: Blanks right before the opener that the grammar ignores as markup: content again if the
    #: block is rejected and kept as content.
    lead: str = ""


@dataclass
class _Recovery:
    """A rejected block whose end the stream is looking for."""

    block: _Block
    error: str


class _NoEvents(list[Event]):
    """The events of a stream whose caller reads none: not kept."""

    def append(self, event: Event) -> None:
        pass


class _Reject(Exception):
    """A token the stream cannot feed: refused by the grammar, or (``semantic``) by the builder."""

    def __init__(
        self, pos: int, message: str, expected: Sequence[str] = (), semantic: bool = False, token: str = ""
    ) -> None:
        super().__init__(message)
        self.token = token
        self.pos = pos
        self.message = message
        self.expected = list(expected)
        self.semantic = semantic


def _first_chars(lexers: tuple[tuple[str, FastLexer], ...]) -> str | None:
    """The characters the tokens of ``lexers`` can start with (their ``first``), or None where
    one of them does not say."""
    chars: list[str] = []
    for _, lexer in lexers:
        first = getattr(lexer, "first", None)
        if not isinstance(first, str):
            return None
        chars.append(first)
    return "".join(sorted(set("".join(chars))))


class Stream:
    """A sans-IO incremental parser for one reply.

    ``feed(chunk)`` returns the events the new text completes; ``close()`` flushes what was held
    back and finishes; ``result`` is the :class:`~codec.models.ParseResult` (complete after
    ``close()``); ``work`` counts the characters examined. For any chunking, the events
    concatenate to the same result. In strict mode the first problem raises
    :class:`~codec.errors.ParseError`, and the stream stays failed: later calls raise
    :class:`~codec.errors.CodecError` saying where it failed. With ``events=False`` (a whole
    parse) no events are kept: ``feed`` and ``close`` return none.
    """

    def __init__(
        self,
        syntax: Syntax,
        *,
        tools: Sequence[Any] | None = None,
        strict: bool = False,
        prompt: str | None = None,
        call_id: Callable[[int], str] | None = None,
        events: bool = True,
    ) -> None:
        self._syntax = syntax
        self._strict = strict
        self._g = syntax.grammar
        self._out = Output(
            syntax.grammar,
            tools=tools_by_name(tools),
            strict=strict,
            events=events,
            call_id=call_id or default_call_id,
            line_column=self._line_column,
            snippet=self._snippet,
            reading=self._read_alone,
        )
        self._events = events
        self._builder = syntax.builder(self._out)
        self._parser = Parser(syntax.grammar, self._builder)
        self._buf = ""
        self._base = 0  # offset of _buf[0] in the reply
        self._pending: list[str] = []  # chunks that arrived while waiting for a delimiter's closer
        self._wait: Watch | None = None  # follows a long token that has not ended yet
        self._watched = -1  # offset of the token the last watch ended: lex it for good now
        self._watcher: str | None = None  # the fast terminal whose lexer made the watch (None: a delimiter's)
        self._woken: str | None = None  # the fast terminal told to decide at _watched
        self._need = 0  # reply length before which the lexer cannot decide anything new
        #: The last text probe's search: the terminal, the hold point it found and how far it read
        #: (reply offsets); see _committable_text.
        self._probe_cache: tuple[str, int, int] | None = None
        #: The last resync search: where it found a marker (-1: none), how far it searched, the marker.
        self._resync_cache: tuple[int, int, str] = (-1, -1, "")
        self._block: _Block | None = None
        self._cut_checked = False  # whether the end of the reply was checked for a cut call
        self._blanks = (-1, "")  # the last ignored text outside a block: (where it ends, text)
        self._recovery: _Recovery | None = None
        self._reread = ""  # text a rejected block did not cover, from before the buffer: read it again
        self._depth = 0
        self._newlines = array("q")  # where each line break is: 8 bytes each, not a list's 36
        self._length = 0
        self._closed = False
        self._failure: str | None = None  # why a strict stream failed, once it has
        #: Characters examined by the lexer and the delimiter and resync searches so far. It grows
        #: linearly with the reply whatever the chunking; tests use it to catch quadratic rescans.
        self.work = 0
        self._resync_len = max((len(m) for m in (*syntax.resync_after, *syntax.resync_before)), default=1)
        self._opener_rest = ""  # the rest of the prompt's reasoning opener, if the reply starts with it
        if syntax.opened_reasoning(prompt):
            self._push(Token(syntax.reasoning_open, "", start_pos=0))
            self._opener_rest = syntax.reasoning_open_rest
        #: Without a prompt, whether it opened reasoning is still to be read from the reply.
        self._undecided = prompt is None and syntax.reasoning_close is not None
        self._searched = 0  # how much of the reply the reasoning lookahead has searched
        self._refused: set[str] = set()  # texts a builder's probe found strict parsing refuses

    # ------------------------------------------------------------------ public

    def feed(self, chunk: str) -> list[Event]:
        """Take the next piece of the reply; return the events it completes."""
        if type(chunk) is not str:
            if not isinstance(chunk, str):
                raise TypeError(f"feed() takes str, not {type(chunk).__name__}")
            chunk = str(chunk)
        wait = self._wait
        if wait is None and self._closed:
            raise CodecError(self._failure or "feed() after close()")
        # Where text enters the stream, and only here: every path after it (fast lexers, the
        # grammar's rules, whole-call readers, recovery) sees the same characters whatever the
        # chunking, and none of them can hold a surrogate that the result could not write out.
        at = self._length
        if "\n" in chunk:
            self._arrived(chunk)
        else:
            self._length += len(chunk)
        if has_surrogate(chunk):
            try:
                chunk = self._replace_surrogates(chunk, at)
            except ParseError as exc:
                self._fail(exc)
                raise
        if wait is not None:  # inside a long token (a closed stream never waits): look only for its end
            self._pending.append(chunk)
            if not wait.scan(chunk):
                return []
            # The watched token may be complete: lex it for good now.
            events = self._out.events = self._new_events()
            self._wait = None
            self._watched, self._woken = self._base, self._watcher
            self._buf += self._take_pending()
        else:
            events = self._out.events = self._new_events()
            self._buf += chunk
        if self._length >= self._need:
            try:
                if self._undecided and not self._decide_reasoning(False):
                    return events
                self._run(False)
            except ParseError as exc:
                self._fail(exc)
                raise
        return events

    def close(self) -> list[Event]:
        """The reply is complete: flush held-back text, close what can be closed, finish."""
        if self._failure is not None:
            raise CodecError(self._failure)
        if self._closed:
            return []
        events = self._out.events = self._new_events()
        if self._pending:
            self._buf += self._take_pending()
        self._wait = None
        try:
            if self._undecided:
                self._decide_reasoning(True)
            self._run(True)
            self._finish()
        except ParseError as exc:
            self._fail(exc)
            raise
        self._closed = True
        return events

    @property
    def result(self) -> ParseResult:
        """What the reply decodes to so far (all of it after ``close()``)."""
        return self._out.result()

    def _read_alone(self, text: str) -> ParseResult | None:
        """What ``text`` parses to on its own (see :func:`_read_alone`), a refusal remembered: a
        reply that repeats a broken list probes the same elements again and again, and each probe
        that fails costs a strict stream of its own."""
        if text in self._refused:
            return None
        found = _read_alone(self._syntax, text)
        if found is None and len(self._refused) < _REFUSALS_KEPT:
            self._refused.add(text)
        return found

    def _new_events(self) -> list[Event]:
        """The list the events of one ``feed`` go to (one that keeps none, where none are read:
        a whole parse of many calls held an event or two per call until it ended)."""
        return [] if self._events else _NoEvents()

    # ------------------------------------------------------------------ failing (strict mode)

    def _fail(self, error: ParseError) -> None:
        """Leave the stream failed by ``error`` (h11's ERROR state): its later calls raise."""
        self._failure = (
            f"the stream failed at line {error.line}, column {error.column} (offset {error.pos}): "
            f"{error.message}; start a new stream"
        )
        self._closed = True
        self._wait = None

    # ------------------------------------------------------------------ positions

    def _line_column(self, pos: int) -> tuple[int, int]:
        """1-based line and column of offset ``pos`` in the reply."""
        line = bisect_right(self._newlines, pos - 1)
        start = self._newlines[line - 1] + 1 if line else 0
        return line + 1, pos - start + 1

    def _snippet(self, pos: int) -> str:
        i = pos - self._base
        return caret_snippet(self._buf, i) if 0 <= i <= len(self._buf) else ""

    def _arrived(self, text: str) -> None:
        """Account for new text: the reply's length and where its lines start."""
        j = text.find("\n")
        while j >= 0:
            self._newlines.append(self._length + j)
            j = text.find("\n", j + 1)
        self._length += len(text)

    # ------------------------------------------------------------------ watches

    def _take_pending(self) -> str:
        """The text that arrived while a watch followed it (the watch examined each character)."""
        text = "".join(self._pending)
        self._pending = []
        self.work += len(text)
        return text

    def _replace_surrogates(self, chunk: str, at: int) -> str:
        """``chunk`` (arrived at offset ``at``) with each surrogate code point replaced with U+FFFD,
        each reported (``lone_surrogate``): one character for one, so offsets stay the reply's."""
        for m in SURROGATE.finditer(chunk):
            code = f"U+{ord(m.group()):04X}"
            message = (
                f"a lone surrogate ({code}, half of a UTF-16 pair: no character) in the text, replaced with U+FFFD"
            )
            self._out.entered("lone_surrogate", message, at + m.start())
        self.work += len(chunk)
        return SURROGATE.sub("\ufffd", chunk)

    def _wait_for(self, buf: str, i: int) -> bool:
        """Nothing matches at ``buf[i]`` yet: is it a long delimited token that has not ended?"""
        for delim in self._syntax.delimiters:
            if buf.startswith(delim.open, i):
                self._wait, examined = delim.watch(buf, i)
                self._watcher = None
                self.work += examined
                return self._wait is not None  # closed, yet nothing matches: a real error
            if len(buf) - i < len(delim.open) and delim.open.startswith(buf[i:]):
                return True  # the opener itself is still arriving
        return False

    # ------------------------------------------------------------------ reasoning opened by the prompt?

    def _decide_reasoning(self, final: bool) -> bool:
        """Without a prompt: whether it opened reasoning, read from the reply's start (True once
        decided). A ``reasoning_close`` found first means it did: the reply is read as if the
        prompt said so, and the closer without an opener is reported. A marker of
        ``reasoning_not_opened`` found first, nothing found in the lookahead, or the end of the
        reply means it did not. The search never looks at a character twice."""
        syntax = self._syntax
        close = syntax.reasoning_close
        assert close is not None and syntax.reasoning_open is not None
        markers = (close, *syntax.reasoning_not_opened)
        longest = max(len(m) if isinstance(m, str) else syntax.reasoning_marker_span for m in markers)
        limit = syntax.reasoning_lookahead
        buf = self._buf  # nothing is lexed before the decision: the buffer is the reply's start
        start = max(0, self._searched - longest + 1)
        end = min(len(buf), limit + longest - 1)
        self.work += max(0, end - start)
        self._searched = end
        found = [(at, m) for m in markers if 0 <= (at := _find(buf, m, start, end)) < limit]
        if not found and not final and len(buf) < limit + longest - 1:
            return False  # a marker may still start within the lookahead
        self._undecided = False
        if found and min(found, key=lambda hit: hit[0])[1] == close:
            at = min(found, key=lambda hit: hit[0])[0]
            self._push(Token(syntax.reasoning_open, "", start_pos=0))
            self._out.issue(
                "reasoning_without_opener",
                f"{close!r} without its opener: the text before it is read as reasoning the prompt opened "
                "(pass prompt= to say it did not)",
                at,
            )
        return True

    # ------------------------------------------------------------------ the lexing loop

    def _run(self, final: bool) -> None:
        """Lex and feed what the buffer holds, up to what must wait for more text (all of it
        when ``final``); the committed text leaves the buffer."""
        buf = self._buf
        n = len(buf)
        self._need = 0
        i = self._past_opener_rest(buf, final)
        if i < 0:
            return
        syntax = self._syntax
        hold = syntax.holdback
        text_terms = syntax.text_terminals
        closed_terms = syntax.closed_terminals
        ignore = self._g.ignored
        scanners = self._g.scanners
        fast_by_state = syntax.fast_by_state
        parser = self._parser
        while i < n:
            if self._recovery is not None:
                i = self._recover(buf, i, final)
                if self._recovery is not None:
                    break
                if self._reread:  # the block ended before the text it was given: read that again
                    self.work += len(self._reread) + n - i  # both copied into the new buffer
                    buf, i = self._reread + buf[i:], 0
                    self._base -= len(self._reread)
                    self._reread = ""
                    n = len(buf)
                continue
            state = parser.state
            fast = fast_by_state[state]
            if fast:
                woken = self._woken if self._base + i == self._watched else None
                got = self._try_fast(fast, buf, i, final, woken)
                if isinstance(got, ValueToken):
                    i = self._take(got, buf, i + len(got))
                    continue
                if got is not None:
                    self._wait = got
                    break
            scanner = scanners[state] if state in scanners else self._g.scanner(state)
            m = scanner.match(buf, i) if scanner is not None else None
            end = m.end() if m is not None else i
            self.work += end - i + 1
            if end == i:
                if not final and (n - i < hold or self._wait_for(buf, i)):
                    break
                # The text shown is at most what every chunking has here: the same message whatever the chunks.
                i = self._error(buf, i, f"unexpected {buf[i : i + min(10, hold)]!r}")
                continue
            kind: str = m.lastgroup  # type: ignore[union-attr,assignment]
            if end + hold > n and not final and kind not in closed_terms:
                if kind not in text_terms:
                    # Committed as soon as no more text could change it, else once the longest
                    # marker's worth has followed. A token shorter than that is asked again at
                    # every chunk (at most the holdback's worth of work each), so that a closer
                    # arriving alone after it is read at once. A longer one waits for as much
                    # again as it has: one that keeps growing (a long name still arriving) is
                    # lexed again a logarithmic number of times, not once per chunk, which would
                    # cost its length squared.
                    self.work += n - i
                    if not self._decided(kind, buf, i):
                        if end - i > hold:
                            self._need = self._base + 2 * end - i
                        break
                else:
                    end = self._committable_text(buf, i, end, n - hold, state, kind)
                    if end == i:
                        break
            value = buf[i:end]
            pos = self._base + i
            i = end
            if kind in ignore:
                if self._block is not None:
                    self._block.pieces.append(value)
                else:
                    self._blanks = (pos + len(value), value)
                continue
            i = self._take(make_token(kind, value, pos), buf, i)
            if i == end and kind in text_terms:
                self._builder.on_text(text_terms[kind], value, pos)
        self._buf = buf[i:]
        self._base += i

    def _decided(self, kind: str, buf: str, i: int) -> bool:
        """Whether the token of ``kind`` at ``buf[i]``, near the end of what arrived, can be taken
        now: no more text could change it, and the parser takes it (an ignored token, blanks, is
        never fed: it leaves the parser where it is). Whatever lexes the text after it, the
        grammar's scanner or a fast lexer, decides on what has arrived only what more text could
        not change (a fast lexer that cannot tell yet waits or leaves the text to the rules)."""
        parser = self._parser
        if not parser.grammar.decided(parser.state, buf[i:]):
            return False
        return kind in self._g.ignored or parser.state_after(kind) is not None

    def _past_opener_rest(self, buf: str, final: bool) -> int:
        """Where lexing starts: past what remains of the prompt's reasoning opener, if the reply
        starts with it (-1: it may still be arriving)."""
        rest = self._opener_rest
        if not rest:
            return 0
        if not final and len(buf) < len(rest) and rest.startswith(buf):
            return -1
        self._opener_rest = ""
        return len(rest) if buf.startswith(rest) else 0

    def _committable_text(self, buf: str, start: int, end: int, safe: int, state: Any, kind: str) -> int:
        """How much of a text token ``buf[start:end]`` near the end of what arrived can be
        committed: all of it that is text whatever comes next. Text more than the holdback from the
        end is; nearer, text is held from where one of the terminal's lookaheads could still read
        past the end (the alternative it belongs to may fail once more arrives: a marker starting
        there), found by one search over the tail (:class:`~codec._lookahead.TextProbe`). Where the
        terminal has no probe, from the first character past ``safe`` that could start a marker.
        Where a marker outranks text (preempt), nothing past ``safe``."""
        syntax = self._syntax
        starts = syntax.marker_starts
        if start >= safe and buf[start] in starts and syntax.fast_by_state[state]:
            # A fast lexer of this state found nothing at ``start`` yet: it may once more text
            # arrives (it leaves what it cannot tell yet to the rules, which hold it back), unless
            # no token of theirs starts with that character (gemma4's prose calls start with
            # ``c``: a line break before a reasoning block is not held for them).
            lexed = syntax.fast_first[state]
            if lexed is None or buf[start] in lexed:
                return start
        if buf[start] in syntax.preempt_starts and (state, kind) in syntax.preempted:
            # Where something followed the text (a marker arrived), the state's scanner may have
            # decided already: no terminal it lexes could reach past what arrived. (Asked once per
            # token: when it is not decided, all but the holdback is committed.)
            if end == len(buf):
                return max(start, safe)
            self.work += len(buf) - start
            if not self._g.decided(state, buf[start:]):
                return max(start, safe)
        first = max(start, safe)
        for j in range(first, end):
            if buf[j] in starts:
                break
        else:
            return end
        probe = syntax.text_probes.get(kind)
        if probe is None:
            return j
        # The last search's hold point: no match of the probe starts before it in what had arrived,
        # and none can once more arrives (a match that failed before the end stays failed). Until
        # as much more has arrived as that search read past it, the text stays held from there (no
        # less than a new search would hold), so that a tail the probe holds for long (a run of
        # '[' that may open a fence) costs linear work, not a holdback's search per chunk.
        base, cached = self._base, self._probe_cache
        if cached is not None and cached[0] == kind and cached[1] >= base + start:
            held, searched = cached[1], cached[2]
            if base + len(buf) - searched < max(1, searched - held):
                return min(held - base, end)
            first = max(first, held - base)
        self.work += len(buf) - first
        found = probe.holds_from(buf, first)
        self._probe_cache = (kind, base + found, base + len(buf))
        return min(found, end)

    def _try_fast(
        self, fast: tuple[tuple[str, FastLexer], ...], buf: str, i: int, final: bool, woken: str | None = None
    ) -> ValueToken | Watch | None:
        """A token of a fast lexer at ``buf[i]``, a watch for one still arriving, or None.

        ``woken`` is the terminal whose watch just woke here: its lexer decides now (it is told the
        text is final); the others still wait for their text, as they would in a whole parse.
        """
        for terminal, lexer in fast:
            got = lexer(buf, i, final or terminal == woken)
            if got is None:
                continue
            if not isinstance(got, tuple):
                self.work += len(buf) - i
                self._watcher = terminal
                return got
            value, end = got
            self.work += end - i
            if self._too_deep(value, buf, i, end):
                continue  # the grammar's rules will reject it, exactly as they would have
            return make_value_token(terminal, buf[i:end], self._base + i, value)
        return None

    def _too_deep(self, value: Any, buf: str, start: int, end: int) -> bool:
        limit = self._syntax.max_depth - self._depth
        if not self._syntax.nest_open or buf.count("{", start, end) + buf.count("[", start, end) <= limit:
            return False
        return nesting(value) > limit

    # ------------------------------------------------------------------ feeding the parser

    def _take(self, tok: Token, buf: str, end: int) -> int:
        """Feed a lexed token that ends at ``buf[end]``; returns where lexing continues."""
        try:
            self._push(tok)
        except _Reject as rej:
            pos: int = tok.start_pos
            i = pos - self._base  # lexing resumes at the refused token
            if rej.semantic or not self._autoclose(pos, rej.token):
                i = self._error(buf, i, rej.message, rej.expected, semantic=rej.semantic, at=rej.pos)
            return i
        return end

    def _push(self, tok: Token) -> None:
        """Feed one token to the parser, tracking blocks and nesting."""
        kind = tok.type
        syntax = self._syntax
        parser = self._parser
        if kind in syntax.text_terminals and self._block is None and parser.repeats(kind):
            return  # more free text after free text: the parser would end where it is
        depth = self._depth
        if kind in syntax.nest_open:
            self._depth += 1
            if self._depth > syntax.max_depth:
                raise _Reject(tok.start_pos, f"nesting deeper than {syntax.max_depth} levels", semantic=True)
        elif kind in syntax.nest_close:
            self._depth -= 1
        try:
            parser.feed(tok)
        except Refused as exc:
            raise _Reject(tok.start_pos, f"unexpected {tok.value!r}", exc.expected, token=kind) from None
        except BuildError as exc:
            raise _Reject(exc.pos if exc.pos is not None else tok.start_pos, exc.message, semantic=True) from None
        block = self._block
        if block is not None:
            block.pieces.append(str(tok))
            closer = block.closer
            if kind == closer or (closer is None and kind in syntax.nest_close and self._depth == block.depth):
                self._block = None
            elif kind in syntax.settle_after:
                with suppress(BuildError):  # a handler refusing it leaves the parser as it was
                    parser.settle()
        elif kind in syntax.blocks:
            self._out.block(tok.start_pos)
            # The checkpoint is the parser as the opener found it, after the reductions the
            # opener triggered (they belong to what came before): the stacks minus the opener.
            end, blanks = self._blanks
            self._block = _Block(
                tok.start_pos,
                syntax.blocks[kind],
                parser.checkpoint(below=1),
                depth,
                [str(tok)],
                blanks if end == tok.start_pos else "",
            )
        if self._block is None and kind not in syntax.text_terminals:
            # Outside a block after a marker, a block's closer or a whole call: build what is
            # complete now rather than when the next token arrives, so that a call is sent in the
            # delta that finished it. Only the reductions every continuation would make; a handler
            # refusing one leaves the parser as it was, and the next token meets the refusal. Only
            # where the reply could end too: elsewhere the end finds what is missing where it is.
            with suppress(BuildError):
                parser.settle(ending=True)

    def _report_cut(self, terminal: str, pos: int) -> None:
        """The reply ends inside a block and ``terminal`` is the first closer it lacks: unless that
        is the block's own closer (all inside it arrived: a call is whole), the call still being
        read once the reductions any continuation would make are made (a call whose ``)`` arrived
        is finished, with only its list's closers missing) was cut short. Decided once, at the
        first closer inserted at the end."""
        block, checked = self._block, self._cut_checked
        self._cut_checked = True
        if block is None or checked:
            return
        syntax = self._syntax
        if terminal == block.closer or (
            block.closer is None and terminal in syntax.nest_close and self._depth - 1 == block.depth
        ):
            return
        # A handler refusing a reduction here leaves the parser as it was (the closer meets it again).
        with suppress(BuildError):
            self._parser.settle()
        self._builder.start_cut()
        index = self._out.open_call()
        if index is not None:
            self._out.cut_call(index, pos)

    def _autoclose(self, pos: int, before: str | None) -> bool:
        """Insert a missing closer the grammar accepts here (reported), if the format allows one.

        ``before`` is the terminal found at ``pos`` (None at the end of the reply).
        """
        if before is not None and before not in self._syntax.autoclose_before:
            return False
        for terminal, spelling in self._syntax.autoclose.items():
            if self._parser.accepts(terminal):
                if before is None:
                    self._report_cut(terminal, pos)
                # The closer ends the block open here: it concerns that block's last call.
                # (A block read whole by a fast path is not open here: the closer ends what was read last.)
                call = InBlock(self._block.pos) if self._block is not None else LAST
                if before is not None and terminal == self._syntax.reasoning_closer:
                    message = f"reasoning not closed before the call: ended at its opener ({spelling!r} inserted)"
                    self._out.issue("unclosed_reasoning", message, pos, call=None)
                else:
                    self._out.issue("missing_closer", f"missing {spelling!r} inserted", pos, call=call)
                try:
                    self._push(Token(terminal, "", start_pos=pos))
                except _Reject as rej:  # the closer completed something the builder refuses
                    self._fail_block(rej.message, rej.pos, ())
                return True
        return False

    # ------------------------------------------------------------------ errors and recovery

    def _fail_block(self, message: str, pos: int, expected: Sequence[str]) -> bool:
        """A problem at ``pos``: strict mode raises; in a block, start recovering it (True)."""
        if self._strict:
            line, column = self._line_column(pos)
            terminals = self._parser.grammar.terminals  # (the literals, to say what was expected in words)
            literals = {name: t.pattern.value for name, t in terminals.items() if t.pattern.type == "str"}
            described = expected_words(expected, literals)
            snippet = self._snippet(pos)
            raise ParseError(
                message, pos=pos, line=line, column=column, expected=expected, snippet=snippet, described=described
            )
        if self._block is None:
            return False
        if self._syntax.settle_rejected_blocks:
            with suppress(BuildError):  # a part the builder refuses is left to its recovery, as the block is
                self._parser.settle()
        line, column = self._line_column(pos)
        self._recovery = _Recovery(self._block, f"{message} at line {line}, column {column}")
        self._block = None
        return True

    def _error(
        self,
        buf: str,
        i: int,
        message: str,
        expected: Sequence[str] = (),
        semantic: bool = False,
        at: int | None = None,
    ) -> int:
        """Nothing acceptable at ``buf[i]``; returns where lexing continues.

        ``at`` is where the problem lies when it is not ``buf[i]`` (a builder's semantic error).
        """
        pos = self._base + i if at is None else at
        if not semantic:
            before = self._g.first_match(self._syntax.autoclose_before, buf, i)
            if before is not None and self._autoclose(pos, before):
                return i
        if not expected and not semantic:
            expected = self._parser.expected()
        if self._fail_block(message, pos, expected):
            return i
        pos = self._base + i
        # Outside any block the grammar takes nothing here: keep the character as content.
        last = self._out.last_issue()
        if last is not None and last.kind == "unexpected_text" and last.pos + len(last.text or "") == pos:
            last.text = (last.text or "") + buf[i]
        else:
            self._out.issue("unexpected_text", f"{message}, kept as content", pos, buf[i])
        self._out.text(CONTENT, buf[i], pos)
        return i + 1

    def _recover(self, buf: str, i: int, final: bool) -> int:
        """Look for the end of a rejected block from ``buf[i]``; return where lexing continues."""
        rec = self._recovery
        assert rec is not None
        best, resume = self._find_resync(buf, i)
        if best < 0:
            if not final:
                keep = max(i, len(buf) - self._resync_len + 1)
                rec.block.pieces.append(buf[i:keep])
                return keep
            resume = self._reach(buf, i)
        rec.block.pieces.append(buf[i:resume])
        raw = "".join(rec.block.pieces)
        self.work += len(raw)  # the block's text is copied out for the builder: counted, as copying
        used = self._hand_over(raw, final and best < 0)
        # Text after what the block covered is read again: from buf, or (where it arrived in an
        # earlier chunk) from raw, through _reread.
        start = rec.block.pos + used - self._base
        if start >= 0:
            return start
        self._reread = raw[used : used - start]
        return 0

    def _reach(self, buf: str, i: int) -> int:
        """Where the text a rejected block with no resync marker after it is given ends: where its
        builder says its recovery stops reading (:meth:`Builder.reach`), else the end of ``buf``.
        The builder is asked only where the whole block lies in ``buf`` (the block and the rest of
        the reply are one string there, whichever chunks brought them)."""
        rec = self._recovery
        assert rec is not None
        start = rec.block.pos - self._base
        if start < 0:
            return len(buf)
        end = self._builder.reach(buf, start)
        if end is None:
            return len(buf)
        self.work += end - start
        return min(max(end, i), len(buf))

    def _find_resync(self, buf: str, i: int) -> tuple[int, int]:
        """Where the first resync marker at or after ``buf[i]`` starts and where lexing resumes
        after it (past a ``resync_after`` marker, at a ``resync_before`` one), or ``(-1, -1)``.

        Earlier searches are remembered, so that no text is searched twice (many broken blocks in a
        row, or a broken block arriving in small chunks, must not cost O(n^2), nor once per marker)."""
        pattern = self._syntax.resync
        if pattern is None:
            return -1, -1
        here = self._base + i
        found, searched, marker = self._resync_cache
        if found < here:  # none found yet, or one before here: search (again) from here
            start = i
            if found < 0 and searched > here:  # nothing up to what was searched, bar a marker cut at its end
                start = max(i, searched - self._base - self._resync_len + 1)
            m = pattern.search(buf, start)
            self.work += (m.end() if m is not None else len(buf)) - start
            found, marker = (self._base + m.start(), m.group()) if m is not None else (-1, "")
            self._resync_cache = (found, self._base + len(buf), marker)
        if found < 0:
            return -1, -1
        j = found - self._base
        return j, (j + len(marker) if marker in self._syntax.resync_after else j)

    def _hand_over(self, raw: str, final_block: bool = False) -> int:
        """Give the rejected block to the builder's recovery; returns how much of ``raw`` it covered."""
        rec = self._recovery
        assert rec is not None
        self._recovery = None
        block = rec.block
        self._parser.restore(block.checkpoint)
        self._depth = block.depth
        # A block that ran to the end of the reply was cut; one that reached a marker was broken.
        self._out.block_ran_to_end = final_block
        used = self._builder.recover(raw, block.pos, rec.error)
        if used is None:
            self._out.keep_as_content(raw, block.pos, rec.error, lead=block.lead)
            return len(raw)
        return used

    def _finish(self) -> None:
        """End of reply: close open structures (reporting each), recover a broken block, feed $END."""
        for _ in range(10_000):
            if self._recovery is not None:
                i = self._recover(self._buf, len(self._buf), True)
                self.work += len(self._reread) + len(self._buf) - i  # copied into the new buffer
                self._buf, self._base = self._reread + self._buf[i:], self._base + i - len(self._reread)
                self._reread = ""
                self._run(True)  # what the block did not cover
                continue
            if self._parser.accepts("$END"):
                end = self._base + len(self._buf)
                checkpoint = self._parser.checkpoint()
                try:
                    self._parser.feed_end(end)
                except BuildError as exc:
                    # A handler refuses what the end completes (arguments that are no object):
                    # the block is rejected and recovered, as a refusal at any token rejects it.
                    self._parser.restore(checkpoint)
                    if self._fail_block(exc.message, exc.pos if exc.pos is not None else end, ()):
                        continue
                    raise
                return
            if self._autoclose(self._base + len(self._buf), None):
                continue
            pos = self._base + len(self._buf)
            if not self._fail_block("reply ends inside a tool call", pos, self._parser.expected()):
                raise AssertionError(f"grammar cannot end in state {self._parser.state}")  # pragma: no cover
        self._parser.feed_end(self._base + len(self._buf))


#: How many refused probe texts a stream remembers (see :meth:`Stream._read_alone`).
_REFUSALS_KEPT = 1024


def _read_alone(syntax: Syntax, text: str) -> ParseResult | None:
    """What ``text`` parses to on its own with ``syntax``, strictly and without tools (None where
    strict parsing refuses it): what a builder's :meth:`~codec.sink.Sink.reading` asks. The whole
    reply reader reads it where it can (it says only what the grammar's path says, and reports
    nothing, so strictness changes nothing), a strict stream otherwise."""
    found = read_whole(syntax, text, None, None, None)
    if found is not None:
        return found
    stream = Stream(syntax, strict=True, events=False)
    try:
        stream.feed(text)
        stream.close()
    except ParseError:
        return None
    return stream.result


def _find(text: str, marker: str | re.Pattern[str], start: int, end: int) -> int:
    """Where ``marker`` (a string or a pattern) first occurs whole within ``text[start:end]``, or -1."""
    if isinstance(marker, str):
        return text.find(marker, start, end)
    found = marker.search(text, start, end)
    return -1 if found is None else found.start()
