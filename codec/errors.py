"""The exceptions codec raises (every one derives from :class:`CodecError`), and its warnings."""

from __future__ import annotations

from collections.abc import Iterable


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
    """A conversation the format's reference template refuses to render (same reason as the template)."""


class ParseError(CodecError, ValueError):
    """A reply that does not follow the format, raised by strict parsing.

    ``pos`` is the 0-based offset in the whole reply, ``line``/``column`` are 1-based, ``expected``
    names what would have been accepted there and ``snippet`` shows the line with a caret.
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
    ) -> None:
        self.message = message
        self.pos = pos
        self.line = line
        self.column = column
        self.expected = sorted(expected)
        self.snippet = snippet
        self.kind = kind
        text = f"{message} at line {line}, column {column} (offset {pos})"
        if self.expected:
            text += f"; expected one of: {', '.join(self.expected)}"
        if snippet:
            text += "\n" + snippet
        super().__init__(text)


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
