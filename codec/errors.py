"""The exceptions codec raises (every one derives from :class:`CodecError`), and its warnings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class CodecError(Exception):
    """Base class of every error codec raises on purpose."""


class UnknownFormat(CodecError, LookupError):
    """A format name (or alias) that is not registered."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.known = sorted(known)
        super().__init__(f"unknown format {name!r}; known formats: {', '.join(self.known)}")

    def __str__(self) -> str:  # LookupError would repr() the message otherwise
        return str(self.args[0])


class RenderError(CodecError):
    """A conversation the format's reference template refuses to render (same reason as the template).

    ``reason`` is the template's own message; where codec knows what causes it (a null content the
    template reads as text, no tools where the template needs a list), ``hint`` says what to do,
    and the error's text is ``"<reason> (<hint>)"``.
    """

    def __init__(self, reason: str, hint: str = "") -> None:
        self.reason = reason
        self.hint = hint
        super().__init__(f"{reason} ({hint})" if hint else reason)

    def __reduce__(self) -> tuple[Any, ...]:  # (kept whole across processes: codec convert --jobs)
        return type(self), (self.reason, self.hint)


class ToolError(CodecError, ValueError):
    """A tool definition in none of the shapes codec reads, or with a field of the wrong type; the
    message names the tool's index (``tools[i]``) and what is wrong (see :mod:`codec.tools`)."""


class ParseError(CodecError, ValueError):
    """A reply that does not follow the format, raised by strict parsing.

    ``pos`` is the 0-based offset in the whole reply, ``line``/``column`` are 1-based, ``expected``
    names what would have been accepted there (the grammar's terminals; the message says it in
    words, ``described``, where the parser gives them: see :func:`expected_words`) and ``snippet``
    shows the line with a caret.
    """

    def __init__(
        self,
        message: str,
        *,
        pos: int,
        line: int,
        column: int,
        expected: Iterable[str] = (),
        snippet: str = "",
        kind: str = "syntax",
        described: Iterable[str] | None = None,
    ) -> None:
        self.message = message
        self.pos = pos
        self.line = line
        self.column = column
        self.expected = sorted(expected)
        self.snippet = snippet
        self.kind = kind
        text = f"{message} at line {line}, column {column} (offset {pos})"
        words = list(described) if described is not None else self.expected
        if words:
            text += f"; expected {words[0]}" if len(words) == 1 else f"; expected one of: {', '.join(words)}"
        if snippet:
            text += "\n" + snippet
        super().__init__(text)


#: Terminals of the wire grammars that no literal spells, in words.
_WORDS = {
    **dict.fromkeys(
        ("STRING", "JSTRING", "DQ_STRING", "SQ_STRING", "SSTRING", "GSTRING", "ARG_STRING", "ESC_STRING"), "a string"
    ),
    **dict.fromkeys(("MIXED_STRING", "RAW_STRING"), "a string"),
    "NUMBER": "a number",
    "TRUE": "true",
    "FALSE": "false",
    "NULL": "null",
    "JSON_CONTAINER": "an object or a list",
    "NAME": "a name",
    "BAREWORD": "a name",
    "CALL_OPEN": "a tool call",
    "RAW_FIRST": "an unquoted value",
    "WS": "whitespace",
}
#: What a place that takes any value expects, said as "a value".
_VALUE = frozenset(
    {"a string", "a number", "true", "false", "null", "'{'", "'['", "an object or a list"}
    | {repr(word) for word in ("true", "false", "null", "True", "False", "None")}
)


def expected_words(names: Iterable[str], literals: Mapping[str, str]) -> list[str]:
    """What the terminals ``names`` stand for, in words for an error message: a terminal that is a
    literal (``literals``: the literal of each such terminal) as that text quoted (``'{'``), the
    others as what they read (``a string``), any value as ``a value``; the end as ``the end``."""
    words: list[str] = []
    for name in names:
        if name == "$END":
            word = "the end of the reply"
        elif name in literals:
            word = repr(literals[name])
        else:
            word = _WORDS.get(name.split(".")[0]) or name.lower().replace("_", " ")
        if word not in words:
            words.append(word)
    if {"a string", "a number"} <= set(words):
        words = ["a value", *(word for word in words if word not in _VALUE)]
    return words


def parse_error_at(
    text: str, pos: int, message: str, *, expected: Iterable[str] = (), kind: str = "syntax"
) -> ParseError:
    """A :class:`ParseError` at offset ``pos`` of ``text``, with its line, column and snippet."""
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return ParseError(
        message, pos=pos, line=line, column=column, expected=expected, snippet=caret_snippet(text, pos), kind=kind
    )


def caret_snippet(text: str, index: int, width: int = 60) -> str:
    """The line of ``text`` around ``index`` with a caret under it (long lines are cut to ``width``)."""
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    if end < 0:
        end = len(text)
    lo = max(start, index - width // 2)
    hi = min(end, lo + width)
    line = text[lo:hi]
    shown = line.encode("unicode_escape").decode("ascii")
    caret_at = len(text[lo:index].encode("unicode_escape").decode("ascii"))
    return shown + "\n" + " " * caret_at + "^"


class GrammarWarning(UserWarning):
    """A grammar allows more than the tools' schemas: the keywords it leaves out, and where."""


class RenderWarning(UserWarning):
    """A prompt rendered without text the conversation gives: the template left a message's
    content out (content parts a template reads only as a string, a role it skips...). The
    prompt is still the template's, byte for byte; the warning names the message."""
