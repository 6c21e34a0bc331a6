"""``Format.structural_tag`` and the GBNF of ``Format.request_fields``, run by xgrammar itself.

xgrammar compiles each structural tag and grammar (``GrammarCompiler``) and its ``GrammarMatcher``
takes the reply as a string. xgrammar is not in the test extra (it installs torch): these tests
skip without it. ``pip install torch==2.13.0`` (the CPU build) and ``pip install --no-deps
xgrammar apache-tvm-ffi`` beside the test extra is enough to run them.
"""

from __future__ import annotations

import json
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from test_export import FORMATS, SETTINGS, _with_call, _wrong_type_parameter, reply_of, requests

import codec
from codec import GrammarWarning, export

xgr = pytest.importorskip("xgrammar", reason="xgrammar is not installed (it needs torch; see this module's docstring)")

ROOT = Path(__file__).resolve().parent.parent


@cache
def compiler() -> Any:
    return xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)


def _accepts(compiled: Any, text: str) -> bool:
    matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return bool(matcher.accept_string(text) and matcher.is_terminated())


@cache
def _tag(tag_json: str) -> Any:
    return compiler().compile_structural_tag(tag_json)


@cache
def _ebnf(grammar: str) -> Any:
    return compiler().compile_grammar(grammar)


def tag_accepts(tag: dict[str, Any], text: str) -> bool:
    return _accepts(_tag(json.dumps(tag)), text)


def ebnf_accepts(grammar: str, text: str) -> bool:
    return _accepts(_ebnf(grammar), text)


def fixed_opener(fmt: codec.Format) -> bool:
    """Whether every call starts with one opener that names no tool (not ``[name(``)."""
    return bool(export.call_syntax(fmt, [])[1].triggers)


def content_style(fmt: codec.Format) -> str:
    tag = fmt.structural_tag([{"type": "function", "function": {"name": "f"}}])
    return tag["format"]["tags"][0]["content"]["type"]


def test_contents_by_format() -> None:
    """json_schema where xgrammar writes the arguments (JSON, Qwen XML), codec's GBNF elsewhere."""
    styles = {name: content_style(codec.get_format(name)) for name in FORMATS}
    json_schema = {"hermes", "hermes3", "qwen3", "qwen3_coder", "qwen2_5", "qwq", "granite4", "llama3_1", "llama3_2"}
    assert {n for n, s in styles.items() if s == "json_schema"} == json_schema
    hermes = codec.get_format("hermes").structural_tag([{"type": "function", "function": {"name": "f"}}])
    assert hermes["format"]["tags"][0]["content"]["style"] == "json"
    qwen = codec.get_format("qwen3_coder").structural_tag([{"type": "function", "function": {"name": "f"}}])
    assert qwen["format"]["tags"][0]["content"]["style"] == "qwen_xml"


@pytest.mark.parametrize("name", ["hermes", "qwen3_coder"])
def test_example_replies_are_accepted(name: str) -> None:
    fmt = codec.get_format(name)
    tools = json.loads((ROOT / "examples" / "tools.json").read_text(encoding="utf-8"))
    reply = (ROOT / "examples" / "replies" / f"{name}.txt").read_text(encoding="utf-8")
    for stop in export.call_syntax(fmt, [])[1].stops:
        reply = reply.rstrip("\n").removesuffix(stop)
    assert fmt.parse(reply, tools=tools).tool_calls
    assert tag_accepts(fmt.structural_tag(tools), reply)
    assert ebnf_accepts(fmt.request_fields(tools, server="sglang")["ebnf"], reply)


@pytest.mark.parametrize("fmt_name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_valid_replies_are_accepted(fmt_name: str, data: st.DataObject) -> None:
    fmt, tool_list, message, reply = data.draw(requests(fmt_name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        assert tag_accepts(fmt.structural_tag(tool_list), reply)
        assert tag_accepts(fmt.structural_tag(tool_list, parallel=len(message["tool_calls"]) > 1), reply)
        for server in ("vllm", "sglang"):
            fields = fmt.request_fields(tool_list, server=server)
            grammar = fields["ebnf"] if server == "sglang" else fields["structured_outputs"]["grammar"]
            assert ebnf_accepts(grammar, reply)
        lazy = fmt.request_fields(tool_list, server="llama.cpp")["grammar"]
        triggers = [t["value"] for t in fmt.request_fields(tool_list, server="llama.cpp")["grammar_triggers"]]
        assert ebnf_accepts(lazy, reply[min(reply.index(t) for t in triggers if t in reply) :])


@pytest.mark.parametrize("fmt_name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_required_named_and_single(fmt_name: str, data: st.DataObject) -> None:
    fmt, tool_list, message, reply = data.draw(requests(fmt_name, with_content=False, max_calls=2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        required = fmt.structural_tag(tool_list, tool_choice="required")
        assert tag_accepts(required, reply)
        assert not tag_accepts(required, reply_of(fmt, {"role": "assistant", "content": "Sure."}))
        single = fmt.structural_tag(tool_list, parallel=False)
        assert tag_accepts(single, reply) == (len(message["tool_calls"]) == 1)
        names = {c["function"]["name"] for c in message["tool_calls"]}
        for tool in tool_list:
            named = {"type": "function", "function": {"name": tool["function"]["name"]}}
            assert tag_accepts(fmt.structural_tag(tool_list, tool_choice=named), reply) == (
                names == {tool["function"]["name"]}
            )
        assert not tag_accepts(fmt.structural_tag(tool_list, tool_choice="none"), reply)


@pytest.mark.parametrize("fmt_name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_invalid_calls_are_rejected(fmt_name: str, data: st.DataObject) -> None:
    """An undeclared tool, a missing required argument, a value of the wrong type."""
    fmt, tool_list, message, _ = data.draw(requests(fmt_name))
    index = data.draw(st.integers(0, len(message["tool_calls"]) - 1))
    function = message["tool_calls"][index]["function"]
    tool = next(t for t in tool_list if t["function"]["name"] == function["name"])
    schema = export.parameters_schema(tool)
    declared = export.properties(schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        tags = [fmt.structural_tag(tool_list, tool_choice="required")]
        if fixed_opener(fmt):  # with [name( openers, an undeclared call is free text under "auto"
            tags.append(fmt.structural_tag(tool_list))
        sglang = fmt.request_fields(tool_list, server="sglang")["ebnf"]
    names = {t["function"]["name"] for t in tool_list}
    wrong = []
    undeclared = next(n for n in ("nope", "nope_1", "nope_2", "nope_3") if n not in names)
    wrong.append(reply_of(fmt, _with_call(message, index, name=undeclared)))
    if declared is not None:
        missing = sorted(declared[1] & set(function["arguments"]))
        if missing:
            args = {k: v for k, v in function["arguments"].items() if k != missing[0]}
            wrong.append(reply_of(fmt, _with_call(message, index, arguments=args)))
    bad_type = _wrong_type_parameter(schema)
    if bad_type is not None:
        wrong.append(reply_of(fmt, _with_call(message, index, arguments={**function["arguments"], bad_type: ["x"]})))
    assume(wrong)
    for text in wrong:
        if fmt_name == "qwen3_coder_official" and text == wrong[-1] and bad_type is not None:
            continue  # its list values are str() text, which the grammar does not read
        for tag in tags:
            assert not tag_accepts(tag, text), (text, tag)
        assert not ebnf_accepts(sglang, text), text


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_none_is_text_only(fmt_name: str) -> None:
    fmt = codec.get_format(fmt_name)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    call = reply_of(
        fmt,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}],
        },
    )
    text = reply_of(fmt, {"role": "assistant", "content": "Nothing to call."})
    for tag in (fmt.structural_tag(tools, tool_choice="none"), fmt.structural_tag([])):
        assert tag_accepts(tag, text)
        assert not tag_accepts(tag, call)


def test_schema_keywords_of_json_schema_contents_are_xgrammars() -> None:
    """xgrammar reads a json_schema content's pattern itself: no warning, and the pattern holds."""
    tool = {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}},
        },
    }
    fmt = codec.get_format("qwen3_coder")
    with warnings.catch_warnings():
        warnings.simplefilter("error", GrammarWarning)
        tag = fmt.structural_tag([tool], tool_choice="required")
    good = reply_of(
        fmt,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"code": "ABC"}}}],
        },
    )
    assert tag_accepts(tag, good)
    assert not tag_accepts(tag, good.replace("ABC", "abcd"))
    with pytest.warns(GrammarWarning, match=r"f\.code: pattern"):
        codec.get_format("gemma4").structural_tag([tool])


def test_llguidance_grammars_are_not_xgrammars_lark() -> None:
    """What the README says: xgrammar's Lark reader refuses the llguidance dialect's intersections."""
    tools = json.loads((ROOT / "examples" / "tools.json").read_text(encoding="utf-8"))
    with pytest.raises(RuntimeError, match="not supported"):
        xgr.Grammar.from_lark(codec.get_format("hermes").grammar(tools))
    assert xgr.Grammar.from_ebnf(codec.get_format("hermes").grammar(tools, dialect="gbnf"))
