"""The ``harmony`` family: a reply as a sequence of messages, each a header naming its channel and a body.

gpt-oss writes (its markers as the example; a member's :class:`~codec.wire.WireSpec` gives its
own; the line breaks between messages are only for this page)::

    <|channel|>analysis<|message|>The user wants the weather.<|end|>
    <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>

or, for an answer, ``<|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>``. The
reply follows a prompt ending with ``<|start|>assistant``, so its first message has neither.

A member's spec sets:

* ``block``: what opens and closes a message (``<|start|>``, ``<|end|>``).
* ``stop``: what ends the reply's last message (``<|return|>``).
* ``call``: the recipient's keyword and what ends a call (``to=``, ``<|call|>``, which stops the
  model too: a generation holds at most one call).
* ``name``: the namespace a call's recipient names its tool in (``("functions.", "")``).
* ``header``: the channel, constrain and message tokens, then the assistant's role name
  (``<|channel|>``, ``<|constrain|>``, ``<|message|>``, ``assistant``).
* ``channels``: the reasoning, calls and content channels (``analysis``, ``commentary``, ``final``).
* ``special_tokens``: markers written as tokens in llguidance grammars.
* ``recover``: the deviations of :data:`RECOVERIES` the member's models make.

The body of a message whose header names a recipient is a call: its arguments, one JSON
object. Calls are read on every channel, the recipient in the role header (as templates write
past calls: ``<|start|>assistant to=functions.f<|channel|>commentary json<|message|>``) or after
the channel (as models generate them), the content type as ``<|constrain|>json``, `` json`` or
`` code``. Other bodies go where their channel says: reasoning, or content (the content channel,
and the calls channel's preambles). Read and reported: a message whose closer is missing before
the next one (``missing_closer``), a call closed by the message closer instead of its own
(``missing_closer``), text after a stop token (``text_after_stop``; more calls are
read as the calls they are), header words the family
does not know (``unknown_header``), a recipient outside the namespace (``foreign_recipient``: the
call is named by the recipient as written) and, where the spec recovers ``stripped_tokens``, a
reply decoded without its special tokens (``stripped_tokens``).

The grammar is ``grammars/wire/harmony.lark``; :meth:`Harmony.reply_text` writes the form models
generate (channel first, ``<|constrain|>json``), which is not the form templates give past calls.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from codec import jinja
from codec._lark import Token
from codec.errors import RenderError
from codec.export import EMPTY, CallSyntax, GrammarBuilder, JsonValues, Marker, alt, parameters_schema, seq
from codec.formats._calls import LiteralHandlers
from codec.formats._render import attr, is_sequence, iterate
from codec.literals import PLAIN_JSON_DECODER, json_value, nesting
from codec.schema import tool_name
from codec.sink import CONTENT, NEXT, REASONING, CallWriter, Sink
from codec.stream import MAX_DEPTH, Builder, BuildError, Syntax, ToolsByName, WholeReading
from codec.watch import Delimiter
from codec.wire import Family, WireSpec, family_grammar, lark_literal, regex_literal
from codec.wire._json_object_values import Repair, may_hold_surrogates, raw_decode, string_value, whole_characters

__all__ = ["FAMILY", "RECOVERIES", "Harmony", "Markers"]

#: The deviations a member may recover (its spec's ``recover``), by name.
RECOVERIES: dict[str, str] = {
    "stripped_tokens": (
        "a reply decoded without its special tokens: a channel's name glued to its text at the start "
        "(analysisTEXT), the role's name glued to the next channel's (assistantfinalTEXT), a call as "
        "assistantcommentary to=functions.f json{...}"
    ),
}
#: The content types a header may name (after ``<|constrain|>`` or a blank).
CONTENT_TYPES = ("json", "code")
#: Where a message's body goes, by the builder's own kind of text.
BODY = "body"


@dataclass(frozen=True)
class Markers:
    """The markers of one member, from its spec."""

    start: str
    end: str
    stop: str
    to: str
    call_end: str
    namespace: str
    channel: str
    constrain: str
    message: str
    role: str
    reasoning_channel: str
    calls_channel: str
    content_channel: str
    stripped: bool

    @classmethod
    def of(cls, spec: WireSpec) -> Markers:
        channel, constrain, message, role = spec.header
        reasoning, calls, content = spec.channels
        return cls(
            *spec.block,
            spec.stop,
            *spec.call,
            spec.name[0],
            channel,
            constrain,
            message,
            role,
            reasoning,
            calls,
            content,
            "stripped_tokens" in spec.recover,
        )

    @property
    def tokens(self) -> tuple[str, ...]:
        """Every token of the syntax: text stops before each."""
        return (self.start, self.end, self.stop, self.call_end, self.channel, self.constrain, self.message)

    @property
    def channels(self) -> tuple[str, str, str]:
        return (self.reasoning_channel, self.calls_channel, self.content_channel)

    def kind(self, channel: str | None) -> str:
        """Where the body of a text message on ``channel`` goes (no channel: the content)."""
        return REASONING if channel == self.reasoning_channel else CONTENT

    def call_head(self, name: str, *, to_first: bool = False, channel: str = "") -> str:
        """A call's header up to its body, as models generate it (``to_first``: as templates give
        past calls, the recipient in the role header)."""
        recipient = self.to + self.namespace + name
        channel = channel or self.calls_channel
        if to_first:
            return f"{self.start}{self.role} {recipient}{self.channel}{channel} json{self.message}"
        return f"{self.channel}{channel} {recipient} {self.constrain}json{self.message}"


# ---------------------------------------------------------------------------- the grammar's terminals

#: How far into a header (past its opener, and past its channel token) a recipient is looked for.
HEADER_REACH = 12
#: A regex that matches nothing (a stripped form's terminals, for a member that reads none).
NEVER = r"\x00(?!\x00)\x00"


def _text(tokens: tuple[str, ...], lookaheads: tuple[tuple[str, str], ...] = ()) -> str:
    """Text that starts none of ``tokens`` (nor, after each first character of ``lookaheads``,
    goes on with its regex): one or more characters, a regex without nested quantifiers."""
    rests: dict[str, list[str]] = {}
    for first, rest in lookaheads:
        rests.setdefault(first, []).append(rest)
    for token in tokens:
        rests.setdefault(token[0], []).append(regex_literal(token[1:]))
    starts = "".join(regex_literal(first) for first in rests)
    marks = "|".join(f"{regex_literal(first)}(?!{'|'.join(after)})" for first, after in rests.items())
    return f"(?:[^{starts}]+|{marks})+"


def grammar_values(m: Markers) -> tuple[tuple[str, str], ...]:
    """The values of ``grammars/wire/harmony.lark``'s placeholders for ``m``."""
    firsts = "".join(dict.fromkeys(regex_literal(token[0]) for token in m.tokens))
    channels = "|".join(regex_literal(channel) for channel in m.channels)
    to = regex_literal(m.to)
    near = f"[^{firsts}\\n]{{0,{HEADER_REACH}}}"  # the words a header may hold before a recipient
    if m.stripped:
        # (each glued pair spelled whole, so that it reads as one word of the markup)
        switch = "|".join(regex_literal(m.role + channel) for channel in m.channels)
        stripped_text = _text(m.tokens, ((m.role[0], regex_literal(m.role[1:]) + f"(?:{channels})"),))
        # A channel's name that text follows at once (a blank, a small letter or punctuation
        # after it is a word of prose), or the recipient of a call.
        s_open = f"(?:{channels})(?=[^\\s{firsts}a-z,.;:!?]|[ \\t]*{to})"
        s_call = f"[ \\t]*{to}[^\\s{{{firsts}]+(?:[ \\t]+[A-Za-z]+)?[ \\t]*(?=\\{{)"
    else:
        switch = stripped_text = s_open = s_call = NEVER
    return (
        ("TEXT", _text(m.tokens)),
        ("STRIPPED_TEXT", stripped_text),
        ("S_OPEN", s_open),
        ("S_SWITCH", switch),
        ("S_CALL", s_call),
        ("RECIPIENT0", f"[ \\t]*{to}[^\\s{firsts}]+(?=[ \\t]*{regex_literal(m.channel)})"),
        ("CALL_START", f"{regex_literal(m.start)}(?={near}(?:{regex_literal(m.channel)}{near})?{to})"),
        ("CALL_CHANNEL", f"{regex_literal(m.channel)}(?={near}{to})"),
        ("START", lark_literal(m.start)),
        ("END", lark_literal(m.end)),
        ("RETURN", lark_literal(m.stop)),
        ("CALL_END", lark_literal(m.call_end)),
        ("CHANNEL", lark_literal(m.channel)),
        ("CONSTRAIN", lark_literal(m.constrain)),
        ("MESSAGE", lark_literal(m.message)),
        ("RECIPIENT", f"{to}[^\\s{firsts}]+"),
        ("WORD", f"[^\\s{firsts}]+"),
        ("CONTENT_TYPE", "(?:" + "|".join(CONTENT_TYPES) + f")(?![^\\s{firsts}])"),
    )


# ---------------------------------------------------------------------------- the builder


@dataclass
class _Header:
    """What a message's header says: its channel, the recipient, the content type."""

    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None
    pos: int = 0


class HarmonyBuilder(LiteralHandlers, Builder):
    """Messages from the family grammar's reductions: bodies sent where their channel says, calls
    from the headers that name a recipient. A member's builder is a subclass whose ``markers``
    are its own (:func:`reply_syntax`)."""

    markers: ClassVar[Markers]

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._kind = CONTENT  # where the body being read goes
        self._header: _Header | None = None  # the header of the call being read
        self._call: CallWriter | None = None
        self._stopped = -1  # where a stop token ended the reply (-1: none yet)
        self._after_stop = False  # whether what follows it was reported
        self._stripped = False  # whether the stripped form was reported

    # text
    def on_text(self, kind: str, text: str, pos: int) -> None:
        if self._stopped >= 0:
            self._past_stop(pos)
        self.sink.text(self._kind if kind == BODY else kind, text, pos)

    def _past_stop(self, pos: int) -> None:
        if not self._after_stop:
            self._after_stop = True
            self.sink.issue("text_after_stop", "text after the stop token (kept)", pos)

    def _stop(self, token: Token) -> None:
        if self._stopped < 0:  # (a call after a call ends with a stop token of its own)
            self._stopped = token.start_pos

    def text(self, token: Token) -> None:
        pass  # (sent by on_text)

    def stray(self, token: Token) -> None:
        if token.type == "END":
            self.sink.issue("stray_closer", f"{token.value!r} with no message open, ignored", token.start_pos)
        else:
            self._stop(token)

    # headers
    def words(self, *children: Any) -> list[Token]:
        if isinstance(children[0], list):
            return [*children[0], *children[1:]]
        return list(children)

    def channel(self, token: Token, words: list[Token] | None = None) -> list[Token]:
        return [token, *(words or ())]

    def _read_header(self, children: tuple[Any, ...]) -> _Header:
        """A header's tokens in order, read: reported where one says what the family does not know."""
        m = self.markers
        tokens: list[Token] = []
        for child in children:
            tokens.extend(child if isinstance(child, list) else [child])
        header = _Header(pos=tokens[0].start_pos)
        where = "role"
        for token in tokens:
            kind = token.type
            if kind == "CHANNEL":
                where = "channel"
            elif kind == "CONSTRAIN":
                where = "constrain"
            elif kind in ("CALL_CHANNEL", "CALL_START"):
                where = "channel" if kind == "CALL_CHANNEL" else "role"
            elif kind in ("RECIPIENT", "RECIPIENT0"):
                header.recipient = token.value.strip()[len(m.to) :]
            elif kind in ("WORD", "CONTENT_TYPE"):
                word = token.value
                if where == "role" and word == m.role:
                    continue
                if where == "channel":
                    header.channel, where = word, "after"
                    if word not in m.channels:
                        self._unknown(token, "channel")
                    continue
                if (where == "constrain" or word in CONTENT_TYPES) and header.content_type is None:
                    header.content_type, where = word, "after"
                    continue
                self._unknown(token, "role" if where == "role" else "header word")
        return header

    def _unknown(self, token: Token, what: str) -> None:
        self.sink.issue(
            "unknown_header",
            f"unknown {what} {token.value!r} in a message's header, ignored",
            token.start_pos,
            token.value,
        )

    def head(self, *children: Any) -> None:
        header = self._read_header(children)
        self._kind = self.markers.kind(header.channel)

    def message(self, head: None, token: Token, *rest: Any) -> None:
        if rest[-1].type == "RETURN":
            self._stop(rest[-1])

    def open_message(self, *children: Any) -> None:
        pass  # (its body was sent as it came)

    # calls
    def call_head(self, *children: Any) -> None:
        header = self._read_header(children)
        self._named(header)

    def _named(self, header: _Header) -> None:
        m = self.markers
        recipient = header.recipient or ""
        if not recipient.startswith(m.namespace) or len(recipient) == len(m.namespace):
            message = f"a call addressed to {recipient!r}, outside {m.namespace!r}: named by its recipient"
            self.sink.issue("foreign_recipient", message, header.pos, recipient, call=NEXT)
        else:
            header.recipient = recipient[len(m.namespace) :]
        self._header = header

    def args_open(self, brace: Token) -> None:
        header = self._header
        if header is None or not header.recipient:
            raise BuildError("a call without a recipient", brace.start_pos)
        self._call = self.sink.call(header.recipient, header.pos)

    def arg(self, key: Token, colon: Token, value: Any) -> None:
        assert self._call is not None
        self._call.argument(self.string(key), value, key.start_pos)

    def call_end(self, token: Token) -> Token:
        return token

    def call(self, head: None, token: Token, args: None, end: Token) -> None:
        index = self._end_call()
        if end.type == "END":
            message = f"the call closed by {end.value!r}, where {self.markers.call_end!r} ends a call"
            self.sink.issue("missing_closer", message, end.start_pos, call=index)
        else:
            self._stop(end)

    def open_call(self, head: None, token: Token, args: None) -> None:
        self._end_call()

    def _end_call(self) -> int:
        call, self._call, self._header = self._call, None, None
        assert call is not None and call.index is not None
        call.end()
        return call.index

    def start_cut(self) -> None:
        header = self._header
        if self._call is None and header is not None and header.recipient:
            self._call = self.sink.call(header.recipient, header.pos)

    def recover(self, raw: str, pos: int, error: str) -> int | None:
        call, self._call, self._header = self._call, None, None
        if call is not None:
            call.cut(raw, error, pos)
            return len(raw)
        return None  # no arguments were read: the whole block is content

    def cut_head(self, head: None) -> None:
        header, self._header = self._header, None
        if header is not None and header.recipient:
            message = f"the reply ends inside the header of a call to {header.recipient!r}"
            self.sink.issue("truncated_call", message, header.pos, header.recipient, call=None)

    # replies decoded without their special tokens
    def s_open(self, token: Token) -> None:
        self._stripped_channel(token.value, token.start_pos)

    def s_switch(self, token: Token) -> None:
        self._stripped_channel(token.value[len(self.markers.role) :], token.start_pos)

    def _stripped_channel(self, channel: str, pos: int) -> None:
        if not self._stripped:
            self._stripped = True
            message = "the reply was decoded without its special tokens: read by its channels' names"
            self.sink.issue("stripped_tokens", message, pos)
        self._kind = self.markers.kind(channel)

    def s_call(self, token: Token) -> None:
        recipient = token.value.split()[0][len(self.markers.to) :]
        self._named(_Header(recipient=recipient, pos=token.start_pos))

    def stripped_message(self, *children: Any) -> None:
        pass

    def stripped_call(self, *children: Any) -> None:
        self._end_call()

    # values
    def string(self, token: Token) -> str:
        value = string_value(token)
        if "\\u" not in token:
            return value
        repairs: list[Repair] = []
        value = whole_characters(value, repairs)
        for kind, message, text in repairs:
            self.sink.issue(kind, message, token.start_pos, text)
        return value

    def number(self, token: Token) -> Any:
        try:
            return json_value(str(token))
        except ValueError as exc:
            raise BuildError(str(exc), token.start_pos) from None

    def array(self, *children: Any) -> list[Any]:
        return list(children[1:-1:2])  # [ value , value ... ]

    def pair(self, key: Token, colon: Token, value: Any) -> tuple[str, Any, int]:
        return self.string(key), value, key.start_pos

    def object(self, *children: Any) -> dict[str, Any]:
        return self.mapping(children[1:-1:2])  # { pair , pair ... }


class WholeReplies:
    """The whole-reply reader (``Syntax.whole``) of members with markers ``m``: replies in the shape
    :meth:`Harmony.reply_text` writes, read with C-speed searches and a JSON decoder. An analysis
    message maybe, then a preamble and calls, or the final message; each body free of the family's
    tokens' opening characters, each call's arguments a JSON object the grammar's rules read alike
    (no repeated key, no lone surrogate, no deeper nesting than the stream takes). None for
    anything else, which the grammar's path reads."""

    def __init__(self, m: Markers, text: re.Pattern[str]) -> None:
        self.m = m
        #: The grammar's TEXT, and what a reply of plain text must not start with: a header's
        #: words the stripped form (or a recipient before a channel) may read there.
        self.text = text
        self.plain_starts = (*m.channels, m.role, m.to)
        self.next = m.start + m.role + m.channel
        self.call_head = f"{m.calls_channel} {m.to}{m.namespace}"
        self.call_tail = f" {m.constrain}json{m.message}"
        #: What a body must not hold: where one of the tokens may start.
        self.marks = tuple(dict.fromkeys(token[:2] for token in m.tokens))

    def _marked(self, body: str) -> bool:
        return any(mark in body for mark in self.marks)

    def _body(self, text: str, pos: int, closers: tuple[str, ...]) -> tuple[str, int] | None:
        """The body at ``pos`` up to the first of ``closers`` (None: none, or it holds a token's start)."""
        ends = [at for at in (text.find(closer, pos) for closer in closers) if at >= 0]
        end = min(ends) if ends else -1
        body = text[pos:end] if end >= 0 else None
        return None if body is None or self._marked(body) else (body, end)

    def _plain(self, text: str) -> WholeReading | None:
        """A reply of text alone (then maybe the stop token): content, where it is one run of the
        grammar's TEXT that starts with no blank and none of a header's words and holds no
        recipient (which a header may be read around)."""
        m = self.m
        end = len(text) - len(m.stop) if text.endswith(m.stop) else len(text)
        if not end or text[0].isspace() or text.startswith(self.plain_starts) or m.to in text:
            return None
        found = self.text.match(text)
        return (text[:end], "", []) if found is not None and found.end() == end else None

    def __call__(self, text: str, tools: ToolsByName | None) -> WholeReading | None:
        m = self.m
        if not text.startswith(m.channel):
            return self._plain(text)
        pos, reasoning, content = len(m.channel), "", ""
        head = m.reasoning_channel + m.message
        if text.startswith(head, pos):
            got = self._body(text, pos + len(head), (m.end,))
            if got is None or not text.startswith(self.next, got[1] + len(m.end)):
                return None
            reasoning, pos = got[0], got[1] + len(m.end) + len(self.next)
        final = m.content_channel + m.message
        if text.startswith(final, pos):
            start, end = pos + len(final), len(text) - len(m.stop) if text.endswith(m.stop) else len(text)
            body = text[start:end]
            return None if self._marked(body) else (body, reasoning, [])
        preamble = m.calls_channel + m.message
        if text.startswith(preamble, pos):
            got = self._body(text, pos + len(preamble), (m.end,))
            if got is None or not text.startswith(self.next, got[1] + len(m.end)):
                return None
            content, pos = got[0], got[1] + len(m.end) + len(self.next)
        calls: list[tuple[str, dict[str, Any]]] = []
        while True:
            if not text.startswith(self.call_head, pos):
                return None
            start = pos + len(self.call_head)
            end = text.find(self.call_tail, start)
            name = text[start:end] if end >= 0 else ""
            if not name or any(c.isspace() or c == m.start[0] for c in name):
                return None
            pos = end + len(self.call_tail)
            try:
                arguments, pos = raw_decode(PLAIN_JSON_DECODER, text, pos)
            except (ValueError, RecursionError):
                return None
            if not isinstance(arguments, dict) or may_hold_surrogates(text, end, pos) or nesting(arguments) > MAX_DEPTH:
                return None
            calls.append((name, arguments))
            if pos == len(text):
                return content, reasoning, calls
            if not text.startswith(m.call_end, pos):
                return None
            pos += len(m.call_end)
            if pos == len(text):
                return content, reasoning, calls
            if not text.startswith(self.next, pos):
                return None
            pos += len(self.next)


@functools.cache
def reply_syntax(m: Markers) -> Syntax:
    """The reply syntax of members with markers ``m`` (built once per markers)."""
    builder = type("HarmonyBuilder", (HarmonyBuilder,), {"markers": m, "__module__": __name__})
    longest = max(len(token) for token in (*m.tokens, m.role + max(m.channels, key=len)))
    # (In the stripped form, the role's name glued to a channel's may start inside text.)
    starts = [token[0] for token in m.tokens] + ([m.role[0]] if m.stripped else [])
    grammar = family_grammar("wire/harmony", grammar_values(m))
    return Syntax(
        grammar=grammar,
        builder=builder,
        text_terminals={"TEXT": CONTENT, "BODY": BODY, "S_BODY": BODY},
        blocks={"CALL_START": None, "CALL_CHANNEL": None, "RECIPIENT0": None, "S_CALL": None},
        # A message's closer, missing before the next message (a call's own first).
        autoclose={"RBRACK": "]", "RBRACE": "}", "CALL_END": m.call_end, "END": m.end},
        autoclose_before=frozenset(
            {"START", "CALL_START", "CHANNEL", "CALL_CHANNEL", "RECIPIENT0", "END", "RETURN", "CALL_END"}
        ),
        resync_after=(m.call_end,),
        resync_before=(m.start, m.end, m.stop),
        delimiters=(Delimiter('"', '"', "\\"),),
        closed_terminals=frozenset(
            # (not START nor CHANNEL: a call's first token spells them, told by what follows)
            {"STRING", "END", "RETURN", "CALL_END", "CONSTRAIN", "MESSAGE"}
            | {"LBRACE", "RBRACE", "LBRACK", "RBRACK", "COMMA", "COLON"}
        ),
        # The lookahead of a call's first token reaches past its channel token and two stretches of words.
        holdback=max(40, longest + 8, len(m.start) + len(m.channel) + 2 * HEADER_REACH + len(m.to) + 1),
        marker_starts="".join(dict.fromkeys([*starts, "\n"])),
        nest_open=frozenset({"LBRACE", "LBRACK"}),
        nest_close=frozenset({"RBRACE", "RBRACK"}),
        # A stripped reply's first channel name, and a recipient written before the first
        # message's channel, outrank the text they start.
        preempt_starts="".join(dict.fromkeys([" ", "\t", m.to[0], *(c[0] for c in m.channels)])),
        whole=WholeReplies(m, grammar.pattern("TEXT")),
    )


# ---------------------------------------------------------------------------- the family


class Harmony(Family):
    """The ``harmony`` family compiled from a spec: its reply syntax, renderer, export and markers."""

    name = "harmony"
    parameters = frozenset({"block", "stop", "call", "name", "header", "channels", "special_tokens", "recover"})
    content_style = "json"

    def __init__(self, spec: WireSpec) -> None:
        super().__init__(spec)
        self.markers = Markers.of(spec)

    @classmethod
    def check(cls, spec: WireSpec) -> None:
        """Refuse what the family cannot read: a spec without its message, call, header and
        channel markers, or with a recovery it does not know."""
        super().check(spec)
        if not (all(spec.block) and spec.stop and all(spec.call)):
            raise ValueError(
                "a harmony spec needs a message opener and closer, a stop token, a recipient keyword and a call closer"
            )
        if len(spec.header) != 4 or not all(spec.header) or len(spec.channels) != 3 or not all(spec.channels):
            raise ValueError(
                "a harmony spec's header is its channel, constrain and message tokens and the role;"
                " its channels are three names"
            )
        unknown = sorted(set(spec.recover) - set(RECOVERIES))
        if unknown:
            known = ", ".join(RECOVERIES)
            raise ValueError(f"the harmony family does not recover {', '.join(unknown)}; it knows {known}")

    def syntax(self) -> Syntax:
        return reply_syntax(self.markers)

    def reply_text(self, message: dict[str, Any]) -> str:
        """What the model generates after the generation prompt (``<|start|>assistant``): the
        reasoning as an ``analysis`` message, then the content (a ``commentary`` preamble before a
        call, else the ``final`` message, ended by the stop token), then the call, channel first
        with ``<|constrain|>json``, ended by ``<|call|>``; every message but the first opens with
        ``<|start|>assistant``. The model stops at a call's closer, so a generation holds one call:
        more are written one after the other, as several turns would write them (and read back as
        the calls they are: only text after a stop token is reported)."""
        m = self.markers
        out: list[str] = []

        def add(channel: str, text: str, closer: str) -> None:
            out.append((m.start + m.role if out else "") + f"{m.channel}{channel}{m.message}{text}{closer}")

        reasoning = message.get("reasoning") or message.get("reasoning_content") or message.get("thinking")
        if isinstance(reasoning, str) and reasoning:
            add(m.reasoning_channel, reasoning, m.end)
        content = _content(attr(message, "content"))
        calls = attr(message, "tool_calls")
        calls = list(iterate(calls)) if calls else []
        if not calls:
            add(m.content_channel, content, m.stop)
            return "".join(out)
        if content:
            add(m.calls_channel, content, m.end)
        for call in calls:
            name, arguments = _call_parts(call)
            out.append((m.start + m.role if out else "") + m.call_head(name) + arguments + m.call_end)
        return "".join(out)

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        """Replies as :meth:`reply_text` writes them, from the first message's channel token on:
        an ``analysis`` message maybe, then either a call (maybe after a ``commentary`` preamble),
        channel first with ``<|constrain|>json`` and the arguments as JSON constrained by the
        tool's parameters (the server stops at ``<|call|>``), or the ``final`` message (the server
        stops at ``<|return|>``), the reply's ``content``. Every message after the first opens with
        ``<|start|>assistant``."""
        m = self.markers
        values = JsonValues(builder)
        generated, written = [], []
        for tool in tools:
            arguments = values.value(parameters_schema(tool))
            name = f"{m.namespace}{tool_name(tool)}"
            generated.append(seq(f"{name} ", Marker(m.constrain), "json", Marker(m.message), arguments))
            written.append(seq(name, Marker(m.channel), f"{m.calls_channel} json", Marker(m.message), arguments))
        # A call as models generate it (after its channel token), and as the template writes past
        # calls (recipient first, after the role's name): a grammar holds the template's turns too.
        call = seq(f"{m.calls_channel} {m.to}", builder.rule("call", alt(*generated))) if tools else EMPTY
        past = builder.rule("past_call", alt(*written)) if tools else EMPTY
        ends = (m.end, m.call_end, m.stop)
        closed = builder.head(builder.text(ends), m.end)
        reasoning = seq(m.reasoning_channel, Marker(m.message), closed)
        preamble = seq(m.calls_channel, Marker(m.message), closed)
        final = seq(m.content_channel, Marker(m.message), builder.text(ends))
        again = seq(Marker(m.start), m.role, Marker(m.channel))
        next_call = alt(seq(again, call), seq(Marker(m.start), f"{m.role} {m.to}", past))
        calls = alt(seq(preamble, next_call), call)
        return CallSyntax(
            triggers=(
                (m.channel, alt(seq(reasoning, alt(seq(again, calls), next_call)), calls)),
                (" " + m.to, past),
            ),
            more=seq(Marker(m.call_end), next_call),
            stops=(m.call_end, m.stop),
            # (bare text too: what a reply with no markup at all reads as; not a recipient, which
            # would start a call written recipient first)
            content=alt(
                builder.text((*m.tokens, " " + m.to)),
                seq(Marker(m.channel), alt(seq(reasoning, again, final), final)),
            ),
        )

    def schema_tag(self, name: str) -> tuple[str, str] | None:
        """The call's header as :meth:`reply_text` writes it before its arguments, and its closer."""
        return self.markers.call_head(name), self.markers.call_end

    def reply_markers(self) -> tuple[str, ...]:
        m = self.markers
        found: tuple[str, ...] = (re.escape(m.channel) + r"\w+[ \t]+" + re.escape(m.to), re.escape(m.role + " " + m.to))
        if m.stripped:  # a call decoded without its special tokens
            found += (re.escape(m.role + m.calls_channel + " " + m.to),)
        return found


FAMILY = Harmony


def _content(content: Any) -> str:
    """An assistant message's content as the model writes it: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if not is_sequence(content):
        return ""
    return "".join(str(attr(part, "text")) for part in iterate(content) if attr(part, "type") == "text")


def _call_parts(call: Any) -> tuple[str, str]:
    """A tool call's name and its arguments' JSON text."""
    function = attr(call, "function")
    function = function if isinstance(function, dict) else call
    name = function.get("name") if isinstance(function, dict) else None
    arguments = function.get("arguments") if isinstance(function, dict) else None
    if not isinstance(name, str) or not name:
        raise RenderError("a tool call needs a name")
    return name, arguments if isinstance(arguments, str) else jinja.tojson(arguments if arguments is not None else {})
