"""The only module that touches lark internals: a compiled LALR grammar driven token by token.

lark's public API parses a whole text. To parse a reply while it streams in, codec lexes the
text itself, one terminal at a time with a scanner made for the current LALR state (what lark's
contextual lexer does), and feeds the tokens to a :class:`Parser`: one stream's LALR parser,
which runs lark's ``ParserState`` loop on the stream's own stacks and answers the stream's
questions in lark's own words (``accepts``: would the parser take this terminal now;
``choices``/``expected``: what it could take). Rule callbacks are made once per builder class
and given the stream's builder at each reduction, so that each stream's builder receives its
own reductions, as named arguments (lark's ``v_args(inline=True)`` style).

This relies on the parse table of lark's LALR frontend and the shape of its loop, which is why
``pyproject.toml`` pins lark's minor version. No other module reads the parser's
stacks or its configuration (:mod:`codec._grammar_cache` keeps lark's analysis as lark serialises
it).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import regex
from lark import Lark, Token
from lark.lexer import Lexer
from lark.parsers.lalr_analysis import Shift

from codec._grammar_cache import cached_lark

__all__ = [
    "Checkpoint",
    "CompiledGrammar",
    "Parser",
    "Refused",
    "Splice",
    "Token",
    "ValueToken",
    "compile_grammar",
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


#: What a reduction calls: with the parser's builder and the rule's children.
Callback = Callable[[Any, list[Any]], Any]


def _splice(children: list[Any]) -> list[Any]:
    out: list[Any] = []
    for child in children:
        if type(child) is Splice:
            out.extend(child)
        else:
            out.append(child)
    return out


def _unpacking(method: Callable[..., Any], splices: bool) -> Callable[[Any, list[Any]], Any]:
    """``method`` (a builder class's handler) as a function of the builder and the list of children
    a reduction gives its callback."""
    if not splices:
        return lambda builder, children: method(builder, *children)

    def call(builder: Any, children: list[Any]) -> Any:
        if any(type(c) is Splice for c in children):
            children = _splice(children)
        return method(builder, *children)

    return call


def _inline(builder: Any, children: list[Any]) -> Splice:
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


def _pass_or_drop(builder: Any, children: list[Any]) -> Any:
    return children[0] if len(children) == 1 else None


@dataclass(frozen=True, slots=True)
class _Handler:
    """A builder method bound to one grammar rule: the rule, the method's name, whether the rule
    inlines other rules (its children must be spliced, and their number varies)."""

    rule: Any
    name: str
    splices: bool


class CompiledGrammar:
    """A lark grammar compiled for LALR, with a scanner per parser state.

    Builders name their rule handlers after grammar rules (or rule aliases); a handler takes the
    rule's children as positional arguments (tokens, with absolute ``start_pos``, and the values
    of sub-rules), punctuation tokens included, and returns the rule's value. A rule without a
    handler passes a single child through and drops anything else; inlined rules (``_x``, and
    lark's helpers for ``x*``) splice their children into the parent's, so a handler of a rule
    that inlines others takes ``*children``. Grammars therefore write unbounded repetition as
    a named left-recursive rule (``items: items item | item``): its value is dropped at each
    step, where ``item*`` would build a list as long as the reply.
    """

    def __init__(self, source: str, *, start: str = "start", strict: bool = False, cache: bool = False) -> None:
        options: dict[str, Any] = {
            "parser": "lalr",
            # The stream lexes by itself (scanner()): lark's own lexer is only built in strict
            # mode, to check terminal collisions, which is slow for bounded repetitions.
            "lexer": "contextual" if strict else _NoLexer,
            "start": start,
            "maybe_placeholders": False,
            "strict": strict,
        }
        #: The grammar's text, as compiled.
        self.source = source
        self.lark = cached_lark(source, options) if cache and not strict else Lark(source, **options)
        self.parse_table = _Table(self.lark.parser.parser._parse_table)
        self.start = start
        self.states: dict[Any, dict[str, Any]] = self.parse_table.states
        self.start_state = self.parse_table.start_states[start]
        #: The state the start rule's reduction leads to: the end of a reply.
        self.end_state = self.parse_table.end_states[start]
        #: The terminals defined by a pattern, by name.
        self.terminals = {t.name: t for t in self.lark.terminals}
        #: Every terminal the rules use: those with a pattern and the declared ones (``%declare``).
        self.terminal_names = frozenset(
            symbol for row in self.states.values() for symbol in row if symbol.isupper() or symbol == "$END"
        ) | frozenset(self.terminals)
        #: Terminals the grammar ignores between tokens (``%ignore``).
        self.ignored = frozenset(str(name) for name in self.lark.lexer_conf.ignore)
        self._rules = [
            _Handler(
                rule,
                rule.alias or rule.origin.name,
                any(s.name.startswith("_") and not s.is_term for s in rule.expansion),
            )
            for rule in self.parse_table.rules
        ]
        self._defaults = {h.rule: _inline if h.rule.origin.name.startswith("_") else _pass_or_drop for h in self._rules}
        self.scanners: dict[Any, re.Pattern[str] | None] = {}
        self._handled: dict[type, list[_Handler]] = {}
        self._bound: dict[type, dict[Any, Callback]] = {}
        self._repeats: dict[tuple[type, str, tuple[Any, ...]], bool] = {}
        #: The grammar's rule names (before aliases).
        self.rule_names = frozenset(h.rule.origin.name for h in self._rules)
        self._single: dict[str, re.Pattern[str]] = {}
        self._partial: dict[Any, regex.Pattern[str] | None] = {}
        self._decided: dict[tuple[Any, str], bool] = {}
        self._sole: dict[Any, tuple[Any, bool]] = {}
        self._after: dict[tuple[str, tuple[Any, ...]], Any] = {}

    # ------------------------------------------------------------------ builders

    def handlers(self, builder: type) -> list[_Handler]:
        """The rules ``builder`` handles, checked once per class: each handler must take the
        children its rule gives it, so that a grammar edit that changes a rule's shape fails
        here, when the format's syntax is built, not later on some reply."""
        found = self._handled.get(builder)
        if found is None:
            found = [h for h in self._rules if callable(getattr(builder, h.name, None))]
            for handler in found:
                _check_arity(builder, handler)
            self._handled[builder] = found
        return found

    def callbacks(self, builder: type) -> dict[Any, Callback]:
        """Per rule, what its reduction calls with the parser's builder (an instance of
        ``builder``) and the rule's children: the builder's handler, else the default (pass a
        single child through, splice an inlined rule's). Made once per builder class and shared
        by its parsers: a stream is made per reply, and binding each handler to each stream's
        builder cost more than a short reply's parse."""
        callbacks = self._bound.get(builder)
        if callbacks is None:
            callbacks = self._bound[builder] = dict(self._defaults)
            for h in self.handlers(builder):
                callbacks[h.rule] = _unpacking(getattr(builder, h.name), h.splices)
        return callbacks

    # ------------------------------------------------------------------ the parse table

    def choices(self, state: Any) -> frozenset[str]:
        """The terminals ``state``'s table has an action for (LALR may still refuse one of them
        after the reductions it triggers: :meth:`Parser.accepts` says for sure)."""
        return frozenset(name for name in self.states[state] if name in self.terminal_names)

    def expected(self, state: Any) -> list[str]:
        """The terminals the parser in ``state`` can take next, sorted."""
        return sorted(self.choices(state))

    def outranks(self, state: Any, terminal: str) -> bool:
        """Whether ``state`` has an action for a terminal of higher priority than ``terminal``
        (a marker allowed only there, like an opening ``<think>``, outranking free text)."""
        rank = self.terminals[terminal].priority
        return any(self.terminals[t].priority > rank for t in self.states[state] if t in self.terminals)

    def repeats(self, stack: list[Any], terminal: str, builder: type) -> bool:
        """Whether feeding ``terminal`` would leave ``stack`` as it is, reducing no rule ``builder``
        handles: free text after free text, which then need not go through the parser at all."""
        top = stack[-_REPEAT_DEPTH:]
        key = (builder, terminal, tuple(top))
        known = self._repeats.get(key)
        if known is None:
            handled = {h.rule for h in self.handlers(builder)}
            sim = list(top)
            known = self.simulate(sim, terminal, lambda rule: rule not in handled) and sim == top
            self._repeats[key] = known
        return known

    def simulate(self, stack: list[Any], terminal: str, reducing: Callable[[Any], bool] = lambda _: True) -> bool:
        """Apply to ``stack`` (in place) what feeding ``terminal`` does: its reductions, then its shift.

        True if the parser takes it (``$END``: once the stack reaches the end state); False if it
        is refused, if a reduction reaches below ``stack`` or if ``reducing(rule)`` says no.
        """
        return self._simulate(stack, terminal, reducing) is True

    def after(self, stack: list[Any], terminal: str) -> Any:
        """The state a parser with ``stack`` would be in after taking ``terminal`` (None: it would
        refuse it). Answered from the top of the stack where the reductions stay within it, and
        remembered per terminal and top (a few thousand answers): the same tokens meet the same
        states in every call of a reply."""
        top = tuple(stack[-_AFTER_DEPTH:])
        key = (terminal, top)
        known = self._after.get(key, _UNKNOWN)
        if known is not _UNKNOWN:
            return known
        window = list(top)
        taken = self._simulate(window, terminal, lambda _: True)
        if taken is None and len(top) < len(stack):  # it reduces past the top: the whole stack says
            whole = list(stack)
            return whole[-1] if self.simulate(whole, terminal) else None
        known = window[-1] if taken else None
        if len(self._after) >= _AFTER_KEPT:
            self._after.clear()
        self._after[key] = known
        return known

    def _simulate(self, stack: list[Any], terminal: str, reducing: Callable[[Any], bool]) -> bool | None:
        """:meth:`simulate`, saying None where a reduction reaches below ``stack``."""
        while True:
            action = self.states[stack[-1]].get(terminal)
            if action is None:
                return False
            kind, arg = action
            if kind is Shift:
                stack.append(arg)
                return True
            size = len(arg.expansion)
            if not reducing(arg):
                return False
            if size >= len(stack):
                return None
            if size:
                del stack[-size:]
            goto = self.states[stack[-1]].get(arg.origin.name)
            if goto is None:
                return False
            stack.append(goto[1])
            if terminal == "$END" and stack[-1] == self.end_state:
                return True

    # ------------------------------------------------------------------ lexing

    def pattern(self, terminal: str) -> re.Pattern[str]:
        """The compiled regular expression of ``terminal`` alone (compiled once)."""
        pattern = self._single.get(terminal)
        if pattern is None:
            pattern = self._single[terminal] = re.compile(self.terminals[terminal].pattern.to_regexp())
        return pattern

    def first_match(self, terminals: Iterable[str], text: str, pos: int) -> str | None:
        """The first of ``terminals`` that ``text`` holds at ``pos``, whatever the parser state."""
        for name in terminals:
            m = self.pattern(name).match(text, pos)
            if m is not None and m.end() > pos:
                return str(name)
        return None

    def decided(self, state: Any, text: str) -> bool:
        """Whether what ``state``'s scanner finds at the start of ``text`` (the rest of what has
        arrived) stays the same whatever text comes after it: no terminal the state lexes could
        match past the end of ``text``, or needs to look past it (a lookahead), to decide.

        Asked of the last token a chunk holds, so that a token is committed as soon as it cannot
        change, not only once the longest marker's worth of text has followed it. Each terminal is
        matched with the ``regex`` module's partial matching, every complete match refused: a
        partial match means more text could make it.

        Answers for short texts are remembered (a few thousand of them): the same markers are
        held at the end of a chunk again and again, in every call of a reply and every reply."""
        key = (state, text)
        known = self._decided.get(key)
        if known is not None:
            return known
        try:
            pattern = self._partial[state]
        except KeyError:
            pattern = self._partial[state] = _past_end(
                tuple(self.terminals[name].pattern.to_regexp() for name in self._lexed(state))
            )
        known = pattern is None or pattern.match(text, partial=True) is None
        if len(text) <= _DECIDED_TEXT:
            if len(self._decided) >= _DECIDED_KEPT:
                self._decided.clear()
            self._decided[key] = known
        return known

    def sole_reduction(self, state: Any) -> tuple[Any, bool]:
        """The rule every action of ``state`` reduces (None: the actions differ, one shifts, or
        the rule is the start rule, which only the end makes), and whether the reply may end
        there; asked once per state."""
        known = self._sole.get(state)
        if known is None:
            actions = set(self.states[state].values())
            rule = None
            if len(actions) == 1:
                ((kind, only),) = actions
                if kind is not Shift and only.origin.name != self.start:
                    rule = only
            known = self._sole[state] = (rule, "$END" in self.states[state])
        return known

    def _lexed(self, state: Any) -> list[str]:
        """The terminals ``state``'s scanner tries: those it has an action for, and the ignored ones."""
        names = [n for n in self.states[state] if n in self.terminals]
        return names + [n for n in self.ignored if n not in names]

    def scanner(self, state: Any) -> re.Pattern[str] | None:
        """One regex matching any terminal allowed in ``state``; the group name is the terminal.

        Alternatives are ordered as lark's lexer orders them: priority, then width, then length.
        """
        try:
            return self.scanners[state]
        except KeyError:
            pass
        compiled = self._compile([self.terminals[n] for n in self._lexed(state)])
        self.scanners[state] = compiled
        return compiled

    @staticmethod
    def _compile(defs: Any) -> re.Pattern[str] | None:
        ordered = sorted(defs, key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        pattern = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in ordered)
        return re.compile(pattern) if pattern else None


def _check_arity(builder: type, handler: _Handler) -> None:
    """Raise TypeError unless ``builder``'s handler can take the children of ``handler.rule``."""
    method = getattr(builder, handler.name)
    signature = inspect.signature(method)
    params = list(signature.parameters.values())[1:]  # past self
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    where = f"{builder.__name__}.{handler.name}"
    rule = f"{handler.rule.origin.name}: {' '.join(s.name for s in handler.rule.expansion)}"
    if handler.splices:
        if not variadic:
            raise TypeError(f"{where} must take *children: rule {rule!r} inlines other rules")
        return
    count = len(handler.rule.expansion)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if count < len(required) or (count > len(positional) and not variadic):
        raise TypeError(f"{where} cannot take the {count} children of rule {rule!r}")


class Refused(Exception):
    """The parser cannot take a token where it is: what it could have taken instead."""

    def __init__(self, token: Token, expected: list[str]) -> None:
        super().__init__(f"unexpected {token.type} {str(token)!r}")
        self.token = token
        self.expected = expected


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A parser's stacks at one point, for :meth:`Parser.restore`: its LALR states and the value
    built for each (the values are shared, not copied: what a checkpoint holds is never changed
    after it is taken, since everything below the top of the stacks is finished)."""

    states: list[Any]
    values: list[Any]


class Parser:
    """One stream's LALR parser: lark's ``ParserState`` loop on its own stacks, fed one token at
    a time, whose reductions call ``builder``'s rule handlers.

    Its questions use lark's interactive-parser words: :meth:`accepts` (would it take this
    terminal now, reductions included), :meth:`choices` (what its state has an action for),
    :meth:`expected` (those, for an error), plus :meth:`checkpoint` / :meth:`restore` to go back
    to where a block started, and :meth:`settle` to build what is complete.
    """

    __slots__ = ("_builder", "_callbacks", "_states", "_target", "_values", "grammar")

    def __init__(self, grammar: CompiledGrammar, builder: object) -> None:
        self.grammar = grammar
        self._builder = type(builder)
        self._target = builder
        self._callbacks = grammar.callbacks(self._builder)
        self._states: list[Any] = [grammar.start_state]
        self._values: list[Any] = []

    @property
    def state(self) -> Any:
        """The LALR state the parser is in (the key of per-state tables such as scanners)."""
        return self._states[-1]

    @property
    def stack(self) -> list[Any]:
        """The LALR states, the current one last: the parser's own list, changed in place as it
        goes (read by the lexing loop once per token, not through :attr:`state`; never to be
        changed but by the parser)."""
        return self._states

    def feed(self, token: Token) -> None:
        """Take ``token``: its reductions (calling their handlers), then its shift.

        Raises :class:`Refused` if the grammar does not allow it here (after the reductions made
        on the way, as lark's ``ParserState.feed_token`` leaves them); whatever a handler raises
        goes through. It is lark's loop, run on this parser's stacks.
        """
        states, values = self._states, self._values
        table = self.grammar.states
        callbacks, builder = self._callbacks, self._target
        kind = token.type
        while True:
            action = table[states[-1]].get(kind)
            if action is None:
                raise Refused(token, self.grammar.expected(states[-1]))
            what, arg = action
            if what is Shift:
                states.append(arg)
                values.append(token)
                return
            # (:meth:`_reduce`, written out: this loop runs once per token)
            size = len(arg.expansion)
            if size:
                children = values[-size:]
                del states[-size:]
                del values[-size:]
            else:
                children = []
            value = callbacks[arg](builder, children)
            states.append(table[states[-1]][arg.origin.name][1])
            values.append(value)

    def _reduce(self, rule: Any, goto: Any) -> None:
        """Reduce ``rule``: its handler called on the top values, which it replaces, and the
        stack's top states replaced by ``goto`` (the state the one below them goes to on it)."""
        states, values = self._states, self._values
        size = len(rule.expansion)
        children = values[-size:] if size else []
        value = self._callbacks[rule](self._target, children)
        if size:
            del states[-size:]
            del values[-size:]
        states.append(goto)
        values.append(value)

    def feed_end(self, pos: int) -> None:
        """The end of the reply, at offset ``pos``: the last reductions, up to the start rule's.

        Raises :class:`Refused` where the reply cannot end here (the stream asks :meth:`accepts`
        first)."""
        states = self._states
        table = self.grammar.states
        end_state = self.grammar.end_state
        while True:
            action = table[states[-1]].get("$END")
            if action is None or action[0] is Shift:
                raise Refused(Token("$END", "", start_pos=pos), self.grammar.expected(states[-1]))
            rule = action[1]
            self._reduce(rule, table[states[-1 - len(rule.expansion)]][rule.origin.name][1])
            if states[-1] == end_state:
                return

    def accepts(self, terminal: str) -> bool:
        """Whether the parser would take ``terminal`` now (``$END``: the end of the reply).

        LALR tables merge lookaheads, so a terminal listed in the current state can still be
        refused after the reductions it triggers: they are simulated on a copy of the stack.
        """
        return self.grammar.simulate(list(self._states), terminal)

    def state_after(self, terminal: str) -> Any:
        """The LALR state the parser would be in after taking ``terminal`` (None: it would refuse
        it), its reductions simulated on a copy of the stack (none where the state shifts it)."""
        action = self.grammar.states[self._states[-1]].get(terminal)
        if action is None:
            return None
        if action[0] is Shift:
            return action[1]
        return self.grammar.after(self._states, terminal)

    def choices(self) -> frozenset[str]:
        """The terminals the current state has an action for (see :meth:`CompiledGrammar.choices`)."""
        return self.grammar.choices(self._states[-1])

    def expected(self) -> list[str]:
        """The terminals the parser can take next, sorted, for an error message."""
        return self.grammar.expected(self._states[-1])

    def repeats(self, terminal: str) -> bool:
        """Whether taking ``terminal`` would change nothing the builder sees (see
        :meth:`CompiledGrammar.repeats`): the stream then need not feed it."""
        return self.grammar.repeats(self._states, terminal, self._builder)

    def checkpoint(self, *, below: int = 0) -> Checkpoint:
        """The stacks now, without their top ``below`` entries: ``below=1`` right after a shift
        is the parser as that token found it, after the reductions it triggered."""
        end = len(self._states) - below
        return Checkpoint(self._states[:end], self._values[:end])

    def restore(self, checkpoint: Checkpoint) -> None:
        """Go back to ``checkpoint`` (the handlers of what is undone are not called again)."""
        self._states[:] = checkpoint.states
        self._values[:] = checkpoint.values

    def settle(self, *, ending: bool = False) -> None:
        """Make the reductions the parser would make whatever terminal came next (every action of
        its state reduces the same rule), calling their handlers: what is complete gets built now.
        A stream does this before it gives up a block, so that the block's finished parts are kept.
        ``ending``: only those the end of the reply would make too (a state where the reply cannot
        end is left as it is, so that what the end finds missing is found where it is missing)."""
        states = self._states
        grammar = self.grammar
        table = grammar.states
        while True:
            rule, ends = grammar.sole_reduction(states[-1])
            if rule is None or (ending and not ends):
                return
            size = len(rule.expansion)
            goto = table[states[-1 - size]].get(rule.origin.name) if size < len(states) else None
            if goto is None:  # the start rule: the reply is not over
                return
            self._reduce(rule, goto[1])


#: How deep into the stack :meth:`CompiledGrammar.after` looks first, how many answers it keeps.
_AFTER_DEPTH = 12
_AFTER_KEPT = 8192
_UNKNOWN = object()

#: How long a text :meth:`CompiledGrammar.decided` remembers its answer for can be, and how many
#: answers it keeps (all are forgotten when that many are kept).
_DECIDED_TEXT = 64
_DECIDED_KEPT = 4096


@functools.lru_cache(maxsize=4096)
def _past_end(patterns: tuple[str, ...]) -> regex.Pattern[str] | None:
    """One pattern matching where any of ``patterns`` would, with every complete match refused,
    so that only a partial match (one the end of the text cut short) is found (for
    :meth:`CompiledGrammar.decided`); None for no patterns. One alternation per state, compiled
    once: a partial match of any alternative is a partial match of the whole.

    Refusing with ``(?!)`` costs one step per place the match could end; requiring the match to
    end past the text with a lookbehind (``(?<=\\A[\\s\\S]{n,})``) cost a walk back to the start at
    each of them, quadratic on a long value, and a compile per length."""
    if not patterns:
        return None
    return regex.compile("|".join(f"(?:{p})(?!)" for p in patterns))


@cache
def compile_grammar(name: str) -> CompiledGrammar:
    """``grammars/<name>.lark`` compiled once per process, its LALR tables kept in the cache folder
    (:mod:`codec._grammar_cache`) so that the next process loads them instead of analysing the
    grammar again."""
    return CompiledGrammar(load_grammar_text(name), cache=True)
