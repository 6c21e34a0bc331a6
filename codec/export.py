"""Grammars for constrained decoding: a format's reply syntax, specialised to the tools.

:meth:`codec.Format.grammar` builds one grammar per request: only the declared tool names, only
their parameter names, required parameters required, and each value constrained by its
parameter's JSON schema in the format's own notation. It is printed in one of three dialects:

* ``"llguidance"``: llguidance's Lark dialect (vLLM and SGLang with the guidance backend;
  xgrammar's ``Grammar.from_lark`` refuses it: it takes no terminal intersection). Markers that
  are special tokens in the model's tokenizer (Gemma 4's ``<|tool_call>``, ``<|"|>``...) are
  written as tokens.
* ``"lark"``: the ``lark`` package's dialect, for ``Lark(text, parser="lalr")``.
* ``"gbnf"``: llama.cpp's GBNF (also xgrammar's ``Grammar.from_ebnf``, and what
  :func:`request_fields` sends to every server).

:func:`structural_tag` wraps the same calls in xgrammar's structural tag, and
:func:`request_fields` in the fields of a server's request.

A grammar is built once, as a small tree of expressions (:class:`Lit`, :class:`Term`,
:class:`Text`, :class:`Head`, :class:`Seq`...), and printed per dialect. Each format module
describes its calls with a :class:`CallSyntax`; the frame around them (free text, reasoning, one
or several calls, ``tool_choice``) is built here the same way for every format.
The tree and its builder are :mod:`codec._export_tree`, the regexes of its lexemes (and the
``pattern`` reader) :mod:`codec._export_regex`, the printers :mod:`codec._export_print`; this
module re-exports them.

What a dialect cannot say is built differently rather than left out:

* *Free text that must not contain a marker* (the text before a call, a reasoning block, a
  Gemma 4 string, a Qwen3-Coder string value). ``lark`` uses a negative lookahead per
  character; ``gbnf`` has no lookaround, so the text is a small automaton, one rule per state,
  that never completes a marker; llguidance has no lookaround and its lexer never backs up, so
  the text is an intersection ``/[\\s\\S]*/ & ~/[\\s\\S]*MARKER[\\s\\S]*/`` and the marker that
  ends it is part of the same lexeme (:class:`Head`): the lexeme ends at the first marker.
* *Priorities* (which lexeme wins where two could match): none are used. A reply that starts
  with a reasoning block cannot be read as free text, because that text is forbidden to start
  with the reasoning marker.
* *Lazy repetition*: never needed, for the same reason (text up to the first marker).

Whitespace is exactly what the format's renderer writes (``{"name": "f", "arguments": {...}}``
with ``", "`` and ``": "``): the model is held to the form it was trained on. Properties come in
the order the schema lists them (Gemma 4: sorted, as its template writes them); optional ones
may be left out. The stop token that ends the reply (``<|im_end|>``, ``<turn|>``,
``<|tool_response>``...) is not part of the grammar: the server stops on it.

JSON-schema keywords used: ``type`` (a name or a list), ``nullable``, ``enum``, ``const``,
``properties``, ``required``, ``additionalProperties`` (a schema for objects without
``properties``), ``items``, ``anyOf``/``oneOf`` (both read as "one of these"), ``allOf`` with one
entry; ``pattern`` for strings written as JSON (:func:`pattern_regex` reads the subset every
dialect can print), ``minItems``/``maxItems`` up to :data:`MAX_ITEMS`, an integer's bounds over at
most :data:`MAX_RANGE` values or a lone minimum of 0 or 1. A schema without a usable type allows
any value; an object with ``properties`` allows only those; a tool without ``parameters`` takes no
arguments. Every other keyword, and those above where a notation cannot hold them, is left out
and reported: :func:`schema_gaps` lists them with their place, and the public functions give one
:class:`GrammarWarning` per call.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from codec import jinja
from codec._export_print import avoiding_automaton, gbnf_literal, gbnf_regex, print_grammar, regex
from codec._export_regex import (
    ANY,
    DIGIT,
    MAX_CHAR,
    MAX_ITEMS,
    WORD,
    Chars,
    RAlt,
    Regex,
    RRep,
    RSeq,
    Unsupported,
    charset,
    json_string_regex,
    literal,
    optional,
    pattern_regex,
    plus,
    ralt,
    rseq,
    star,
    string_pattern,
)
from codec._export_tree import (
    EMPTY,
    Alt,
    Expr,
    GrammarBuilder,
    Head,
    Lit,
    Marker,
    Ref,
    Rep,
    Seq,
    Term,
    Text,
    alt,
    many,
    maybe,
    seq,
)
from codec.errors import GrammarWarning
from codec.schema import tool_name, tool_parameters
from codec.tools import normalize_tools

if TYPE_CHECKING:
    from codec.format import Format

# The names format modules and tests import from here: this module's own, and those of the tree,
# regex and printing modules it is built on, re-exported.
__all__ = [
    "ANY",
    "DIALECTS",
    "DIGIT",
    "EMPTY",
    "INTEGER",
    "LEFT_OUT",
    "MAX_CHAR",
    "MAX_ITEMS",
    "MAX_RANGE",
    "NAME",
    "NUMBER",
    "SERVERS",
    "STRING",
    "TOOL_CHOICES",
    "WHITESPACE",
    "WORD",
    "Alt",
    "CallSyntax",
    "Chars",
    "Expr",
    "GrammarBuilder",
    "Head",
    "JsonValues",
    "Lit",
    "Marker",
    "RAlt",
    "RRep",
    "RSeq",
    "Reasoning",
    "Ref",
    "Regex",
    "Rep",
    "Seq",
    "Term",
    "Text",
    "alt",
    "avoiding_automaton",
    "build",
    "call_syntax",
    "calls_frame",
    "charset",
    "check_tools",
    "choose_tools",
    "frame",
    "gbnf_literal",
    "gbnf_regex",
    "grammar_text",
    "integer_floor",
    "integer_range",
    "item_counts",
    "json_string_regex",
    "literal",
    "many",
    "maybe",
    "optional",
    "ordered_items",
    "parameters_schema",
    "pattern_regex",
    "plus",
    "print_grammar",
    "properties",
    "ralt",
    "regex",
    "request_fields",
    "rseq",
    "schema_gaps",
    "schema_types",
    "seq",
    "standard_schema",
    "star",
    "string_pattern",
    "structural_tag",
    "warn_gaps",
]

DIALECTS = ("llguidance", "lark", "gbnf")
#: The string forms of ``tool_choice``; OpenAI's named form ``{"type": "function", "function":
#: {"name": NAME}}`` is taken too.
TOOL_CHOICES = ("auto", "required", "none")
SERVERS = ("vllm", "sglang", "llama.cpp")
#: Integer ranges written out value by value (``minimum``..``maximum``) up to this many values.
MAX_RANGE = 256


# ---------------------------------------------------------------------------- integer bounds and item counts
# What of a number's or an array's schema a grammar can write out: small ranges, a lone floor of
# 0 or 1, few items.


def _integral(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def _bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """An integer schema's inclusive bounds (``minimum``, ``exclusiveMinimum``...), rounded inward."""
    low = high = None
    for key, floor in (("minimum", True), ("exclusiveMinimum", True), ("maximum", False), ("exclusiveMaximum", False)):
        value = schema.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        bound = math.ceil(value) if floor else math.floor(value)
        if key.startswith("exclusive") and bound == value:
            bound += 1 if floor else -1
        if floor:
            low = bound if low is None else max(low, bound)
        else:
            high = bound if high is None else min(high, bound)
    return low, high


def integer_range(schema: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(low, high)`` when an integer schema bounds both ends of a range of at most MAX_RANGE values."""
    low, high = _bounds(schema)
    if low is None or high is None or not 0 <= high - low < MAX_RANGE:
        return None
    return low, high


def integer_floor(schema: Mapping[str, Any]) -> int | None:
    """0 or 1 when an integer schema's only bound is that minimum (the naturals, the positive integers)."""
    low, high = _bounds(schema)
    return low if high is None and low in (0, 1) else None


def item_counts(schema: Mapping[str, Any]) -> tuple[int, int | None]:
    """An array schema's ``minItems``/``maxItems`` when the grammar can write them out, else ``(0, None)``."""
    low = _integral(schema.get("minItems", 0))
    high = _integral(schema["maxItems"]) if "maxItems" in schema else None
    if low is None or low < 0 or ("maxItems" in schema and high is None):
        return 0, None
    if low > MAX_ITEMS or (high is not None and (high < low or high > MAX_ITEMS)):
        return 0, None
    return low, high


STRING = Term(
    "STRING",
    rseq(
        '"',
        star(
            ralt(
                charset('"\\\x00-\x1f', negate=True),
                rseq("\\", charset('"\\/bfnrt')),
                rseq("\\u", RRep(charset("0-9a-fA-F"), 4, 4)),
            )
        ),
        '"',
    ),
)
_POSITIVE = rseq(charset("1-9"), star(DIGIT))
_UNSIGNED = ralt("0", _POSITIVE)
INTEGER = Term("INTEGER", rseq(optional("-"), _UNSIGNED))
NUMBER = Term(
    "NUMBER",
    rseq(
        optional("-"),
        _UNSIGNED,
        optional(rseq(".", plus(DIGIT))),
        optional(rseq(charset("eE"), optional(charset("+-")), plus(DIGIT))),
    ),
)
NAME = Term("NAME", rseq(charset("A-Za-z_"), star(ralt(WORD, charset("-.")))))


def schema_types(schema: Mapping[str, Any]) -> list[str]:
    """The JSON types a schema names (``type`` and ``nullable``), else the ones its keywords imply."""
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else [t for t in declared or () if isinstance(t, str)]
    if not types:
        if isinstance(schema.get("properties"), Mapping) or isinstance(schema.get("additionalProperties"), Mapping):
            types = ["object"]
        elif "items" in schema:
            types = ["array"]
    if types and schema.get("nullable") is True and "null" not in types:
        types.append("null")
    return types


def ordered_items(items: Sequence[tuple[Expr, bool]], separator: Expr | str) -> Expr:
    """``items`` in order, each ``(expr, required)``: optional ones may be left out, ``separator`` between."""
    tail: list[Expr] = []
    for index in range(len(items)):
        expr, required = items[index]
        tail.append(seq(separator, expr) if required else maybe(seq(separator, expr)))
    firsts: list[Expr] = []
    for index, (expr, required) in enumerate(items):  # the first item written
        firsts.append(seq(expr, *tail[index + 1 :]))
        if required:
            break
    else:
        firsts.append(EMPTY)
    return alt(*firsts)


class JsonValues:
    """Values in JSON as ``json.dumps`` writes them (``", "`` and ``": "``), constrained by JSON schemas."""

    #: Names this notation's rules (``any_json_value``).
    tag = "json"
    true, false, null = "true", "false", "null"
    object_open, object_close, array_open, array_close = "{", "}", "[", "]"
    item_separator = ", "

    def __init__(self, builder: GrammarBuilder) -> None:
        self.b = builder

    # -- how values are written
    def write(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    def key(self, name: str) -> str:
        return json.dumps(name, ensure_ascii=False) + ": "

    def free_key(self) -> Expr:
        return seq(STRING, ": ")

    def order(self, names: list[str]) -> list[str]:
        return names

    def string(self) -> Expr:
        return STRING

    def integer(self) -> Expr:
        return INTEGER

    def number(self) -> Expr:
        return NUMBER

    # -- schemas
    def value(self, schema: Any) -> Expr:
        """The values ``schema`` allows."""
        if not isinstance(schema, Mapping):
            return self.any()
        nullable = schema.get("nullable") is True
        if "const" in schema:
            return Lit(self.write(schema["const"]))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            extra = [None] if nullable and None not in schema["enum"] else []
            return alt(*(self.literal(v) for v in [*schema["enum"], *extra]))
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return alt(*(self.value(o) for o in options), *([self.null] if nullable else []))
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.value(all_of[0])
        types = schema_types(schema)
        if not types or all_of:
            return self.any()
        return alt(*(self.typed(schema, kind) for kind in types))

    def literal(self, value: Any) -> Expr:
        return Lit(self.write(value))

    def typed(self, schema: Mapping[str, Any], kind: str) -> Expr:
        if kind == "string":
            pattern = string_pattern(schema)
            # Only where strings are JSON: a notation with strings of its own leaves the pattern out.
            if pattern is not None and type(self).string is JsonValues.string:
                try:
                    term = self.b.term("PATTERN", json_string_regex(pattern))
                except Unsupported:  # a class no character matches: left out, reported
                    return self.string()
                self.b.expressed.add((id(schema), "pattern"))
                return term
            return self.string()
        if kind == "integer":
            bounds = integer_range(schema)
            if bounds is not None:
                self.b.expressed.add((id(schema), "range"))
                return alt(*(Lit(str(n)) for n in range(bounds[0], bounds[1] + 1)))
            if integer_floor(schema) is not None:
                self.b.expressed.add((id(schema), "range"))
                floor = integer_floor(schema)
                return self.b.term("NATURAL" if floor == 0 else "POSITIVE", _UNSIGNED if floor == 0 else _POSITIVE)
            return self.integer()
        if kind == "number":
            return self.number()
        if kind == "boolean":
            return alt(self.true, self.false)
        if kind == "null":
            return Lit(self.null)
        if kind == "array":
            low, high = item_counts(schema)
            if (low, high) != (0, None):
                self.b.expressed.add((id(schema), "items"))
            return self.array(self.value(schema["items"]) if "items" in schema else self.any(), low, high)
        if kind == "object":
            return self.object(schema)
        return self.any()

    def array(self, item: Expr, low: int = 0, high: int | None = None) -> Expr:
        """An array of ``item``, from ``low`` to ``high`` items (None: no upper bound)."""
        after = seq(self.item_separator, item)
        if high is None:
            rest: Expr = many(after)
        else:
            rest = EMPTY
            for _ in range(high - max(low, 1)):
                rest = maybe(seq(after, rest))
        items = seq(item, *([after] * (max(low, 1) - 1)), rest)
        if high == 0:
            return seq(self.array_open, self.array_close)
        return seq(self.array_open, items if low > 0 else maybe(items), self.array_close)

    def object(self, schema: Mapping[str, Any]) -> Expr:
        """An object: the declared properties in order (required ones required), else free keys."""
        declared = properties(schema)
        if declared is None:
            extra = schema.get("additionalProperties")
            return self.free_object(self.value(extra) if isinstance(extra, Mapping) else self.any())
        props, required = declared
        items = [(seq(self.key(name), self.value(props[name])), name in required) for name in self.order(list(props))]
        return seq(self.object_open, ordered_items(items, self.item_separator), self.object_close)

    def free_object(self, value: Expr) -> Expr:
        pair = seq(self.free_key(), value)
        return seq(self.object_open, maybe(seq(pair, many(seq(self.item_separator, pair)))), self.object_close)

    def any(self) -> Ref:
        """Any value (a recursive rule)."""

        def build(ref: Ref) -> Expr:
            scalars = alt(self.string(), self.number(), self.true, self.false, self.null)
            return alt(scalars, self.array(ref), self.free_object(ref))

        return self.b.recursive(f"any_{self.tag}_value", build)


def parameters_schema(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """A tool's parameters schema; a tool without ``parameters`` takes no arguments (as OpenAI reads it)."""
    params = tool_parameters(tool)
    return params if params is not None else {"type": "object", "properties": {}}


def properties(schema: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]] | None:
    """The declared properties of an object schema (in order) and the required names; None if it declares none."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return None
    required = schema.get("required")
    names = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    return {k: v for k, v in props.items() if isinstance(k, str)}, names


# ---------------------------------------------------------------------------- calls and frames


@dataclass(frozen=True)
class Reasoning:
    """A reasoning block: ``open`` (a marker), then ``open_rest`` text, free text, then ``close``."""

    open: str
    close: str
    open_rest: str = ""
    #: Markers the reasoning text may not contain either (besides ``close``).
    forbid_markers: tuple[str, ...] = ()


@dataclass(frozen=True)
class CallSyntax:
    """A format's tool calls, specialised to the tools: what a format module hands to :func:`build`.

    A reply is: maybe a reasoning block, free text (``tool_choice="auto"``), then maybe calls.
    The first call starts with one of ``triggers`` (a marker) followed by its expression; more
    calls (``parallel``) each follow as ``more``; ``tail`` closes the list of calls.
    """

    triggers: tuple[tuple[str, Expr], ...]
    more: Expr
    tail: Expr = EMPTY
    #: What free text may not contain: markers and patterns that would start a call (or end the reply).
    text_forbid_markers: tuple[str, ...] = ()
    text_forbid: tuple[Regex, ...] = ()
    #: Markers free text may not start with (a bare call at the start of a reply, say).
    text_forbid_start: tuple[str, ...] = ()
    reasoning: Reasoning | None = None
    #: Markers that end the reply (stop tokens): not part of the grammar, the server stops on them.
    stops: tuple[str, ...] = ()
    #: Whether the calls are the whole reply (bare calls at its start, as Llama 3 writes them): then
    #: no free text comes before them, and free text may hold what would start one elsewhere.
    at_start: bool = False
    #: A reply without calls where the format writes it otherwise than as free text (a message of
    #: its own, reasoning and all): in place of the free text, and no text before the calls.
    content: Expr | None = None


WHITESPACE = Term("WS", plus(charset(" \t\r\n")))


def frame(b: GrammarBuilder, calls: CallSyntax, *, tool_choice: str, parallel: bool) -> None:
    """Add the ``start`` rule: reasoning, free text and the calls, as ``tool_choice`` and ``parallel`` say.

    ``tool_choice`` is ``"auto"`` or ``"required"`` (``"none"`` is ``"auto"`` with no calls).
    """
    rest = _rest(calls, parallel)
    reasoning = _reasoning(b, calls.reasoning)
    if tool_choice == "required":
        first = alt(*(seq(Marker(trigger), body) for trigger, body in calls.triggers))
        lead = seq(reasoning, maybe(WHITESPACE)) if reasoning != EMPTY else EMPTY
        b.rules["start"] = seq(maybe(lead) if lead != EMPTY else EMPTY, first, rest)
        return

    def content(forbid_start: tuple[str, ...]) -> Expr:
        if calls.content is not None:
            first = alt(*(seq(Marker(trigger), body) for trigger, body in calls.triggers))
            return alt(calls.content, seq(first, rest)) if calls.triggers else calls.content
        text = b.text(calls.text_forbid_markers, calls.text_forbid, (*calls.text_forbid_start, *forbid_start))
        if not calls.triggers:
            return text
        if calls.at_start:
            first = alt(*(seq(Marker(trigger), body) for trigger, body in calls.triggers))
        else:
            first = alt(*(seq(b.head(text, trigger), body) for trigger, body in calls.triggers))
        return alt(text, seq(first, rest))

    if calls.reasoning is None:
        b.rules["start"] = content(())
    else:
        b.rules["start"] = alt(seq(reasoning, content(())), content((calls.reasoning.open,)))


def _rest(calls: CallSyntax, parallel: bool) -> Expr:
    return seq(many(calls.more) if parallel else EMPTY, calls.tail)


def calls_frame(b: GrammarBuilder, calls: CallSyntax, *, parallel: bool, after: str | None = None) -> None:
    """Add a ``start`` rule of the calls alone: from a trigger on (a lazy grammar, which a server
    starts at the trigger), or, with ``after``, what follows that trigger (a structural tag's content)."""
    rest = _rest(calls, parallel)
    if after is None:
        b.rules["start"] = seq(alt(*(seq(Marker(trigger), body) for trigger, body in calls.triggers)), rest)
    else:
        b.rules["start"] = seq(next(body for trigger, body in calls.triggers if trigger == after), rest)


def _reasoning(b: GrammarBuilder, reasoning: Reasoning | None) -> Expr:
    if reasoning is None:
        return EMPTY
    text = b.text((reasoning.close, *reasoning.forbid_markers))
    return seq(Marker(reasoning.open), reasoning.open_rest, b.head(text, reasoning.close))


def check_tools(tools: Any) -> list[dict[str, Any]]:
    """The tools as plain dicts in OpenAI's shape, read as :meth:`Format.render` reads them
    (:func:`codec.tools.normalize_tools`); a name declared twice is a :class:`ValueError`."""
    if isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
        raise TypeError(f"tools must be a list of tools, not {type(tools).__name__}")
    prepared = jinja.prepare_tools(normalize_tools(tools, named=True)) or []
    seen: set[str] = set()
    for tool in prepared:
        name = tool_name(tool)
        assert name is not None  # normalize_tools requires it
        if name in seen:
            raise ValueError(f"tool {name!r} is declared twice")
        seen.add(name)
        _check_types(tool)
    return prepared


def choose_tools(tool_choice: Any, tools: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """``tool_choice`` read as ``("auto" | "required" | "none", the tools a call may use)``.

    OpenAI's named form ``{"type": "function", "function": {"name": NAME}}`` is ``"required"``
    with that tool alone; ``"none"`` leaves no tool to call.
    """
    if isinstance(tool_choice, str):
        if tool_choice not in TOOL_CHOICES:
            raise ValueError(
                f"unknown tool_choice {tool_choice!r}; choose one of: {', '.join(TOOL_CHOICES)}, or "
                '{"type": "function", "function": {"name": NAME}}'
            )
        if tool_choice == "required" and not tools:
            raise ValueError('tool_choice="required" needs at least one tool')
        return tool_choice, [] if tool_choice == "none" else tools
    function = tool_choice.get("function") if isinstance(tool_choice, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(tool_choice, Mapping) or tool_choice.get("type") != "function" or not isinstance(name, str):
        raise ValueError(
            f"unknown tool_choice {tool_choice!r}; a named tool_choice is "
            '{"type": "function", "function": {"name": NAME}}'
        )
    chosen = [tool for tool in tools if tool_name(tool) == name]
    if not chosen:
        declared = ", ".join(repr(tool_name(t)) for t in tools) or "none"
        raise ValueError(f"tool_choice names {name!r}, which is not a declared tool (declared: {declared})")
    return "required", chosen


def _choice_title(tool_choice: Any) -> str:
    return tool_choice if isinstance(tool_choice, str) else f"function {tool_choice['function']['name']}"


# ---------------------------------------------------------------------------- what a grammar leaves out

#: Schema keywords no grammar here expresses.
LEFT_OUT = (
    "format", "minLength", "maxLength", "multipleOf", "minProperties", "maxProperties", "uniqueItems",
    "$ref", "not", "if", "then", "else", "patternProperties", "propertyNames", "prefixItems", "contains",
    "minContains", "maxContains", "dependentRequired", "dependentSchemas", "unevaluatedProperties",
    "unevaluatedItems",
)  # fmt: skip
#: Keywords expressed in some cases, by what :class:`JsonValues` notes in ``GrammarBuilder.expressed``.
_SOMETIMES = {
    "pattern": "pattern",
    "minimum": "range", "maximum": "range", "exclusiveMinimum": "range", "exclusiveMaximum": "range",
    "minItems": "items", "maxItems": "items",
}  # fmt: skip


def schema_gaps(b: GrammarBuilder, tools: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(where, keyword)`` for each schema keyword of ``tools`` the grammar built in ``b`` leaves out.

    ``where`` is the tool's name and the path to the value (``get_weather.days``, ``f.tags[]``).
    A schema with ``enum`` or ``const`` is its values, whatever else it says.
    """
    gaps: list[tuple[str, str]] = []
    for tool in tools:
        for schema, where in _subschemas(tool_parameters(tool), str(tool_name(tool))):
            if "enum" not in schema and "const" not in schema:
                for key in schema:
                    if key in LEFT_OUT or (key in _SOMETIMES and (id(schema), _SOMETIMES[key]) not in b.expressed):
                        gaps.append((where, key))
                all_of = schema.get("allOf")
                if isinstance(all_of, list) and len(all_of) > 1:
                    gaps.append((where, "allOf"))
    return list(dict.fromkeys(gaps))


def _subschemas(schema: Any, where: str) -> Iterator[tuple[Mapping[str, Any], str]]:
    """``schema`` and each schema within it (properties, items, additional properties, the
    alternatives), with the path to it (``get_weather.days``, ``f.tags[]``, ``f.*``)."""
    if not isinstance(schema, Mapping):
        return
    yield schema, where
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            yield from _subschemas(sub, f"{where}.{name}")
    if isinstance(schema.get("items"), Mapping):
        yield from _subschemas(schema["items"], where + "[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _subschemas(schema["additionalProperties"], where + ".*")
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            for sub in schema[key]:
                yield from _subschemas(sub, where)


def _check_types(tool: Mapping[str, Any]) -> None:
    """Refuse a schema ``type`` that is neither a type name nor a list of them, naming the tool and
    the property (a grammar of the tool cannot be built, and no guess at what it means is right)."""
    name = str(tool_name(tool))
    for schema, where in _subschemas(tool_parameters(tool), name):
        declared = schema.get("type")
        if declared is None or isinstance(declared, str):
            continue
        if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
            continue
        place = f"property {where[len(name) + 1 :]!r}" if where != name else "its parameters"
        raise ValueError(
            f"tool {name!r}, {place}: type {json.dumps(declared)} is not a JSON type name "
            '("string", "integer", "object"...) or a list of them'
        )


def warn_gaps(fmt: Format, gaps: Sequence[tuple[str, str]], *, stacklevel: int) -> None:
    """One :class:`GrammarWarning` listing ``gaps`` (nothing when there are none)."""
    if not gaps:
        return
    by_place: dict[str, list[str]] = {}
    for where, keyword in gaps:
        by_place.setdefault(where, []).append(keyword)
    listed = "; ".join(f"{where}: {', '.join(keywords)}" for where, keywords in by_place.items())
    message = f"the {fmt.name} grammar does not constrain these schema keywords (values may break them): {listed}"
    warnings.warn(message, GrammarWarning, stacklevel=stacklevel + 1)


# ---------------------------------------------------------------------------- grammars


def build(
    fmt: Format, tools: Any, *, tool_choice: Any = "auto", parallel: bool = True, dialect: str = "llguidance"
) -> str:
    """The grammar text of ``fmt``'s replies for ``tools`` (see :meth:`codec.Format.grammar`)."""
    text, gaps = grammar_text(fmt, tools, tool_choice=tool_choice, parallel=parallel, dialect=dialect)
    warn_gaps(fmt, gaps, stacklevel=3)
    return text


def grammar_text(
    fmt: Format,
    tools: Any,
    *,
    tool_choice: Any = "auto",
    parallel: bool = True,
    dialect: str = "llguidance",
    calls_only: bool = False,
    after: str | None = None,
) -> tuple[str, list[tuple[str, str]]]:
    """The grammar text and the schema keywords it leaves out (:func:`schema_gaps`).

    ``calls_only``: the calls alone, from a trigger on (:func:`calls_frame`); ``after``: what
    follows that trigger.
    """
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}; choose one of: {', '.join(DIALECTS)}")
    mode, chosen = choose_tools(tool_choice, check_tools(tools))
    b, calls = call_syntax(fmt, chosen)
    if not chosen:  # no call can be made: free text (and reasoning) only
        calls = replace(calls, triggers=(), more=EMPTY, tail=EMPTY)
    if calls_only or after is not None:
        calls_frame(b, calls, parallel=parallel, after=after)
        what = f"calls after {after!r}" if after is not None else "calls"
    else:
        frame(b, calls, tool_choice="auto" if mode == "none" else mode, parallel=parallel)
        what = "replies"
    title = f"{fmt.name} {what}, tool_choice={_choice_title(tool_choice)}, parallel={parallel}"
    return print_grammar(b, dialect, title=title), schema_gaps(b, chosen)


def call_syntax(fmt: Format, tools: list[dict[str, Any]]) -> tuple[GrammarBuilder, CallSyntax]:
    """``fmt``'s calls for these (checked) tools, and the builder holding their rules."""
    b = GrammarBuilder(fmt.grammar_special_tokens)
    return b, fmt.kit().grammar_calls(b, tools)


# ---------------------------------------------------------------------------- servers
# xgrammar's structural tag, as xgrammar 0.2.9 reads it (``xgrammar/structural_tag.py``): the tree
# ``{"type": "structural_tag", "format": {...}}`` with ``triggered_tags``, ``tag``, ``json_schema``
# (``style`` ``"json"`` or ``"qwen_xml"``), ``grammar`` (EBNF, which codec's GBNF is), ``any_text``,
# ``sequence``, ``optional`` and ``regex`` formats.


def _content_style(fmt: Format) -> str | None:
    """The ``json_schema`` style xgrammar writes ``fmt``'s arguments in, or None (codec's grammar then:
    also where the family's kit for ``fmt``'s spec writes no tag around arguments)."""
    kit = fmt.kit()
    return kit.content_style if kit.content_style is not None and kit.schema_tag("f") is not None else None


def standard_schema(schema: Any) -> Any:
    """``schema`` in JSON Schema's own words, for a reader that does not take OpenAPI's ``nullable``
    (xgrammar): ``nullable: true`` becomes ``"null"`` among the types (or the options, or the enum)."""
    if isinstance(schema, list):
        return [standard_schema(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {key: standard_schema(value) for key, value in schema.items() if key != "nullable"}
    if schema.get("nullable") is not True:
        return out
    declared = out.get("type")
    if isinstance(declared, str):
        out["type"] = [declared, "null"] if declared != "null" else declared
    elif isinstance(declared, list):
        out["type"] = declared if "null" in declared else [*declared, "null"]
    for key in ("anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = [*out[key], {"type": "null"}]
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def structural_tag(
    fmt: Format, tools: Any, *, tool_choice: Any = "auto", parallel: bool = True
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """xgrammar's structural tag for ``fmt``'s calls (see :meth:`codec.Format.structural_tag`), and the
    schema keywords codec's grammar contents leave out (none for ``json_schema`` contents)."""
    mode, chosen = choose_tools(tool_choice, check_tools(tools))
    _, calls = call_syntax(fmt, chosen)
    triggers = [trigger for trigger, _ in calls.triggers] if chosen else []
    if not chosen:  # text only: codec's grammar, which keeps call openers (and ``[name(``) out of the text
        text_only, _ = grammar_text(fmt, [], tool_choice="none", dialect="gbnf")
        return {"type": "structural_tag", "format": {"type": "grammar", "grammar": text_only}}, []
    style = _content_style(fmt)
    gaps: list[tuple[str, str]] = []
    tags: list[dict[str, Any]] = []
    if style is None:
        for trigger in triggers:
            gbnf, found = grammar_text(fmt, chosen, tool_choice=tool_choice, parallel=parallel, dialect="gbnf",
                                       after=trigger)  # fmt: skip
            gaps += [gap for gap in found if gap not in gaps]
            tags.append({"type": "tag", "begin": trigger, "content": {"type": "grammar", "grammar": gbnf}, "end": ""})
    for tool in chosen if style is not None else ():
        content = {"type": "json_schema", "json_schema": standard_schema(parameters_schema(tool)), "style": style}
        ends = fmt.kit().schema_tag(str(tool_name(tool)))
        assert ends is not None, "a family with a content style writes its tags"
        tags.append({"type": "tag", "begin": ends[0], "content": content, "end": ends[1]})
    calls_format: dict[str, Any] = {
        "type": "triggered_tags",
        "triggers": triggers,
        "tags": tags,
        "at_least_one": mode == "required",
        # codec's grammar contents hold every call of the reply: one tag.
        "stop_after_first": style is None or not parallel,
    }
    if mode != "required" or calls.reasoning is None:
        return {"type": "structural_tag", "format": calls_format}, gaps
    # With at_least_one, xgrammar takes no text before the first call: a reasoning block may lead.
    reasoning = calls.reasoning
    block = {
        "type": "tag",
        "begin": reasoning.open + reasoning.open_rest,
        "content": {"type": "any_text"},
        "end": reasoning.close,
    }
    lead = {"type": "sequence", "elements": [block, {"type": "regex", "pattern": "[ \\t\\r\\n]*"}]}
    tree = {"type": "sequence", "elements": [{"type": "optional", "content": lead}, calls_format]}
    return {"type": "structural_tag", "format": tree}, gaps


def request_fields(
    fmt: Format, tools: Any, *, server: str, tool_choice: Any = "auto", parallel: bool = True
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The JSON fields to merge into a request to ``server`` (see :meth:`codec.Format.request_fields`),
    and the schema keywords the grammar leaves out."""
    if server not in SERVERS:
        raise ValueError(f"unknown server {server!r}; choose one of: {', '.join(SERVERS)}")
    mode, chosen = choose_tools(tool_choice, check_tools(tools))
    if server != "llama.cpp":
        gbnf, gaps = grammar_text(fmt, tools, tool_choice=tool_choice, parallel=parallel, dialect="gbnf")
        # vLLM: StructuredOutputsParams.grammar (vllm/sampling_params.py); its xgrammar backend
        # compiles GBNF there (compile_grammar), its guidance backend converts it (read at vLLM
        # commit 0160cf0). SGLang: the ``ebnf`` request field (xgrammar backend, compile_grammar).
        return ({"structured_outputs": {"grammar": gbnf}} if server == "vllm" else {"ebnf": gbnf}), gaps
    # llama-server (tools/server, common/common.h at llama.cpp commit 001d906): ``grammar_triggers`` items are
    # {"type": COMMON_GRAMMAR_TRIGGER_TYPE_*, "value": ...}: 0 token (with "token": id), 1 word,
    # 2 pattern, 3 full pattern. A word that is one token must be in ``preserved_tokens``.
    _, calls = call_syntax(fmt, chosen)
    triggers = [trigger for trigger, _ in calls.triggers] if chosen else []
    markers = [*triggers, *fmt.grammar_special_tokens]
    if calls.reasoning is not None:
        markers += [calls.reasoning.open, calls.reasoning.close]
    preserved = list(dict.fromkeys(markers))
    if mode == "auto" and chosen:  # lazy: free until a call opener, then the calls
        gbnf, gaps = grammar_text(fmt, tools, tool_choice=tool_choice, parallel=parallel, dialect="gbnf",
                                  calls_only=True)  # fmt: skip
        fields: dict[str, Any] = {
            "grammar": gbnf,
            "grammar_lazy": True,
            "grammar_triggers": [{"type": 1, "value": trigger} for trigger in triggers],
            "preserved_tokens": preserved,
        }
        return fields, gaps
    gbnf, gaps = grammar_text(fmt, tools, tool_choice=tool_choice, parallel=parallel, dialect="gbnf")
    return ({"grammar": gbnf, "preserved_tokens": preserved} if preserved else {"grammar": gbnf}), gaps
