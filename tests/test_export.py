"""Grammars for constrained decoding (``Format.grammar``), checked on the CPU with no model.

llguidance runs each grammar with a byte-level tokenizer that has the format's special tokens;
the ``lark`` dialect is loaded by lark (LALR); GBNF goes through llguidance's own GBNF import,
with a tokenizer without special tokens (GBNF writes every marker as text).
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import lark
import pytest
from formats import profile
from harness import examples, reply_formats
from hypothesis import Phase, assume, given
from hypothesis import strategies as st
from strategies import arguments, texts, tools

import codec
from codec import export
from codec.export import RAlt, avoiding_automaton, literal
from codec.schema import declared_types

L = pytest.importorskip("llguidance", reason="llguidance is not installed (pip install '.[test]')")
tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is not installed")
from llguidance.gbnf_to_lark import any_to_lark  # noqa: E402

from codec.testing.grammars import llguidance_accepts  # noqa: E402  (the one copy)

#: One format per reply side by default (the grammars are the reply syntax's), every one when deep.
FORMATS = reply_formats()
# No shrinking: a failure prints its example as drawn. Each example compiles its request's grammar
# in three dialects (lark's LALR analysis of it takes about a second), hence three by default.
SETTINGS = examples(10, least=2, phases=(Phase.explicit, Phase.reuse, Phase.generate))


# ---------------------------------------------------------------------------- checkers


@cache
def lark_parser(grammar: str) -> lark.Lark:
    return lark.Lark(grammar, parser="lalr")


def lark_accepts(grammar: str, text: str) -> bool:
    try:
        lark_parser(grammar).parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


def gbnf_accepts(grammar: str, text: str) -> bool:
    return llguidance_accepts(any_to_lark(grammar), text, ())


class Grammars:
    """One format's grammar for one request, in the three dialects."""

    def __init__(self, fmt: codec.Format, tool_list: list[dict[str, Any]], **options: Any) -> None:
        self.fmt = fmt
        self.specials = fmt.grammar_special_tokens
        self.text = {d: fmt.grammar(tool_list, dialect=d, **options) for d in export.DIALECTS}

    def verdicts(self, reply: str) -> dict[str, bool]:
        return {
            "llguidance": llguidance_accepts(self.text["llguidance"], reply, self.specials),
            "lark": lark_accepts(self.text["lark"], reply),
            "gbnf": gbnf_accepts(self.text["gbnf"], reply),
        }


# ---------------------------------------------------------------------------- replies


def stops(fmt: codec.Format) -> tuple[str, ...]:
    return export.call_syntax(fmt, [])[1].stops


def reply_of(fmt: codec.Format, message: dict[str, Any]) -> str:
    """What the model writes for ``message``, without the stop token the server stops on."""
    reply = fmt.render_reply(message)
    for stop in stops(fmt):
        reply = reply.removesuffix(stop)
    return reply


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings_in(v)]]
    if isinstance(value, list):
        return [s for item in value for s in strings_in(item)]
    return []


def restrictions(fmt: codec.Format, tool_list: list[dict[str, Any]]) -> tuple[set[str], list[re.Pattern[str]]]:
    """Texts and patterns the grammar keeps out of free text, reasoning and string values (documented)."""
    calls = export.call_syntax(fmt, tool_list)[1]
    markers = {*calls.text_forbid_markers, *fmt.grammar_special_tokens, *calls.stops, "\n</parameter>"}
    if calls.reasoning is not None:
        markers |= {calls.reasoning.open, calls.reasoning.close, *calls.reasoning.forbid_markers}
    patterns = [re.compile(export.regex(rx)) for rx in (*calls.text_forbid, *profile(fmt.name).grammar_forbid)]
    return markers, patterns


def clean(fmt: codec.Format, tool_list: list[dict[str, Any]], message: dict[str, Any]) -> bool:
    """Whether ``message``'s texts keep clear of what the grammar restricts (and of codec's own markers)."""
    markers, patterns = restrictions(fmt, tool_list)
    pieces = [message.get("content") or "", message.get("reasoning_content") or ""]
    for call in message.get("tool_calls") or []:
        pieces += strings_in(call["function"]["arguments"])
    return not any(m in piece for piece in pieces for m in markers) and not any(
        p.search(piece) for piece in pieces for p in patterns
    )


@st.composite
def requests(draw: st.DrawFn, fmt_name: str, *, with_content: bool = True, max_calls: int = 3) -> tuple[Any, ...]:
    """(format, tools, message with calls to them, reply) where codec reads the reply back exactly."""
    fmt = codec.get_format(fmt_name)
    tool_list = draw(tools())
    calls = []
    for _ in range(draw(st.integers(1, max_calls))):
        tool = draw(st.sampled_from(tool_list))
        args = draw(arguments(export.parameters_schema(tool)))
        calls.append({"type": "function", "function": {"name": tool["function"]["name"], "arguments": args}})
    message: dict[str, Any] = {
        "role": "assistant",
        "content": draw(texts()) if with_content else "",
        "tool_calls": calls,
    }
    if draw(st.booleans()):
        message["reasoning_content"] = draw(texts(3)).strip() or "thinking"
    assume(clean(fmt, tool_list, message))
    reply = reply_of(fmt, message)
    parsed = fmt.parse(reply, tools=tool_list)
    assume(not parsed.issues)
    assume(
        [(c.function.name, c.function.arguments) for c in parsed.tool_calls]
        == [(c["function"]["name"], c["function"]["arguments"]) for c in calls]
    )
    return fmt, tool_list, message, reply


def all_accept(grammars: Grammars, reply: str) -> None:
    verdicts = grammars.verdicts(reply)
    assert all(verdicts.values()), (verdicts, reply, grammars.text["llguidance"])


def all_reject(grammars: Grammars, reply: str) -> None:
    verdicts = grammars.verdicts(reply)
    assert not any(verdicts.values()), (verdicts, reply, grammars.text["llguidance"])


# ---------------------------------------------------------------------------- valid replies are accepted


@pytest.mark.parametrize("fmt_name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_valid_replies_are_accepted(fmt_name: str, data: st.DataObject) -> None:
    fmt, tool_list, message, reply = data.draw(requests(fmt_name))
    all_accept(Grammars(fmt, tool_list), reply)
    no_calls = {k: v for k, v in message.items() if k != "tool_calls"}
    assume(clean(fmt, tool_list, no_calls) and not fmt.parse(reply_of(fmt, no_calls), tools=tool_list).tool_calls)
    all_accept(Grammars(fmt, tool_list), reply_of(fmt, no_calls))  # auto: a reply without calls


@pytest.mark.parametrize("fmt_name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_required_and_single_call(fmt_name: str, data: st.DataObject) -> None:
    fmt, tool_list, message, reply = data.draw(requests(fmt_name, with_content=False, max_calls=2))
    required = Grammars(fmt, tool_list, tool_choice="required")
    single = Grammars(fmt, tool_list, parallel=False)
    all_accept(required, reply)
    (all_accept if len(message["tool_calls"]) == 1 else all_reject)(single, reply)
    no_calls = reply_of(fmt, {"role": "assistant", "content": "Sure."})
    all_reject(required, no_calls)


# ---------------------------------------------------------------------------- invalid replies are rejected


def _with_call(message: dict[str, Any], index: int, **function: Any) -> dict[str, Any]:
    calls = [json.loads(json.dumps(c)) for c in message["tool_calls"]]
    calls[index]["function"].update(function)
    return {**message, "tool_calls": calls}


def _wrong_type_parameter(schema: Any) -> str | None:
    """A parameter whose schema rules out a list of strings (no string, array, enum or free type)."""
    declared = export.properties(schema) if isinstance(schema, dict) else None
    for name, prop in (declared[0] if declared else {}).items():
        if not isinstance(prop, dict) or any(k in prop for k in ("enum", "const", "anyOf", "oneOf")):
            continue
        types = export.schema_types(prop)
        if types and not {"string", "array"} & set(types):
            return name
    return None


@pytest.mark.parametrize("fmt_name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_invalid_replies_are_rejected(fmt_name: str, data: st.DataObject) -> None:
    fmt, tool_list, message, reply = data.draw(requests(fmt_name))
    grammars = Grammars(fmt, tool_list)
    index = data.draw(st.integers(0, len(message["tool_calls"]) - 1))
    function = message["tool_calls"][index]["function"]
    tool = next(t for t in tool_list if t["function"]["name"] == function["name"])
    schema = export.parameters_schema(tool)
    declared = export.properties(schema)
    names = {t["function"]["name"] for t in tool_list}

    all_reject(grammars, reply[:-1])  # unterminated
    undeclared = next(n for n in ("nope", "nope_1", "nope_2", "nope_3") if n not in names)
    all_reject(grammars, reply_of(fmt, _with_call(message, index, name=undeclared)))
    if declared is not None:
        extra = next(n for n in ("zz", "zz1", "zz2", "zz3") if n not in declared[0])
        all_reject(grammars, reply_of(fmt, _with_call(message, index, arguments={**function["arguments"], extra: 1})))
        missing = sorted(declared[1] & set(function["arguments"]))
        if missing:
            args = {k: v for k, v in function["arguments"].items() if k != missing[0]}
            all_reject(grammars, reply_of(fmt, _with_call(message, index, arguments=args)))
    wrong = _wrong_type_parameter(schema)
    if wrong is not None:
        args = {**function["arguments"], wrong: ["x"]}
        all_reject(grammars, reply_of(fmt, _with_call(message, index, arguments=args)))


@pytest.mark.parametrize("fmt_name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_what_llguidance_accepts_parses_to_valid_calls(fmt_name: str, data: st.DataObject) -> None:
    """A reply changed by one character: if the grammar still accepts it, codec reads valid calls from it."""
    fmt, tool_list, _, reply = data.draw(requests(fmt_name))
    if fmt_name == "qwen3_coder_official":
        # Its lists and dicts are str() text that the grammar leaves free after the bracket
        # (codec.wire.xml_params._python_typed, said in its docstring): a change inside one may break it.
        assume(not any(_free_text_values(tool) for tool in tool_list))
    grammar = fmt.grammar(tool_list)
    where = data.draw(st.integers(0, len(reply) - 1))
    edit = data.draw(st.sampled_from(("delete", "insert", "replace")))
    char = data.draw(st.sampled_from('"\\,:{}[]()<>=|\n 0aZ'))
    mutated = {
        "delete": reply[:where] + reply[where + 1 :],
        "insert": reply[:where] + char + reply[where:],
        "replace": reply[:where] + char + reply[where + 1 :],
    }[edit]
    if llguidance_accepts(grammar, mutated, fmt.grammar_special_tokens):
        parsed = fmt.parse(mutated, tools=tool_list)
        problems = [i for i in parsed.issues if i.kind in ("unknown_tool", "schema", "invalid_tool_call")]
        assert not problems, (mutated, problems)


def _free_text_values(tool: dict[str, Any]) -> bool:
    """Whether a tool has a parameter whose value may be an array or an object."""
    properties = export.parameters_schema(tool).get("properties") or {}
    return any({"array", "object"} & set(declared_types(schema)) for schema in properties.values())


# ---------------------------------------------------------------------------- pieces and errors


@SETTINGS
@given(
    markers=st.lists(st.text("ab<>", min_size=1, max_size=4), min_size=1, max_size=3),
    start=st.lists(st.text("ab<", min_size=1, max_size=3), max_size=1),
    text=st.text("ab<>", max_size=12),
)
def test_avoiding_automaton_is_exact(markers: list[str], start: list[str], text: str) -> None:
    """The GBNF text rules accept exactly the texts that contain no marker and do not start with ``start``."""
    table = avoiding_automaton([literal(m) for m in markers], [literal(s) for s in start])
    state: int | None = 0
    for char in text:
        state = next((to for chars, to in table[state] if ord(char) in chars), None)
        if state is None:
            break
    expected = not any(m in text for m in markers) and not any(text.startswith(s) for s in start)
    assert (state is not None) == expected


@SETTINGS
@given(st.lists(st.text(st.characters(codec="utf-8"), min_size=1, max_size=3), min_size=1, max_size=3))
def test_regex_printing_matches_the_literals(options: list[str]) -> None:
    pattern = re.compile(export.regex(RAlt(tuple(literal(o) for o in options))))
    assert all(pattern.fullmatch(o) for o in options)


TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"dialect": "ebnf"}, ValueError, "llguidance, lark, gbnf"),
        ({"tool_choice": "any"}, ValueError, "auto, required, none"),
        ({"tool_choice": {"type": "function", "function": {"name": "g"}}}, ValueError, "'g', which is not a declared"),
        ({"tool_choice": {"type": "function", "name": "f"}}, ValueError, "a named tool_choice is"),
        ({"tool_choice": ["f"]}, ValueError, "unknown tool_choice"),
        ({"tool_choice": "required", "tools": []}, ValueError, "at least one tool"),
        ({"tools": [TOOL, TOOL]}, ValueError, "declared twice"),
        ({"tools": [{"type": "function", "function": {"description": "x"}}]}, ValueError, "name"),
        ({"tools": ["f"]}, TypeError, "mappings"),
        ({"tools": "f"}, TypeError, "list of tools"),
    ],
)
def test_bad_requests_raise(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    tool_list = kwargs.pop("tools", [TOOL])
    with pytest.raises(error, match=message):
        codec.get_format("hermes").grammar(tool_list, **kwargs)


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_without_tools_only_text(fmt_name: str) -> None:
    fmt = codec.get_format(fmt_name)
    grammars = Grammars(fmt, [])
    all_accept(grammars, "Hello there.")
    call = {"type": "function", "function": {"name": "f", "arguments": {}}}
    all_reject(grammars, reply_of(fmt, {"role": "assistant", "content": "", "tool_calls": [call]}))


def test_gemma4_markers_are_tokens_in_llguidance_and_text_elsewhere() -> None:
    gemma4 = codec.get_format("gemma4")
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {}}}}}
    tokens = gemma4.grammar([tool])
    assert "<|tool_call> call <tool_call|>" in tokens
    assert re.search(r'<\|"\|> TEXT\w* <\|"\|>', tokens)
    assert '"<|tool_call>"' not in tokens
    assert '"<|tool_call>"' in gemma4.grammar([tool], dialect="lark")
