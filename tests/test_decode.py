"""Decoding prompts back into conversations: the contract every format shares, and what each gives back.

Every rendering decodes and renders back to the same text; ``decode(render(case))`` is the case less
what the format's template drops or writes alike, its *normal form*, which the format's profile
computes (``Decode.normal_form`` in ``tests/formats/<name>.py``), on generated conversations and on
the golden renders. Per-format tests (readings of ambiguous text, where errors point) live in
``tests/test_<format>_decode.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from formats import PROFILES, Decode, profile, variant_params
from harness import assert_renders_back, examples, rendered
from hypothesis import assume, given
from hypothesis import strategies as st
from strategies import conversations, rich_conversations

import codec

FORMATS = [codec.get_format(name) for name in codec.formats()]
CASES = st.one_of(conversations(), conversations(content_parts=True), rich_conversations())
GOLDEN_RENDERS = Path(__file__).resolve().parent / "golden_renders"


def decode_of(name: str, variant: str) -> tuple[codec.Format, Decode]:
    found = profile(name)
    spec = found.decode_variants[variant] if variant else found.decode
    return spec.fmt or codec.get_format(name), spec


def dumped(conversation: codec.Conversation, spec: Decode) -> dict[str, Any]:
    """A decoded conversation as plain data, in the profile's :attr:`Decode.dump_mode`."""
    return {"tools": None, **conversation.model_dump(mode=spec.dump_mode)}


@pytest.mark.parametrize(("name", "variant"), variant_params("decode"))
@examples(400)
@given(case=CASES)
def test_decode_gives_back_the_normal_form(name: str, variant: str, case: dict[str, Any]) -> None:
    fmt, spec = decode_of(name, variant)
    text = rendered(fmt, case)
    assume(text is not None)
    assert text is not None
    expected = spec.normal_form(case, text)
    assume(expected is not None)
    assert dumped(assert_renders_back(fmt, text), spec) == expected


def _golden_renders() -> list[Any]:
    """Each golden render, marked xfail (strict) where its format's profile names it a known failure
    (``test_xfail["golden_render_decodes_to_its_normal_form/<case>"]``)."""
    params = []
    for name in codec.formats():
        known = profile(name).test_xfail if name in PROFILES else {}
        for path in sorted((GOLDEN_RENDERS / name).glob("*.txt")):
            reason = known.get(f"golden_render_decodes_to_its_normal_form/{path.stem}")
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(name, path, id=f"{name}/{path.stem}", marks=marks))
    return params


@pytest.mark.parametrize(("name", "path"), _golden_renders())
def test_golden_render_decodes_to_its_normal_form(name: str, path: Path) -> None:
    fmt, spec = decode_of(name, "")
    case = {"variables": {}, **json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))}
    text = path.read_text(encoding="utf-8")
    conversation = assert_renders_back(fmt, text)
    expected = spec.normal_form(case, text)
    if expected is not None:
        assert dumped(conversation, spec) == expected


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@examples(300)
@given(case=CASES)
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


def _siblings() -> list[tuple[str, str]]:
    """Pairs of formats with the same replies (a prompt variant and the format it varies)."""
    names = codec.formats()
    syntax = {name: codec.get_format(name).syntax() for name in names}
    return [(a, b) for a in names for b in names if a != b and syntax[a] is syntax[b]]


@pytest.mark.parametrize(("source", "reader"), _siblings())
def test_a_siblings_prompt_with_tools_is_never_read_without_them(source: str, reader: str) -> None:
    """A prompt written by a format with the same replies: the reader returns its tools, or raises
    ParseError; one that names the writer where the reader alone would have read no tools."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "A city."}},
                    "required": ["city"],
                },
            },
        }
    ]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    prompt = codec.get_format(source).render(messages, tools, add_generation_prompt=True)
    try:
        conversation = codec.get_format(reader).decode(prompt)
    except codec.ParseError as exc:
        if "reads as a" in str(exc):
            # The writer, or a format that writes this very prompt too (Qwen2.5's and Qwen3's
            # templates write the same prompt for a system message and tools).
            named = re.search(r"decode it with '(\w+)'", str(exc))
            assert named is not None, str(exc)
            writes_it = codec.get_format(named[1]).render(messages, tools, add_generation_prompt=True) == prompt
            assert named[1] == source or writes_it, str(exc)
        return
    assert conversation.tools
