"""The ``json_object`` family: each call a JSON object (name and arguments) between call markers.

A member (``hermes`` and its prompt variants) writes::

    [<think>reasoning</think>]content
    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call><|im_end|>

and its spec gives the call opener and closer, the stop token and the reasoning markers; the
grammar (``grammars/wire/json_object.lark``), the builder, the fast lexers, the recoveries, the
whole-reply reader, the renderer and the constrained-decoding calls are made from them. Argument
values are JSON and keep their JSON types. Tolerated (each reported as an Issue): a missing closer
(or ``}``) before the end of the reply or before the next block; ``parameters`` for
``arguments``; ``arguments`` given as a JSON string; Python-literal or single-quoted objects;
raw control characters in strings; two JSON objects in one block, or a JSON list of them; a code
fence around a block's JSON; text after the stop token. Where the spec's ``recover`` names them
(:data:`RECOVERIES`), calls in other models' shapes too.
"""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any

from codec import jinja
from codec.errors import RenderError
from codec.export import (
    EMPTY,
    CallSyntax,
    GrammarBuilder,
    JsonValues,
    Marker,
    Reasoning,
    Term,
    alt,
    charset,
    maybe,
    parameters_schema,
    rseq,
    seq,
)
from codec.formats._calls import MARKUP, ProseText, before_stop
from codec.formats._chatml import read_whole_reply
from codec.literals import PLAIN_JSON_DECODER
from codec.schema import tool_name
from codec.sink import CONTENT, REASONING
from codec.stream import Syntax, ToolsByName, WholeReading
from codec.watch import Delimiter
from codec.wire import Family, WireSpec, family_grammar, lark_literal, regex_literal
from codec.wire._json_object_builder import CLOSED_PUNCTUATION, OPENER_NEXT, CallLexers, builder_of, opener_pattern
from codec.wire._json_object_shapes import FOREIGN_LOOKAHEAD, FOREIGN_TAGS, Markers, shape_lexers
from codec.wire._json_object_values import CALL_NAME, Keys, lex_json_container

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["CLOSED_PUNCTUATION", "FAMILY", "RECOVERIES", "JsonObject", "opener_pattern"]

#: The deviations a member's ``recover`` may name, and what each reads. Both concern Hermes-style
#: models, which write ``<tool_call>`` when they write a wrapper at all: a member with markers of
#: its own leaves them out.
RECOVERIES = {
    "foreign_shapes": "calls in other models' shapes: a code fence at the start of a line, "
    + ", ".join(f"<{tag}>" for tag in FOREIGN_TAGS)
    + ', <function=NAME> or <function name="NAME"> around them',
    "unwrapped_calls": "call objects (or a JSON list of them) with no wrapper that are the whole reply",
    "bare_calls": "the member's own calls: call objects (or lists of them) that are the whole reply, bare or "
    "after the call opener, ';' or blanks apart, up to the stop token, the closer or the end, and Python calls "
    "after the opener (a built-in tool's NAME.call(...); another's is reported); the opener repeated, a list "
    "or a 'type' key are reported",
}
#: A call's id in a constrained reply: nine letters and digits (what Mistral's templates require).
_ID = Term("CALL_ID", rseq(*[charset("A-Za-z0-9")] * 9))
#: What a key may be: JSON writes it as it is between quotes.
_KEY = re.compile(r"[A-Za-z_][\w\-]*")


class JsonObject(Family):
    """The ``json_object`` family compiled for one spec."""

    name = "json_object"
    parameters = frozenset(
        {"call", "block", "stop", "reasoning", "name", "arguments_keys", "id_key", "separator", "recover"}
    )
    content_style = "json"

    @classmethod
    def check(cls, spec: WireSpec) -> None:
        """Refuse what :meth:`Family.check` refuses, a spec without call markers (an opener and a
        closer, or else a block opener, maybe with a closer: calls as one JSON list between them) or
        stop token (or one that starts with a blank), keys JSON would escape, and recoveries the family
        does not know."""
        super().check(spec)
        listed = spec.block[0] and not any(spec.call)
        if not ((all(spec.call) and not any(spec.block)) or listed) or not spec.stop:
            raise ValueError(
                "a json_object member needs a call opener and closer (or a block opener, maybe with a closer)"
                " and a stop token"
            )
        if spec.reasoning is not None and not all(spec.reasoning):
            raise ValueError("a json_object member's reasoning markers are an opener and a closer, or None")
        markers = (*(m for m in (*spec.call, *spec.block) if m), spec.stop, *(spec.reasoning or ()))
        if any(marker[0].isspace() for marker in markers):
            raise ValueError("a json_object member's markers start with other than a blank (free text owns those)")
        key, after = spec.name
        name = key[1:-1] if key[:1] == key[-1:] == '"' else ""
        if after or not _KEY.fullmatch(name):
            raise ValueError(f"a json_object member's name is its quoted JSON key, then nothing: not {spec.name}")
        keys = spec.arguments_keys
        if not keys or not all(map(_KEY.fullmatch, keys)) or name in keys:
            raise ValueError(f"a json_object member's arguments_keys are plain keys, not its name's: {keys}")
        if spec.id_key and (not _KEY.fullmatch(spec.id_key) or spec.id_key in (name, *keys)):
            raise ValueError(f"a json_object member's id_key is a plain key of its own: not {spec.id_key!r}")
        if spec.id_key and not listed:
            raise ValueError("a json_object member writes ids (id_key) only in calls listed after a block opener")
        unknown = sorted(set(spec.recover) - set(RECOVERIES))
        if unknown:
            known = ", ".join(RECOVERIES)
            raise ValueError(f"the json_object family recovers no {', '.join(unknown)}; it knows {known}")
        if "bare_calls" in spec.recover and len(spec.recover) > 1:
            raise ValueError("a json_object member whose calls are bare (bare_calls) reads no other model's shapes")

    def __init__(self, spec: WireSpec) -> None:
        super().__init__(spec)
        self.keys = Keys(spec.name[0][1:-1], spec.arguments_keys, spec.id_key)
        self.listed = bool(spec.block[0])
        # A listed member's closer is its block's (Nemotron's ``<TOOLCALL>[...]</TOOLCALL>``), or none.
        opener = spec.block if self.listed else spec.call
        self.markers = _markers(opener, spec.stop, spec.reasoning, spec.recover, self.keys, self.listed)
        self._syntax: Syntax | None = None

    def syntax(self) -> Syntax:
        """The reply syntax, built once per kit and shared by the kits of specs that parse alike."""
        if self._syntax is None:
            self._syntax = _syntax(self.markers, self.spec.reasoning)
        return self._syntax

    def lexers(self) -> CallLexers:
        """The fast lexers of ordinary call objects and blocks (the syntax's own)."""
        return _lexers(self.markers)

    def call_object(self, call: Any) -> str:
        """The JSON call object of an OpenAI tool call (or its bare ``function`` object): its name,
        its arguments and, where the member writes one and the call has one, its id."""
        if not isinstance(call, dict):
            raise RenderError("tool_calls entries must be objects")
        function = call.get("function") or call
        name = function.get("name", "") if isinstance(function, dict) else ""
        arguments = function.get("arguments") if isinstance(function, dict) else None
        args = arguments if isinstance(arguments, str) else jinja.tojson(arguments)
        head = f'{{"{self.keys.name}": "{"" if name is None else name}", "{self.keys.arguments[0]}": {args}'
        if not self.keys.id:
            return head + "}"
        call_id = call.get("id")
        if not isinstance(call_id, str):  # (a call object without its id reads the same)
            return head + "}"
        return f'{head}, "{self.keys.id}": {json.dumps(call_id, ensure_ascii=False)}}}'

    def call_text(self, call: Any) -> str:
        """One call block for an OpenAI tool call (or its bare ``function`` object); for a member whose
        calls are listed after a block opener, its call object alone."""
        if self.listed:
            return self.call_object(call)
        opener, closer = self.spec.call
        if self.markers.bare:  # a bare call: the object alone
            return self.call_object(call)
        return f"{opener}\n{self.call_object(call)}\n{closer}"

    def reply_text(self, message: dict[str, Any]) -> str:
        """The content, then each call's block (``separator`` before each, after any content), then the
        stop token. Bare calls are the whole reply: the content, or the calls ``separator`` apart. For a
        member whose calls are listed, the content, the block opener and the list of call objects
        (``separator`` between them)."""
        content = message.get("content")
        content = content if isinstance(content, str) else ""
        calls = message.get("tool_calls") or []
        if self.markers.bare and calls:
            return self.spec.separator.join(map(self.call_text, calls)) + self.spec.stop
        out = [content]
        if self.listed and calls:
            objects = self.spec.separator.join(self.call_object(call) for call in calls)
            out.append(f"{self.spec.block[0]}[{objects}]{self.spec.block[1]}")
        for i, call in enumerate([] if self.listed else calls):
            if i or content:
                out.append(self.spec.separator)
            out.append(self.call_text(call))
        out.append(self.spec.stop)
        return "".join(out)

    def reply_ids(self, message: dict[str, Any]) -> list[str] | None:
        """The ids :meth:`reply_text` writes for the message's calls, where the member writes ids
        (each call's own; None where a call has none, whose id the stream then makes)."""
        calls = message.get("tool_calls") or []
        if not self.keys.id or not calls:
            return None
        ids = [call.get("id") if isinstance(call, dict) else None for call in calls]
        return [i for i in ids if isinstance(i, str)] if all(isinstance(i, str) for i in ids) else None

    def grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        """Calls as the renderer writes them: the opener, ``\\n{"name": "NAME", "arguments": {...}}\\n``, the closer.

        The arguments are JSON constrained by the tool's parameters; parallel calls are separate
        blocks, ``separator`` apart. Reasoning is a leading reasoning block.
        """
        opener, closer = self.spec.call
        values = JsonValues(builder)
        if self.markers.bare:
            return self._bare_calls(builder, values, tools)
        bodies = []
        for tool in tools:
            name = tool_name(tool)
            arguments = values.value(parameters_schema(tool))
            if self.listed:
                head = f'{{"{self.keys.name}": "{name}", "{self.keys.arguments[0]}": '
                # The id, where the member writes one: optional, as a call object without it reads the same.
                written_id = maybe(seq(f', "{self.keys.id}": "', _ID, '"')) if self.keys.id else EMPTY
                bodies.append(seq(head, arguments, written_id, "}"))
                continue
            head = f'\n{{"{self.keys.name}": "{name}", "{self.keys.arguments[0]}": '
            bodies.append(seq(head, arguments, "}\n" + closer))
        call = builder.rule("call", alt(*bodies)) if bodies else EMPTY
        if self.listed:
            opener = self.spec.block[0]
            return CallSyntax(
                triggers=((opener, seq("[", call)),),
                more=seq(self.spec.separator, call),
                tail=seq("]" + self.spec.block[1]),
                text_forbid_markers=(opener, self.spec.stop),
                reasoning=(
                    None if self.spec.reasoning is None else Reasoning(*self.spec.reasoning, forbid_markers=(opener,))
                ),
                stops=(self.spec.stop,),
            )
        return CallSyntax(
            triggers=((opener, call),),
            more=seq(self.spec.separator, Marker(opener), call),
            text_forbid_markers=(opener, self.spec.stop),
            # A call opener ends reasoning (the parser's reasoning text stops at one).
            reasoning=(
                None if self.spec.reasoning is None else Reasoning(*self.spec.reasoning, forbid_markers=(opener,))
            ),
            stops=(self.spec.stop,),
        )

    def _bare_calls(self, builder: GrammarBuilder, values: JsonValues, tools: list[dict[str, Any]]) -> CallSyntax:
        """Bare calls as the renderer writes them, ``{"name": "NAME", "parameters": {...}}``, at the
        start of the reply (free text before them is text), ``separator`` apart."""
        heads = []
        for tool in tools:
            head = f'{{"{self.keys.name}": "{tool_name(tool)}", "{self.keys.arguments[0]}": '
            heads.append((head, seq(values.value(parameters_schema(tool)), "}")))
        call = builder.rule("call", alt(*(seq(head, body) for head, body in heads))) if heads else EMPTY
        return CallSyntax(
            triggers=tuple(heads),
            more=seq(self.spec.separator, call),
            text_forbid_markers=(self.spec.call[0], self.spec.stop),
            text_forbid_start=(f'{{"{self.keys.name}"',),  # a reply that starts like a call object is read as calls
            stops=(self.spec.stop,),
            at_start=True,
        )

    def schema_tag(self, name: str) -> tuple[str, str] | None:
        """The block as :meth:`call_text` writes it around a call's arguments (JSON, xgrammar's ``json``);
        None for listed calls (codec's grammar of the list is the tag's content)."""
        if self.listed:
            return None
        opener, closer = self.spec.call
        head = f'{{"{self.keys.name}": {json.dumps(name, ensure_ascii=False)}, "{self.keys.arguments[0]}": '
        if self.markers.bare:
            return head, "}"
        return f"{opener}\n{head}", "}\n" + closer

    def reply_markers(self) -> tuple[str, ...]:
        if self.listed:
            return (re.escape(self.spec.block[0]) + r"\s*\[\s*\{",)
        if self.markers.bare:  # a bare call object starts the reply, or one after the opener, or a Python call
            opener = re.escape(self.spec.call[0])
            head = r"\A[ \t\r\n]*(?:" + opener + r"[ \t\r\n]*)?\{\s*\"" + self.keys.name + '"'
            return head, opener + r"[ \t\r\n]*\[?[A-Za-z_][\w.]*\("
        return (re.escape(self.spec.call[0]) + r"\s*\{",)


FAMILY = JsonObject


# ---------------------------------------------------------------------------- the syntax of a spec


@functools.cache
def _markers(
    call: tuple[str, str],
    stop: str,
    reasoning: tuple[str, str] | None,
    recover: tuple[str, ...],
    keys: Keys,
    listed: bool = False,
) -> Markers:
    """The markers of a spec, and how long a token waits for what follows it before it is committed.

    The holdback is longer than any marker, and than what free text needs to see past a line
    break or a marker's first character to tell it from an opener (the opener's lookahead, the
    stop token, the reasoning closer, a foreign opener such as ``<function_call>``): the
    grammar's lookaheads fit in it.
    """
    opener, closer = call
    foreign = "foreign_shapes" in recover
    lookaheads = [len(opener) + 3, len(closer) + 2, len(stop) + 1]
    if reasoning is not None:
        # Reasoning stops at its closer, and at a line break that up to three more and a call
        # opener (with what confirms it) follow.
        lookaheads += [len(reasoning[1]) + 2, len(opener) + 6]
    if foreign:
        lookaheads.append(FOREIGN_LOOKAHEAD)
    unwrapped, bare = "unwrapped_calls" in recover, "bare_calls" in recover
    return Markers(opener, closer, stop, max(lookaheads), foreign, unwrapped, keys, bare, listed)


@functools.cache
def _lexers(markers: Markers) -> CallLexers:
    return CallLexers(markers)


@functools.cache
def _syntax(m: Markers, reasoning: tuple[str, str] | None) -> Syntax:
    """The reply syntax of the members with these markers and reasoning (one per process: prompt
    variants that reply alike share it)."""
    lexers = _lexers(m)
    think_open, think_close = reasoning or ("", "")
    starts = [m.open[0], m.stop[0], *(["<"] if m.foreign else []), *([think_close[0]] if reasoning else [])]
    starts += [m.close[0]] if m.listed and m.close else []
    values = (
        ("TEXT", _text_pattern(m)),
        ("THOUGHT", _thought_pattern(think_close, m.open) if reasoning else _NEVER),
        ("THINK_OPEN", r"[ \t\r\n]*" + regex_literal(think_open) + r"\n?" if reasoning else _NEVER),
        ("THINK_CLOSE", r"\n?" + regex_literal(think_close) + r"\n*" if reasoning else _NEVER),
        ("STOP", lark_literal(m.stop)),
        ("CALL_OPEN", _NEVER if m.listed else opener_pattern(m.open, regex_literal)),
        ("CALL_CLOSE", _NEVER if m.listed else regex_literal(m.close)),
        ("BLOCK_OPEN", opener_pattern(m.open, regex_literal) if m.listed else _NEVER),
        ("BLOCK_CLOSE", regex_literal(m.close) if m.listed and m.close else _NEVER),
        ("NAME_KEY", lark_literal(f'"{m.keys.name}"')),
        ("ARGS_KEY", '"(?:' + "|".join(map(regex_literal, m.keys.arguments)) + ')"'),
        ("ID_KEY", regex_literal(f'"{m.keys.id}"') if m.keys.id else _NEVER),
    )
    closers = {"THINK_CLOSE": think_close} if reasoning else {}
    return Syntax(
        grammar=family_grammar("wire/json_object", values),
        builder=builder_of(m),
        text_terminals={"TEXT": CONTENT, "THOUGHT": REASONING},
        blocks={"BLOCK_OPEN": None} if m.listed else {"CALL_OPEN": "CALL_CLOSE"},
        autoclose={"RBRACK": "]", "RBRACE": "}", **({} if m.listed else {"CALL_CLOSE": m.close}), **closers},
        autoclose_before=frozenset({"BLOCK_OPEN", "STOP"} if m.listed else {"CALL_OPEN", "CALL_CLOSE", "STOP"}),
        reasoning_closer="THINK_CLOSE" if reasoning else None,
        resync_after=() if m.listed else (m.close,),
        resync_before=(m.open, m.stop),
        delimiters=(Delimiter('"', '"', "\\"),),
        # JSON punctuation no other terminal can extend: taken as soon as it arrives, not held back.
        closed_terminals=frozenset(
            {"STRING", "CALL_OPEN", "CALL_CLOSE", "BLOCK_OPEN", "BLOCK_CLOSE", "STOP", *CLOSED_PUNCTUATION}
        ),
        holdback=m.holdback,
        marker_starts="".join(dict.fromkeys([*starts, "\n"])),
        nest_open=frozenset({"LBRACE", "LBRACK"}),
        nest_close=frozenset({"RBRACE", "RBRACK"}),
        fast_terminals={
            "CALL_BLOCK": lexers.call_block,
            "CALL_JSON": lexers.call_json,
            "JSON_CONTAINER": lex_json_container,
            **shape_lexers(m),
        },
        reasoning_open="THINK_OPEN" if reasoning else None,
        preempt_starts=" \t\r\n" + think_open[0] if reasoning else "",
        prompt_opens_reasoning=(lambda prompt: prompt.rstrip().endswith(think_open)) if reasoning else None,
        # Without a prompt, "...</think>" before any call or stop token: the prompt opened it.
        reasoning_close=think_close or None,
        reasoning_not_opened=(think_open, m.open, m.stop) if reasoning else (),
        whole=_listed_reader(lexers) if m.listed and reasoning is None else _whole_reader(lexers, reasoning),
    )


#: A regex that matches nothing (the terminals of reasoning, for a member without any).
_NEVER = r"\x00(?!\x00)\x00"
#: A code fence's opening backticks at the start of a line (up to three spaces of indentation).
_FENCE_LINE = r"[ \t]{0,3}```"


def _text_pattern(m: Markers) -> str:
    """The free-text terminal: text up to a line break or a character that may start a marker,
    where one does (the opener before a line break or JSON, the stop token; where the member
    reads other models' shapes, their openers and a fence at the start of a line), and, where
    none does, that text too. With those shapes, text may also start with one of their openers
    (where the shape's lexer found no shape there)."""
    #: What may not follow each character that can start a marker, by that character; what may
    #: not follow a line break, likewise (and a fence), and what text may start with all the same.
    after: dict[str, list[str]] = {m.open[0]: [regex_literal(m.open[1:]) + OPENER_NEXT]}
    after.setdefault(m.stop[0], []).append(regex_literal(m.stop[1:]))
    if m.listed and m.close:  # a listed member's block closer (its calls' list is read by the rules)
        after.setdefault(m.close[0], []).append(regex_literal(m.close[1:]))
    line: dict[str, list[str]] = {m.open[0]: [regex_literal(m.open[1:]) + OPENER_NEXT]}
    fence: list[str] = []
    lead: list[str] = []
    if m.foreign:
        tags = "|".join(FOREIGN_TAGS)
        after.setdefault("<", []).extend([f"(?:{tags})>", "function[= ]"])
        tagged = [f"{tag}>" for tag in FOREIGN_TAGS if tag != "function_call"] + ["function"]
        line.setdefault("<", []).extend(tagged)
        fence = [_FENCE_LINE]
        lead = [f"<(?:{tags})>", "<function[= ]", r"\n" + _FENCE_LINE, r"\n<(?:" + "|".join(tagged) + ")"]
    plain = "[^" + "".join(map(regex_literal, after)) + r"\n]+"
    body = [plain, r"\n(?!" + "|".join([*map(_one_of, line.items()), *fence]) + ")"]
    body += [regex_literal(c) + "(?!" + "|".join(rests) + ")" for c, rests in after.items()]
    if not lead:
        return "(?:" + "|".join(body) + ")+"
    return "(?:" + "|".join(lead + body) + ")(?:" + "|".join(body) + ")*"


def _one_of(first_and_rests: tuple[str, list[str]]) -> str:
    """A regex of ``first`` followed by one of ``rests``."""
    first, rests = first_and_rests
    return regex_literal(first) + (rests[0] if len(rests) == 1 else "(?:" + "|".join(rests) + ")")


def _thought_pattern(closer: str, opener: str) -> str:
    """Reasoning text: up to the reasoning closer (or a line break before it), or up to a call
    opener where it opens a block (or the line breaks before it, up to four): a call opened
    inside reasoning ends it (the stream inserts the closer, reported as ``unclosed_reasoning``)."""
    call = regex_literal(opener) + OPENER_NEXT
    after = {closer[0]: [regex_literal(closer[1:])]}
    after.setdefault(opener[0], []).append(regex_literal(opener[1:]) + OPENER_NEXT)
    plain = "[^" + "".join(map(regex_literal, after)) + r"\n]+"
    line = r"\n(?!" + regex_literal(closer) + r"|\n{0,3}" + call + ")"
    marks = [regex_literal(c) + "(?!" + "|".join(rests) + ")" for c, rests in after.items()]
    return "(?:" + "|".join([plain, line, *marks]) + ")+"


def _whole_reader(
    lexers: CallLexers, reasoning: tuple[str, str] | None
) -> Callable[[str, ToolsByName | None], WholeReading | None]:
    """The whole-reply reader (``Syntax.whole``): reasoning as ChatML templates write it
    (``OPEN\n...\nCLOSE\n\n``), prose, then blocks of ordinary call objects (what the block's fast
    lexer takes), one line break apart, then the stop token."""
    m = lexers.markers
    marks = None if reasoning is None else (f"{reasoning[0]}\n", f"\n{reasoning[1]}\n\n")
    lex_block, name, arguments = lexers.call_block, m.keys.name, m.keys.arguments[0]
    # Prose the rules read as text: one run of TEXT (compiled as the grammar's), holding no
    # reasoning marker, and starting with nothing the lead and foreign shapes' lexers may take.
    prose = ProseText(re.compile(_text_pattern(m)), tuple(x for x in reasoning or () if x), "{[<`")

    def read_block(text: str, pos: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
        got = lex_block(text, pos, True)
        return None if got is None else ((got[0][name], got[0][arguments]), got[1])

    def whole_reply(text: str, tools: ToolsByName | None) -> WholeReading | None:
        return read_whole_reply(text, m.open, read_block, stop=m.stop, reasoning_marks=marks, prose_text=prose)

    def whole_bare(text: str, tools: ToolsByName | None) -> WholeReading | None:
        """A reply of bare calls as the renderer writes one: prose without markup, or ordinary call
        objects ``; `` apart (the separator bare members write) that are the whole reply."""
        last = before_stop(text, m.stop)
        if not text.startswith("{"):
            return None if MARKUP.search(text, 0, last) else (text[:last], "", [])
        calls, pos = [], 0
        while True:
            try:
                value, end = PLAIN_JSON_DECODER.raw_decode(text, pos)
            except (ValueError, RecursionError):
                return None
            # Only what the fast lexer of call objects takes (the rules read anything else).
            if not (isinstance(value, dict) and len(value) == 2 and isinstance(value.get(name), str)):
                return None
            if not CALL_NAME.fullmatch(value[name]) or not isinstance(value.get(arguments), dict):
                return None  # (a name the shape's reading takes: see call_parts)
            if text.find("\\u", pos, end) >= 0:
                return None
            calls.append((value[name], value[arguments]))
            if end == last:
                return "", "", calls
            if not text.startswith("; ", end):
                return None
            pos = end + 2

    return whole_bare if m.bare else whole_reply


def _listed_reader(lexers: CallLexers) -> Callable[[str, ToolsByName | None], WholeReading | None]:
    """The whole-reply reader of a member whose calls are listed after a block opener: prose, then
    ``OPENER[`` and ordinary call objects (what the fast lexer takes) ``", "`` apart, ``]`` and the
    block's closer, then the stop token; or prose alone."""
    m = lexers.markers
    lex_call, name, arguments, opener = lexers.call_json, m.keys.name, m.keys.arguments[0], m.open + "["
    end = "]" + m.close

    def whole_reply(text: str, tools: ToolsByName | None) -> WholeReading | None:
        last = before_stop(text, m.stop)
        first = text.find(m.open, 0, last)
        prose = text[:last] if first < 0 else text[:first]
        if MARKUP.search(prose):
            return None
        if first < 0:
            return prose, "", []
        if prose.endswith("\n") or not text.startswith(opener, first):
            return None  # (a line break before the opener is layout: the rules decide)
        calls = []
        pos = first + len(opener)
        while True:
            got = lex_call(text, pos, True)
            if got is None:
                return None
            written = got[0].get(m.keys.id)
            calls.append((got[0][name], got[0][arguments], written) if written else (got[0][name], got[0][arguments]))
            pos = got[1]
            if text.startswith(", ", pos):
                pos += 2
            elif text.startswith(end, pos) and pos + len(end) == last:
                return prose, "", calls
            else:
                return None

    return whole_reply
