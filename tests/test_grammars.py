"""Every format's grammar compiles for LALR in lark's strict mode (no terminal collisions), and what
the stream assumes of some terminals holds in every parser state."""

from __future__ import annotations

import re

import pytest
from harness import deep

import codec
from codec._lark import CompiledGrammar, load_grammar_text
from codec.wire import call_list, json_object

interegular = pytest.importorskip("interegular", reason="lark's strict mode needs interegular")


#: lark's strict mode asks interegular whether any two terminals can match the same text. That
#: takes minutes for gemma4 and functiongemma (Unicode word classes against their unquoted-value
#: terminal) and deepseek_pythonic and llama4_pythonic (the bounded lookahead of their raw-string
#: terminal), and gpt_oss (the bounded lookaheads of a call's first token against the header's words),
#: so those are only compiled here; their terminals are exercised by the golden and property tests.
TOO_SLOW_FOR_STRICT = {"gemma4", "deepseek_pythonic", "llama4_pythonic", "gpt_oss", "functiongemma"}
#: Formats whose strict check takes several seconds (interegular comparing their many text
#: terminals pairwise): strict in the deep profile only, plain LALR compilation by default.
STRICT_WHEN_DEEP = {"minimax_m2", "deepseek_v3_2", "nemotron3", "seed_oss"}


def _source(name: str) -> str:
    return codec.get_format(name).syntax().grammar.source


@pytest.mark.parametrize("name", codec.formats())
def test_grammar_compiles_for_lalr(name: str) -> None:
    same = [other for other in codec.formats() if other < name and _source(other) == _source(name)]
    if same:  # a member with the same reply syntax (a prompt variant): compiled for that format
        pytest.skip(f"the grammar of {same[0]}")
    strict = name not in TOO_SLOW_FOR_STRICT and (deep() or name not in STRICT_WHEN_DEEP)
    grammar = CompiledGrammar(_source(name), strict=strict)
    assert grammar.states


def test_grammar_loader_reports_a_missing_grammar() -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.lark"):
        load_grammar_text("nope")


def test_render_refuses_an_empty_conversation() -> None:
    for name in codec.formats():
        with pytest.raises(codec.RenderError, match="empty conversation"):
            codec.get_format(name).render([])


#: A lookaround group (one level of nested parentheses): dropped, the pattern matches more.
_LOOKAROUND = re.compile(r"\(\?<?[=!](?:[^()\\]|\\.|\((?:[^()\\]|\\.)*\))*\)")


def _can_start_with(pattern: str, literal: str) -> bool:
    """Whether ``pattern`` (lookarounds dropped: a superset) matches some text that starts with ``literal``."""
    machine = interegular.parse_pattern(_LOOKAROUND.sub("", pattern)).to_fsm()
    prefixed = interegular.parse_pattern(re.escape(literal) + r"[\s\S]*").to_fsm()
    return not machine.intersection(prefixed).empty()


def test_the_overlap_check_sees_free_text_that_starts_with_punctuation() -> None:
    grammar = codec.get_format("gemma3_tool_code").syntax().grammar
    assert _can_start_with(grammar.terminals["TEXT"].pattern.to_regexp(), ",")
    assert not _can_start_with(grammar.terminals["NAME"].pattern.to_regexp(), ",")


@pytest.mark.parametrize(
    ("name", "punctuation"),
    [
        ("gemma3_tool_code", call_list.CLOSED_PUNCTUATION),
        ("deepseek_pythonic", call_list.CLOSED_PUNCTUATION),
        ("lfm2", call_list.CLOSED_PUNCTUATION),
        ("llama4_pythonic", call_list.CLOSED_PUNCTUATION),
        ("hermes", json_object.CLOSED_PUNCTUATION),
    ],
)
def test_closed_punctuation_cannot_be_extended_where_it_is_read(name: str, punctuation: tuple[str, ...]) -> None:
    """The stream takes this punctuation as soon as it arrives: sound only if, in every parser
    state that reads it, no other terminal (ignored ones included) could match longer text there."""
    syntax = codec.get_format(name).syntax()
    grammar = syntax.grammar
    assert set(punctuation) <= syntax.closed_terminals
    ignored = sorted(grammar.ignored)
    clashes = set()
    for actions in grammar.states.values():
        others = {t for t in [*actions, *ignored] if t in grammar.terminals}
        for closed in punctuation:
            if closed not in actions:
                continue
            literal = grammar.terminals[closed].pattern.value
            for other in others - {closed}:
                if _can_start_with(grammar.terminals[other].pattern.to_regexp(), literal):
                    clashes.add((closed, other))
    assert not clashes
