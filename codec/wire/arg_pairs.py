"""The ``arg_pairs`` family: the call opener glued to the function's name, a key tag and a value tag per argument.

A reply, as glm4_6 writes it (the markers are its spec's)::

    <think>The user wants the weather.</think>
    Let me check.
    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>São Paulo</arg_value>
    <arg_key>days</arg_key>
    <arg_value>3</arg_value>
    </tool_call><|observation|>

A spec gives the call's opener and closer (``call``), the argument tags (``parameter``: the key's
opener, the key's closer and the value's closer ``</TAG>``, whose opener ``<TAG>`` is implied),
the stop token (and, as ``block``'s closer, what ends a turn's calls where that is another
marker, as GLM's ``<|observation|>``), the reasoning markers, what the renderer writes between two calls
(``separator``: also between the content and the first call) and before each tag of a call after
its name (``argument_separator``: glm4_6's line break, nothing for glm4_7), and between a key and
its value where that differs (``value_separator``: GLM-4.5's line break there alone). Values are
``values="text"``: a string raw, anything else as JSON; the builder types each by the tool's
schema. Every marker is a tag: it starts with ``<``, which free text stops at.

How a value is typed (docs/formats.md, "glm4_6"):

* with a schema that declares types, by those types (:func:`~codec.schema.type_text`): a string
  stays the text exactly (``02134`` stays ``"02134"``), an integer parameter gives an integer,
  objects and arrays are JSON or Python literals; a value that fits only once its backslash
  escapes are decoded (``{\\"a\\": 1}`` for an object) is read so and reported (``escaped_string``);
* without one (no tools, an undeclared tool or parameter, a schema without a type), a value that
  reads as a JSON value other than a string is that value (``3``, ``true``, ``{"a": 1}``), and
  any other text is the string it is.

Replies are read by ``grammars/wire/arg_pairs.lark`` (filled in from the spec by
:func:`grammar_values`) and :class:`ArgPairsBuilder`, which also take what real models write
instead: a value or a key without its opener, a key glued to the function's name (split at the
longest declared tool name), closers written again, a value closer with no value.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from codec._lark import Token
from codec.formats._calls import ProseText, reads_as_text
from codec.formats._render import attr, concat, defined, is_iterable, is_mapping, items, string, value_text
from codec.schema import declared_types, tool_parameters, type_text
from codec.stream import Builder, BuildError
from codec.wire import Family, WireSpec, family_grammar, lark_literal, regex_literal
from codec.wire._xml_params_builder import schema_properties

if TYPE_CHECKING:
    from codec._lark import CompiledGrammar
    from codec.export import CallSyntax, GrammarBuilder
    from codec.sink import CallWriter, Sink
    from codec.stream import Syntax, ToolsByName, WholeReading

__all__ = ["FAMILY", "ArgPairs", "ArgPairsBuilder", "Tags", "content_text", "reply_syntax"]

#: Text kind of the value terminals: the builder types the value, or streams it as a string.
VALUE = "value"
#: The longest name (or key written without its opener) the grammar reads before a key closer.
NAME_LIMIT = 64


# ---------------------------------------------------------------------------- the markers of a spec


@dataclass(frozen=True)
class Tags:
    """A member's markers, as its spec gives them (and the value opener they imply): what the
    grammar, the builder, the renderer and the export write and read.

    Hashable: the reply syntax is built once per distinct set (:func:`reply_syntax`)."""

    call_open: str
    call_close: str
    stop: str
    #: What ends a turn's calls where it is not the stop token (GLM's ``<|observation|>``), or "".
    calls_close: str
    think_open: str
    think_close: str
    key_open: str
    key_close: str
    #: ``<TAG>`` for a value closer ``</TAG>``.
    value_open: str
    value_close: str
    #: What the renderer writes between calls, and before each tag of a call after its name.
    separator: str
    spacing: str
    #: What the renderer writes between a key's closer and its value's opener.
    value_spacing: str

    @classmethod
    def of(cls, spec: WireSpec) -> Tags:
        """The markers of ``spec`` (checked by :meth:`ArgPairs.check`)."""
        assert spec.reasoning is not None
        key_open, key_close, value_close = spec.parameter
        return cls(
            call_open=spec.call[0],
            call_close=spec.call[1],
            stop=spec.stop,
            calls_close=spec.block[1],
            think_open=spec.reasoning[0],
            think_close=spec.reasoning[1],
            key_open=key_open,
            key_close=key_close,
            value_open="<" + value_close[2:],
            value_close=value_close,
            separator=spec.separator,
            spacing=spec.argument_separator,
            value_spacing=spec.argument_separator if spec.value_separator is None else spec.value_separator,
        )

    @functools.cached_property
    def ends(self) -> tuple[str, ...]:
        """What ends a reply: the stop token, and what ends a turn's calls where that differs."""
        return tuple(marker for marker in (self.stop, self.calls_close) if marker)

    @functools.cached_property
    def holdback(self) -> int:
        """Characters that must follow a token before it is committed: longer than the grammar's
        longest lookahead (a key tag that stops a value, a call closer and what confirms it, a
        closer and its repeats, a name and the key closer glued to it), and a margin."""
        lookaheads = (
            1 + len(self.key_open) + NAME_LIMIT + len(self.key_close),
            len(self.value_close) + 32 + NAME_LIMIT + len(self.key_close),  # a closer and what confirms it
            len(self.call_close) + 16 + max(len(self.call_open), *map(len, self.ends)),
            # a call opener and the name and tag that confirm it
            1 + len(self.call_open) + 16 + NAME_LIMIT + max(len(self.value_close), len(self.call_close)) + 1,
            NAME_LIMIT + len(self.key_close),
        )
        return max(lookaheads) + 16


def grammar_values(tags: Tags) -> tuple[tuple[str, str], ...]:
    """The values of ``grammars/wire/arg_pairs.lark``'s placeholders for ``tags``: the markers as
    regex source (``_TAIL``: without the ``<`` a lookahead after a ``<`` has already read), as lark
    strings (``_STRING``), and what a value stops before."""
    r = regex_literal

    def tail(marker: str) -> str:
        return r(marker[1:])

    stops = "(?:" + "|".join(r(end) for end in tags.ends) + ")"
    # What confirms a call opener (after up to four blanks): a name (no blank in it) that a key tag,
    # a value tag or closer or the call's closer follows after up to four blanks, or a name
    # glued to a key and its closer; at the end of what has arrived, a name so far or nothing.
    # Prose that mentions the opener stays text.
    few = r"(?:[ \t\r\n]|\\n){0,4}"
    tag = "(?:" + "|".join(map(r, (tags.key_open, tags.value_open, tags.call_close, tags.value_close))) + ")"
    call_next = (
        rf"{few}(?:[^\s<]{{1,{NAME_LIMIT}}}?{few}{tag}|[^<\n]{{1,{NAME_LIMIT}}}{r(tags.key_close)}"
        rf"|[A-Za-z_][\w.\-]{{0,{NAME_LIMIT - 1}}}\Z|\Z)"
    )
    stop_tails = "(?:" + "|".join(tail(end) for end in tags.ends) + ")"

    # After a value's '<': its closer where what follows confirms it, a key tag that a key and its
    # closer follow, a call closer that the end of the reply, the next call or the stop token
    # follows, the stop token.
    blanks = r"(?:[ \t\r\n]|\\n){0,16}"
    confirmed = "|".join(
        (
            r(tags.key_open),
            r(tags.call_close),
            r(tags.value_close),
            stops,
            rf"[^<\n]{{1,{NAME_LIMIT}}}{r(tags.key_close)}",
            r"\Z",
        )
    )
    value_stops = "|".join(
        (
            rf"{tail(tags.value_close)}(?={blanks}(?:{confirmed}))",
            rf"{tail(tags.key_open)}[^<\n]{{0,{NAME_LIMIT}}}{r(tags.key_close)}",
            rf"{tail(tags.call_close)}(?=[ \t\r\n]{{0,16}}(?:{r(tags.call_open)}|{stops}|\Z))",
            stop_tails,
        )
    )
    return (
        ("CALL_OPEN", r(tags.call_open)),
        ("CALL_OPEN_TAIL", tail(tags.call_open)),
        ("CALL_NEXT", call_next),
        ("CALL_CLOSE_TAIL", tail(tags.call_close)),
        ("CALL_CLOSE", r(tags.call_close)),
        ("KEY_OPEN", r(tags.key_open)),
        ("KEY_CLOSE", r(tags.key_close)),
        ("KEY_CLOSE_STRING", lark_literal(tags.key_close)),
        ("VALUE_OPEN_STRING", lark_literal(tags.value_open)),
        ("VALUE_CLOSE_STRING", lark_literal(tags.value_close)),
        ("VALUE_STOPS", value_stops),
        ("STOP_TAIL", stop_tails),
        ("STOP_STRING", lark_literal(tags.stop)),
        ("CALLS_CLOSE_STRING", lark_literal(tags.calls_close) if tags.calls_close else "/(?!)./"),
        ("THINK_OPEN", r(tags.think_open)),
        ("THINK_CLOSE", r(tags.think_close)),
        ("THINK_CLOSE_TAIL", tail(tags.think_close)),
    )


# ---------------------------------------------------------------------------- parse


class _Param:
    """The argument being read: a string streams as it arrives; any other value is read whole."""

    __slots__ = ("name", "pos", "raw", "schema", "streams")

    def __init__(self, name: str, pos: int, schema: Any, streams: bool) -> None:
        self.name = name
        self.pos = pos
        self.schema = schema
        self.streams = streams
        self.raw: list[str] = []  # a value's text so far, where it does not stream


def _repeats(text: str, closer: str) -> int:
    """How many times ``closer`` is written at the end of a token that holds it and its repeats."""
    return text.count(closer) - 1


class ArgPairsBuilder(Builder):
    """Builds calls from the arg_pairs grammar, typing each value by the tool's schema.

    A member's builder is a subclass whose :attr:`tags` are its spec's (:func:`reply_syntax`)."""

    #: The member's markers.
    tags: ClassVar[Tags]

    def __init__(self, sink: Sink) -> None:
        super().__init__(sink)
        self._call: CallWriter | None = None
        self._key: tuple[str, int] | None = None  # the key read, whose value comes next
        self._param: _Param | None = None
        self._after_call = False  # a call just closed, and nothing but blanks came since

    # ---- the call's head and end

    def head(self, token: Token) -> None:
        self._after_call = False
        name = str(token).strip()
        self._call = self.sink.call(name, token.start_pos)

    def glued(self, token: Token) -> None:
        """A name with the first key glued to it, the key's opener missing: split at the longest
        declared tool name that leaves a key."""
        self._after_call = False
        tags, text, pos = self.tags, str(token), token.start_pos
        body = text[: len(text) - len(tags.key_close)]
        name = self._declared_prefix(body)
        if name is None:
            raise BuildError(f"{body!r} before {tags.key_close!r}: no declared tool name starts it", pos)
        self._call = self.sink.call(name, pos)
        key = body[len(name) :].strip()
        message = f"key {key!r} glued to the name {name!r}, without {tags.key_open!r}"
        self.sink.issue("missing_opener", message, pos + len(name))
        self._key = (key, pos + len(name))

    def _declared_prefix(self, body: str) -> str | None:
        """The longest name of a declared tool that starts ``body`` and leaves a key after it (None
        without tools: nothing tells where the name ends)."""
        sink = self.sink
        if not sink.undeclared(""):  # no tools given: every name would be "declared"
            return None
        for end in range(len(body) - 1, 0, -1):
            if body[end:].strip() and not sink.undeclared(body[:end]):
                return body[:end]
        return None

    def call(self, *children: Token) -> None:
        call, self._call = self._call, None
        assert call is not None
        call.end()
        self._after_call = True

    def on_text(self, kind: str, text: str, pos: int) -> None:
        if text.strip():
            self._after_call = False
        if kind != VALUE:
            super().on_text(kind, text, pos)
            return
        self._value(text, pos)

    def stop(self, token: Token) -> None:
        self._after_call = False
        super().stop(token)

    def orphan_close(self, token: Token) -> None:
        closer, opener = self.tags.call_close, self.tags.call_open
        if self._after_call:  # nothing but blanks since the call's own closer
            self.sink.issue("stray_closer", f"{closer!r} written again, ignored", token.start_pos, str(token))
            return
        self.sink.issue("orphan_closer", f"{closer} without {opener}, ignored", token.start_pos, str(token))

    def stray(self, token: Token) -> None:
        self.sink.issue("stray_closer", f"{str(token)!r} with no value open, ignored", token.start_pos, str(token))

    # ---- arguments

    def key(self, token: Token) -> None:
        tags, text = self.tags, str(token)
        start = len(tags.key_open)
        self._key = (text[start : text.index(tags.key_close, start)].strip(), token.start_pos)

    def key_bare(self, token: Token) -> None:
        tags, text = self.tags, str(token)
        self._key = (text[: text.index(tags.key_close)].strip(), token.start_pos)
        self.sink.issue("missing_opener", f"key {self._key[0]!r} without {tags.key_open!r}", token.start_pos)

    def key_closer_again(self, key: None, token: Token) -> None:
        closer = self.tags.key_close
        self.sink.issue("stray_closer", f"{closer!r} written again, ignored", token.start_pos, str(token))

    def value_open(self, token: Token) -> None:
        self._begin(token.start_pos)

    def _begin(self, pos: int) -> None:
        call, key = self._call, self._key
        assert call is not None and key is not None
        self._key = None
        properties = schema_properties(self.sink.tool_schema(call.name or ""))
        schema = properties.get(key[0]) if properties is not None else None
        streams = declared_types(schema) == ["string"]
        self._param = _Param(key[0], key[1], schema, streams)
        if streams:
            call.string_start(key[0], key[1])

    def _value(self, text: str, pos: int) -> None:
        """The next characters of the value being read (at offset ``pos``)."""
        if self._param is None:  # LOOSE_VALUE: the value's opener is missing
            message = f"value of {self._key[0] if self._key else ''!r} without {self.tags.value_open!r}"
            self.sink.issue("missing_opener", message, pos)
            self._begin(pos)
        param, call = self._param, self._call
        assert param is not None and call is not None
        if param.streams:
            call.string_more(text)
        else:
            param.raw.append(text)

    def value(self, *children: Any) -> None:
        self._end(children[-1])

    def loose_value(self, *children: Any) -> None:
        self._end(children[-1])

    def _end(self, closer: Token) -> None:
        param, call = self._param, self._call
        assert param is not None and call is not None
        self._param = None
        if param.streams:
            call.string_end()
            return
        call.argument(param.name, self._typed(param, "".join(param.raw)), param.pos)

    def _typed(self, param: _Param, raw: str) -> Any:
        """A value that does not stream, from its text: by its schema's types, else as JSON where
        it reads as a non-string JSON value, else the text."""
        if not declared_types(param.schema):
            return _untyped(raw)
        value, problem = type_text(raw, param.schema)
        if problem is not None and "\\" in raw:
            unescaped = _unescaped(raw)
            if unescaped is not None:
                again, still = type_text(unescaped, param.schema)
                if still is None:
                    message = f"argument {param.name!r}: read with its backslash escapes decoded"
                    self.sink.issue("escaped_string", message, param.pos)
                    return again
        if value is None and problem is not None:
            self.sink.issue("null_value", f"argument {param.name!r}: {problem}", param.pos)
        return value

    def recover(self, raw: str, pos: int, error: str) -> int | None:
        call = self._call
        self._call, self._param, self._key = None, None, None
        if call is None:
            return None
        call.cut(raw, error, pos)  # a string value being read keeps what was already sent of it
        return len(raw)


def _untyped(raw: str) -> Any:
    """A value without a declared type: the JSON value other than a string that it reads as, else the text."""
    from codec.literals import json_value

    try:
        value = json_value(raw.strip())
    except ValueError:
        return raw
    return raw if isinstance(value, str) else value


def _unescaped(raw: str) -> str | None:
    """``raw`` with its backslash escapes decoded as a JSON string's (None where it is no such string's text)."""
    try:
        value = json.loads(f'"{raw}"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class _WholeShape:
    """What :func:`whole_reply` matches, for one set of markers."""

    tags: Tags
    block: re.Pattern[str]
    pair: re.Pattern[str]
    #: The grammar's first free text (TEXT_FIRST), and reasoning's markers (which the stream acts
    #: on beyond it): prose the reader may take with markup.
    prose_text: ProseText

    @classmethod
    def of(cls, tags: Tags, grammar: CompiledGrammar) -> _WholeShape:
        r = regex_literal
        # Names and keys within the grammar's bounds; values one whole run of the grammar's own
        # VALUE (atomic: where the rules stop a value's text, so does the reader), or empty.
        name, key = rf"[A-Za-z_][\w.\-]{{0,{NAME_LIMIT - 1}}}", r"[A-Za-z_][\w.\-]{0,255}"
        value = f"((?>{grammar.pattern('VALUE').pattern})?)"
        pair = rf"\n?{r(tags.key_open)}({key}){r(tags.key_close)}\n?{r(tags.value_open)}{value}{r(tags.value_close)}"
        block = rf"{r(tags.call_open)}({name})((?:{pair})*)\n?{r(tags.call_close)}"
        prose_text = ProseText(grammar.pattern("TEXT_FIRST"), (tags.think_open, tags.think_close))
        return cls(tags, re.compile(block), re.compile(pair), prose_text)


def whole_reply(shape: _WholeShape, text: str, tools: ToolsByName | None) -> WholeReading | None:
    """A whole reply in the renderers' shape, read at once (see ``Syntax.whole``): prose starting
    with no blank and holding no ``<`` or one run of the grammar's first text (no reasoning
    marker among it), then call blocks (a line break or nothing between them and
    their tags) whose values are each one run of the grammar's VALUE (markup the rules read as
    text among it), typed as the builder types them with nothing to report,
    then nothing or the reply's end marker; anything else (reasoning among it) is the grammar's."""
    tags = shape.tags
    end = len(text)
    for marker in tags.ends:
        if text.endswith(marker):
            end -= len(marker)
            break
    first = text.find(tags.call_open, 0, end)
    prose = text[: end if first < 0 else first]
    if prose[:1].isspace():
        return None
    if first >= 0 and prose.endswith("\n"):  # the line break before a call is layout
        prose = prose[:-1]
    if "<" in prose and not reads_as_text(text, 0, prose, shape.prose_text):
        return None
    if first < 0:
        return prose, "", []
    calls: list[tuple[str, dict[str, Any]]] = []
    pos = first
    while True:
        block = shape.block.match(text, pos)
        if block is None:
            return None
        name = block.group(1)
        properties = schema_properties(tool_parameters(tools[name]) if tools is not None and name in tools else None)
        arguments: dict[str, Any] = {}
        at, pairs_end = block.start(2), block.end(2)
        while at < pairs_end:
            # (Matched in the whole text: VALUE's lookaheads see what follows the value.)
            pair = shape.pair.match(text, at)
            if pair is None or pair.end() > pairs_end:
                return None
            at = pair.end()
            key, raw = pair.groups()
            schema = properties.get(key) if properties is not None else None
            if key in arguments:
                return None
            if not declared_types(schema):
                arguments[key] = _untyped(raw)
                continue
            value, problem = type_text(raw, schema)
            if problem is not None:
                return None
            arguments[key] = value
        calls.append((name, arguments))
        pos = block.end()
        if pos == end:
            return prose, "", calls
        if text.startswith("\n", pos):
            pos += 1


@functools.cache
def reply_syntax(tags: Tags) -> Syntax:
    """The reply syntax of members with these markers: the grammar, the builder and how the stream
    reads them (built once per set of markers, so that members whose replies parse alike share it)."""
    from codec.sink import CONTENT, REASONING
    from codec.stream import Syntax
    from codec.watch import Delimiter

    grammar = family_grammar("wire/arg_pairs", grammar_values(tags))
    builder = type("ArgPairsBuilder", (ArgPairsBuilder,), {"tags": tags, "__module__": ArgPairsBuilder.__module__})
    think_open = tags.think_open
    return Syntax(
        grammar=grammar,
        builder=builder,
        text_terminals={
            "TEXT": CONTENT,
            "TEXT_FIRST": CONTENT,
            "THOUGHT": REASONING,
            "VALUE": VALUE,
            "LOOSE_VALUE": VALUE,
        },
        blocks={"CALL_OPEN": "CALL_CLOSE"},
        # The call's closer first: where a call may end, a value closer would be a stray one.
        autoclose={"CALL_CLOSE": tags.call_close, "VALUE_CLOSE": tags.value_close, "THINK_CLOSE": tags.think_close},
        reasoning_closer="THINK_CLOSE",
        autoclose_before=frozenset({"KEY", "CALL_CLOSE", "CALL_OPEN", "STOP", "CALLS_CLOSE"}),
        resync_after=(tags.call_close,),
        resync_before=(tags.call_open, *tags.ends),
        # A reply cut inside the next argument keeps the finished ones, and one cut after the
        # name keeps the call.
        settle_rejected_blocks=True,
        # A key may be long: the watch follows it to its closer across chunks.
        delimiters=(Delimiter(tags.key_open, tags.key_close),),
        # Each ends in its own closer, which nothing can extend.
        closed_terminals=frozenset({"KEY", "KEY_BARE", "NAME_KEY", "CALL_CLOSE"}),
        holdback=tags.holdback,
        # A backslash too: blanks the grammar ignores may be an escaped line break ("\\n"), which
        # a value's text after a key's closer must not take before it is whole.
        marker_starts="<\n\\",
        reasoning_open="THINK_OPEN",
        preempt_starts=" \t\r\n<",
        prompt_opens_reasoning=lambda prompt: prompt.rstrip().endswith(think_open),
        # Without a prompt, "...</think>" before any call or stop token: the prompt opened it.
        reasoning_close=tags.think_close,
        reasoning_not_opened=(tags.think_open, tags.call_open, *tags.ends),
        whole=functools.partial(whole_reply, _WholeShape.of(tags, grammar)),
    )


# ---------------------------------------------------------------------------- reply


def content_text(content: Any) -> str:
    """A message's content as a reply writes it: text, or its text parts (and strings) joined, trimmed;
    other parts give nothing, and absent content is empty."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content.strip()
    if is_iterable(content) and not is_mapping(content):
        parts = []
        for item in content:
            if is_mapping(item) and attr(item, "type") == "text":
                parts.append(string(attr(item, "text")))
            elif isinstance(item, str):
                parts.append(item)
        return "".join(parts).strip()
    return string(content).strip()


# ---------------------------------------------------------------------------- the family


class ArgPairs(Family):
    """The ``arg_pairs`` family compiled for one spec: its markers are :attr:`tags`."""

    name = "arg_pairs"
    parameters = frozenset(
        {
            "call",
            "block",
            "stop",
            "reasoning",
            "arguments",
            "parameter",
            "values",
            "separator",
            "argument_separator",
            "value_separator",
        }
    )

    def __init__(self, spec: WireSpec) -> None:
        super().__init__(spec)
        self.tags = Tags.of(spec)
        self._syntax: Syntax | None = None

    @classmethod
    def check(cls, spec: WireSpec) -> None:
        """Refuse what :meth:`Family.check` refuses, and markers this family cannot read: every one is
        a tag (starting with ``<``), the value's closer is ``</TAG>``, the separators are blanks."""
        super().check(spec)
        problems = []
        if spec.arguments != "tagged":
            problems.append(f"arguments must be 'tagged', not {spec.arguments!r}")
        if spec.values != "text":
            problems.append(f"values must be 'text', not {spec.values!r}")
        if spec.reasoning is None:
            problems.append("reasoning markers are needed")
        key_open, key_close, value_close = spec.parameter
        if spec.block[0]:
            problems.append("the block has no opener: block[1] is what ends a turn's calls")
        ends = (spec.block[1],) if spec.block[1] else ()
        markers = (*spec.call, spec.stop, *ends, *(spec.reasoning or ()), key_open, key_close, value_close)
        if not all(marker.startswith("<") and len(marker) > 1 for marker in markers):
            problems.append("every marker must be a tag: call, stop, reasoning and parameter start with '<'")
        if not re.fullmatch(r"</[^\s<>]+>", value_close):
            problems.append(f"the value closer must be '</TAG>', not {value_close!r}")
        if any(gap.strip(" \n") for gap in (spec.separator, spec.argument_separator, spec.value_separator or "")):
            problems.append("the separators must be blanks")
        if problems:
            raise ValueError(f"not an {cls.name!r} spec: {'; '.join(problems)}")

    def syntax(self) -> Syntax:
        if self._syntax is None:  # the kit's own, once: the shared one of its markers
            # What the renderer writes between tags is no marker: members that differ only in it
            # read their replies alike (glm4_6 and glm4_7), with one syntax.
            self._syntax = reply_syntax(dataclasses.replace(self.tags, separator="", spacing="", value_spacing=""))
        return self._syntax

    # ---- reply

    def render_call(self, call: Any) -> str:
        """One call block: ``call`` is an OpenAI tool call or its ``function`` object."""
        tags = self.tags
        function = attr(call, "function")
        if defined(function):
            call = function
        gap = tags.spacing
        out = [concat(tags.call_open, attr(call, "name"))]
        arguments = attr(call, "arguments")
        if defined(arguments):
            for key, value in items(arguments):
                out.append(concat(gap + tags.key_open, key, tags.key_close + tags.value_spacing + tags.value_open))
                out.append(value_text(value) + tags.value_close)
        out.append(gap + tags.call_close)
        return "".join(out)

    def reply_parts(self, message: Any) -> tuple[str, str]:
        """(content, calls): the trimmed content (:func:`content_text`), and the call blocks, each but
        a leading one after the separator, followed by what ends a turn's calls (else the stop token)."""
        content = content_text(attr(message, "content"))
        out = []
        calls = attr(message, "tool_calls")
        called = False
        if is_iterable(calls) and not is_mapping(calls):
            for index, call in enumerate(calls):
                if content or index:
                    out.append(self.spec.separator)
                out.append(self.render_call(call))
                called = True
        out.append(self.tags.calls_close if called and self.tags.calls_close else self.tags.stop)
        return content, "".join(out)

    def reply_text(self, message: dict[str, Any]) -> str:
        content, calls = self.reply_parts(message)
        return content + calls

    # ---- export

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        """Calls as the renderer writes them: ``<tool_call>NAME``, then ``<arg_key>KEY</arg_key>`` and
        ``<arg_value>VALUE</arg_value>`` per argument, the spacing before each tag.

        A string value is any text without the value's closer; other values are JSON of their
        type. Arguments come in schema order; parallel calls are separate blocks, the separator apart.
        """
        from codec.export import (
            EMPTY,
            NAME,
            CallSyntax,
            JsonValues,
            Marker,
            alt,
            many,
            ordered_items,
            parameters_schema,
            properties,
            seq,
        )
        from codec.schema import tool_name
        from codec.wire.xml_params import _STYLES, _param_value

        tags, style, gap = self.tags, _STYLES["text"], self.tags.spacing
        close = tags.value_close
        values = JsonValues(builder)
        bodies = []
        for tool in tools:
            declared = properties(parameters_schema(tool))
            if declared is None:  # free-form parameters: any names, text values
                value = _param_value(builder, values, None, style, close)
                pairs = many(
                    seq(gap + tags.key_open, NAME, tags.key_close + tags.value_spacing + tags.value_open, value)
                )
            else:
                props, required = declared
                heads = []
                for key, schema in props.items():
                    value = _param_value(builder, values, schema, style, close)
                    head = f"{gap}{tags.key_open}{key}{tags.key_close}{tags.value_spacing}{tags.value_open}"
                    heads.append((seq(head, value), key in required))
                pairs = ordered_items(heads, EMPTY)
            bodies.append(seq(tool_name(tool) or "", pairs, gap + tags.call_close))
        call = builder.rule("call", alt(*bodies)) if bodies else EMPTY
        return CallSyntax(
            triggers=((tags.call_open, call),),
            more=seq(self.spec.separator, Marker(tags.call_open), call),
            text_forbid_markers=(tags.call_open, tags.call_close, tags.key_open, *tags.ends),
            stops=tags.ends,
        )

    def reply_markers(self) -> tuple[str, ...]:
        r, tags = regex_literal, self.tags
        # A key and its value, or a name alone between the call's markers (a call without arguments).
        return (
            rf"{r(tags.key_close)}\s*{r(tags.value_open)}",
            rf"{r(tags.call_open)}[A-Za-z_][\w.\-]*\s*{r(tags.call_close)}",
        )


FAMILY = ArgPairs
