"""The ``invoke`` family: ``<invoke name="NAME">`` elements, one ``<parameter name="KEY">`` element per argument.

A reply, as minimax_m2 writes it (the markers are its spec's)::

    Let me check.
    <minimax:tool_call>
    <invoke name="get_weather">
    <parameter name="city">São Paulo</parameter>
    <parameter name="days">3</parameter>
    </invoke>
    </minimax:tool_call>[e~[

A spec gives the call wrapper's opener and closer (``call``; every invoke of a turn inside one
wrapper), the invoke head (``name``: its opener up to and with the name's opening quote, ``<invoke
name="``, and what ends it, ``">``; the element closes with ``</invoke>``), the parameter tags
(``parameter``: opener, the end of the key, closer), the stop token, the reasoning markers, what
separates the content from the calls (``separator``), and how values are written:
``values="text"`` (a string raw, anything else as JSON, typed by the tool's schema) or
``"flagged"`` (the same text, the head saying which with ``string="true"`` or ``string="false"``,
as DeepSeek's DSML writes it). ``recover`` names the deviations of :data:`RECOVERIES` the
member's models make. The layout is the family's: a line break after the wrapper's opener, after
each invoke head, after each parameter and after each ``</invoke>``.

Replies are read by ``grammars/wire/invoke.lark`` (filled in from the spec by
:func:`grammar_values`) and :class:`InvokeBuilder` (:mod:`codec.wire._invoke_builder`), which also
take what real models write instead: indented tags, a parameter closer drifted or corrupted,
names in single quotes or none, self-closed invokes, all arguments wrapped in one ``arguments``
parameter or written as one JSON object for an invoke's body, a reply cut inside a call (the call
kept with what was read of it, reported).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from codec.formats._calls import MARKUP, ProseText, before_stop, leading_reasoning, reads_as_text
from codec.formats._render import attr, concat, defined, is_iterable, is_mapping, items, string, value_text
from codec.schema import declared_types, tool_parameters, type_text
from codec.wire import Family, WireSpec, family_grammar, lark_literal, regex_literal
from codec.wire._xml_params_builder import schema_properties
from codec.wire.xml_params import _proper_prefixes

if TYPE_CHECKING:
    from codec._lark import CompiledGrammar
    from codec.export import CallSyntax, GrammarBuilder
    from codec.stream import Syntax, ToolsByName, WholeReading

__all__ = ["FAMILY", "RECOVERIES", "Invoke", "Tags", "reply_syntax"]

#: The deviations a member may read, by name (:attr:`WireSpec.recover`), beyond what every member reads.
RECOVERIES: dict[str, str] = {
    "bare_invoke": "an invoke written without the call wrapper, at the start of the reply or of a line",
    "bracket_calls": (
        '[TOOL_CALL] {"tool": NAME, "args": {...}} [/TOOL_CALL]: a call in a JSON object between brackets '
        "(read, reported as another model's form)"
    ),
}

#: The bracket form's markers (recovery ``bracket_calls``).
BRACKETS = ("[TOOL_CALL]", "[/TOOL_CALL]")

#: A name or an attribute's value as a head may write it: in double quotes, single quotes or none.
_NAME = r"""(?:"[^"<>\n]{0,256}"|'[^'<>\n]{0,256}'|[^\s"'<>\/]{1,256})"""
#: Attributes after the name (``string="true"``, the one the builder reads): up to four.
_ATTRIBUTES = r"""(?:[ \t]{1,8}(?:string|[\w-]{1,32})=(?:"[^"<>\n]{0,64}"|'[^'<>\n]{0,64}'|[^\s"'<>\/]{1,64})){0,4}"""


# ---------------------------------------------------------------------------- the markers of a spec


@dataclass(frozen=True)
class Tags:
    """A member's markers, as its spec gives them, and those they imply: what the grammar, the
    builder, the renderer and the export write and read. Hashable: the reply syntax is built once
    per distinct set (:func:`reply_syntax`)."""

    call_open: str
    call_close: str
    stop: str
    think_open: str
    think_close: str
    #: The invoke head's opener, up to and with the name's quote (``<invoke name="``), and its end (``">``).
    invoke: str
    name_end: str
    #: The parameter head's opener (``<parameter name="``), the end of its key (``">``), the closer.
    parameter: str
    key_end: str
    parameter_close: str
    #: Whether a head says a value's kind (``string="true"``: :attr:`WireSpec.values` ``"flagged"``).
    flagged: bool
    #: The recoveries the member reads (:data:`RECOVERIES`).
    recover: tuple[str, ...]

    @classmethod
    def of(cls, spec: WireSpec) -> Tags:
        """The markers of ``spec`` (checked by :meth:`Invoke.check`)."""
        assert spec.reasoning is not None
        parameter, key_end, parameter_close = spec.parameter
        return cls(
            call_open=spec.call[0],
            call_close=spec.call[1],
            stop=spec.stop,
            think_open=spec.reasoning[0],
            think_close=spec.reasoning[1],
            invoke=spec.name[0],
            name_end=spec.name[1],
            parameter=parameter,
            key_end=key_end,
            parameter_close=parameter_close,
            flagged=spec.values == "flagged",
            recover=spec.recover,
        )

    @functools.cached_property
    def invoke_stem(self) -> str:
        """The invoke head's opener without the name's quote (``<invoke name=``)."""
        return self.invoke[:-1]

    @functools.cached_property
    def parameter_stem(self) -> str:
        """The parameter head's opener without the key's quote (``<parameter name=``)."""
        return self.parameter[:-1]

    @functools.cached_property
    def invoke_close(self) -> str:
        """What closes an invoke: ``</TAG>`` for a head ``<TAG name="``."""
        return f"</{self.invoke[1:].split()[0]}>"

    @functools.cached_property
    def parameter_word(self) -> str:
        """The last word of the parameter's tag (``parameter``): a closer ending in it is one, however drifted."""
        found = re.search(r"[A-Za-z_]+$", self.parameter[1:].split()[0])
        assert found is not None
        return found.group()

    @functools.cached_property
    def brackets(self) -> tuple[str, str] | None:
        """The bracket form's markers, where the member reads it."""
        return BRACKETS if "bracket_calls" in self.recover else None

    @functools.cached_property
    def holdback(self) -> int:
        """Characters that must follow a token before it is committed: longer than the grammar's
        longest lookahead (blanks before a marker, the marker), and a margin."""
        markers = (self.call_open, self.call_close, self.invoke, self.invoke_close, self.stop, *(self.brackets or ()))
        return 24 + max(map(len, markers)) + 8


def _first_chars(markers: tuple[str, ...]) -> str:
    return "".join(sorted({marker[0] for marker in markers}))


def _stops(markers: tuple[str, ...], tails: dict[str, list[str]] | None = None) -> str:
    """``c(?!rest|...)`` per first character ``c`` of ``markers`` (regex source): that character,
    where none of the markers it starts (nor the ``tails`` given for it, as regex) follows."""
    by_first: dict[str, list[str]] = {}
    for marker in markers:
        by_first.setdefault(marker[0], []).append(regex_literal(marker[1:]))
    for char, extra in (tails or {}).items():
        by_first.setdefault(char, []).extend(extra)
    return "|".join(f"{regex_literal(char)}(?!{'|'.join(rests)})" for char, rests in sorted(by_first.items()))


def grammar_values(tags: Tags) -> tuple[tuple[str, str], ...]:
    """The values of ``grammars/wire/invoke.lark``'s placeholders for ``tags``: the markers as regex
    source and as lark strings, the stops of free text and of values, and the rules of the
    recoveries the member reads (left out where it reads none: no terminal matches nothing)."""
    r = regex_literal
    bare = "bare_invoke" in tags.recover
    brackets = tags.brackets
    # What confirms a call opener: an invoke head, the wrapper's closer, or the end of what arrived.
    call_next = (
        rf"[ \t\r\n]{{0,16}}(?:{r(tags.invoke_stem)}|{r(tags.call_close)}|{_proper_prefixes(tags.invoke_stem)}\Z)"
    )
    # Free text stops at what can start an item: a call (where confirmed), the stop token, a bare
    # invoke, a bracket call; the line breaks (and blanks) before one are layout.
    others = (tags.stop, *((tags.invoke_stem,) if bare else ()), *(brackets[:1] if brackets else ()))
    text_markers = (tags.call_open, *others)
    text_stops = _stops(others, {tags.call_open[0]: [r(tags.call_open[1:]) + call_next]})
    line_stops = "|".join((r(tags.call_open) + call_next, *(r(m) for m in others)))
    word = r(tags.parameter_word)
    # What a value stops at: its closer however spelled, the next head, an </invoke> that the end
    # of the call follows, the call's closer, the stop token.
    ends = rf"(?=[ \t\r\n]{{0,24}}(?:{r(tags.call_close)}|{r(tags.invoke_stem)}|{r(tags.stop)}|\Z))"
    value_markers = (tags.parameter_stem, tags.call_close, tags.stop)
    # What a JSON body stops at: the invoke's closer, the call's, the stop token (and, its closer
    # missing, the next invoke).
    json_markers = (tags.invoke_close, tags.call_close, tags.stop, tags.invoke_stem)
    value_tails = {
        "<": [
            rf"\/[^<>\s]{{0,16}}{word}(?:[^<>\s]{{0,12}}>|[ \t]{{0,4}}\r?\n)",
            r(tags.invoke_close[1:]) + ends,
        ],
        # The line break before a head that ends a value without its closer is layout.
        "\n": [rf"[ \t]{{0,16}}{r(tags.parameter_stem)}"],
    }
    items, rules = "", ""
    if bare:
        items += " | bare_invoke"
        rules += (
            "bare_invoke: bare_head params? INVOKE_CLOSE\n"
            "           | bare_head json_body INVOKE_CLOSE -> bare_json_invoke\n"
            "bare_head: INVOKE_OPEN\n"
        )
    if brackets:
        items += " | bracket"
        rules += (
            "bracket: BRACKET_OPEN bracket_body BRACKET_CLOSE\n"
            "bracket_body: bracket_text\n"
            "bracket_text: bracket_text BRACKET_BODY | BRACKET_BODY\n"
            f"BRACKET_OPEN.3: {lark_literal(brackets[0])}\n"
            f"BRACKET_CLOSE.3: {lark_literal(brackets[1])}\n"
            f"BRACKET_BODY.2: /(?:[^{r(brackets[1][0])}]+|{_stops((brackets[1],))})+/\n"
        )
    return (
        ("ITEMS_EXTRA", items),
        ("RULES_EXTRA", rules),
        ("FIRSTS", r(_first_chars(text_markers))),
        ("LINE_STOPS", line_stops),
        ("TEXT_STOPS", text_stops),
        ("THINK_OPEN", r(tags.think_open)),
        ("THINK_CLOSE", r(tags.think_close)),
        ("THINK_CLOSE_TAIL", r(tags.think_close[1:])),
        ("CALL_OPEN", r(tags.call_open)),
        ("CALL_OPEN_TAIL", r(tags.call_open[1:])),
        ("CALL_NEXT", call_next),
        ("STOP_STRING", lark_literal(tags.stop)),
        ("CALL_CLOSE", r(tags.call_close)),
        ("INVOKE_STEM", r(tags.invoke_stem)),
        ("INVOKE_CLOSE", r(tags.invoke_close)),
        ("PARAM_STEM", r(tags.parameter_stem)),
        ("PARAM_CLOSE_STRING", lark_literal(tags.parameter_close)),
        ("PARAM_WORD", word),
        ("NAME", _NAME),
        ("ATTRIBUTES", _ATTRIBUTES),
        ("VALUE_FIRSTS", r(_first_chars((*value_markers, "<", "\n")))),
        ("VALUE_STOPS", _stops(value_markers, value_tails)),
        ("JSON_FIRSTS", r(_first_chars(json_markers))),
        ("JSON_STOPS", _stops(json_markers)),
    )


# ---------------------------------------------------------------------------- parse


@functools.cache
def reply_syntax(tags: Tags, separator: str) -> Syntax:
    """The reply syntax of members with these markers: the grammar, the builder and how the stream
    reads them (built once per set of markers)."""
    from codec.sink import CONTENT, REASONING
    from codec.stream import Syntax
    from codec.watch import Delimiter
    from codec.wire._invoke_builder import BRACKET, VALUE, InvokeBuilder

    grammar = family_grammar("wire/invoke", grammar_values(tags))
    builder = type("InvokeBuilder", (InvokeBuilder,), {"tags": tags, "__module__": InvokeBuilder.__module__})
    think_open = tags.think_open
    blocks: dict[str, str | None] = {"CALL_OPEN": "CALL_CLOSE"}
    brackets = {"BRACKET_BODY": BRACKET} if tags.brackets else {}
    if "bare_invoke" in tags.recover:
        blocks["INVOKE_OPEN"] = "INVOKE_CLOSE"
    if tags.brackets:
        blocks["BRACKET_OPEN"] = "BRACKET_CLOSE"
    return Syntax(
        grammar=grammar,
        builder=builder,
        text_terminals={"TEXT": CONTENT, "THOUGHT": REASONING, "VALUE": VALUE, "JSON_TEXT": VALUE, **brackets},
        blocks=blocks,
        autoclose={
            "PARAM_CLOSE": tags.parameter_close,
            "INVOKE_CLOSE": tags.invoke_close,
            "CALL_CLOSE": tags.call_close,
            "THINK_CLOSE": tags.think_close,
        },
        reasoning_closer="THINK_CLOSE",
        autoclose_before=frozenset(
            {"PARAM_OPEN", "INVOKE_OPEN", "INVOKE_SELF", "INVOKE_CLOSE", "CALL_CLOSE", "CALL_OPEN", "STOP"}
        ),
        resync_after=(tags.call_close,),
        resync_before=(tags.call_open, tags.stop),
        # A reply cut inside the next parameter keeps the finished ones.
        settle_rejected_blocks=True,
        # A call ends at its </invoke>, though the wrapper may hold more: it is sent there.
        settle_after=frozenset({"INVOKE_CLOSE", "INVOKE_SELF"}),
        closed_terminals=frozenset(
            {
                "CALL_CLOSE",
                "INVOKE_OPEN",
                "INVOKE_SELF",
                "INVOKE_CLOSE",
                "PARAM_OPEN",
                "PARAM_CLOSE",
                "STOP",
            }
        ),
        # A long name or key: the head is watched for its end rather than lexed again.
        delimiters=(Delimiter(tags.invoke, tags.name_end), Delimiter(tags.parameter, tags.key_end)),
        holdback=tags.holdback,
        marker_starts=_first_chars((tags.call_open, tags.stop, tags.invoke, "<", "\n", *(tags.brackets or ()))),
        reasoning_open="THINK_OPEN",
        preempt_starts=" \t\r\n<",
        prompt_opens_reasoning=lambda prompt: prompt.rstrip().endswith(think_open),
        # Without a prompt, "...</think>" before any call or stop token: the prompt opened it.
        reasoning_close=tags.think_close,
        reasoning_not_opened=(tags.think_open, tags.call_open, tags.stop),
        whole=functools.partial(whole_reply, _whole_shape(tags, separator, grammar)),
    )


@dataclass(frozen=True)
class _WholeShape:
    """What :func:`whole_reply` matches, for one set of markers."""

    tags: Tags
    separator: str
    invoke: re.Pattern[str]
    parameter: re.Pattern[str]
    markup: re.Pattern[str]
    #: The grammar's TEXT, and reasoning's markers (which the stream acts on beyond it): prose the
    #: reader may take with markup.
    prose_text: ProseText


def _whole_shape(tags: Tags, separator: str, grammar: CompiledGrammar) -> _WholeShape:
    r = regex_literal
    # A name within the grammar's bound (256 characters), without blanks at either end.
    name = r"([^\s\"<>\[][^\"<>\n\[]{0,254}[^\s\"<>\[]|[^\s\"<>\[])"
    flag = r'(?:" string="(true|false))?' if tags.flagged else "()"
    return _WholeShape(
        tags,
        separator,
        re.compile(f"{r(tags.invoke)}{name}{r(tags.name_end)}\n"),
        # A value runs to the first closer (as PARAM_CLOSE ends it), checked for markup by ``markup``.
        re.compile(f"{r(tags.parameter)}{name}{flag}{r(tags.key_end)}(.*?){r(tags.parameter_close)}\n", re.DOTALL),
        # What a value may stop at in the grammar (or where it may read otherwise): a head, a
        # closer however spelled, the wrapper's closer, the stop token.
        re.compile(
            "|".join(
                (
                    r(tags.parameter_stem),
                    r(tags.invoke_close),
                    r(tags.call_close),
                    r(tags.stop),
                    rf"</[^<>\s]{{0,16}}{r(tags.parameter_word)}",
                )
            )
        ),
        ProseText(grammar.pattern("TEXT"), (tags.think_open, tags.think_close)),
    )


def whole_reply(shape: _WholeShape, text: str, tools: ToolsByName | None) -> WholeReading | None:
    """A whole reply in the renderer's shape, read at once (see ``Syntax.whole``): an optional think
    block, prose, then one call wrapper whose invokes hold parameters with no markup of the call's
    in their values, typed as the builder types them with nothing to report; anything else is the
    grammar's (layout, markup in a value, a repeated or wrapped parameter, a value that fits no type)."""
    tags = shape.tags
    lead = leading_reasoning(text, f"{tags.think_open}\n", f"\n{tags.think_close}\n\n")
    if lead is None:
        return None
    reasoning, start = lead
    last = before_stop(text, tags.stop)
    first = text.find(tags.call_open, start, last)
    if first < 0:  # (blanks before the stop token may be layout: the rules decide)
        prose = text[start:last]
        if prose[-1:].isspace() or (MARKUP.search(prose) and not reads_as_text(text, start, prose, shape.prose_text)):
            return None
        return prose, reasoning, []
    prose = ""
    if first > start:
        if not text.startswith(shape.separator, first - len(shape.separator)):
            return None
        prose = text[start : first - len(shape.separator)]
        if not prose or prose[-1].isspace():
            return None
        if MARKUP.search(prose) and not reads_as_text(text, start, prose, shape.prose_text):
            return None
    pos = first + len(tags.call_open)
    if not text.startswith("\n", pos):
        return None
    pos += 1
    calls: list[tuple[str, dict[str, Any]]] = []
    closer = f"{tags.invoke_close}\n"
    while not text.startswith(tags.call_close, pos):
        head = shape.invoke.match(text, pos)
        if head is None:
            return None
        name = head.group(1)
        properties = schema_properties(tool_parameters(tools[name]) if tools is not None and name in tools else None)
        arguments: dict[str, Any] = {}
        pos = head.end()
        while not text.startswith(closer, pos):
            parameter = shape.parameter.match(text, pos)
            if parameter is None:
                return None
            key, flag, raw = parameter.groups()
            if key in arguments or key == "arguments" or shape.markup.search(raw):
                return None  # a repeat, or perhaps every argument in one: the builder's to decide
            schema = properties.get(key) if properties is not None else None
            if flag == "false":
                try:
                    value: Any = json.loads(raw)
                except (ValueError, RecursionError):
                    return None
            elif flag == "true" or (declared := declared_types(schema)) == [] or declared == ["string"]:
                value = raw
            else:
                value, problem = type_text(raw, schema)
                if problem is not None:
                    return None
            arguments[key] = value
            pos = parameter.end()
        calls.append((name, arguments))
        pos += len(closer)
    if not calls or pos + len(tags.call_close) != last:
        return None
    return prose, reasoning, calls


# ---------------------------------------------------------------------------- reply


# ---------------------------------------------------------------------------- the family


class Invoke(Family):
    """The ``invoke`` family compiled for one spec: its markers are :attr:`tags`."""

    name = "invoke"
    parameters = frozenset(
        {"call", "stop", "reasoning", "name", "arguments", "parameter", "values", "separator", "recover"}
    )

    def __init__(self, spec: WireSpec) -> None:
        super().__init__(spec)
        self.tags = Tags.of(spec)
        self._syntax: Syntax | None = None

    @classmethod
    def check(cls, spec: WireSpec) -> None:
        """Refuse what :meth:`Family.check` refuses, and markers this family cannot read: the heads
        open ``<TAG name="`` and end ``">``, the parameter's closer is a tag, reasoning markers are given."""
        super().check(spec)
        problems = []
        if spec.arguments != "tagged":
            problems.append(f"arguments must be 'tagged', not {spec.arguments!r}")
        if spec.values not in ("text", "flagged"):
            problems.append(f"values must be 'text' or 'flagged', not {spec.values!r}")
        if spec.reasoning is None or not all(spec.reasoning):
            problems.append("reasoning markers are needed")
        if not all(marker.startswith("<") and len(marker) > 1 for marker in spec.call):
            problems.append("the call wrapper's markers are needed, each a tag (starting with '<')")
        if not spec.stop:
            problems.append("the stop token is needed")
        parameter, key_end, parameter_close = spec.parameter
        for opener, end in ((spec.name[0], spec.name[1]), (parameter, key_end)):
            if not re.fullmatch(r'<[^\s<>="/]+ name="', opener) or end != '">':
                problems.append(f"a head must open '<TAG name=\"' and end '\">', not {opener!r} ... {end!r}")
        if not re.fullmatch(r"</[^\s<>]*[A-Za-z_]>", parameter_close):
            problems.append(f"the parameter closer must be '</TAG>', not {parameter_close!r}")
        unknown = sorted(set(spec.recover) - set(RECOVERIES))
        if unknown:
            problems.append(f"no recoveries {unknown}; the family has {sorted(RECOVERIES)}")
        if problems:
            raise ValueError(f"not an {cls.name!r} spec: {'; '.join(problems)}")

    def syntax(self) -> Syntax:
        if self._syntax is None:  # the kit's own, once: the shared one of its markers
            self._syntax = reply_syntax(self.tags, self.spec.separator)
        return self._syntax

    # ---- reply

    def render_invoke(self, call: Any) -> str:
        """One invoke element and the line break after it: ``call`` is an OpenAI tool call or its ``function``."""
        tags = self.tags
        function = attr(call, "function")
        if defined(function):
            call = function
        out = [concat(tags.invoke, attr(call, "name"), f"{tags.name_end}\n")]
        arguments = attr(call, "arguments")
        if defined(arguments):
            for key, value in items(arguments):
                flag = ('" string="true' if isinstance(value, str) else '" string="false') if tags.flagged else ""
                out.append(concat(tags.parameter, key, flag + tags.key_end))
                out.append(value_text(value))
                out.append(tags.parameter_close + "\n")
        out.append(tags.invoke_close + "\n")
        return "".join(out)

    def render_calls(self, calls: Any) -> str:
        """The call wrapper holding every call of ``calls`` (an OpenAI ``tool_calls`` list)."""
        tags = self.tags
        return f"{tags.call_open}\n" + "".join(self.render_invoke(call) for call in calls) + tags.call_close

    def reply_parts(self, message: Any) -> tuple[str, str]:
        """(content, calls): the content as given (text, or its text parts joined), and the call
        wrapper (where the message has calls; after the separator where there is content), then
        the stop token."""
        content = content_text(attr(message, "content"))
        calls = attr(message, "tool_calls")
        out = ""
        if is_iterable(calls) and not is_mapping(calls) and calls:
            out = (self.spec.separator if content else "") + self.render_calls(calls)
        return content, out + self.tags.stop

    def reply_text(self, message: dict[str, Any]) -> str:
        content, calls = self.reply_parts(message)
        return content + calls

    # ---- export

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        """Calls as the renderer writes them: the wrapper's opener, then one invoke per call
        (``<invoke name="NAME">\\n``, a ``<parameter name="KEY">VALUE</parameter>\\n`` per argument,
        ``</invoke>\\n``), then the wrapper's closer. A string value is any text without the
        parameter's closer; other values are of their type, as JSON. Parameters come in schema
        order; parallel calls are further invokes in the same wrapper."""
        from codec.export import (
            EMPTY,
            NAME,
            CallSyntax,
            JsonValues,
            Lit,
            Reasoning,
            alt,
            many,
            ordered_items,
            parameters_schema,
            properties,
            seq,
        )
        from codec.schema import tool_name
        from codec.wire.xml_params import _STYLES, _param_value  # the same values, in other tags

        tags, style = self.tags, _STYLES["text"]
        close = tags.parameter_close
        values = JsonValues(builder)

        def head(key: Any, schema: Any) -> Any:
            """A parameter's head and value: where heads say the kind, one head per kind."""
            value = _param_value(builder, values, schema, style, close)
            if not tags.flagged:
                return seq(tags.parameter, key, tags.key_end, value)
            text = builder.head(builder.text((close,)), close)
            typed = _param_value(builder, values, schema, style, close)
            return alt(
                seq(tags.parameter, key, '" string="true' + tags.key_end, text),
                seq(tags.parameter, key, '" string="false' + tags.key_end, typed),
            )

        bodies = []
        for tool in tools:
            declared = properties(parameters_schema(tool))
            if declared is None:  # free-form parameters: any names, text values
                params = many(seq(head(NAME, None), "\n"))
            else:
                props, required = declared
                params = ordered_items(
                    [(seq(head(key, schema), "\n"), key in required) for key, schema in props.items()], EMPTY
                )
            bodies.append(seq(f"{tags.invoke}{tool_name(tool)}{tags.name_end}\n", params, f"{tags.invoke_close}\n"))
        invoke = builder.rule("invoke", alt(*bodies)) if bodies else EMPTY
        return CallSyntax(
            triggers=((tags.call_open, seq("\n", invoke)),),
            more=invoke,
            tail=Lit(tags.call_close),
            text_forbid_markers=(tags.call_open, tags.stop),
            reasoning=Reasoning(tags.think_open, tags.think_close, forbid_markers=(tags.call_open,)),
            stops=(tags.stop,),
        )

    def reply_markers(self) -> tuple[str, ...]:
        tags = self.tags
        return (rf"{regex_literal(tags.invoke)}[^\"\s<>]+{regex_literal(tags.name_end)}",)


def content_text(content: Any) -> str:
    """A message's content as a reply writes it: text, or its text parts joined (absent: empty)."""
    if isinstance(content, str):
        return content
    if is_iterable(content) and not is_mapping(content):
        return "".join(string(attr(part, "text")) if is_mapping(part) else string(part) for part in content)
    return "" if content is None else string(content)


FAMILY = Invoke
