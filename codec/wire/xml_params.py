"""The ``xml_params`` family: ``<function=NAME>``, a ``<parameter=KEY>`` tag per argument, values typed by schema.

A reply, as qwen3_coder writes it (the markers are its spec's)::

    Let me check.
    <tool_call>
    <function=get_weather>
    <parameter=city>
    São Paulo
    </parameter>
    <parameter=days>
    3
    </parameter>
    </function>
    </tool_call><|im_end|>

A spec gives the call's opener and closer (``call``), the function tag (``name``: its opener
``<TAG=`` and the one character that ends the name; the call's body closes with ``</TAG>``), the
parameter tags (``parameter``: opener, the character that ends the key, closer), the stop token,
the reasoning markers, what separates calls (``separator``: also the content from the first
call), and how values are written: ``values="text"`` (a string raw, anything else as JSON),
``"python_str"`` (anything else through Python's ``str()``) or ``"python_scalars"`` (a mapping or a
list as JSON, any other non-string through ``str()``: ``True``, ``None``, ``1.5``), ``value_lines`` (on lines of their
own, a line break after the key's tag and another before the closer, or inline). The layout
around the tags is the family's: a line break after the call's opener, after the function's head
and after each parameter, and between ``</TAG>`` and the call's closer. Every marker is a tag: it
starts with ``<``, which free text stops at.

Replies are read by ``grammars/wire/xml_params.lark`` (filled in from the spec by
:func:`grammar_values`) and :class:`~codec.wire._xml_params_builder.XmlParamsBuilder`, which also
take what real models write instead (README, "Errors and repairs"): a leading reasoning block,
pretty-printed calls, drifted tags, bare ``<function=`` blocks; prose about the tags and code
fences stay text, and so do the tags a string value holds where what follows them says they are
not markup (README, "qwen3_coder": markup inside a value). Every member with the same markers
shares one :class:`~codec.stream.Syntax` (:func:`reply_syntax`), whatever its ``values``: the
builder types a value by the tool's schema, and reads Python literals as JSON.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from codec.errors import RenderError
from codec.formats._calls import ProseText
from codec.formats._chatml import read_whole_reply
from codec.formats._render import attr, concat, defined, is_iterable, is_mapping, items, string, tojson
from codec.schema import tool_parameters, type_text
from codec.wire import Family, WireSpec, family_grammar, lark_literal, regex_literal
from codec.wire._xml_params_builder import schema_properties

if TYPE_CHECKING:
    from codec._lark import CompiledGrammar
    from codec.export import CallSyntax, Expr, GrammarBuilder, JsonValues
    from codec.stream import Syntax, ToolsByName, WholeReading

__all__ = ["FAMILY", "Tags", "XmlParams", "content_text", "python_scalar_text", "python_text", "reply_syntax"]

#: What a content part may not be: a reply is text.
TEXT_ONLY = "This template is text-only and does not support image/video content."


# ---------------------------------------------------------------------------- the markers of a spec


@dataclass(frozen=True)
class Tags:
    """A member's markers, as its spec gives them (and the function's closer they imply): what
    the grammar, the builder, the whole-reply reader, the renderer and the export write and read.

    Hashable: the reply syntax is built once per distinct set (:func:`reply_syntax`)."""

    call_open: str
    call_close: str
    stop: str
    think_open: str
    think_close: str
    #: The function tag's opener (``<function=``) and the character that ends the name (``>``).
    function: str
    name_end: str
    #: What closes the call's body: ``</TAG>`` for a function opener ``<TAG=``.
    function_close: str
    #: The parameter tag's opener, the character that ends the key, and the value's closer.
    parameter: str
    key_end: str
    parameter_close: str
    #: Whether values are written on lines of their own (``WireSpec.value_lines``).
    value_lines: bool

    @classmethod
    def of(cls, spec: WireSpec) -> Tags:
        """The markers of ``spec`` (checked by :meth:`XmlParams.check`)."""
        assert spec.reasoning is not None
        function, name_end = spec.name
        parameter, key_end, parameter_close = spec.parameter
        return cls(
            call_open=spec.call[0],
            call_close=spec.call[1],
            stop=spec.stop,
            think_open=spec.reasoning[0],
            think_close=spec.reasoning[1],
            function=function,
            name_end=name_end,
            function_close=f"</{function[1:-1]}>",
            parameter=parameter,
            key_end=key_end,
            parameter_close=parameter_close,
            value_lines=spec.value_lines,
        )

    @functools.cached_property
    def value_break(self) -> str:
        """What the renderer writes between a key's tag and its value, and between the value and its closer."""
        return "\n" if self.value_lines else ""

    @functools.cached_property
    def value_close(self) -> str:
        """What ends a value as the renderer writes it: its line break (if on lines of its own) and closer."""
        return self.value_break + self.parameter_close

    @functools.cached_property
    def plain_closers(self) -> frozenset[str]:
        """A parameter closer as a template writes it, on its own line or not (or inserted: empty)."""
        return frozenset((f"\n{self.parameter_close}", self.parameter_close, ""))

    @functools.cached_property
    def holdback(self) -> int:
        """Characters that must follow a token before it is committed: longer than the grammar's
        longest lookahead (a line break, an indented closer without its ``>`` + a suffix and its
        ``>``, blanks, the next tag; for qwen3_coder's markers 77 characters), and a margin."""
        after_closer = (self.parameter, self.function_close, self.call_close, self.call_open, self.stop)
        lookaheads = (
            1 + 16 + len(self.parameter_close) - 1 + 13 + 24 + max(map(len, after_closer)),
            1 + 16 + len(self.function) + 48 + len(self.name_end),  # a bare call's line
            len(self.function) + 32 + len(self.name_end) + 2 + 16 + len(self.function_close),  # a literal call
            1 + len(self.call_open) + 16 + len(self.function),  # a call opener that a head confirms
            4 + len(self.call_open) + 16 + len(self.function),  # the same, after reasoning's line breaks
        )
        return max(lookaheads) + 3


def _proper_prefixes(marker: str) -> str:
    """A regex matching any proper prefix of ``marker``, or nothing: text that may still become it."""
    out = ""
    for char in reversed(marker[:-1]):
        out = f"(?:{regex_literal(char)}{out})?"
    return out


def grammar_values(tags: Tags) -> tuple[tuple[str, str], ...]:
    """The values of ``grammars/wire/xml_params.lark``'s placeholders for ``tags``: the markers as
    regex source (``_TAIL``: without the ``<`` a lookahead after a ``<`` has already read;
    ``_STEM``: a closer without its ``>``), as lark strings (``_STRING``), and the lookaheads
    built of them."""
    r = regex_literal

    def tail(marker: str) -> str:
        return r(marker[1:])

    def one_of(*markers: str) -> str:
        return "(?:" + "|".join(r(marker) for marker in markers) + ")"

    function_stem, parameter_stem = tags.function_close[:-1], tags.parameter_close[:-1]
    # A call opener confirms itself where a function head follows (or may still follow) it.
    function_next = rf"[ \t\r\n]{{0,16}}(?:{r(tags.function)}|{_proper_prefixes(tags.function)}\Z)"
    # What a value stops before, after the '<' it starts with: a closer that what follows confirms,
    # the next parameter, a function closer that the end of the call follows, the stop token.
    ends = r"|[ \t\r\n]{0,24}\Z)"
    value_stops = "|".join(
        (
            tail(parameter_stem)
            + r"(?:>|[\w=.:-]{1,12}>|(?=[ \t]{0,4}\r?\n))(?:[ \t\r\n]{0,24}"
            + one_of(tags.parameter, function_stem, tags.call_close, tags.call_open, tags.stop)
            + ends,
            tail(tags.parameter),
            tail(tags.function_close)
            + r"(?:[ \t\r\n]{0,24}"
            + one_of(tags.call_close, tags.call_open, tags.stop, tags.function)
            + ends,
            tail(function_stem)
            + r"(?![\w>=-])(?:[ \t\r\n]{0,24}"
            + one_of(tags.call_close, tags.call_open, tags.stop)
            + ends,
            tail(tags.stop),
        )
    )
    return (
        ("CALL_OPEN", r(tags.call_open)),
        ("CALL_OPEN_TAIL", tail(tags.call_open)),
        ("CALL_CLOSE", r(tags.call_close)),
        ("CALL_CLOSE_STRING", lark_literal(tags.call_close)),
        ("FUNCTION", r(tags.function)),
        ("FUNCTION_TAIL", tail(tags.function)),
        ("FUNCTION_NEXT", function_next),
        ("NAME_END", r(tags.name_end)),
        ("FUNCTION_CLOSE_STEM", r(function_stem)),
        ("FUNCTION_CLOSE_STEM_TAIL", tail(function_stem)),
        ("FUNCTION_CLOSE_STRING", lark_literal(tags.function_close)),
        ("PARAM", r(tags.parameter)),
        ("PARAM_TAIL", tail(tags.parameter)),
        ("PARAM_END", r(tags.key_end)),
        ("PARAM_CLOSE_STEM", r(parameter_stem)),
        ("VALUE_STOPS", value_stops),
        ("STOP_TAIL", tail(tags.stop)),
        ("STOP_STRING", lark_literal(tags.stop)),
        ("THINK_OPEN", r(tags.think_open)),
        ("THINK_CLOSE", r(tags.think_close)),
        ("THINK_CLOSE_TAIL", tail(tags.think_close)),
    )


# ---------------------------------------------------------------------------- parse


@functools.cache
def reply_syntax(tags: Tags) -> Syntax:
    """The reply syntax of members with these markers: the grammar, the builder and how the stream
    reads them (built once per set of markers, so that members whose replies parse alike share it)."""
    from codec.sink import CONTENT, REASONING
    from codec.stream import Syntax
    from codec.watch import Delimiter
    from codec.wire._xml_params_builder import VALUE, XmlParamsBuilder, param_block_lexer

    grammar = family_grammar("wire/xml_params", grammar_values(tags))
    builder = type("XmlParamsBuilder", (XmlParamsBuilder,), {"tags": tags, "__module__": XmlParamsBuilder.__module__})
    think_open = tags.think_open
    return Syntax(
        grammar=grammar,
        builder=builder,
        text_terminals={
            "TEXT": CONTENT,
            "TEXT_FIRST": CONTENT,
            "FENCE_OPEN": CONTENT,
            "FENCED": CONTENT,
            "FENCE_CLOSE": CONTENT,
            "THOUGHT": REASONING,
            "VALUE": VALUE,
            # A call written inside a value is text of it (grammar: literal).
            "LITERAL_OPEN": VALUE,
            "LITERAL_TEXT": VALUE,
            "LITERAL_CLOSE": VALUE,
        },
        blocks={"CALL_OPEN": "CALL_CLOSE", "FUNCTION_OPEN": "FUNCTION_CLOSE", "LINE": "FUNCTION_CLOSE"},
        autoclose={
            "LITERAL_CLOSE": tags.function_close,
            "PARAM_CLOSE": tags.parameter_close,
            "FUNCTION_CLOSE": tags.function_close,
            "CALL_CLOSE": tags.call_close,
            "THINK_CLOSE": tags.think_close,
        },
        reasoning_closer="THINK_CLOSE",
        autoclose_before=frozenset(
            {
                "PARAM_OPEN",
                "PARAM_OPEN_UNTERMINATED",
                "FUNCTION_CLOSE",
                "FUNCTION_CLOSE_UNTERMINATED",
                "CALL_OPEN",
                "CALL_CLOSE",
                "INDENT",
                "STOP",
            }
        ),
        resync_after=(tags.call_close, tags.function_close),
        resync_before=(tags.call_open, tags.stop),
        # A reply cut inside the next parameter keeps the finished ones, and one cut after
        # '<function=f>' keeps the call.
        settle_rejected_blocks=True,
        delimiters=(Delimiter(tags.function, tags.name_end), Delimiter(tags.parameter, tags.key_end)),
        holdback=tags.holdback,
        # A fence opens at the start of the reply: a backtick there may still become one.
        marker_starts="<\n`",
        fast_terminals={"PARAM_BLOCK": param_block_lexer(grammar, tags.holdback)},
        reasoning_open="THINK_OPEN",
        preempt_starts=" \t\r\n<",
        prompt_opens_reasoning=lambda prompt: prompt.rstrip().endswith(think_open),
        # Without a prompt, "...</think>" before any call or stop token: the prompt opened it.
        reasoning_close=tags.think_close,
        reasoning_not_opened=(tags.think_open, tags.call_open, tags.function, tags.stop),
        whole=functools.partial(whole_reply, _WholeShape.of(tags, grammar)),
    )


@dataclass(frozen=True)
class _WholeShape:
    """What :func:`whole_reply` matches, for one set of markers."""

    tags: Tags
    head: re.Pattern[str]
    parameter: re.Pattern[str]
    #: The grammar's own VALUE terminal: where it stops is where the rules stop a value's text.
    value: re.Pattern[str]
    #: What follows a value as the renderer writes it: its line break (if any), closer and line break.
    close: str
    end: str
    #: The grammar's first free text (TEXT_FIRST), and the markers whose presence the stream acts
    #: on beyond it (reasoning's, which it looks ahead for): prose the reader may take with markup.
    prose_text: ProseText

    @classmethod
    def of(cls, tags: Tags, grammar: CompiledGrammar) -> _WholeShape:
        r, line = regex_literal, tags.value_break
        name = r"([A-Za-z_][\w.\-]*)"
        # Where the grammar's tags read them (a name within their bounds): the tags' own patterns.
        function, parameter = (f"(?={grammar.pattern(t).pattern})" for t in ("FUNCTION_OPEN", "PARAM_OPEN"))
        return cls(
            tags,
            re.compile(f"{r(tags.call_open)}\n{function}{r(tags.function)}{name}{r(tags.name_end)}\n"),
            re.compile(f"{parameter}{r(tags.parameter)}{name}{r(tags.key_end)}{line}"),
            grammar.pattern("VALUE"),
            f"{line}{tags.parameter_close}\n",
            f"{tags.function_close}\n{tags.call_close}",
            ProseText(grammar.pattern("TEXT_FIRST"), (tags.think_open, tags.think_close)),
        )


def whole_reply(shape: _WholeShape, text: str, tools: ToolsByName | None) -> WholeReading | None:
    """A whole reply in the renderer's shape, read at once (see ``Syntax.whole``): blocks of one
    function each whose parameters' values are one run of the grammar's VALUE terminal (so lines
    and markup that the rules read as text of the value), neither empty nor with a blank at either
    end, each followed by its closer exactly as the renderer writes it, typed as their schema types
    them (:func:`~codec.schema.type_text`) with nothing to report; anything else is the grammar's
    (indented markup, a value the rules stop inside, a closer written otherwise, a repeated or,
    with tools, undeclared parameter)."""
    value_run, close = shape.value.match, shape.close

    def read_block(text: str, pos: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
        head = shape.head.match(text, pos)
        if head is None:
            return None
        name = head.group(1)
        properties = schema_properties(tool_parameters(tools[name]) if tools is not None and name in tools else None)
        arguments: dict[str, Any] = {}
        pos = head.end()
        while not text.startswith(shape.end, pos):
            parameter = shape.parameter.match(text, pos)
            if parameter is None:
                return None
            key = parameter.group(1)
            body = value_run(text, parameter.end())
            # Where VALUE stops short of the closer (a seam, a call written in the value, a closer
            # that what follows confirms), the rules decide what comes next: the reply is theirs.
            if body is None or not text.startswith(close, body.end()):
                return None
            raw = body.group()
            if key in arguments or raw[0].isspace() or raw[-1].isspace():
                return None
            if tools is not None and (properties is None or key not in properties):
                return None  # an undeclared parameter's head is text of the value before it
            value, problem = type_text(raw, properties.get(key) if properties is not None else None)
            if problem is not None:
                return None
            arguments[key] = value
            pos = body.end() + len(close)
        return (name, arguments), pos + len(shape.end)

    tags = shape.tags
    reasoning = (f"{tags.think_open}\n", f"\n{tags.think_close}\n\n")
    return read_whole_reply(
        text, tags.call_open, read_block, stop=tags.stop, reasoning_marks=reasoning, prose_text=shape.prose_text
    )


# ---------------------------------------------------------------------------- reply


def content_text(content: Any) -> str:
    """A message's content as a reply writes it: text, or text parts joined, then trimmed.

    A part is a string, ``{"type": "text", "text": ...}`` or any mapping with ``text`` (its value
    through ``str()``); image/video parts and other items raise, as do mapping or numeric content.
    Absent content is empty.
    """
    if isinstance(content, str):
        return content.strip()
    if content is None or (is_iterable(content) and not is_mapping(content)):
        parts: list[str] = []
        for item in content or ():
            if is_mapping(item):
                if attr(item, "type") == "text":
                    parts.append(string(attr(item, "text")))
                elif "text" in item:
                    parts.append(string(item["text"]))
                elif "image" in item or "image_url" in item or "video" in item:
                    raise RenderError(TEXT_ONLY)
                else:
                    raise RenderError("Unexpected item type in content.")
            elif isinstance(item, str):
                parts.append(item)
            else:
                raise RenderError("Unexpected non-text item in content.")
        return "".join(parts).strip()
    raise RenderError("Unexpected content type.")


def python_text(value: Any) -> str:
    """A value as ``values="python_str"`` writes it: a string raw, anything else through ``str()``."""
    return value if isinstance(value, str) else string(value)


def python_scalar_text(value: Any) -> str:
    """A value as ``values="python_scalars"`` writes it: a string raw, a mapping or a list as JSON
    (``tojson``), anything else through ``str()`` (``True``, ``None``, ``1.5``)."""
    if isinstance(value, str):
        return value
    if is_mapping(value) or is_iterable(value):
        return tojson(value)
    return string(value)


def _json_text(value: Any) -> str:
    """A value as ``values="text"`` writes it: a string raw, anything else as JSON (``tojson``)."""
    return value if isinstance(value, str) else tojson(value)


# ---------------------------------------------------------------------------- export (constrained decoding)


@dataclass(frozen=True)
class _ValueStyle:
    """How a member writes non-string values in a constrained-decoding grammar."""

    #: ``write(value)``: an enum member's (or a nullable's ``null``) text.
    write: Callable[[Any], str]
    #: ``typed(builder, values, schema, kind, close)``: a value of JSON type ``kind``, then ``close``.
    typed: Callable[[GrammarBuilder, JsonValues, Any, str, str], Expr]


def _json_typed(builder: GrammarBuilder, values: JsonValues, schema: Any, kind: str, close: str) -> Expr:
    """A value of JSON type ``kind`` as JSON, then ``close``."""
    from codec.export import seq

    return seq(values.typed(schema, kind), close)


def _python_typed(builder: GrammarBuilder, values: JsonValues, schema: Any, kind: str, close: str) -> Expr:
    """A value of JSON type ``kind`` as ``str()`` writes it: ``True``/``False``, ``None``, numbers as JSON
    writes them too; a list or a dict is text that opens with its bracket (its Python literal is not
    constrained further)."""
    from codec.export import Lit, alt, seq

    if kind == "boolean":
        return alt(Lit("True" + close), Lit("False" + close))
    if kind == "null":
        return Lit("None" + close)
    if kind in ("array", "object"):
        return seq("[" if kind == "array" else "{", builder.head(builder.text((close,)), close))
    return seq(values.typed(schema, kind), close)


def _scalar_typed(builder: GrammarBuilder, values: JsonValues, schema: Any, kind: str, close: str) -> Expr:
    """A value of JSON type ``kind`` as ``values="python_scalars"`` writes it: ``True``/``False``,
    ``None``, anything else as JSON."""
    from codec.export import Lit, alt, seq

    if kind == "boolean":
        return alt(Lit("True" + close), Lit("False" + close))
    if kind == "null":
        return Lit("None" + close)
    return seq(values.typed(schema, kind), close)


#: The value styles, by ``WireSpec.values``.
_STYLES = {
    "text": _ValueStyle(tojson, _json_typed),
    "python_str": _ValueStyle(python_text, _python_typed),
    "python_scalars": _ValueStyle(python_scalar_text, _scalar_typed),
}
#: How the reply renderer writes a value, by ``WireSpec.values``.
_VALUE_TEXTS = {"text": _json_text, "python_str": python_text, "python_scalars": python_scalar_text}


def _param_value(builder: GrammarBuilder, values: JsonValues, schema: Any, style: _ValueStyle, close: str) -> Expr:
    """A parameter's value as the member writes it, then ``close``: raw text for a string, anything
    else as ``style`` writes it, typed by the parameter's schema."""
    from codec.export import Lit, alt, schema_types

    text = builder.head(builder.text((close,)), close)
    if not isinstance(schema, Mapping):
        return text
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return alt(*(Lit((v if isinstance(v, str) else style.write(v)) + close) for v in schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            null = [Lit(style.write(None) + close)] if schema.get("nullable") is True else []
            return alt(*(_param_value(builder, values, option, style, close) for option in schema[key]), *null)
    types = schema_types(schema)
    if not types:
        return text
    return alt(*(text if kind == "string" else style.typed(builder, values, schema, kind, close) for kind in types))


# ---------------------------------------------------------------------------- the family


class XmlParams(Family):
    """The ``xml_params`` family compiled for one spec: its markers are :attr:`tags`."""

    name = "xml_params"
    parameters = frozenset(
        {"call", "stop", "reasoning", "name", "arguments", "parameter", "values", "value_lines", "separator"}
    )

    def __init__(self, spec: WireSpec) -> None:
        super().__init__(spec)
        self.tags = Tags.of(spec)
        self._value_text = _VALUE_TEXTS.get(spec.values, _json_text)
        self._syntax: Syntax | None = None

    @classmethod
    def check(cls, spec: WireSpec) -> None:
        """Refuse what :meth:`Family.check` refuses, and markers this family cannot read: every one is
        a tag (starting with ``<``), the function's opener is ``<TAG=`` (its body closes with
        ``</TAG>``), the parameter's closer ``</TAG>``, the name and key end with one character."""
        super().check(spec)
        problems = []
        if spec.arguments != "tagged":
            problems.append(f"arguments must be 'tagged', not {spec.arguments!r}")
        if spec.values not in _STYLES:
            problems.append(f"values must be one of {sorted(_STYLES)}, not {spec.values!r}")
        if spec.reasoning is None:
            problems.append("reasoning markers are needed")
        function, name_end = spec.name
        parameter, key_end, parameter_close = spec.parameter
        markers = (*spec.call, spec.stop, *(spec.reasoning or ()), function, parameter, parameter_close)
        if not all(marker.startswith("<") and len(marker) > 1 for marker in markers):
            problems.append("every marker must be a tag: call, stop, reasoning, name and parameter start with '<'")
        if not re.fullmatch(r"<[^\s<>=/]+=", function):
            problems.append(f"the name opener must be '<TAG=', not {function!r}")
        if not re.fullmatch(r"</[^\s<>]+>", parameter_close):
            problems.append(f"the parameter closer must be '</TAG>', not {parameter_close!r}")
        if len(name_end) != 1 or len(key_end) != 1:
            problems.append("the name and the key each end with one character")
        if problems:
            raise ValueError(f"not an {cls.name!r} spec: {'; '.join(problems)}")

    @property
    def content_style(self) -> str | None:  # type: ignore[override]
        """xgrammar's ``qwen_xml`` where the member writes Qwen3-Coder's calls exactly, else None."""
        qwen = ("<tool_call>", "</tool_call>", "<function=", ">", "<parameter=", ">", "</parameter>")
        tags = self.tags
        written = (tags.call_open, tags.call_close, tags.function, tags.name_end, *self.spec.parameter)
        return "qwen_xml" if self.spec.values == "text" and tags.value_lines and written == qwen else None

    def schema_tag(self, name: str) -> tuple[str, str] | None:
        """The call's head and tail around its parameters, where xgrammar writes them (``qwen_xml``)."""
        if self.content_style is None:
            return None
        tags = self.tags
        return f"{tags.call_open}\n{tags.function}{name}{tags.name_end}\n", f"{tags.function_close}\n{tags.call_close}"

    def syntax(self) -> Syntax:
        if self._syntax is None:  # the kit's own, once: the shared one of its markers
            self._syntax = reply_syntax(self.tags)
        return self._syntax

    # ---- reply

    def render_call(self, call: Any) -> str:
        """One call block: ``call`` is an OpenAI tool call or its ``function`` object."""
        tags = self.tags
        function = attr(call, "function")
        if defined(function):
            call = function
        out = [concat(f"{tags.call_open}\n{tags.function}", attr(call, "name"), f"{tags.name_end}\n")]
        arguments = attr(call, "arguments")
        if defined(arguments):
            for key, value in items(arguments):
                out.append(concat(tags.parameter, key, tags.key_end + tags.value_break))
                out.append(self._value_text(value))
                out.append(tags.value_close + "\n")
        out.append(f"{tags.function_close}\n{tags.call_close}")
        return "".join(out)

    def reply_parts(self, message: Any) -> tuple[str, str]:
        """(content, calls): the trimmed content (:func:`content_text`), and the call blocks followed
        by the stop token, each block but a leading one after the separator."""
        content = content_text(attr(message, "content"))
        out = []
        calls = attr(message, "tool_calls")
        if is_iterable(calls) and not is_mapping(calls):
            for index, call in enumerate(calls):
                if content or index:
                    out.append(self.spec.separator)
                out.append(self.render_call(call))
        out.append(self.tags.stop)
        return content, "".join(out)

    def reply_text(self, message: dict[str, Any]) -> str:
        content, calls = self.reply_parts(message)
        return content + calls

    # ---- export

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        """Calls as the renderer writes them: ``<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE...``.

        A string value is any text without the value's closer; other values are of their type,
        as the spec's ``values`` writes them. Parameters come in schema order; parallel calls are
        separate blocks, the separator apart.
        """
        from codec.export import (
            EMPTY,
            NAME,
            CallSyntax,
            JsonValues,
            Lit,
            Marker,
            Reasoning,
            alt,
            many,
            maybe,
            ordered_items,
            parameters_schema,
            properties,
            seq,
        )
        from codec.schema import tool_name

        tags, style = self.tags, _STYLES[self.spec.values]
        close, line = tags.value_close, tags.value_break
        values = JsonValues(builder)
        bodies = []
        for tool in tools:
            declared = properties(parameters_schema(tool))
            if declared is None:  # free-form parameters: any names, text values
                value = _param_value(builder, values, None, style, close)
                params = many(seq(tags.parameter, NAME, tags.key_end + line, value, "\n"))
            else:
                props, required = declared
                heads = []
                for key, schema in props.items():
                    value = _param_value(builder, values, schema, style, close)
                    heads.append((seq(f"{tags.parameter}{key}{tags.key_end}{line}", value, "\n"), key in required))
                params = ordered_items(heads, EMPTY)
            head = f"\n{tags.function}{tool_name(tool)}{tags.name_end}\n"
            bodies.append(seq(head, params, f"{tags.function_close}\n{tags.call_close}"))
        call = builder.rule("call", alt(*bodies)) if bodies else EMPTY
        return CallSyntax(
            triggers=((tags.call_open, call),),
            more=seq(self.spec.separator, Marker(tags.call_open), call),
            # The line break a template may write after the last call (the parser's CALL_BREAK: layout).
            tail=maybe(Lit("\n")),
            text_forbid_markers=(tags.call_open, tags.call_close, tags.function, tags.stop),
            # A reply may open with reasoning, which a call opener ends (the parser's reasoning text stops at one).
            reasoning=Reasoning(tags.think_open, tags.think_close, forbid_markers=(tags.call_open,)),
            stops=(tags.stop,),
        )

    def reply_markers(self) -> tuple[str, ...]:
        end = regex_literal(self.tags.name_end)
        return (rf"{regex_literal(self.tags.function)}[^{end}\s]+{end}",)


FAMILY = XmlParams
