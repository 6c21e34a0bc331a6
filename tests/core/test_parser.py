"""codec._lark.Parser and CompiledGrammar on the toy grammar: the questions the stream asks.

The parser answers in lark's words: ``choices`` (what the state's table lists), ``accepts`` (what
it would really take, reductions simulated), ``expected``; it feeds tokens (``Refused`` when the
grammar does not allow one), takes checkpoints and restores them, and settles what is complete.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import toy

from codec._lark import CompiledGrammar, Parser, Refused, Token, make_token
from codec.sink import CONTENT
from codec.stream import Builder, Syntax


class Recorder:
    """A builder that records which rule handlers ran, with their children."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def name(self, token: Token) -> str:
        self.calls.append(("name", (str(token),)))
        return str(token)

    def number(self, token: Token) -> int:
        self.calls.append(("number", (str(token),)))
        return int(token)

    def arg(self, key: Any, equals: Token, value: Any) -> tuple[str, Any]:
        self.calls.append(("arg", (value,)))
        return str(key), value

    def call(self, *children: Any) -> str:
        self.calls.append(("call", tuple(str(c) for c in children if isinstance(c, Token))))
        return "call"


def tokens(*pairs: tuple[str, str]) -> list[Token]:
    out, pos = [], 0
    for kind, value in pairs:
        out.append(make_token(kind, value, pos))
        pos += len(value)
    return out


def fed(*pairs: tuple[str, str]) -> tuple[Parser, Recorder]:
    builder = Recorder()
    parser = Parser(toy._grammar(), builder)
    for token in tokens(*pairs):
        parser.feed(token)
    return parser, builder


def test_choices_and_accepts_at_the_start() -> None:
    parser, _ = fed()
    assert {"TEXT", "OPEN", "STOP"} <= parser.choices()
    assert "CLOSE" not in parser.choices()
    assert parser.accepts("OPEN") and parser.accepts("$END")
    assert not parser.accepts("CLOSE")
    assert parser.expected() == sorted(parser.choices())


def test_accepts_simulates_the_reductions_that_choices_only_lists() -> None:
    # After `<<f a=1` the number's state is the one a number in a list has too (LALR merges
    # them), so its table lists `,` and `]`; only the reductions show that here neither is taken.
    parser, builder = fed(("OPEN", "<<"), ("NAME", "f"), ("NAME", "a"), ("EQ", "="), ("NUMBER", "1"))
    before = parser.checkpoint()
    assert {"COMMA", "RBRACK", "CLOSE"} <= parser.choices()
    assert not parser.accepts("COMMA") and not parser.accepts("RBRACK")
    assert parser.accepts("CLOSE") and parser.accepts("NAME")
    assert not parser.accepts("$END")
    assert parser.checkpoint() == before  # asking changes nothing
    assert ("call", ()) not in builder.calls


def test_feed_runs_the_handlers_with_named_children() -> None:
    # A rule reduces when the token after it arrives: the text after the call reduces it.
    _, builder = fed(
        ("OPEN", "<<"), ("NAME", "f"), ("NAME", "a"), ("EQ", "="), ("NUMBER", "7"), ("CLOSE", ">>"), ("TEXT", " ")
    )
    assert builder.calls == [("name", ("f",)), ("number", ("7",)), ("arg", (7,)), ("call", ("<<", ">>"))]


def test_a_refused_token_names_what_would_have_been_taken() -> None:
    parser, _ = fed(("OPEN", "<<"))
    with pytest.raises(Refused) as refused:
        parser.feed(make_token("NUMBER", "1", 2))
    assert refused.value.token.type == "NUMBER"
    assert refused.value.expected == ["NAME"]


def test_checkpoint_and_restore_undo_what_came_after() -> None:
    parser, _ = fed(("TEXT", "hi "))
    checkpoint = parser.checkpoint()
    parser.feed(make_token("OPEN", "<<", 3))
    parser.feed(make_token("NAME", "f", 5))
    assert parser.state != checkpoint.states[-1]
    parser.restore(checkpoint)
    assert parser.checkpoint() == checkpoint
    assert parser.accepts("OPEN") and parser.accepts("$END")


def test_checkpoint_below_the_last_shift_is_the_parser_as_that_token_found_it() -> None:
    parser, _ = fed(("TEXT", "hi "))
    parser.feed(make_token("OPEN", "<<", 3))  # reduces the text, then shifts the opener
    below = parser.checkpoint(below=1)
    assert len(below.states) == len(parser.checkpoint().states) - 1
    parser.restore(below)
    assert parser.accepts("OPEN") and parser.accepts("$END") and not parser.accepts("NAME")


def test_settle_builds_what_every_continuation_would() -> None:
    # After `<<f a=1`, the number's reduction is the same whatever comes next: settle makes it.
    parser, builder = fed(("OPEN", "<<"), ("NAME", "f"), ("NAME", "a"), ("EQ", "="), ("NUMBER", "1"))
    assert ("number", ("1",)) not in builder.calls
    parser.settle()
    assert ("number", ("1",)) in builder.calls
    assert parser.accepts("CLOSE")  # settling takes nothing away


def test_feed_end_finishes_a_complete_reply() -> None:
    parser, _ = fed(("TEXT", "hi"), ("STOP", "$"))
    assert parser.accepts("$END")
    parser.feed_end(3)


def test_repeats_is_true_only_where_nothing_the_builder_handles_would_reduce() -> None:
    parser, _ = fed(("TEXT", "hi"), ("TEXT", " there"))
    assert parser.repeats("TEXT")  # text after text after text: the parser would end where it is
    opened, _ = fed(("OPEN", "<<"))
    assert not opened.repeats("NAME")


def test_declared_terminals_count_as_the_grammars() -> None:
    grammar = toy._grammar()
    assert "FAST_CALL" in grammar.terminal_names and "FAST_CALL" not in grammar.terminals
    assert "WS" in grammar.ignored


# --------------------------------------------------------------------------- checks when a syntax is built


def test_a_syntax_naming_a_terminal_the_grammar_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match="CLOSER"):
        toy.syntax(blocks={"OPEN": "CLOSER"})
    with pytest.raises(ValueError, match="NOPE"):
        toy.syntax(fast_terminals={"NOPE": toy.lex_fast_call})


def test_a_reasoning_lookahead_needs_its_opener_and_the_span_of_its_patterns() -> None:
    with pytest.raises(ValueError, match="reasoning_open"):
        toy.syntax(reasoning_open=None, reasoning_close="</think>")
    with pytest.raises(ValueError, match="reasoning_marker_span"):
        toy.syntax(reasoning_not_opened=(re.compile(r"\[\w+\("),))
    assert toy.syntax(reasoning_not_opened=(re.compile(r"\[\w+\("),), reasoning_marker_span=8)


class WrongArity(toy.ToyBuilder):
    def arg(self, key: Token, value: Any) -> None:  # type: ignore[override]  # the rule gives three children
        pass


class NotVariadic(toy.ToyBuilder):
    def list(self, lbrack: Token, rbrack: Token) -> list[Any]:  # type: ignore[override]  # the rule inlines
        return []


@pytest.mark.parametrize("builder", [WrongArity, NotVariadic])
def test_a_handler_that_cannot_take_its_rules_children_is_refused(builder: type[Builder]) -> None:
    grammar = CompiledGrammar(toy.GRAMMAR)  # a fresh grammar: handlers are checked once per class and grammar
    with pytest.raises(TypeError, match=builder.__name__):
        Syntax(grammar=grammar, builder=builder, text_terminals={"TEXT": CONTENT}, blocks={})


# --------------------------------------------------------------------------- decided: partial matches


def _ends_past(pattern: str, text: str) -> bool:
    """The definition ``decided`` answers by: some match of ``pattern`` at the start of ``text``
    could end past its end (a lookbehind requiring the match to be longer than ``text``)."""
    import regex

    return regex.compile(f"(?:{pattern})(?<=\\A[\\s\\S]{{{len(text) + 1},}})").match(text, partial=True) is not None


def _terminal_patterns() -> list[str]:
    import codec

    patterns = {
        terminal.pattern.to_regexp()
        for name in codec.formats()
        for terminal in codec.get_format(name).syntax().grammar.terminals.values()
    }
    return sorted(patterns)


def test_partial_matching_answers_what_a_match_past_the_end_would() -> None:
    """``_past_end`` (a complete match refused) finds a partial match exactly where the definition
    (a match required to end past the text) does, for every terminal of every format's grammar, on
    pieces of golden replies: what they start with, and cuts inside them."""
    import random
    from pathlib import Path

    from codec._lark import _past_end

    golden = sorted((Path(__file__).parents[1] / "golden").rglob("*.txt"))
    texts = [path.read_text(encoding="utf-8") for path in golden]
    rng = random.Random(0)
    compared = 0
    for pattern in _terminal_patterns():
        for text in rng.sample(texts, min(3, len(texts))):
            for _ in range(3):
                start = rng.randrange(len(text) + 1)
                piece = text[start : start + rng.choice([0, 1, 3, 12, 80])]
                got = _past_end((pattern,)).match(piece, partial=True) is not None  # type: ignore[union-attr]
                assert got == _ends_past(pattern, piece), (pattern, piece)
                compared += 1
    assert compared > 1000


def test_decided_answers_for_all_its_terminals_at_once() -> None:
    """``decided`` matches one alternation of a state's terminals: it finds a partial match exactly
    where one of them alone does, in every state of a few formats' grammars, on pieces of their
    golden replies (and its remembered answers are the same as fresh ones)."""
    import random
    from pathlib import Path

    import regex

    import codec

    rng = random.Random(1)
    compared = 0
    for name in ("qwen3_coder", "gemma4", "hermes", "glm4_6"):
        grammar = codec.get_format(name).syntax().grammar
        texts = [
            p.read_text(encoding="utf-8") for p in sorted((Path(__file__).parents[1] / "golden" / name).glob("*.txt"))
        ]
        assert texts, name
        for state in grammar.states:
            terminals = [grammar.terminals[t].pattern.to_regexp() for t in grammar._lexed(state)]
            alone = [regex.compile(f"(?:{t})(?!)") for t in terminals]
            for _ in range(4):
                text = rng.choice(texts)
                start = rng.randrange(len(text) + 1)
                piece = text[start : start + rng.choice([1, 3, 12, 40])]
                expected = not any(p.match(piece, partial=True) is not None for p in alone)
                assert grammar.decided(state, piece) is expected, (name, state, piece)
                assert grammar.decided(state, piece) is expected, (name, state, piece)  # remembered
                compared += 1
    assert compared > 500
