"""``Format.request_fields``: the fields a request to vLLM, SGLang or llama-server takes, checked with
llguidance's GBNF reader (xgrammar's checks are in ``test_structural_tag.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_export import FORMATS, SETTINGS, gbnf_accepts, reply_of, requests

import codec
from codec import export


def first_call(fmt: codec.Format, tool_list: list[dict[str, Any]], reply: str) -> int:
    """Where the reply's first call opener is: where a lazy grammar starts."""
    triggers = [trigger for trigger, _ in export.call_syntax(fmt, tool_list)[1].triggers]
    return min(reply.index(t) for t in triggers if t in reply)


@pytest.mark.parametrize("server", ["vllm", "sglang"])
@pytest.mark.parametrize("fmt_name", FORMATS)
def test_vllm_and_sglang_take_the_gbnf_grammar(fmt_name: str, server: str) -> None:
    fmt = codec.get_format(fmt_name)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    for choice in ("auto", "required", "none", {"type": "function", "function": {"name": "f"}}):
        fields = fmt.request_fields(tools, server=server, tool_choice=choice)
        gbnf = fmt.grammar(tools, tool_choice=choice, dialect="gbnf")
        assert fields == ({"structured_outputs": {"grammar": gbnf}} if server == "vllm" else {"ebnf": gbnf})
        json.dumps(fields)  # JSON as it is


@pytest.mark.parametrize("fmt_name", FORMATS)
@SETTINGS
@given(data=st.data())
def test_llama_cpp_lazy_grammar_holds_the_calls_from_the_trigger(fmt_name: str, data: st.DataObject) -> None:
    fmt, tool_list, message, reply = data.draw(requests(fmt_name))
    fields = fmt.request_fields(tool_list, server="llama.cpp")
    triggers = [trigger for trigger, _ in export.call_syntax(fmt, tool_list)[1].triggers]
    assert fields["grammar_lazy"] is True
    assert fields["grammar_triggers"] == [{"type": 1, "value": t} for t in triggers]  # 1: a word
    assert set(triggers) <= set(fields["preserved_tokens"])
    assert set(fmt.grammar_special_tokens) <= set(fields["preserved_tokens"])
    calls = reply[first_call(fmt, tool_list, reply) :]
    assert gbnf_accepts(fields["grammar"], calls), (calls, fields["grammar"])
    assert not gbnf_accepts(fields["grammar"], "Sure. " + calls)  # the text before is not the grammar's
    openers = [trigger for trigger, _ in export.call_syntax(fmt, [])[1].triggers]
    if openers:  # an opener that names no tool: a call of an undeclared tool starts the grammar too
        undeclared = json.loads(json.dumps(message))
        undeclared["tool_calls"][0]["function"]["name"] = "nope_nope"
        wrong = reply_of(fmt, undeclared)
        assert not gbnf_accepts(fields["grammar"], wrong[wrong.index(openers[0]) :])


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_llama_cpp_required_and_none_are_not_lazy(fmt_name: str) -> None:
    fmt = codec.get_format(fmt_name)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    named = {"type": "function", "function": {"name": "f"}}
    for choice in ("required", named, "none"):
        fields = fmt.request_fields(tools, server="llama.cpp", tool_choice=choice)
        assert "grammar_lazy" not in fields and "grammar_triggers" not in fields
        assert fields["grammar"] == fmt.grammar(tools, tool_choice=choice, dialect="gbnf")
    assert fmt.request_fields([], server="llama.cpp")["grammar"] == fmt.grammar([], dialect="gbnf")


def test_unknown_server_and_bad_tool_choice_raise() -> None:
    fmt = codec.get_format("hermes")
    with pytest.raises(ValueError, match=r"vllm, sglang, llama\.cpp"):
        fmt.request_fields([], server="tgi")
    with pytest.raises(ValueError, match="not a declared tool"):
        fmt.request_fields([], server="vllm", tool_choice={"type": "function", "function": {"name": "f"}})
    with pytest.raises(ValueError, match="needs at least one tool"):
        fmt.structural_tag([], tool_choice="required")
