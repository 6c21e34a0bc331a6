"""The printers of a grammar tree, one per dialect, and the regex syntaxes they write.

:func:`print_grammar` prints a :class:`~codec._export_tree.GrammarBuilder`'s grammar in
llguidance's Lark dialect, the ``lark`` package's, or GBNF (:mod:`codec.export`'s docstring says
how each dialect writes what it cannot say directly). Regexes are written as Python's ``re`` and
Rust's ``regex`` read them (:func:`regex`, the Lark dialects) or as GBNF expressions
(:func:`gbnf_regex`, :func:`gbnf_literal`); free text that avoids markers is, in GBNF, the states
of :func:`avoiding_automaton`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from codec._export_regex import ANY, MAX_CHAR, Chars, RAlt, Regex, RSeq, complement, literal, merge
from codec._export_tree import Alt, Expr, GrammarBuilder, Head, Lit, Marker, Ref, Rep, Seq, Term, Text


def print_grammar(b: GrammarBuilder, dialect: str, *, title: str = "") -> str:
    """The grammar in ``dialect``: ``start``/``root`` first, then the rules, then the lexemes."""
    printer = _GbnfPrinter(b) if dialect == "gbnf" else _LarkPrinter(b, tokens=dialect == "llguidance")
    header = f"// {title} ({dialect})\n" if dialect != "gbnf" else f"# {title} ({dialect})\n"
    return header + printer.print()


def _reachable(b: GrammarBuilder) -> list[str]:
    order, todo = [], ["start"]
    while todo:
        name = todo.pop(0)
        if name in order:
            continue
        order.append(name)
        todo.extend(_refs(b.rules[name]))
    return order


def _refs(expr: Expr) -> list[str]:
    if isinstance(expr, Ref):
        return [expr.name]
    if isinstance(expr, Seq):
        return [r for item in expr.items for r in _refs(item)]
    if isinstance(expr, Alt):
        return [r for option in expr.options for r in _refs(option)]
    if isinstance(expr, Rep):
        return _refs(expr.item)
    return []


# -- regexes for the Lark dialects (the syntax Python's re and Rust's regex share)

_META = set("\\.^$|?*+()[]{}/")
_CLASS_META = set("\\]-[^&~/")


def _re_char(code: int, meta: set[str]) -> str:
    char = chr(code)
    if char == '"':
        # lark's grammar loader reads \" in a regexp as ", which took the escaped backslash
        # before a quote (JSON's \" escape) away: spelled so, no dialect can misread it.
        return "\\x22"
    if char in meta:
        return "\\" + char
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return char


def _re_class(chars: Chars) -> str:
    if chars == ANY:
        return "[\\s\\S]"
    negate = chars.ranges[-1][1] == MAX_CHAR
    ranges = complement(chars.ranges).ranges if negate else chars.ranges
    if not negate and len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _re_char(ranges[0][0], _META)
    body = "".join(
        _re_char(lo, _CLASS_META) + ("" if lo == hi else ("" if hi == lo + 1 else "-") + _re_char(hi, _CLASS_META))
        for lo, hi in ranges
    )
    return f"[{'^' if negate else ''}{body}]"


def regex(rx: Regex) -> str:
    """``rx`` in the regex syntax of Python's ``re`` and Rust's ``regex``."""
    if isinstance(rx, Chars):
        return _re_class(rx)
    if isinstance(rx, RSeq):
        return "".join(f"(?:{regex(i)})" if isinstance(i, RAlt) else regex(i) for i in rx.items)
    if isinstance(rx, RAlt):
        return "|".join(regex(o) for o in rx.options)
    inner = regex(rx.item)
    if not (isinstance(rx.item, Chars) or (isinstance(rx.item, RSeq) and not rx.item.items)):
        inner = f"(?:{inner})"
    return inner + _repeat(rx.low, rx.high)


def _repeat(low: int, high: int | None) -> str:
    if (low, high) == (0, None):
        return "*"
    if (low, high) == (1, None):
        return "+"
    if (low, high) == (0, 1):
        return "?"
    if high is None:
        return f"{{{low},}}"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


class _LarkPrinter:
    """llguidance's Lark dialect (``tokens``) or the lark package's."""

    def __init__(self, b: GrammarBuilder, *, tokens: bool) -> None:
        self.b = b
        self.tokens = tokens
        self.terminals: dict[str, str] = {}
        self.priorities: set[str] = set()

    def print(self) -> str:
        rules = [f"{name}: {self.expr(self.b.rules[name], top=True)}" for name in _reachable(self.b)]
        terminals = [f"{n}{'.2' if n in self.priorities else ''}: {d}" for n, d in self.terminals.items()]
        return "\n".join(rules) + "\n\n" + "\n".join(terminals) + "\n"

    def special(self, marker: str) -> bool:
        return self.tokens and marker in self.b.specials

    def expr(self, e: Expr, top: bool = False) -> str:
        if isinstance(e, Lit):
            return json.dumps(e.text, ensure_ascii=False)
        if isinstance(e, Marker):
            return e.text if self.special(e.text) else json.dumps(e.text, ensure_ascii=False)
        if isinstance(e, Term):
            self.terminals.setdefault(e.name, "/" + regex(e.regex) + "/")
            return e.name
        if isinstance(e, Text):
            self.define_text(e)
            return e.name if self.tokens else e.name + "?"
        if isinstance(e, Head):
            return self.head(e)
        if isinstance(e, Ref):
            return e.name
        if isinstance(e, Seq):
            return " ".join(self.expr(i) for i in e.items) if e.items else '""'
        if isinstance(e, Alt):
            body = " | ".join(self.expr(o) for o in e.options)
            return body if top else f"({body})"
        inner = self.expr(e.item)
        if (isinstance(e.item, Seq) and len(e.item.items) > 1) or (isinstance(e.item, Text) and not self.tokens):
            inner = f"({inner})"
        return inner + _repeat(e.low, e.high)

    def forbidden(self, text: Text) -> tuple[list[Regex], list[Regex]]:
        inside = [literal(m) for m in text.forbid_markers if not self.special(m)] + list(text.forbid)
        start = [literal(m) for m in text.forbid_start if not self.special(m)]
        return inside, start

    def define_text(self, text: Text) -> None:
        if text.name in self.terminals:
            return
        inside, start = self.forbidden(text)
        if self.tokens:
            definition = "/[\\s\\S]*/"
            if inside:
                definition += f" & ~/[\\s\\S]*(?:{regex(RAlt(tuple(inside)))})[\\s\\S]*/"
            if start:
                definition += f" & ~/(?:{regex(RAlt(tuple(start)))})[\\s\\S]*/"
        else:
            definition = "/" + self.lookahead_text(inside, start) + "+/"
        self.terminals[text.name] = definition

    @staticmethod
    def lookahead_text(inside: list[Regex], start: list[Regex]) -> str:
        lead = f"(?!{regex(RAlt(tuple(start)))})" if start else ""
        char = f"(?:(?!{regex(RAlt(tuple(inside)))})[\\s\\S])" if inside else "[\\s\\S]"
        return lead + char

    def head(self, head: Head) -> str:
        if self.special(head.end):
            return f"{self.expr(head.text)} {head.end}"
        if head.name not in self.terminals:
            if self.tokens:
                self.define_text(head.text)
                self.terminals[head.name] = f"{head.text.name} {json.dumps(head.end, ensure_ascii=False)}"
            else:
                inside, start = self.forbidden(head.text)
                end = regex(literal(head.end))
                # lark's lexer takes the first terminal that matches, not the longest: the text that
                # reaches its end marker goes first (it matches only where that marker follows).
                self.terminals[head.name] = "/" + self.lookahead_text(inside, start) + "*" + end + "/"
                self.priorities.add(head.name)
        return head.name


# -- GBNF


_GBNF_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _gbnf_char(code: int, meta: str) -> str:
    char = chr(code)
    if char in meta:
        return "\\" + char
    if char in _GBNF_ESCAPES:
        return _GBNF_ESCAPES[char]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02X}"
    return char


def _gbnf_class_char(code: int) -> str:
    # Class metacharacters as hex escapes: the one escape every GBNF reader takes in a class.
    return f"\\x{code:02X}" if chr(code) in "]\\-^[" else _gbnf_char(code, "")


def _hex_safe(atoms: Iterable[str]) -> str:
    """The printed characters joined, a hex digit after a ``\\xHH`` escape escaped too: xgrammar reads
    ``\\x`` with every hex digit that follows (``\\x5Cb`` is U+05CB), llama.cpp with two."""
    out: list[str] = []
    for atom in atoms:
        if out and re.search(r"\\x[0-9A-F]{2}$", out[-1]) and len(atom) == 1 and atom in "0123456789abcdefABCDEF":
            atom = f"\\x{ord(atom):02X}"
        out.append(atom)
    return "".join(out)


def gbnf_literal(text: str) -> str:
    return '"' + _hex_safe(_gbnf_char(ord(c), '"\\') for c in text) + '"'


def _gbnf_class(chars: Chars) -> str:
    if len(chars.ranges) == 1 and chars.ranges[0][0] == chars.ranges[0][1]:
        return gbnf_literal(chr(chars.ranges[0][0]))
    negate = chars.ranges[-1][1] == MAX_CHAR
    ranges = complement(chars.ranges).ranges if negate else chars.ranges
    atoms = [
        atom
        for lo, hi in ranges
        for atom in ([_gbnf_class_char(lo)] if lo == hi else [_gbnf_class_char(lo), "-", _gbnf_class_char(hi)])
    ]
    body = _hex_safe(atoms)
    return f"[{'^' if negate else ''}{body}]"


def gbnf_regex(rx: Regex) -> str:
    """``rx`` as a GBNF expression."""
    if isinstance(rx, Chars):
        return _gbnf_class(rx)
    if isinstance(rx, RSeq):
        return "(" + " ".join(gbnf_regex(i) for i in rx.items) + ")"
    if isinstance(rx, RAlt):
        return "(" + " | ".join(gbnf_regex(o) for o in rx.options) + ")"
    return gbnf_regex(rx.item) + _repeat(rx.low, rx.high)


class _GbnfPrinter:
    def __init__(self, b: GrammarBuilder) -> None:
        self.b = b
        self.extra: dict[str, str] = {}

    @staticmethod
    def rule_name(name: str) -> str:
        return "root" if name == "start" else name.lower().replace("_", "-")

    def print(self) -> str:
        rules = [f"{self.rule_name(n)} ::= {self.expr(self.b.rules[n])}" for n in _reachable(self.b)]
        return "\n".join(rules + [f"{n} ::= {d}" for n, d in self.extra.items()]) + "\n"

    def expr(self, e: Expr) -> str:
        if isinstance(e, Lit):
            return gbnf_literal(e.text)
        if isinstance(e, Marker):  # char by char, as a text's end (see Head)
            return "(" + " ".join(gbnf_literal(c) for c in e.text) + ")"
        if isinstance(e, Term):
            name = self.rule_name(e.name)
            self.extra.setdefault(name, gbnf_regex(e.regex))
            return name
        if isinstance(e, Text):
            return self.text(e)
        if isinstance(e, Head):
            # The end char by char: the same language, and a reader that lexes literals greedily
            # (llguidance's GBNF import) cannot take a longer literal where the text goes on.
            return " ".join([self.text(e.text), *(gbnf_literal(c) for c in e.end)])
        if isinstance(e, Ref):
            return self.rule_name(e.name)
        if isinstance(e, Seq):
            return "(" + " ".join(self.expr(i) for i in e.items) + ")" if e.items else '""'
        if isinstance(e, Alt):
            return "(" + " | ".join(self.expr(o) for o in e.options) + ")"
        return self.expr(e.item) + _repeat(e.low, e.high)

    def text(self, text: Text) -> str:
        name = self.rule_name(text.name)
        if name not in self.extra:
            inside = [literal(m) for m in text.forbid_markers] + list(text.forbid)
            start = [literal(m) for m in text.forbid_start]
            states = avoiding_automaton(inside, start)

            def state(index: int) -> str:
                return name if index == 0 else f"{name}-s{index}"

            for index, moves in enumerate(states):
                options = ['""'] + [f"{_gbnf_class(chars)} {state(target)}" for chars, target in moves]
                self.extra[state(index)] = " | ".join(options)
        return name


# ---------------------------------------------------------------------------- text that avoids patterns
# GBNF has no lookahead: "text that contains no match of P anywhere and does not start with a
# match of S" is the complement of a regular language, written as its deterministic automaton
# (subset construction over a Thompson NFA), one rule per state. States that complete a
# forbidden match are left out, so the text can never contain one.


class _Nfa:
    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.moves: list[list[tuple[Chars, int]]] = []

    def state(self) -> int:
        self.eps.append([])
        self.moves.append([])
        return len(self.eps) - 1

    def add(self, rx: Regex, start: int) -> int:
        """Wire ``rx`` from ``start``; return its end state."""
        if isinstance(rx, Chars):
            end = self.state()
            self.moves[start].append((rx, end))
            return end
        if isinstance(rx, RSeq):
            for item in rx.items:
                start = self.add(item, start)
            return start
        if isinstance(rx, RAlt):
            end = self.state()
            for option in rx.options:
                self.eps[self.add(option, start)].append(end)
            return end
        for _ in range(rx.low):
            start = self.add(rx.item, start)
        if rx.high is None:
            loop = self.state()
            self.eps[start].append(loop)
            self.eps[self.add(rx.item, loop)].append(loop)
            return loop
        end = self.state()
        self.eps[start].append(end)
        for _ in range(rx.high - rx.low):
            start = self.add(rx.item, start)
            self.eps[start].append(end)
        return end

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        seen, todo = set(states), list(states)
        while todo:
            for nxt in self.eps[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return frozenset(seen)


def avoiding_automaton(inside: Sequence[Regex], start: Sequence[Regex]) -> list[list[tuple[Chars, int]]]:
    """The automaton of texts with no match of ``inside`` and no leading match of ``start``.

    One entry per state (state 0 first): its moves as (characters, next state). Every state
    accepts (the text may end anywhere).
    """
    nfa = _Nfa()
    anywhere, anchored = nfa.state(), nfa.state()
    finals = set()
    for rx in inside:
        finals.add(nfa.add(rx, anywhere))
    for rx in start:
        finals.add(nfa.add(rx, anchored))
    points = {0, MAX_CHAR + 1}
    for moves in nfa.moves:
        for chars, _ in moves:
            for lo, hi in chars.ranges:
                points.update((lo, hi + 1))
    cuts = sorted(points)
    intervals = list(zip(cuts[:-1], [c - 1 for c in cuts[1:]], strict=True))
    first = nfa.closure([anywhere, anchored])
    index = {first: 0}
    table: list[list[tuple[Chars, int]]] = []
    todo = [first]
    while todo:
        current = todo.pop(0)
        targets: dict[int, list[tuple[int, int]]] = {}
        for lo, hi in intervals:
            moved = [to for s in current for chars, to in nfa.moves[s] if lo in chars]
            nxt = nfa.closure([*moved, anywhere])
            if nxt & finals:
                continue
            if nxt not in index:
                index[nxt] = len(index)
                todo.append(nxt)
            targets.setdefault(index[nxt], []).append((lo, hi))
        table.append([(Chars(merge(ranges)), target) for target, ranges in sorted(targets.items())])
    return table
