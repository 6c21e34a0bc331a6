"""The ``gemma4`` family: ``call:NAME{key:value,...}`` between call tokens, strings between a quote token.

Gemma 4 writes (its markers as the example; a member's :class:`~codec.wire.WireSpec` gives its
own; the line breaks after ``<channel|>`` and ``<tool_call|>`` are only for this page)::

    <|channel>thought
    The user wants the weather.<channel|>
    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>
    <|tool_response>

A member's spec sets:

* ``call``: the call's opener and closer (``<|tool_call>``, ``<tool_call|>``); ``call:`` and the
  name follow the opener, the arguments sit between braces.
* ``block``: what ends a turn's calls, as its second half (``("", "<|tool_response>")``: the model
  stops there, and the application appends the results); empty: the calls end with ``stop``.
* ``stop``: what ends a turn without calls (``<turn|>``).
* ``quote``: the token strings are written between (``<|"|>``), nothing escaped.
* ``values``: ``"quoted"`` (Gemma's notation, below), or ``"python_str"``: every argument written
  through ``str()`` between quote tokens (``n:<|"|>7<|"|>``), as FunctionGemma's template writes
  them, and a quoted value read back typed by its parameter's schema where that declares no string.
* ``reasoning``: the reasoning channel's opener and closer, or None. An opener that is a token
  followed by a channel's name (``<|channel>thought``) is read without its name too.
* ``special_tokens``: markers written as tokens in llguidance grammars.
* ``recover``: the deviations of :data:`RECOVERIES` the member's models make.

Values are Gemma's notation (:class:`Notation`): strings between quote tokens, numbers as Python
writes them, ``true`` / ``false``, ``None``, ``[a,b]`` lists and ``{k:v}`` objects with keys
sorted case-insensitively and written bare. The grammar is ``grammars/wire/gemma4.lark``; the
builder, the whole-reply reader and the reader of calls inside prose are
:mod:`codec.wire._gemma4_parse`'s.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from codec.export import (
    DIGIT,
    EMPTY,
    NAME,
    CallSyntax,
    Expr,
    GrammarBuilder,
    Head,
    JsonValues,
    Lit,
    Marker,
    Reasoning,
    Term,
    alt,
    charset,
    optional,
    ordered_items,
    parameters_schema,
    plus,
    properties,
    ralt,
    rseq,
    schema_types,
    seq,
    star,
)
from codec.formats._render import (
    attr,
    call_method,
    concat,
    dictsort,
    is_mapping,
    is_sequence,
    iterate,
    lookup,
    string,
    trim,
)
from codec.schema import tool_name
from codec.stream import Syntax
from codec.watch import Delimiter
from codec.wire import Family, WireSpec, family_grammar, lark_literal, regex_literal
from codec.wire import _gemma4_parse as parse
from codec.wire._call_list_python import PythonValues

#: The deviations a member may recover (its spec's ``recover``), by name.
RECOVERIES: dict[str, str] = {
    "bare_call": (
        "call:NAME{...} without the call opener: at the start of the reply, of a line or right "
        "after the reasoning closer, and inside a line of prose where NAME is a declared tool"
    ),
    "call_tag": "<call> written for the call opener",
}
#: How a member writes argument values (its spec's ``values``): Gemma's notation, or every value
#: ``str()``-ed between quote tokens (read back typed by the parameter's schema).
VALUE_STYLES = ("quoted", "python_str")
#: A foreign call opener, read where the spec recovers ``call_tag``.
CALL_TAG = "<call>"
#: What a call's name follows, after the opener.
CALL_WORD = "call:"

# ---------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Notation:
    """Gemma's value notation, strings between ``quote``, and calls between ``call`` (opener, closer).

    Prompt renderers write tool responses and declarations with it too."""

    quote: str
    call: tuple[str, str]
    #: Arguments as ``values="python_str"`` writes them: each value ``str()``-ed between quote
    #: tokens, in the given order.
    python_str: bool = False

    def string(self, text: str) -> str:
        """A string value: ``<|"|>text<|"|>``, nothing escaped."""
        return self.quote + text + self.quote

    def value(self, value: Any, *, quote_keys: bool = True) -> str:
        """A value: quoted strings, ``true``/``false``, ``{k:v}`` sorted, ``[a,b]``, else ``str()``.

        ``str()`` gives ``None``, ``2.0``, ``1e+20``, big ints verbatim. Object keys are quoted
        with ``quote_keys`` (declarations) and bare without (calls, responses). A tuple, or an
        undefined value (``[]``), is a list as well.
        """
        if isinstance(value, str):
            return self.string(value)
        if value is True or value is False:
            return "true" if value else "false"
        if is_mapping(value):
            pairs = []
            for key, item in dictsort(value):
                name = concat(self.quote, key, self.quote) if quote_keys else string(key)
                pairs.append(name + ":" + self.value(item, quote_keys=quote_keys))
            return "{" + ",".join(pairs) + "}"
        if is_sequence(value):
            return "[" + ",".join(self.value(item, quote_keys=quote_keys) for item in iterate(value)) + "]"
        return string(value)

    def arguments(self, arguments: Any) -> str:
        """What goes between a call's braces: ``key:value`` pairs sorted, raw text for a string, else nothing."""
        if is_mapping(arguments) and self.python_str:
            return ",".join(string(key) + ":" + self.string(string(value)) for key, value in arguments.items())
        if is_mapping(arguments):
            pairs = dictsort(arguments)
            return ",".join(string(key) + ":" + self.value(value, quote_keys=False) for key, value in pairs)
        if isinstance(arguments, str):
            return arguments
        return ""

    def call_text(self, call: Any) -> str:
        """One ``<|tool_call>call:NAME{...}<tool_call|>`` block for an OpenAI tool call."""
        function = attr(call, "function")
        head = concat(self.call[0] + CALL_WORD, lookup(function, "name"), "{")
        return head + self.arguments(attr(function, "arguments")) + "}" + self.call[1]


def without_reasoning(text: Any, opener: str, closer: str) -> str:
    """``text`` without its ``opener...closer`` blocks, trimmed (split as Jinja splits it)."""
    parts = call_method(text, "split", closer)
    return "".join(part.split(opener)[0] for part in parts).strip()


# ---------------------------------------------------------------------------- markers


@dataclass(frozen=True)
class Markers:
    """The markers a member's replies are read with: the fields of its spec that parsing depends on
    (members with equal markers share one :class:`~codec.stream.Syntax`)."""

    call_open: str
    call_close: str
    #: What ends a turn's calls, or "" (the stop token then).
    calls_close: str
    stop: str
    quote: str
    #: The reasoning channel's opener and closer, "" for none.
    reasoning_open: str
    reasoning_close: str
    recover: frozenset[str]
    #: Whether every argument is written between quote tokens through ``str()`` (``values="python_str"``),
    #: a quoted value then typed by its parameter's schema where that declares no string.
    quoted_scalars: bool = False

    @classmethod
    def of(cls, spec: WireSpec) -> Markers:
        opener, closer = spec.reasoning or ("", "")
        typed = spec.values == "python_str"
        return cls(*spec.call, spec.block[1], spec.stop, spec.quote, opener, closer, frozenset(spec.recover), typed)

    @functools.cached_property
    def bare(self) -> bool:
        """Whether a call without its opener is read (``bare_call``)."""
        return "bare_call" in self.recover

    @functools.cached_property
    def channel(self) -> tuple[str, str]:
        """The reasoning opener as a token and a channel's name (``<|channel>``, ``thought``), the
        name "" where the opener is no such pair."""
        split = re.fullmatch(r"(.*>)(\w+)", self.reasoning_open, re.DOTALL)
        return (split[1], split[2]) if split else (self.reasoning_open, "")

    @functools.cached_property
    def call_head(self) -> str:
        """What a call starts with up to its name: the opener and ``call:``."""
        return self.call_open + CALL_WORD

    @functools.cached_property
    def openers(self) -> tuple[str, ...]:
        """What opens a call: the spec's opener, and ``<call>`` where ``call_tag`` is recovered."""
        return (self.call_open, CALL_TAG) if "call_tag" in self.recover else (self.call_open,)

    @functools.cached_property
    def ends(self) -> tuple[str, ...]:
        """What ends the reply: the stop token, and the closer of a turn's calls."""
        return tuple(m for m in (self.calls_close, self.stop) if m)

    @functools.cached_property
    def call_ends(self) -> tuple[str, ...]:
        """What may follow a call's last value: its closer, the reply's end, the next call."""
        return (self.call_close, *self.ends, *self.openers)

    @functools.cached_property
    def frame(self) -> tuple[str, ...]:
        """The markers free text stops before."""
        reasoning = (self.channel[0], self.reasoning_close) if self.reasoning_open else ()
        return (*self.openers, self.call_close, self.stop, *self.ends[:-1], *reasoning)

    @functools.cached_property
    def thought_ends(self) -> tuple[str, ...]:
        """The markers reasoning text stops before: its closer (a line break before it is the
        closer's), and what a reply outside reasoning writes."""
        closer = (self.reasoning_close,) if self.reasoning_open else ()
        return (*("\n" + m for m in closer), *closer, *self.openers, self.stop, *self.ends[:-1])


#: The text of a terminal whose recovery (or marker) a member has not: it matches nothing.
NEVER = "(?!)"


def _literal(text: str) -> str:
    """``text`` as regex source for a lark ``/.../`` terminal, line breaks as ``\\n``."""
    return r"\n".join(regex_literal(part) for part in text.split("\n"))


def _alternatives(markers: Iterable[str]) -> str:
    return "|".join(_literal(m) for m in markers)


def _outside(markers: Iterable[str], lookaheads: Iterable[tuple[str, str]] = ()) -> tuple[str, str]:
    """Text that starts none of ``markers``, as two pieces of regex: the characters no marker
    starts with (for a ``[^...]`` class), and for each first character of a marker that character
    where no marker's rest follows it (an alternation). ``lookaheads`` are (character, regex) pairs
    of the same kind: text does not go on with that regex after that character either."""
    rests: dict[str, list[str]] = {}
    for first, rest in lookaheads:
        rests.setdefault(first, []).append(rest)
    for marker in markers:
        rests.setdefault(marker[0], []).append(_literal(marker[1:]))
    starts = "".join(_literal(first) for first in rests)
    marks = [f"{_literal(first)}(?!{'|'.join(after)})" for first, after in rests.items() if all(after)]
    return starts, "|".join(marks) or NEVER


#: What a line of prose may end with while more is coming that may still grow into a bare call.
_BARE_PARTIAL = r"(?:a(?:l(?:l(?::[A-Za-z_]?[\w\-.]{0,30})?)?)?)?\Z"


def grammar_values(markers: Markers) -> tuple[tuple[str, str], ...]:
    """The values of ``grammars/wire/gemma4.lark``'s placeholders for ``markers``."""
    m = markers
    bare = (("c", parse.BARE_HEAD[1:]), ("c", _BARE_PARTIAL), ("\n", parse.BARE_HEAD)) if m.bare else ()
    text_starts, text_marks = _outside(m.frame, bare)
    thought_starts, thought_marks = _outside(m.thought_ends)
    raw_starts, raw_marks = _outside((m.quote, *m.frame))
    quote_first, quote_rest = _literal(m.quote[0]), _literal(m.quote[1:])
    token, name = m.channel
    if m.reasoning_open:
        reasoning_open = _literal(token) + (f"(?:{_literal(name)})?" if name else "") + r"\n?"
        reasoning_close = r"\n?" + _literal(m.reasoning_close)
    else:
        reasoning_open = reasoning_close = NEVER + "."
    literal_next = "|".join(
        f"{_literal(first)}(?!{quote_rest})" if first == m.quote[0] else _literal(first)
        for first in dict.fromkeys(marker[0] for marker in (m.quote, *m.frame))
    )
    return (
        ("TEXT_STARTS", text_starts),
        ("TEXT_MARKS", text_marks),
        ("BARE", "" if m.bare else NEVER),
        ("THOUGHT_STARTS", thought_starts),
        ("THOUGHT_MARKS", thought_marks),
        ("Q", _literal(m.quote)),
        ("Q0", quote_first),
        ("QREST", quote_rest),
        ("Q_LITERAL", lark_literal(m.quote)),
        ("END_STARTS", "".join(_literal(first) for first in dict.fromkeys(e[0] for e in m.call_ends))),
        ("CALL_END", _alternatives(m.call_ends)),
        ("NESTED_END", _alternatives((m.call_close, *m.ends, m.call_open))),
        ("RAW_STARTS", raw_starts),
        ("RAW_MARKS", raw_marks),
        ("REASONING_OPEN", reasoning_open),
        ("REASONING_CLOSE", reasoning_close),
        ("CALL_OPENERS", _alternatives(m.openers)),
        ("CALL_CLOSE", lark_literal(m.call_close)),
        ("STOP", lark_literal(m.stop)),
        ("CALLS_CLOSE", lark_literal(m.calls_close) if m.calls_close else f"/{NEVER}./"),
        ("LITERAL_NEXT", literal_next),
    )


# ---------------------------------------------------------------------------- parse


@functools.cache
def reply_syntax(markers: Markers) -> Syntax:
    """The reply syntax of members with ``markers``: the grammar, the builder and how the stream
    reads them (built once per markers, so members that parse alike share it)."""
    m = markers
    reasoning = bool(m.reasoning_open)
    builder = type("Gemma4Builder", (parse.Gemma4Builder,), {"markers": m})
    # A terminal must come this far past a token before it is committed: the lookaheads read up
    # to 40 characters, and a marker must not still be growing.
    longest = max(len(marker) for marker in (*m.frame, m.quote))
    grammar = family_grammar("wire/gemma4", grammar_values(m))
    return Syntax(
        grammar=grammar,
        builder=builder,
        text_terminals={
            "TEXT": parse.CONTENT,
            "CALL_WORD": parse.CONTENT,
            "THOUGHT": parse.REASONING,
            "CHARS": parse.CHARS,
            "NESTED_CHARS": parse.CHARS,
            "RAW_FIRST": parse.RAW,
            "RAW_TEXT": parse.RAW,
        },
        blocks={"CALL_OPEN": "CALL_CLOSE", "BARE_CALL": None, "BARE_CALL0": None},
        autoclose={
            **({"CHANNEL_CLOSE": m.reasoning_close} if reasoning else {}),
            "RBRACK": "]",
            "RBRACE": "}",
            "RPAR": ")",
            "CALL_CLOSE": m.call_close,
        },
        autoclose_before=frozenset({"CALL_OPEN", "CALL_CLOSE", "TURN_END", "TOOL_RESPONSE"}),
        resync_after=(m.call_close,),
        resync_before=(m.call_open, *reversed(m.ends)),
        delimiters=(Delimiter(m.quote, m.quote), Delimiter('"', '"', "\\"), Delimiter("'", "'", "\\")),
        # JSTRING and SSTRING are not closed: MIXED_STRING may match longer once its quote token arrives.
        closed_terminals=frozenset({"GSTRING", "GQ", "CALL_CLOSE", "TURN_END", "TOOL_RESPONSE"}),
        holdback=max(40, longest + 1),
        # Free text near the end of what arrived is held back from a character that may start a
        # marker or, inside a string, the quote token.
        marker_starts="".join(dict.fromkeys((*(marker[0] for marker in (*m.frame, m.quote)), "\n"))),
        nest_open=frozenset({"LBRACE", "LBRACK", "LPAR"}),
        nest_close=frozenset({"RBRACE", "RBRACK", "RPAR", "END_BRACE"}),
        fast_terminals={"INLINE_CALL": parse.InlineCalls(m, reply_syntax)} if m.bare else {},
        reasoning_open="CHANNEL_OPEN" if reasoning else None,
        # "call:" at the start of the reply; a literal (true, None, 42...) where an unquoted value may start
        preempt_starts=("c" if m.bare else "") + "tTfFnN-.0123456789",
        prompt_opens_reasoning=parse.opens_reasoning(m) if reasoning else None,
        whole=parse.WholeReplies(m, grammar.pattern("TEXT")),
    )


# ---------------------------------------------------------------------------- the family


class Gemma4Calls(Family):
    """The ``gemma4`` family compiled from a spec: its reply syntax, renderer, export and markers."""

    name = "gemma4"
    parameters = frozenset(
        {"call", "block", "stop", "reasoning", "arguments", "values", "quote", "special_tokens", "recover"}
    )

    def __init__(self, spec: WireSpec) -> None:
        super().__init__(spec)
        self.markers = Markers.of(spec)
        self.notation = Notation(spec.quote, spec.call, spec.values == "python_str")

    @classmethod
    def check(cls, spec: WireSpec) -> None:
        """Refuse what the family cannot read: a spec without call markers, stop or quote token, a
        block opener, arguments or values of another notation, a recovery it does not know."""
        super().check(spec)
        if not (all(spec.call) and spec.stop and spec.quote):
            raise ValueError("a gemma4 spec needs a call opener and closer, a stop token and a quote token")
        if spec.block[0]:
            raise ValueError("the gemma4 family has no block opener: block gives only what ends a turn's calls")
        if spec.arguments != "quoted" or spec.values not in VALUE_STYLES:
            raise ValueError('the gemma4 family writes arguments="quoted" and values="quoted" or "python_str"')
        unknown = sorted(set(spec.recover) - set(RECOVERIES))
        if unknown:
            known = ", ".join(RECOVERIES)
            raise ValueError(f"the gemma4 family does not recover {', '.join(unknown)}; it knows {known}")

    def syntax(self) -> Syntax:
        return reply_syntax(self.markers)

    def reply_text(self, message: dict[str, Any]) -> str:
        """What the model generates after the generation prompt: reasoning as
        ``<|channel>thought\\nREASONING<channel|>``, the content (reasoning blocks stripped,
        trimmed), then the calls followed by what ends a turn's calls (else the stop token, where
        generation stops), or without calls the stop token.

        This is not a slice of a rendered history: a template may write reasoning and content
        elsewhere there (Gemma 4's does: Q3 and Q9 of :mod:`codec.formats.gemma4`), where a reply
        writes its reasoning first and its content before its calls, as a preamble."""
        m, out = self.markers, []
        thought = message.get("reasoning") or message.get("reasoning_content")
        if thought and m.reasoning_open:
            out.append(concat(m.reasoning_open + "\n", thought, m.reasoning_close))
        out.append(self._content(attr(message, "content")))
        calls = attr(message, "tool_calls")
        if calls:
            out.extend(self.notation.call_text(call) for call in iterate(calls))
            out.append(m.calls_close or m.stop)
        else:
            out.append(m.stop)
        return "".join(out)

    def _content(self, content: Any) -> str:
        """An assistant message's content as the model writes it: a string, or its text parts
        joined (other parts give nothing), each without reasoning blocks and trimmed."""
        if isinstance(content, str):
            return self._clean(content)
        if not is_sequence(content):
            return ""
        return "".join(self._clean(attr(part, "text")) for part in iterate(content) if attr(part, "type") == "text")

    def _clean(self, text: Any) -> str:
        m = self.markers
        return without_reasoning(text, m.channel[0], m.reasoning_close) if m.reasoning_open else trim(text)

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        """Calls as the template writes them: ``<|tool_call>call:NAME{key:value,...}<tool_call|>``,
        back to back, then what ends a turn's calls (a stop: the server stops there).

        Keys sorted case-insensitively, strings between quote tokens (any text but that token).
        Reasoning is the reasoning channel. Markers among the spec's special tokens are tokens."""
        m = self.markers
        values = (StrGemmaValues if m.quoted_scalars else GemmaValues)(builder, m.quote)
        bodies = [seq(f"{CALL_WORD}{tool_name(tool)}", values.value(parameters_schema(tool))) for tool in tools]
        call = seq(builder.rule("call", alt(*bodies)), Marker(m.call_close)) if bodies else EMPTY
        opens = (*m.openers, m.stop, *m.ends[:-1])  # what ends the reasoning channel
        bare = ("\n" + CALL_WORD,) if m.bare else ()
        reasoning = None
        if m.reasoning_open:
            token, name = m.channel
            reasoning = Reasoning(token, m.reasoning_close, open_rest=name + "\n", forbid_markers=opens)
        channel = (m.channel[0], m.reasoning_close) if m.reasoning_open else ()
        return CallSyntax(
            triggers=((m.call_open, call),),
            more=seq(Marker(m.call_open), call),
            text_forbid_markers=(*opens, m.call_close, *channel, *bare),
            text_forbid_start=(CALL_WORD,) if m.bare else (),
            reasoning=reasoning,
            stops=m.ends,
        )

    def reply_markers(self) -> tuple[str, ...]:
        m = self.markers
        found = tuple(re.escape(opener) for opener in m.openers[:1])
        if m.bare:
            after = f"|{re.escape(m.reasoning_close)}" if m.reasoning_open else ""
            found += (rf"(?:\A|\n{after})call:[\w.-]+[{{(]",)
        return found


# ---------------------------------------------------------------------------- export (constrained decoding)


class GemmaValues(JsonValues):
    """Values as the template writes them: strings between quote tokens, ``None``, ``{k:v}`` sorted
    by key, no spaces."""

    tag = "gemma"
    null = "None"
    item_separator = ","

    def __init__(self, builder: GrammarBuilder, quote: str) -> None:
        super().__init__(builder)
        self.quote = quote
        self.notation = Notation(quote, ("", ""))

    def write(self, value: Any) -> str:
        return self.notation.value(value, quote_keys=False)

    def literal(self, value: Any) -> Expr:
        return self.string_of(Lit(value)) if isinstance(value, str) else Lit(self.write(value))

    def key(self, name: str) -> str:
        return name + ":"

    def free_key(self) -> Expr:
        return seq(NAME, ":")

    def order(self, names: list[str]) -> list[str]:
        return sorted(names, key=str.lower)  # dictsort: case-insensitive, stable

    def string(self) -> Expr:
        return self.string_of(self.b.head(self.b.text((self.quote,)), self.quote))

    def string_of(self, inside: Expr) -> Expr:
        if isinstance(inside, Head):
            return seq(Marker(self.quote), inside)
        return seq(Marker(self.quote), inside, Marker(self.quote))

    def integer(self) -> Expr:
        return Term("GEMMA_INTEGER", rseq(optional("-"), plus(DIGIT)))

    def number(self) -> Expr:
        digits = ralt(rseq(plus(DIGIT), optional(rseq(".", star(DIGIT)))), rseq(".", plus(DIGIT)))
        exponent = optional(rseq(charset("eE"), optional(charset("+-")), plus(DIGIT)))
        return Term("GEMMA_NUMBER", rseq(optional("-"), digits, exponent))


class StrGemmaValues(GemmaValues):
    """Arguments as ``values="python_str"`` writes them: each one what ``str()`` gives of a value of
    its parameter's schema, between quote tokens (a string raw, ``True``, ``None``, a number, a list
    or a dict as Python's ``repr``), under its declared key."""

    tag = "gemma_str"

    def __init__(self, builder: GrammarBuilder, quote: str) -> None:
        super().__init__(builder, quote)
        self.python = PythonValues(builder)

    def order(self, names: list[str]) -> list[str]:
        return names  # the template writes the arguments in their given order

    def object(self, schema: Mapping[str, Any]) -> Expr:
        declared = properties(schema)
        if declared is None:
            return self.free_object(self.string())
        props, required = declared
        items = [(seq(self.key(name), self.argument(props[name])), name in required) for name in props]
        return seq(self.object_open, ordered_items(items, self.item_separator), self.object_close)

    def argument(self, schema: Any) -> Expr:
        """An argument's value for ``schema``: ``str()`` of a value it allows, between quote tokens."""
        if not isinstance(schema, Mapping):
            return self.string()
        null = [self.written(None)] if schema.get("nullable") is True else []
        if "const" in schema:
            return self.written(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return alt(*(self.written(v) for v in schema["enum"]), *null)
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return alt(*(self.argument(o) for o in options), *null)
        types = schema_types(schema)
        if not types:
            return self.string()
        return alt(*(self.typed_text(schema, kind) for kind in types))

    def written(self, value: Any) -> Expr:
        """``value`` as ``str()`` writes it, between quote tokens."""
        return self.string_of(Lit(value if isinstance(value, str) else string(value)))

    def typed_text(self, schema: Mapping[str, Any], kind: str) -> Expr:
        """A value of JSON type ``kind`` as ``str()`` writes it, between quote tokens."""
        if kind == "boolean":
            return alt(self.written(True), self.written(False))
        if kind == "null":
            return self.written(None)
        if kind in ("integer", "number"):
            return self.string_of(GemmaValues.typed(self, schema, kind))
        if kind in ("array", "object"):
            return self.string_of(self.python.typed(schema, kind))
        return self.string()


FAMILY = Gemma4Calls
