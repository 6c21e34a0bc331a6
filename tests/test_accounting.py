"""Nothing silently lost: every word of a reply that is not markup is somewhere in the result.

A reply's words (runs of letters and digits) are each found in the content, the reasoning, a
call (its name, an argument's key or value) or an issue's text, unless the format's markup
spells them (``tool_call``, ``parameter``, ``name``, ``arguments``...). Checked on every golden
reply and on damaged versions of them (a slice cut out, a slice repeated, a marker dropped in at
random), whole and in chunks. Words, not characters: a repair may normalise punctuation and
quotes, but a word the model wrote that is nowhere in the result was lost.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest
from harness import examples, golden_formats, load_golden, parse_chunked
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec.issues import KINDS
from codec.models import ParseResult

_WORD = re.compile(r"[A-Za-z0-9]+")


@cache
def _markup(name: str) -> frozenset[str]:
    """The words the format's markup spells: those of its grammar's fixed strings and patterns."""
    grammar = codec.get_format(name).syntax().grammar
    words: set[str] = set()
    for terminal in grammar.terminals.values():
        words.update(_WORD.findall(terminal.pattern.value))
    # Call-object keys and literal words a format reads as values or wrappers.
    words.update({"name", "arguments", "parameters", "function", "true", "false", "null", "None", "True", "False"})
    words.update({"json", "xml", "JSON", "tool", "tools", "response", "call", "print"})
    return frozenset(words)


def _values(value: Any) -> list[str]:
    """The text of a JSON value's keys and scalars."""
    if isinstance(value, dict):
        return [piece for key, item in value.items() for piece in (str(key), *_values(item))]
    if isinstance(value, list):
        return [piece for item in value for piece in _values(item)]
    return [repr(value) if isinstance(value, float) else str(value)]


def _kept(result: ParseResult) -> tuple[set[str], str]:
    """The words of the result, and its text (where words the markup separated run together)."""
    pieces = [result.content, result.reasoning]
    for call in result.tool_calls:
        pieces.extend((call.id, call.function.name))  # (a reply may write the id, which the call keeps)
        pieces.extend(_values(call.function.arguments))
    pieces.extend(issue.text or "" for issue in result.issues)
    return {word for piece in pieces for word in _WORD.findall(piece)}, "\0".join(pieces)


#: What an escape a string may be written with leaves of a word after its backslash.
_ESCAPED = re.compile(r"(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[ntrbfv0])(.*)", re.DOTALL)


def lost_words(name: str, reply: str, result: ParseResult) -> list[str]:
    """The words of ``reply`` neither markup nor anywhere in ``result``. A word starting with a
    digit is a number, which a format may write back normalised (``1.5E3``), and is not checked;
    literals (``true``, ``None``...) count in any case; a word right after a backslash is checked
    without the escape's letters; a word may also be two such words run together (markup removed
    between them, or arguments written with no separator)."""
    (kept, text), markup = _kept(result), _markup(name)
    literals = {"true", "false", "null", "none"}

    def accounted(word: str) -> bool:
        return word in kept or word in markup or word[0].isdigit() or word.lower() in literals or word in text

    lost = []
    for found in _WORD.finditer(reply):
        word = found.group()
        if accounted(word) or any(accounted(word[:k]) and accounted(word[k:]) for k in range(1, len(word))):
            continue
        if found.start() and reply[found.start() - 1] == "\\":
            rest = _ESCAPED.fullmatch(word)
            if rest is not None and (not rest.group(1) or accounted(rest.group(1))):
                continue
        lost.append(word)
    return lost


def _cases() -> list[Any]:
    return [
        pytest.param(case, id=f"{case.format}/{case.name}") for name in golden_formats() for case in load_golden(name)
    ]


_CASES = _cases()


@pytest.mark.parametrize("case", _CASES)
def test_no_word_of_a_golden_reply_is_lost(case: Any) -> None:
    result = codec.get_format(case.format).parse(case.text, tools=case.tools, prompt=case.prompt)
    assert lost_words(case.format, case.text, result) == []


@cache
def _markers(name: str) -> list[str]:
    grammar = codec.get_format(name).syntax().grammar
    found = [t.pattern.value for t in grammar.terminals.values() if t.pattern.type == "str" and t.pattern.value.strip()]
    return sorted(found) or ["<"]


@examples(300)
@given(data=st.data())
@pytest.mark.parametrize("name", golden_formats())
def test_no_word_of_a_damaged_reply_is_lost(name: str, data: st.DataObject) -> None:
    cases = [case for case in load_golden(name)]
    case = data.draw(st.sampled_from(cases), label="case")
    text = case.text
    n = len(text)
    i = data.draw(st.integers(0, n), label="i")
    j = data.draw(st.integers(i, min(n, i + 40)), label="j")
    how = data.draw(st.sampled_from(["cut out", "repeat", "marker", "truncate"]), label="how")
    if how == "cut out":
        reply = text[:i] + text[j:]
    elif how == "repeat":
        reply = text[:j] + text[i:j] + text[j:]
    elif how == "marker":
        reply = text[:i] + data.draw(st.sampled_from(_markers(name)), label="marker") + text[i:]
    else:
        reply = text[:i]
    fmt = codec.get_format(name)
    result = fmt.parse(reply, tools=case.tools, prompt=case.prompt)
    assert lost_words(name, reply, result) == [], reply
    for issue in result.issues:  # each names a call it may concern, or none
        assert issue.call_index is None or 0 <= issue.call_index < len(result.tool_calls)
        assert KINDS[issue.kind].scope == "call" or issue.call_index is None
    size = data.draw(st.integers(1, 9), label="size")
    assert parse_chunked(fmt, reply, size, tools=case.tools, prompt=case.prompt).result == result
