"""Grammar trees: the expressions a grammar is built of, and the builder that names its rules.

An expression is literal text (:class:`Lit`), a marker (:class:`Marker`), a lexeme
(:class:`Term`), free text that avoids markers (:class:`Text`, :class:`Head`), a rule
(:class:`Ref`), or a sequence, alternative or repeat of expressions (:class:`Seq`, :class:`Alt`,
:class:`Rep`, built with :func:`seq`, :func:`alt`, :func:`maybe`, :func:`many`). A
:class:`GrammarBuilder` holds one grammar's named rules and lexemes. Format modules build their
calls of these through :mod:`codec.export`, which re-exports them; :mod:`codec._export_print`
prints a builder's grammar in each dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from codec._export_regex import Regex


@dataclass(frozen=True)
class Lit:
    """Literal text."""

    text: str


@dataclass(frozen=True)
class Marker:
    """A marker: a token in llguidance when the format's tokenizer has it as a special token, else text."""

    text: str


@dataclass(frozen=True)
class Term:
    """A named lexeme (strings, numbers, names): one terminal in the Lark dialects."""

    name: str
    regex: Regex


@dataclass(frozen=True)
class Text:
    """Free text (maybe empty) that contains none of ``forbid`` and does not start with ``forbid_start``.

    ``forbid_markers`` are markers (text, or special tokens that no text can contain anyway).
    """

    name: str
    forbid_markers: tuple[str, ...] = ()
    forbid: tuple[Regex, ...] = ()
    forbid_start: tuple[str, ...] = ()


@dataclass(frozen=True)
class Head:
    """:class:`Text` followed by ``end``, which must be able to end it (``end`` starts with a forbidden match).

    In llguidance this is one lexeme (it ends at the first ``end``).
    """

    name: str
    text: Text
    end: str


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Seq:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Expr, ...]


@dataclass(frozen=True)
class Rep:
    item: Expr
    low: int  # 0 or 1
    high: int | None  # 1 or None


Expr = Lit | Marker | Term | Text | Head | Ref | Seq | Alt | Rep
EMPTY = Seq(())


def seq(*items: Expr | str) -> Expr:
    """The items in order (strings are literal text); nested sequences and empty text are flattened.

    Adjacent literals stay apart: merged, the same closing bracket would be a different lexeme in
    each place it is used, which an LALR parser cannot always tell apart.
    """
    out: list[Expr] = []
    for item in items:
        expr = Lit(item) if isinstance(item, str) else item
        if isinstance(expr, Seq):
            out.extend(expr.items)
        elif not (isinstance(expr, Lit) and not expr.text):
            out.append(expr)
    return out[0] if len(out) == 1 else Seq(tuple(out))


def alt(*options: Expr | str) -> Expr:
    """One of the options (duplicates dropped); an empty option makes the rest optional."""
    out: list[Expr] = []
    for option in options:
        expr = seq(option)
        for one in expr.options if isinstance(expr, Alt) else (expr,):
            if one not in out:
                out.append(one)
    nullable = EMPTY in out
    rest = [o for o in out if o != EMPTY]
    if not rest:
        return EMPTY
    body = rest[0] if len(rest) == 1 else Alt(tuple(rest))
    return maybe(body) if nullable else body


def maybe(item: Expr) -> Expr:
    return EMPTY if item == EMPTY else Rep(item, 0, 1)


def many(item: Expr) -> Expr:
    return Rep(item, 0, None)


class GrammarBuilder:
    """Named rules and lexemes of one grammar, with unique names."""

    def __init__(self, specials: Iterable[str] = ()) -> None:
        self.specials = frozenset(specials)
        self.rules: dict[str, Expr] = {}
        self._texts: dict[tuple[Any, ...], Text] = {}
        self._heads: dict[tuple[Text, str], Head] = {}
        self._terms: dict[Regex, Term] = {}
        self._counts: dict[str, int] = {}
        #: (id of a schema, what) for the schema constraints this grammar expresses ("pattern",
        #: "range", "items"): what :func:`codec.export.schema_gaps` does not report.
        self.expressed: set[tuple[int, str]] = set()

    def name(self, hint: str) -> str:
        base = "".join(c if c.isalnum() else "_" for c in hint.lower()).strip("_") or "r"
        if not base[0].isalpha():
            base = "r_" + base
        count = self._counts.get(base, 0)
        self._counts[base] = count + 1
        return base if count == 0 and base != "start" else f"{base}_{count}"

    def rule(self, hint: str, expr: Expr) -> Ref:
        """A new rule named after ``hint``."""
        name = self.name(hint)
        self.rules[name] = expr
        return Ref(name)

    def recursive(self, name: str, build: Callable[[Ref], Expr]) -> Ref:
        """The rule called ``name``, built once by ``build(ref)`` (which may refer to itself)."""
        ref = Ref(name)
        if name not in self.rules:
            self.rules[name] = EMPTY  # placeholder while it is built
            self.rules[name] = build(ref)
        return ref

    def text(
        self, forbid_markers: Sequence[str] = (), forbid: Sequence[Regex] = (), forbid_start: Sequence[str] = ()
    ) -> Text:
        key = (tuple(forbid_markers), tuple(forbid), tuple(forbid_start))
        if key not in self._texts:
            self._texts[key] = Text(self.name("TEXT").upper(), *key)
        return self._texts[key]

    def term(self, hint: str, regex: Regex) -> Term:
        """A lexeme for ``regex``, named after ``hint`` (one per distinct regex)."""
        if regex not in self._terms:
            self._terms[regex] = Term(self.name(hint).upper(), regex)
        return self._terms[regex]

    def head(self, text: Text, end: str) -> Head:
        if (text, end) not in self._heads:
            self._heads[text, end] = Head(self.name(text.name + "_END").upper(), text, end)
        return self._heads[text, end]


# ---------------------------------------------------------------------------- values
