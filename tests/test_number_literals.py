"""Number literals with a leading zero, in every format: a value no JSON or Python reader takes,
which models write (zip codes, ids) and which may also be past what a float holds (``01e999``).

Whatever the digits, parsing never raises but :class:`codec.ParseError` (strict), and a stream in
any chunking gives what the whole parse gives.
"""

from __future__ import annotations

import contextlib

import pytest
from harness import assert_streams_like, call_message, examples, parse_chunked, parse_whole
from hypothesis import given
from hypothesis import strategies as st

import codec

#: The placeholder value a rendered call's number is replaced with.
_PLACEHOLDER = 918273645

#: A number literal as the Python-list grammars' NUMBER reads one, without its sign.
_UNSIGNED = st.from_regex(r"\A[0-9]{1,3}(?:\.[0-9]{0,3})?(?:[eE][+-]?[0-9]{1,4})?\Z")


@st.composite
def zero_led(draw: st.DrawFn) -> str:
    """``0`` and a number literal after it (a sign before both): ``01e999``, ``-00.5e400``, ``07``."""
    return draw(st.sampled_from(["", "-", "+"])) + "0" + draw(_UNSIGNED)


def _reply(fmt: codec.Format, number: str) -> str:
    """A reply of one call whose argument's value is written ``number``, at the top level."""
    text = fmt.render_reply(call_message({"a": _PLACEHOLDER}))
    assert str(_PLACEHOLDER) in text
    return text.replace(str(_PLACEHOLDER), number)


@pytest.mark.parametrize("name", codec.formats())
@given(number=zero_led(), nested=st.booleans(), size=st.integers(1, 7))
@examples(60)
def test_a_leading_zero_never_crashes(name: str, number: str, nested: bool, size: int) -> None:
    fmt = codec.get_format(name)
    text = _reply(fmt, f"[{number}]" if nested else number)
    whole = fmt.parse(text)
    assert_streams_like(parse_whole(fmt, text), whole)
    assert_streams_like(parse_chunked(fmt, text, size), whole)
    with contextlib.suppress(codec.ParseError):
        fmt.parse(text, strict=True)


@pytest.mark.parametrize(
    ("name", "text", "written"),
    [
        ("deepseek_pythonic", "[f(a=01e999)]", "01e999"),
        ("gemma4", "<|tool_call>call:f{a:01e999}<tool_call|>", "01e999"),
        ("gemma3_tool_code", "```tool_code\n[f(a=-00.5e400)]\n```", "-00.5e400"),
    ],
)
def test_a_leading_zero_on_a_number_no_float_holds_reports_both(name: str, text: str, written: str) -> None:
    fmt = codec.get_format(name)
    result = fmt.parse(text)
    assert [(c.function.name, c.function.arguments) for c in result.tool_calls] == [("f", {"a": written})]
    assert [i.kind for i in result.issues] == ["leading_zeros", "number_out_of_range"]
    assert result.intact_calls == []
    with pytest.raises(codec.ParseError, match="leading zeros"):
        fmt.parse(text, strict=True)
