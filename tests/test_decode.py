"""Decoding prompts back into conversations: the contract every format shares.

Per-format tests (what each template drops, so what ``decode(render(c))`` can give back) live in
``tests/test_<format>_decode.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import assert_renders_back, examples, rendered
from hypothesis import given
from hypothesis import strategies as st
from strategies import conversations, rich_conversations

import codec

FORMATS = [codec.get_format(name) for name in codec.formats()]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@examples(300)
@given(case=st.one_of(conversations(), conversations(content_parts=True), rich_conversations()))
def test_every_rendering_decodes_and_renders_back(fmt: codec.Format, case: dict[str, Any]) -> None:
    text = rendered(fmt, case)
    if text is not None:
        assert_renders_back(fmt, text)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("text", ["", "hello", "<|im_start|>", "\x00", "[f(a=1)]", "<tool_call>"])
def test_text_that_is_no_rendering_raises_parse_error(fmt: codec.Format, text: str) -> None:
    try:
        conversation = fmt.decode(text)
    except codec.ParseError as exc:
        assert 0 <= exc.pos <= len(text)
    else:  # some formats render an empty conversation to one of these texts: then it must render back
        assert_renders_back(fmt, text)
        assert conversation.messages is not None


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@examples(60)
@given(case=conversations(), cut=st.integers(1, 40), junk=st.sampled_from(["\x00", "<<", "}", "X"]))
def test_damaged_rendering_raises_at_the_damage(fmt: codec.Format, case: dict[str, Any], cut: int, junk: str) -> None:
    text = rendered(fmt, case)
    if text is None or len(text) < cut:
        return
    pos = len(text) - cut
    damaged = text[:pos] + junk + text[pos:]
    try:
        fmt.decode(damaged)
    except codec.ParseError as exc:
        assert exc.pos <= len(damaged)
        assert exc.line >= 1 and exc.column >= 1
    else:  # the junk happened to land where free text is allowed: still an exact rendering
        assert_renders_back(fmt, damaged)


#: Formats whose every prefix of a rendering either is a rendering itself or fails exactly at its end.
#: (gemma4 and the Python-list formats report where the reading that got farthest stopped, which for some
#: cuts lies a little before the end: their texts may close at several places.)
CUT_FAILS_AT_END = [fmt for fmt in FORMATS if fmt.name in ("hermes", "qwen3_coder")]


@pytest.mark.parametrize("fmt", CUT_FAILS_AT_END, ids=lambda f: f.name)
@examples(100)
@given(case=conversations(), data=st.data())
def test_a_cut_prompt_renders_back_or_fails_at_its_end(
    fmt: codec.Format, case: dict[str, Any], data: st.DataObject
) -> None:
    text = rendered(fmt, case)
    if not text:
        return
    cut = text[: data.draw(st.integers(0, len(text) - 1))]
    try:
        assert_renders_back(fmt, cut)
    except codec.ParseError as exc:
        assert exc.pos == len(cut)


def test_decode_refuses_bytes() -> None:
    with pytest.raises(TypeError, match="str"):
        FORMATS[0].decode(b"<|im_start|>user\nhi<|im_end|>\n")  # type: ignore[arg-type]
