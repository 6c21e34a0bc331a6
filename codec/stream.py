"""The format-agnostic incremental parser behind ``Format.parse`` and ``Format.stream``.

A format describes its reply syntax with a :class:`Syntax`: a lark grammar (the judge of what a
reply means) and a :class:`Builder` whose rule handlers turn reductions into content, reasoning
and tool calls. :class:`Stream` lexes the text itself, one terminal at a time with a scanner for
the current LALR state, and feeds lark's parser token by token, so the work over a whole reply
is O(n) whatever the chunking:

* a token is committed only once enough text follows it to be sure it cannot grow or turn into
  a marker (``Syntax.holdback`` characters); free-text terminals are committed in pieces, so text
  is held back only while it could still be the start of a marker;
* a long delimited token (a JSON string, say) is not re-lexed on every chunk: the stream watches
  the new text for its closing delimiter and lexes the token once;
* a block (a tool call) the grammar rejects is not fatal: a missing closer is inserted and
  reported; otherwise the stream skips to the format's next resync marker, gives the raw block
  to the builder to repair, and keeps it as content with an :class:`~codec.models.Issue` if the
  builder cannot. Every other call in the reply is still returned.

``parse(text)`` is ``feed(text)`` then ``close()``: one code path for batch and stream.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from codec import jinja
from codec._lark import CompiledGrammar, Token, UnexpectedToken, ValueToken, make_token, make_value_token
from codec.errors import CodecError, ParseError, caret_snippet
from codec.literals import json_text, nesting
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
from codec.schema import tool_name, tool_parameters, violations
from codec.watch import Delimiter, FastLexer, Watch

CONTENT = "content"
REASONING = "reasoning"


@dataclass(frozen=True)
class Syntax:
    """Everything the stream needs to know about one format's replies."""

    grammar: CompiledGrammar
    builder: type[Builder]
    #: Free-text terminals and where their text goes (``"content"`` or ``"reasoning"``).
    text_terminals: Mapping[str, str]
    #: Terminals that open a block (a tool call) and close it.
    #: (A closer of None: the block ends where its nesting closes, for blocks without a marker.)
    blocks: Mapping[str, str | None]
    #: Terminals the stream may insert where they are missing, with their spelling for the Issue:
    #: at the end of the reply, or before a token of ``autoclose_before`` that the parser refused.
    autoclose: Mapping[str, str] = field(default_factory=dict)
    autoclose_before: frozenset[str] = frozenset()
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
    max_depth: int = 200
    #: Terminals lexed by a function rather than a regex, for speed (see ``codec.watch.FastLexer``).
    #: A fast token must mean exactly what the grammar's regular rules make of the same text (a
    #: C-speed JSON decoder standing in for the JSON rules, say), so that results do not depend
    #: on which path a chunking happened to take.
    fast_terminals: Mapping[str, FastLexer] = field(default_factory=dict)
    fast_by_state: dict[Any, tuple[tuple[str, FastLexer], ...]] = field(default_factory=dict, compare=False)
    preempting: dict[Any, bool] = field(default_factory=dict, compare=False)
    #: The characters a terminal that outranks free text can start with (see Stream._preempted):
    #: text starting with another character is held back only as usual.
    preempt_starts: str = ""
    #: The terminal fed first when the prompt ends inside an open reasoning block.
    reasoning_open: str | None = None
    prompt_opens_reasoning: Callable[[str], bool] | None = None
    #: What a reply starts with, after a prompt that opened reasoning, that is still the opener's
    #: markup (the line break a template writes after ``<think>``): dropped, as the opener drops it.
    reasoning_open_rest: str = ""
    #: Before a rejected block goes to the builder's recovery, make the reductions that any
    #: continuation would make, so that its finished parts (a parameter, a call's head) are built.
    settle_rejected_blocks: bool = False


class BuildError(Exception):
    """Raised by a builder handler when a block is grammatical but unusable (e.g. a call without a name)."""

    def __init__(self, message: str, pos: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


class Builder:
    """Turns one stream's grammar reductions into content, reasoning and calls.

    Subclasses add handlers named after grammar rules; each receives the rule's children
    (tokens, with absolute ``start_pos``, and the values of sub-rules) and returns the rule's
    value. Handlers report through ``self.sink`` (the :class:`Stream`).
    """

    def __init__(self, sink: Stream) -> None:
        self.sink = sink
        #: Offset of the stop token, once seen.
        self.stopped_at: int | None = None
        self._reported_after_stop = False

    def on_text(self, kind: str, text: str, pos: int) -> None:
        """Free text from the grammar's text terminals."""
        if self.stopped_at is not None and kind == CONTENT and text and not self._reported_after_stop:
            self._reported_after_stop = True
            self.sink.issue("text_after_stop", "text after the stop token (kept as content)", pos)
        self.sink.emit_text(kind, text)

    def stop(self, children: list[Any]) -> None:
        """The format's stop token (rule ``stop``)."""
        token = children[0]
        if self.stopped_at is not None:
            self.sink.issue("repeated_stop", "stop token repeated", token.start_pos, str(token))
        self.stopped_at = token.start_pos
        self._reported_after_stop = False

    def recover(self, raw: str, pos: int, error: str) -> bool:
        """A block the grammar rejected: ``raw`` is its whole text from its opener, at offset ``pos``.

        Return True when the builder has produced what the block means (reporting its repairs).
        Otherwise the stream keeps ``raw`` as content with an Issue. Either way the builder drops
        the state of the unfinished block, finishing any call it already started.
        """
        return False

    def recovered(self, raw: str) -> int:
        """How much of ``raw`` the last :meth:`recover` call covered (kept as content when it
        returned False); the stream reads the rest again as usual. All of it by default."""
        return len(raw)


@dataclass
class _Block:
    """A block being parsed: where it started and how to undo it."""

    pos: int
    closer: str | None
    states: list[Any]
    values: list[Any]
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
    error_pos: int


class _Reject(Exception):
    def __init__(
        self, pos: int, message: str, expected: Sequence[str] = (), semantic: bool = False, token: str = ""
    ) -> None:
        super().__init__(message)
        self.token = token
        self.pos = pos
        self.message = message
        self.expected = list(expected)
        self.semantic = semantic


class Stream:
    """A sans-IO incremental parser for one reply.

    ``feed(chunk)`` returns the events the new text completes; ``close()`` flushes what was held
    back and finishes; ``result`` is the :class:`~codec.models.ParseResult` (complete after
    ``close()``). For any chunking, the events concatenate to the same result.
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
        self.syntax = syntax
        #: Whether the caller reads the events; a whole parse does not, and skips writing each
        #: call's remaining arguments JSON.
        self.events = events
        self.strict = strict
        prepared = jinja.prepare_tools(tools)
        self.tools: dict[str, Mapping[str, Any]] | None = None
        if prepared is not None:
            self.tools = {}
            for tool in prepared:
                name = tool_name(tool)
                if name is not None:
                    self.tools[name] = tool
        self._call_id = call_id or (lambda index: f"call_{index}")
        g = syntax.grammar
        self._g = g
        self._ignore = frozenset(g.lark.ignore_tokens)
        self._builder = syntax.builder(self)
        self._ps = g.parser(self._builder)
        self._buf = ""
        self._base = 0  # offset of _buf[0] in the reply
        self._pending: list[str] = []  # chunks that arrived while waiting for a delimiter's closer
        self._wait: Watch | None = None  # follows a long token that has not ended yet
        self._watched = -1  # offset of the token the last watch ended: lex it for good now
        self._need = 0  # reply length before which the lexer cannot decide anything new
        self._marker_cache: dict[str, tuple[int, int]] = {}  # marker -> (found at, searched up to)
        self._block: _Block | None = None
        self._blanks = (-1, "")  # the last ignored text outside a block: (where it ends, text)
        self._recovery: _Recovery | None = None
        self._reread = ""  # text a rejected block did not cover, from before the buffer: read it again
        self._depth = 0
        self._newlines: list[int] = []
        self._length = 0
        self._events: list[Event] = []
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[ToolCall] = []
        self._issues: list[Issue] = []
        self._names: list[str] = []
        self._ids: list[str] = []
        self._args_sent: list[list[str]] = []
        self._closed = False
        #: Characters examined by the lexer and the delimiter and resync searches so far. It grows
        #: linearly with the reply whatever the chunking; tests use it to catch quadratic rescans.
        self.work = 0
        self._resync_len = max((len(m) for m in (*syntax.resync_after, *syntax.resync_before)), default=1)
        opens = syntax.prompt_opens_reasoning
        self._opener_rest = ""  # the rest of the prompt's reasoning opener, if the reply starts with it
        if prompt is not None and opens is not None and syntax.reasoning_open and opens(prompt):
            self._push(Token(syntax.reasoning_open, "", start_pos=0))
            self._opener_rest = syntax.reasoning_open_rest

    # ------------------------------------------------------------------ public

    def feed(self, chunk: str) -> list[Event]:
        """Take the next piece of the reply; return the events it completes."""
        if type(chunk) is not str:
            if not isinstance(chunk, str):
                raise TypeError(f"feed() takes str, not {type(chunk).__name__}")
            chunk = str(chunk)
        wait = self._wait
        if wait is not None:  # inside a long token (a closed stream never waits): look only for its end
            self._pending.append(chunk)
            return self._resume() if wait.scan(chunk) else []
        if self._closed:
            raise CodecError("feed() after close()")
        self._events = []
        if "\n" in chunk:
            self._arrived(chunk)
        else:
            self._length += len(chunk)
        self._buf += chunk
        if self._length >= self._need:
            self._run(final=False)
        return self._events

    def close(self) -> list[Event]:
        """The reply is complete: flush held-back text, close what can be closed, finish."""
        if self._closed:
            return []
        self._events = []
        if self._pending:
            self._buf += self._take_pending()
        self._wait = None
        self._run(final=True)
        self._finish()
        self._closed = True
        return self._events

    @property
    def result(self) -> ParseResult:
        """What the reply decodes to so far (all of it after ``close()``)."""
        return ParseResult.model_construct(
            content="".join(self._content),
            reasoning="".join(self._reasoning),
            tool_calls=list(self._calls),
            issues=list(self._issues),
        )

    # ------------------------------------------------------------------ sink API for builders

    def emit_text(self, kind: str, text: str) -> None:
        if not text:
            return
        if kind == REASONING:
            self._reasoning.append(text)
            self._events.append(ReasoningDelta(text))
        else:
            self._content.append(text)
            self._events.append(TextDelta(text))

    def start_call(self, name: str) -> int:
        """Announce a call whose name is known; returns its index."""
        index = len(self._names)
        self._names.append(name)
        self._ids.append(self._call_id(index))
        self._args_sent.append([])
        self._events.append(ToolCallStart(index, self._ids[index], name))
        return index

    def add_arguments(self, index: int, fragment: str) -> None:
        """Send the next fragment of a call's arguments JSON (append-only)."""
        if fragment:
            self._args_sent[index].append(fragment)
            self._events.append(ToolCallDelta(index, fragment))

    def end_call(self, index: int, arguments: dict[str, Any], pos: int) -> None:
        """Finish a call: send what is left of its arguments JSON and check it against the tools."""
        if self.events:
            text = json_text(arguments)
            sent = "".join(self._args_sent[index])
            if not text.startswith(sent):  # a builder bug: what was sent cannot be taken back
                raise AssertionError(f"call {index}: arguments {text!r} do not extend what was sent ({sent!r})")
            self.add_arguments(index, text[len(sent) :])
        name = self._names[index]
        # Built without validation: the name is a str and the arguments a JSON-able dict by construction.
        function = FunctionCall.model_construct(name=name, arguments=arguments)
        call = ToolCall.model_construct(id=self._ids[index], type="function", function=function)
        self._calls.append(call)
        self._check_call(name, arguments, pos)
        self._events.append(ToolCallEnd(index, call))

    def sent_arguments(self, index: int) -> str:
        """The arguments JSON of call ``index`` sent so far."""
        return "".join(self._args_sent[index])

    def tool_schema(self, name: str) -> Mapping[str, Any] | None:
        """The parameters schema of tool ``name``, if tools were given and declare it."""
        if self.tools is None or name not in self.tools:
            return None
        return tool_parameters(self.tools[name])

    def issue(self, kind: str, message: str, pos: int, text: str | None = None) -> None:
        """Report a repair or a problem; in strict mode, raise :class:`ParseError` instead."""
        line, column = self.line_column(pos)
        if self.strict:
            raise ParseError(message, pos=pos, line=line, column=column, snippet=self._snippet(pos), kind=kind)
        self._issues.append(Issue(kind=kind, message=message, pos=pos, line=line, column=column, text=text))

    def line_column(self, pos: int) -> tuple[int, int]:
        """1-based line and column of offset ``pos`` in the reply."""
        line = bisect_right(self._newlines, pos - 1)
        start = self._newlines[line - 1] + 1 if line else 0
        return line + 1, pos - start + 1

    # ------------------------------------------------------------------ internals

    def _arrived(self, text: str) -> None:
        """Account for new text: the reply's length and where its lines start."""
        j = text.find("\n")
        while j >= 0:
            self._newlines.append(self._length + j)
            j = text.find("\n", j + 1)
        self._length += len(text)

    def _take_pending(self) -> str:
        """The text that arrived while a watch followed it (the watch examined each character)."""
        text = "".join(self._pending)
        self._pending = []
        self._arrived(text)
        self.work += len(text)
        return text

    def _resume(self) -> list[Event]:
        """The watched token may be complete: lex it for good now."""
        self._events = []
        self._wait = None
        self._watched = self._base
        self._buf += self._take_pending()
        if self._length >= self._need:
            self._run(final=False)
        return self._events

    def _snippet(self, pos: int) -> str:
        i = pos - self._base
        return caret_snippet(self._buf, i) if 0 <= i <= len(self._buf) else ""

    def _check_call(self, name: str, arguments: dict[str, Any], pos: int) -> None:
        if self.tools is None:
            return
        if name not in self.tools:
            known = ", ".join(sorted(self.tools)) or "none"
            self.issue("unknown_tool", f"tool {name!r} is not declared (declared: {known})", pos)
            return
        for problem in violations(arguments, tool_parameters(self.tools[name]) or {}):
            self.issue("schema", f"{name}: {problem}", pos)

    def _wait_for(self, buf: str, i: int) -> bool:
        """Nothing matches at ``buf[i]`` yet: is it a long delimited token that has not ended?"""
        for delim in self.syntax.delimiters:
            if buf.startswith(delim.open, i):
                self._wait, examined = delim.watch(buf, i)
                self.work += examined
                return self._wait is not None  # closed, yet nothing matches: a real error
            if len(buf) - i < len(delim.open) and delim.open.startswith(buf[i:]):
                return True  # the opener itself is still arriving
        return False

    def _run(self, *, final: bool) -> None:
        buf = self._buf
        n = len(buf)
        i = 0
        hold = self.syntax.holdback
        text_terms = self.syntax.text_terminals
        closed_terms = self.syntax.closed_terminals
        ignore = self._ignore
        scanners = self._g.scanners
        fast_by_state = self.syntax.fast_by_state
        states = self._ps.state_stack
        self._need = 0
        if self._opener_rest:
            if not final and len(buf) < len(self._opener_rest) and self._opener_rest.startswith(buf):
                return  # it may still be arriving
            if buf.startswith(self._opener_rest):
                i = len(self._opener_rest)
            self._opener_rest = ""
        while i < n:
            if self._recovery is not None:
                i = self._recover(buf, i, final)
                if self._recovery is not None:
                    break
                if self._reread:  # the block ended before the text it was given: read that again
                    buf, i = self._reread + buf[i:], 0
                    self._base -= len(self._reread)
                    self._reread = ""
                    n = len(buf)
                continue
            state = states[-1]
            fast = fast_by_state[state] if state in fast_by_state else self._fast(state)
            if fast:
                got = self._try_fast(fast, buf, i, final or self._base + i == self._watched)
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
                i = self._error(buf, i, f"unexpected {buf[i : i + 10]!r}")
                continue
            kind: str = m.lastgroup  # type: ignore[union-attr,assignment]
            if end + hold > n and not final and kind not in closed_terms:
                if kind in text_terms:
                    # Hold back only from the first character that could start a marker (or,
                    # where a marker outranks text, the last `hold` characters).
                    preempted = buf[i] in self.syntax.preempt_starts and self._preempted(state, kind)
                    end = max(i, n - hold) if preempted else self._text_end(buf, i, end, n - hold)
                    if end == i:
                        break
                else:
                    self._need = self._base + end + hold
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

    def _preempted(self, state: Any, text_terminal: str) -> bool:
        """Whether ``state`` accepts a terminal that outranks free text (a marker allowed only
        there, like an opening ``<think>``): text is then held back like any other token."""
        key = (state, text_terminal)
        cache = self.syntax.preempting
        if key not in cache:
            terminals = self._g.terminals
            rank = terminals[text_terminal].priority
            cache[key] = any(terminals[t].priority > rank for t in self._g.states[state] if t in terminals)
        return cache[key]

    def _text_end(self, buf: str, start: int, end: int, safe: int) -> int:
        """How much of a text token ``buf[start:end]`` can be committed: all of it up to ``safe``,
        and past that, up to the first character that could start a marker."""
        starts = self.syntax.marker_starts
        for j in range(max(start, safe), end):
            if buf[j] in starts:
                return j
        return end

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

    def _fast(self, state: Any) -> tuple[tuple[str, FastLexer], ...]:
        """The fast lexers of the terminals ``state`` accepts (cached per syntax)."""
        found = tuple((t, f) for t, f in self.syntax.fast_terminals.items() if self._g.accepts(state, t))
        self.syntax.fast_by_state[state] = found
        return found

    def _try_fast(
        self, fast: tuple[tuple[str, FastLexer], ...], buf: str, i: int, final: bool
    ) -> ValueToken | Watch | None:
        for terminal, lexer in fast:
            got = lexer(buf, i, final)
            if got is None:
                continue
            if not isinstance(got, tuple):
                self.work += len(buf) - i
                return got
            value, end = got
            self.work += end - i
            if self._too_deep(value, buf, i, end):
                continue  # the grammar's rules will reject it, exactly as they would have
            return make_value_token(terminal, buf[i:end], self._base + i, value)
        return None

    def _too_deep(self, value: Any, buf: str, start: int, end: int) -> bool:
        limit = self.syntax.max_depth - self._depth
        if not self.syntax.nest_open or buf.count("{", start, end) + buf.count("[", start, end) <= limit:
            return False
        return nesting(value) > limit

    def _push(self, tok: Token) -> None:
        """Feed one token to the parser, tracking blocks and nesting."""
        kind = tok.type
        syntax = self.syntax
        ps = self._ps
        if (
            kind in syntax.text_terminals
            and self._block is None
            and self._g.repeats(ps.state_stack, kind, self._builder)
        ):
            return  # more free text after free text: the parser would end where it is
        depth = self._depth
        if kind in syntax.nest_open:
            self._depth += 1
            if self._depth > syntax.max_depth:
                raise _Reject(tok.start_pos, f"nesting deeper than {syntax.max_depth} levels", semantic=True)
        elif kind in syntax.nest_close:
            self._depth -= 1
        try:
            ps.feed_token(tok)
        except UnexpectedToken as exc:
            expected = self._g.expected(exc.state.position)
            raise _Reject(tok.start_pos, f"unexpected {tok.value!r}", expected, token=kind) from None
        except BuildError as exc:
            raise _Reject(exc.pos if exc.pos is not None else tok.start_pos, exc.message, semantic=True) from None
        if self._block is not None:
            self._block.pieces.append(str(tok))
            closer = self._block.closer
            if kind == closer or (closer is None and kind in syntax.nest_close and self._depth == self._block.depth):
                self._block = None
        elif kind in syntax.blocks:
            # The checkpoint is the parser as the opener found it, after the reductions the
            # opener triggered (they belong to what came before): the stack minus the opener.
            end, blanks = self._blanks
            self._block = _Block(
                tok.start_pos,
                syntax.blocks[kind],
                ps.state_stack[:-1],
                ps.value_stack[:-1],
                depth,
                [str(tok)],
                blanks if end == tok.start_pos else "",
            )

    def _autoclose(self, pos: int, before: str | None) -> bool:
        """Insert a missing closer the grammar accepts here (reported), if the format allows one.

        ``before`` is the terminal found at ``pos`` (None at the end of the reply).
        """
        if before is not None and before not in self.syntax.autoclose_before:
            return False
        stack = self._ps.state_stack
        for terminal, spelling in self.syntax.autoclose.items():
            if self._g.can_feed(stack, terminal):
                self.issue("missing_closer", f"missing {spelling!r} inserted", pos)
                try:
                    self._push(Token(terminal, "", start_pos=pos))
                except _Reject as rej:  # the closer completed something the builder refuses
                    self._fail_block(rej.message, rej.pos, ())
                return True
        return False

    def _fail_block(self, message: str, pos: int, expected: Sequence[str]) -> bool:
        """A problem at ``pos``: strict mode raises; in a block, start recovering it (True)."""
        if self.strict:
            line, column = self.line_column(pos)
            raise ParseError(message, pos=pos, line=line, column=column, expected=expected, snippet=self._snippet(pos))
        if self._block is None:
            return False
        if self.syntax.settle_rejected_blocks:
            with suppress(BuildError):  # a part the builder refuses is left to its recovery, as the block is
                self._g.settle(self._ps)
        self._recovery = _Recovery(self._block, message, pos)
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
            before = self._g.first_match(self.syntax.autoclose_before, buf, i)
            if before is not None and self._autoclose(pos, before):
                return i
        if not expected and not semantic:
            expected = self._g.expected(self._ps.state_stack[-1])
        if self._fail_block(message, pos, expected):
            return i
        pos = self._base + i
        # Outside any block the grammar takes nothing here: keep the character as content.
        last = self._issues[-1] if self._issues else None
        if last is not None and last.kind == "unexpected_text" and last.pos + len(last.text or "") == pos:
            last.text = (last.text or "") + buf[i]
        else:
            self.issue("unexpected_text", f"{message}, kept as content", pos, buf[i])
        self._builder.on_text(CONTENT, buf[i], pos)
        return i + 1

    def _recover(self, buf: str, i: int, final: bool) -> int:
        """Look for the end of a rejected block from ``buf[i]``; return where lexing continues."""
        rec = self._recovery
        assert rec is not None
        syntax = self.syntax
        best = -1
        resume = -1
        for marker in syntax.resync_after:
            j = self._find_marker(marker, buf, i)
            if j >= 0 and (best < 0 or j < best):
                best, resume = j, j + len(marker)
        for marker in syntax.resync_before:
            j = self._find_marker(marker, buf, i)
            if j >= 0 and (best < 0 or j < best):
                best, resume = j, j
        if best < 0:
            if not final:
                keep = max(i, len(buf) - self._resync_len + 1)
                rec.block.pieces.append(buf[i:keep])
                return keep
            resume = len(buf)
        rec.block.pieces.append(buf[i:resume])
        raw = "".join(rec.block.pieces)
        used = self._finish_recovery(raw)
        # Text after what the block covered is read again: from buf, or (where it arrived in an
        # earlier chunk) from raw, through _reread.
        start = rec.block.pos + used - self._base
        if start >= 0:
            return start
        self._reread = raw[used : used - start]
        return 0

    def _find_marker(self, marker: str, buf: str, i: int) -> int:
        """``buf.find(marker, i)``, remembering earlier searches so that no text is searched twice
        for the same marker (many broken blocks in a row must not cost O(n^2))."""
        here = self._base + i
        found, searched = self._marker_cache.get(marker, (-1, -1))
        if found >= here:
            return found - self._base
        start = i
        if found < 0 and searched > here:
            start = max(i, searched - self._base - len(marker) + 1)
        j = buf.find(marker, start)
        self.work += (j + len(marker) if j >= 0 else len(buf)) - start
        self._marker_cache[marker] = (self._base + j if j >= 0 else -1, self._base + len(buf))
        return j

    def _finish_recovery(self, raw: str) -> int:
        """Hand the rejected block to the builder; returns how much of ``raw`` it covered."""
        rec = self._recovery
        assert rec is not None
        self._recovery = None
        block = rec.block
        self._ps.state_stack[:] = block.states
        self._ps.value_stack[:] = block.values
        self._depth = block.depth
        handled = self._builder.recover(raw, block.pos, rec.error)
        used = self._builder.recovered(raw)
        if not handled:
            line, column = self.line_column(rec.error_pos)
            self.issue(
                "invalid_tool_call",
                f"tool call kept as content: {rec.error} at line {line}, column {column}",
                block.pos,
            )
            self._builder.on_text(CONTENT, block.lead + raw[:used], block.pos - len(block.lead))
        return used

    def _finish(self) -> None:
        """End of reply: close open structures (reporting each), recover a broken block, feed $END."""
        for _ in range(10_000):
            if self._recovery is not None:
                i = self._recover(self._buf, len(self._buf), True)
                self._buf, self._base = self._reread + self._buf[i:], self._base + i - len(self._reread)
                self._reread = ""
                self._run(final=True)  # what the block did not cover
                continue
            state = self._ps.state_stack[-1]
            if self._g.can_feed(self._ps.state_stack, "$END"):
                break
            if self._autoclose(self._base + len(self._buf), None):
                continue
            pos = self._base + len(self._buf)
            if not self._fail_block("reply ends inside a tool call", pos, self._g.expected(state)):
                raise AssertionError(f"grammar cannot end in state {state}")  # pragma: no cover
        self._ps.feed_token(Token("$END", "", start_pos=self._base + len(self._buf)), True)
