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
from lark.lexer import Lexer
from lark.parsers.lalr_analysis import Shift
from lark.parsers.lalr_parser_state import ParseConf, ParserState

__all__ = [
    "CompiledGrammar",
    "ParserState",
    "Splice",
    "Token",
    "UnexpectedToken",
    "ValueToken",
    "load_grammar_text",
    "make_token",
    "make_value_token",
]

_GRAMMAR_DIRS = (
    Path(__file__).resolve().parent / "grammars",  # installed wheel: grammars/ ships as codec/grammars
    Path(__file__).resolve().parent.parent / "grammars",  # source checkout
)


_USES = re.compile(r"^// uses: ([\w ,]+)$", re.MULTILINE)


def load_grammar_text(name: str) -> str:
    """The text of ``grammars/<name>.lark``, followed by the shared grammars it names in a
    ``// uses: other, ...`` line (one grammar family serving several formats)."""
    for folder in _GRAMMAR_DIRS:
        path = folder / f"{name}.lark"
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            for match in _USES.finditer(text):
                for used in match.group(1).replace(",", " ").split():
                    text += "\n" + load_grammar_text(used)
            return text
    raise FileNotFoundError(f"grammar {name}.lark not found in {', '.join(map(str, _GRAMMAR_DIRS))}")


#: How many states at the top of a stack decide whether a token repeats (see CompiledGrammar.repeats).
_REPEAT_DEPTH = 4


class ValueToken(Token):  # type: ignore[misc]
    """A token whose value was decoded by a fast lexer (see ``Syntax.fast_terminals``)."""

    __slots__ = ("decoded",)
    decoded: Any


class _NoLexer(Lexer):  # type: ignore[misc]
    """A lexer lark never runs: the stream feeds tokens itself."""

    def __init__(self, conf: Any) -> None:
        pass

    def lex(self, lexer_state: Any, parser_state: Any) -> Any:  # pragma: no cover - never called
        raise NotImplementedError


class _Rule:
    """A grammar rule as the parse table needs it, hashed by identity (lark's Rule hashes its
    whole expansion in Python at every reduction)."""

    __slots__ = ("alias", "expansion", "options", "order", "origin")

    def __init__(self, rule: Any) -> None:
        self.origin = _Symbol(str(rule.origin.name))
        self.expansion = rule.expansion
        self.alias = rule.alias
        self.options = rule.options
        self.order = rule.order


class _Symbol:
    """A nonterminal whose ``name`` is a plain ``str`` (lark's is a Token, compared in Python)."""

    __slots__ = ("name",)
    is_term = False

    def __init__(self, name: str) -> None:
        self.name = name


class _Table:
    """lark's LALR parse table with :class:`_Rule` in place of lark's rules."""

    def __init__(self, table: Any) -> None:
        fast: dict[Any, _Rule] = {}
        self.states: dict[Any, dict[str, tuple[Any, Any]]] = {}
        for state, actions in table.states.items():
            row = {}
            for symbol, (action, arg) in actions.items():
                if action is not Shift:
                    arg = fast.setdefault(arg, _Rule(arg))
                row[str(symbol)] = (action, arg)
            self.states[state] = row
        self.rules = list(fast.values())
        self.start_states = table.start_states
        self.end_states = table.end_states


def make_token(kind: str, value: str, pos: int) -> Token:
    """A lark Token, built without lark's slower constructor (the parser reads only ``type``)."""
    return _fill(str.__new__(Token, value), kind, value, pos)


def make_value_token(kind: str, value: str, pos: int, decoded: Any) -> ValueToken:
    """A :class:`ValueToken` holding what a fast lexer decoded, built like :func:`make_token`."""
    token: ValueToken = _fill(str.__new__(ValueToken, value), kind, value, pos)
    token.decoded = decoded
    return token


def _fill(token: Any, kind: str, value: str, pos: int) -> Any:
    token.type = kind
    token.value = value
    token.start_pos = pos
    token.line = token.column = None
    return token


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
    # Left-recursive helpers (``x*``) hand back their own list first: extend it in place, so a
    # long repetition costs O(n), not a copy per element.
    first = children[0] if children else None
    if type(first) is Splice:
        for child in children[1:]:
            if type(child) is Splice:
                first.extend(child)
            else:
                first.append(child)
        return first
    return Splice(_splice(children))


def _pass_or_drop(children: list[Any]) -> Any:
    return children[0] if len(children) == 1 else None


class CompiledGrammar:
    """A lark grammar compiled for LALR, with a scanner per parser state.

    Builders name their rule handlers after grammar rules (or rule aliases). A rule without a
    handler passes a single child through and drops anything else; inlined rules (``_x``, and
    lark's helpers for ``x*``) splice their children into the parent's list. Handlers receive
    every child, punctuation tokens included. Grammars therefore write unbounded repetition as
    a named left-recursive rule (``items: items item | item``): its value is dropped at each
    step, where ``item*`` would build a list as long as the reply.
    """

    def __init__(self, source: str, *, start: str = "start", strict: bool = False) -> None:
        self.lark = Lark(
            source,
            parser="lalr",
            # The stream lexes by itself (scanner()): lark's own lexer is only built in strict
            # mode, to check terminal collisions, which is slow for bounded repetitions.
            lexer="contextual" if strict else _NoLexer,
            start=start,
            maybe_placeholders=False,
            strict=strict,
        )
        self.parse_table = _Table(self.lark.parser.parser._parse_table)
        self.start = start
        self.states: dict[Any, dict[str, Any]] = self.parse_table.states
        self.start_state = self.parse_table.start_states[start]
        self.terminals = {t.name: t for t in self.lark.terminals}
        self._rules = [
            (
                rule,
                rule.alias or rule.origin.name,
                any(s.name.startswith("_") and not s.is_term for s in rule.expansion),
            )
            for rule in self.parse_table.rules
        ]
        self._defaults = {
            rule: _inline if rule.origin.name.startswith("_") else _pass_or_drop for rule, _, _ in self._rules
        }
        self.scanners: dict[Any, re.Pattern[str] | None] = {}
        self._handled: dict[type, list[tuple[Any, str, bool]]] = {}
        self._repeats: dict[tuple[type, str, tuple[Any, ...]], bool] = {}
        #: The grammar's rule names (before aliases).
        self.rule_names = frozenset(rule.origin.name for rule, _, _ in self._rules)
        self._single: dict[str, re.Pattern[str]] = {}

    def parser(self, builder: object) -> ParserState:
        """A fresh LALR parser state whose reductions call ``builder``'s rule handlers."""
        handled = self._handled.get(type(builder))
        if handled is None:  # the rules this builder class handles, looked up once per class
            kind = type(builder)
            handled = self._handled[kind] = [(r, n, s) for r, n, s in self._rules if hasattr(kind, n)]
        callbacks: dict[Any, Callback] = dict(self._defaults)
        for rule, name, splices in handled:
            method = getattr(builder, name)
            callbacks[rule] = _bind(method) if splices else method
        conf = ParseConf(self.parse_table, callbacks, self.start)
        return ParserState(conf, None)  # no lexer thread: the stream feeds tokens itself

    def accepts(self, state: Any, terminal: str) -> bool:
        """Whether ``state``'s table has an action for ``terminal`` (LALR may still refuse it later)."""
        return terminal in self.states[state]

    def can_feed(self, stack: list[Any], terminal: str) -> bool:
        """Whether a parser with this state stack would take ``terminal`` (``$END`` included).

        LALR tables merge lookaheads, so a terminal listed in the current state can still be
        refused after the reductions it triggers: simulate them on a copy of the stack.
        """
        return self._simulate(list(stack), terminal)

    def repeats(self, stack: list[Any], terminal: str, builder: object) -> bool:
        """Whether feeding ``terminal`` would leave ``stack`` as it is, reducing no rule ``builder``
        handles: free text after free text, which then need not go through the parser at all."""
        top = stack[-_REPEAT_DEPTH:]
        key = (type(builder), terminal, tuple(top))
        known = self._repeats.get(key)
        if known is None:
            handled = {rule for rule, _, _ in self._handled.get(type(builder), ())}
            sim = list(top)
            known = self._simulate(sim, terminal, lambda rule: rule not in handled) and sim == top
            self._repeats[key] = known
        return known

    def _simulate(self, stack: list[Any], terminal: str, reducing: Callable[[Any], bool] = lambda _: True) -> bool:
        """Apply to ``stack`` (in place) what feeding ``terminal`` does: its reductions, then its shift.

        True if the parser takes it (``$END``: once the stack reaches the end state); False if it
        is refused, if a reduction reaches below ``stack`` or if ``reducing(rule)`` says no.
        """
        end_state = self.parse_table.end_states[self.start]
        while True:
            action = self.states[stack[-1]].get(terminal)
            if action is None:
                return False
            kind, arg = action
            if kind is Shift:
                stack.append(arg)
                return True
            size = len(arg.expansion)
            if not reducing(arg) or size >= len(stack):
                return False
            if size:
                del stack[-size:]
            goto = self.states[stack[-1]].get(arg.origin.name)
            if goto is None:
                return False
            stack.append(goto[1])
            if terminal == "$END" and stack[-1] == end_state:
                return True

    def settle(self, ps: ParserState) -> None:
        """Make the reductions ``ps`` would make whatever terminal came next (every action of its
        state reduces the same rule), calling their handlers: what is complete gets built now. A
        stream does this before it gives up a block, so that the block's finished parts are kept."""
        callbacks = ps.parse_conf.callbacks
        stack, values = ps.state_stack, ps.value_stack
        while True:
            actions = set(self.states[stack[-1]].values())
            if len(actions) != 1:
                return
            ((kind, rule),) = actions
            if kind is Shift:
                return
            size = len(rule.expansion)
            goto = self.states[stack[-1 - size]].get(rule.origin.name) if size < len(stack) else None
            if goto is None:  # the start rule: the reply is not over
                return
            children = values[-size:] if size else []
            value = callbacks[rule](children)
            if size:
                del stack[-size:]
                del values[-size:]
            stack.append(goto[1])
            values.append(value)

    def expected(self, state: Any) -> list[str]:
        """The terminals the parser in ``state`` can take next."""
        return sorted(name for name in self.states[state] if name.isupper() or name == "$END")

    def pattern(self, terminal: str) -> re.Pattern[str]:
        """The compiled regular expression of ``terminal`` alone (compiled once)."""
        pattern = self._single.get(terminal)
        if pattern is None:
            pattern = self._single[terminal] = re.compile(self.terminals[terminal].pattern.to_regexp())
        return pattern

    def first_match(self, terminals: Any, text: str, pos: int) -> str | None:
        """The first of ``terminals`` that ``text`` holds at ``pos``, whatever the parser state."""
        for name in terminals:
            m = self.pattern(name).match(text, pos)
            if m is not None and m.end() > pos:
                return str(name)
        return None

    def scanner(self, state: Any) -> re.Pattern[str] | None:
        """One regex matching any terminal allowed in ``state``; the group name is the terminal.

        Alternatives are ordered as lark's lexer orders them: priority, then width, then length.
        """
        try:
            return self.scanners[state]
        except KeyError:
            pass
        names = [n for n in self.states[state] if n in self.terminals]
        names += [n for n in self.lark.ignore_tokens if n not in names]
        compiled = self._compile([self.terminals[n] for n in names])
        self.scanners[state] = compiled
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
