"""The ``gemma4`` family compiled from specs other than Gemma 4's: a FunctionGemma-like member
(calls ended by a token of their own, no reasoning), the toy of ``wire_toys/gemma4.py``, what the
recoveries switch on, and which specs share a syntax."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from wire_toys import gemma4 as toy

import codec
from codec import wire
from codec.testing import grammars
from codec.testing.assertions import assert_round_trip, assert_stream_matches_parse

#: Calls as FunctionGemma writes them: no reasoning, strings between <escape>, a turn's calls
#: followed by <start_function_response>.
FUNCTION_GEMMA = wire.WireSpec(
    "gemma4",
    call=("<start_function_call>", "<end_function_call>"),
    block=("", "<start_function_response>"),
    stop="<end_of_turn>",
    arguments="quoted",
    values="quoted",
    quote="<escape>",
    special_tokens=("<start_function_call>", "<end_function_call>", "<escape>", "<start_function_response>"),
)
FMT = wire.reply_format(FUNCTION_GEMMA, "function_gemma_like")
TOY = wire.reply_format(toy.SPEC, "toy_gemma4")
GEMMA4 = codec.get_format("gemma4")


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


CALLS = [_call("get_weather", {"city": 'Paris "centre"\n<b>', "days": 3}), _call("get_weather", {"city": "Rome"})]


def test_a_member_whose_calls_end_with_a_token_of_their_own_writes_it_after_them() -> None:
    reply = FMT.render_reply({"role": "assistant", "content": "", "tool_calls": CALLS})
    assert reply == (
        '<start_function_call>call:get_weather{city:<escape>Paris "centre"\n<b><escape>,days:3}<end_function_call>'
        "<start_function_call>call:get_weather{city:<escape>Rome<escape>}<end_function_call>"
        "<start_function_response>"
    )
    assert FMT.render_reply({"role": "assistant", "content": " Hi. "}) == "Hi.<end_of_turn>"


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": "", "tool_calls": CALLS},
        {"role": "assistant", "content": "Let me look.", "tool_calls": CALLS[1:]},
        {"role": "assistant", "content": "No call {here}, call: [none]."},
    ],
)
def test_a_member_without_reasoning_reads_its_replies_back(message: dict[str, Any]) -> None:
    assert_round_trip(FMT, message, toy.TOOLS)


def test_a_member_without_reasoning_drops_reasoning_and_reads_none() -> None:
    message = {"role": "assistant", "reasoning_content": "hm", "content": "Hi."}
    assert FMT.render_reply(message) == "Hi.<end_of_turn>"
    result = FMT.parse("<think>hm</think>Hi.<end_of_turn>")
    assert (result.content, result.reasoning) == ("<think>hm</think>Hi.", "")


def test_a_member_without_reasoning_exports_grammars_that_accept_its_replies() -> None:
    if not grammars.available():
        pytest.skip("llguidance is not installed")
    reply = grammars.reply_without_stop(
        FMT, FMT.render_reply({"role": "assistant", "content": "", "tool_calls": CALLS})
    )
    specials = FMT.grammar_special_tokens
    assert grammars.llguidance_accepts(FMT.grammar(toy.TOOLS, tool_choice="required"), reply, specials)
    assert not grammars.llguidance_accepts(FMT.grammar(toy.TOOLS, tool_choice="none"), reply, specials)


def test_a_cut_call_of_a_member_is_damaged() -> None:
    reply = FMT.render_reply({"role": "assistant", "content": "", "tool_calls": CALLS[:1]})
    cut = reply[: reply.index("<end_function_call>") + 3]
    result = assert_stream_matches_parse(FMT, cut, tools=toy.TOOLS)
    assert [issue.severity for issue in result.issues if issue.severity == "damaged"]


@pytest.mark.parametrize(
    ("reply", "kinds", "said"),
    [
        ("<start_call>f{a:<q>x<q>}<end_call><|end|>", ["call_opener"], "instead of '<start_call>call:'"),
        ("<start_call>call:f{a:<q>x}<end_call><|end|>", ["missing_close_quote"], "without its closing <q>"),
        ('<start_call>call:f{a:"x"}<end_call><|end|>', ["quoted_string"], 'JSON "quotes" instead of <q>'),
        ("<start_call>call:f(a=1)<end_call><|end|>", ["key_equals", "parentheses"], "instead of {...}"),
        ("<start_call>call:f{a:x}<end_call><|end|>", ["unquoted_value"], "a reply without any <q>"),
    ],
)
def test_the_familys_tolerances_hold_for_any_member(reply: str, kinds: list[str], said: str) -> None:
    """Each reported in the member's own markers."""
    result = assert_stream_matches_parse(TOY, reply)
    assert len(result.tool_calls) == 1 and result.tool_calls[0].function.name == "f"
    assert sorted({issue.kind for issue in result.issues}) == kinds
    assert any(said in issue.message for issue in result.issues), [issue.message for issue in result.issues]


@pytest.mark.parametrize(
    "reply",
    [
        "call:get_weather{city:<q>Paris<q>}<|end|>",
        "Sure.\ncall:get_weather{city:<q>Paris<q>}<|end|>",
        "I will call:get_weather{city:Paris} now.<|end|>",
        "<call>call:get_weather{city:<q>Paris<q>}<end_call><|end|>",
    ],
)
def test_a_member_that_recovers_nothing_reads_gemma_4s_deviations_as_text(reply: str) -> None:
    result = assert_stream_matches_parse(TOY, reply, tools=toy.TOOLS)
    assert not result.tool_calls
    recovering = wire.reply_format(dataclasses.replace(toy.SPEC, recover=("bare_call", "call_tag")), "recovering_toy")
    assert len(assert_stream_matches_parse(recovering, reply, tools=toy.TOOLS).tool_calls) == 1


def test_gemma_4_recovers_its_own_deviations() -> None:
    assert GEMMA4.wire.recover == ("bare_call", "call_tag")
    assert GEMMA4.parse('call:f{a:<|"|>x<|"|>}<turn|>').tool_calls[0].function.arguments == {"a": "x"}
    assert GEMMA4.parse('<call>call:f{a:<|"|>x<|"|>}<tool_call|>').tool_calls[0].function.name == "f"


def test_the_recoveries_are_in_the_reply_markers_only_where_recovered() -> None:
    assert TOY.reply_markers == (r"<start_call>",)
    assert GEMMA4.reply_markers == (r"<\|tool_call>", r"(?:\A|\n|<channel\|>)call:[\w.-]+[{(]")


def test_specs_that_parse_alike_share_a_syntax() -> None:
    tokens = wire.reply_format(dataclasses.replace(toy.SPEC, special_tokens=()), "toy_without_tokens")
    assert tokens.syntax() is TOY.syntax()
    assert tokens.kit() is not TOY.kit()
    other = wire.reply_format(dataclasses.replace(toy.SPEC, stop="<|fin|>"), "toy_other_stop")
    assert other.syntax() is not TOY.syntax()


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"recover": ("fences",)}, "does not recover fences"),
        ({"block": ("<calls>", "")}, "no block opener"),
        ({"quote": ""}, "needs a call opener and closer, a stop token and a quote token"),
        ({"arguments": "json"}, 'arguments="quoted"'),
    ],
)
def test_a_spec_the_family_cannot_read_is_refused(changes: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        wire.compile_spec(dataclasses.replace(toy.SPEC, **changes))


#: A member none of whose markers starts with ``<``: the grammar's free text and strings, and the
#: stream's holdback, follow the spec's characters.
PUNCTUATED = wire.WireSpec(
    "gemma4",
    call=("@@call@@", "@@end@@"),
    block=("", "##results##"),
    stop="##END##",
    reasoning=("{{think}}", "{{/think}}"),
    arguments="quoted",
    values="quoted",
    quote="§§",
)


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": "", "tool_calls": CALLS},
        {
            "role": "assistant",
            "reasoning_content": "Why {not} ## or @@?",
            "content": "A § and {x}.",
            "tool_calls": CALLS,
        },
        {"role": "assistant", "content": "No call: # @ § { here."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [_call("write_file", {"path": "a§b", "text": "a § b @@end@@ c ##END## d {{/think}}"})],
        },
    ],
)
def test_a_member_with_markers_of_other_characters_reads_its_replies_back(message: dict[str, Any]) -> None:
    assert_round_trip(wire.reply_format(PUNCTUATED, "punctuated"), message, toy.TOOLS)
