"""The only module that touches lark internals: a compiled LALR grammar driven token by token.

lark's public API parses a whole text. To parse a reply while it streams in, codec lexes the
text itself, one terminal at a time with a scanner made for the current LALR state (what lark's
contextual lexer does), and feeds the tokens to lark's ``ParserState``. Rule callbacks are
bound per stream, so that each stream's builder receives its own reductions.

This relies on lark's ``ParserState``/``ParseConf`` and the parse table of its LALR frontend,
which is why ``pyproject.toml`` pins lark's minor version.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark, Token
from lark.exceptions import UnexpectedToken
from lark.parsers.lalr_parser_state import ParseConf, ParserState

__all__ = ["CompiledGrammar", "ParserState", "Splice", "Token", "UnexpectedToken", "ValueToken", "load_grammar_text"]

_GRAMMAR_DIRS = (
    Path(__file__).resolve().parent / "grammars",  # installed wheel: grammars/ ships as codec/grammars
    Path(__file__).resolve().parent.parent / "grammars",  # source checkout
)


def load_grammar_text(name: str) -> str:
    """The text of ``grammars/<name>.lark``."""
    for folder in _GRAMMAR_DIRS:
        path = folder / f"{name}.lark"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(f"grammar {name}.lark not found in {', '.join(map(str, _GRAMMAR_DIRS))}")


class ValueToken(Token):  # type: ignore[misc]
    """A token whose value was decoded by a fast lexer (see ``Syntax.fast_terminals``)."""

    __slots__ = ("decoded",)
    decoded: Any


class Splice(list[Any]):
    """The children of an inlined rule (``_name`` or lark's ``__x_star_n`` helpers), spliced into its parent."""


Callback = Callable[[list[Any]], Any]


def _splice(children: list[Any]) -> list[Any]:
    out: list[Any] = []
    for child in children:
        if type(child) is Splice:
            out.extend(child)
        else:
            out.append(child)
    return out


def _bind(method: Callback) -> Callback:
    def call(children: list[Any]) -> Any:
        if any(type(c) is Splice for c in children):
            children = _splice(children)
        return method(children)

    return call


def _inline(children: list[Any]) -> Splice:
    return Splice(_splice(children))


def _pass_or_drop(children: list[Any]) -> Any:
    return children[0] if len(children) == 1 else None


class CompiledGrammar:
    """A lark grammar compiled for LALR, with a scanner per parser state.

    Builders name their rule handlers after grammar rules (or rule aliases). A rule without a
    handler passes a single child through and drops anything else; inlined rules splice their
    children into the parent's list. Handlers receive every child, punctuation tokens included.
    """

    def __init__(self, source: str, *, start: str = "start", strict: bool = False) -> None:
        self.lark = Lark(
            source,
            parser="lalr",
            lexer="contextual",
            start=start,
            maybe_placeholders=False,
            strict=strict,
        )
        frontend = self.lark.parser.parser
        self.parse_table = frontend._parse_table
        self.start = start
        self.states: dict[Any, dict[str, Any]] = self.parse_table.states
        self.start_state = self.parse_table.start_states[start]
        self.terminals = {t.name: t for t in self.lark.terminals}
        self._rules = [(rule, rule.alias or rule.origin.name) for rule in self.lark.rules]
        self._scanners: dict[Any, re.Pattern[str] | None] = {}
        self._single: dict[str, re.Pattern[str]] = {}

    def parser(self, builder: object) -> ParserState:
        """A fresh LALR parser state whose reductions call ``builder``'s rule handlers."""
        callbacks: dict[Any, Callback] = {}
        for rule, name in self._rules:
            method = getattr(builder, name, None)
            if method is not None:
                callbacks[rule] = _bind(method)
            elif rule.origin.name.startswith("_"):
                callbacks[rule] = _inline
            else:
                callbacks[rule] = _pass_or_drop
        conf = ParseConf(self.parse_table, callbacks, self.start)
        return ParserState(conf, None)  # no lexer thread: the stream feeds tokens itself

    def accepts(self, state: Any, terminal: str) -> bool:
        """Whether the parser in ``state`` can take ``terminal`` next (``$END`` included)."""
        return terminal in self.states[state]

    def expected(self, state: Any) -> list[str]:
        """The terminals the parser in ``state`` can take next."""
        return sorted(name for name in self.states[state] if name.isupper() or name == "$END")

    def first_match(self, terminals: Any, text: str, pos: int) -> str | None:
        """The first of ``terminals`` that ``text`` holds at ``pos``, whatever the parser state."""
        for name in terminals:
            pattern = self._single.get(name)
            if pattern is None:
                pattern = self._single[name] = re.compile(self.terminals[name].pattern.to_regexp())
            m = pattern.match(text, pos)
            if m is not None and m.end() > pos:
                return str(name)
        return None

    def scanner(self, state: Any) -> re.Pattern[str] | None:
        """One regex matching any terminal allowed in ``state``; the group name is the terminal.

        Alternatives are ordered as lark's lexer orders them: priority, then width, then length.
        """
        try:
            return self._scanners[state]
        except KeyError:
            pass
        names = [n for n in self.states[state] if n in self.terminals]
        names += [n for n in self.lark.ignore_tokens if n not in names]
        compiled = self._compile([self.terminals[n] for n in names])
        self._scanners[state] = compiled
        return compiled

    @staticmethod
    def _compile(defs: Any) -> re.Pattern[str] | None:
        ordered = sorted(defs, key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        pattern = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in ordered)
        return re.compile(pattern) if pattern else None


@cache
def compile_grammar(name: str) -> CompiledGrammar:
    """``grammars/<name>.lark`` compiled once per process."""
    return CompiledGrammar(load_grammar_text(name))
