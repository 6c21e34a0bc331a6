"""Every registered format has every piece the tests need: each missing piece fails a test named
after it, with a message saying what to add.

Adding a format takes, on the product side, its module, its grammar and its line in the registry
(``codec/formats/__init__.py``); on the test side, what is checked here.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from formats import Decode, RoundTrip, missing_profile, profile
from harness import GOLDEN_DIR, load_golden

import codec
from codec import wire

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_RENDERS = Path(__file__).resolve().parent / "golden_renders"
#: Golden renders each format needs at least (``tests/golden_renders/make.py`` writes them all).
MIN_GOLDEN_RENDERS = 8
FORMATS = codec.formats()


@pytest.mark.parametrize("name", FORMATS)
def test_has_a_profile(name: str) -> None:
    problem = missing_profile(name)
    assert problem is None, problem


@pytest.mark.parametrize("name", FORMATS)
def test_has_golden_replies(name: str) -> None:
    folder = GOLDEN_DIR / name
    assert folder.is_dir(), f"add golden replies: tests/golden/{name}/<case>.txt and <case>.json"
    assert load_golden(name), f"tests/golden/{name}/ holds no case: add <case>.txt and <case>.json"


@pytest.mark.parametrize("name", FORMATS)
def test_has_golden_renders(name: str) -> None:
    count = len(list((GOLDEN_RENDERS / name).glob("*.json")))
    assert count >= MIN_GOLDEN_RENDERS, (
        f"tests/golden_renders/{name}/ holds {count} cases: run python tests/golden_renders/make.py {name}"
    )


@pytest.mark.parametrize("name", FORMATS)
def test_has_a_readme_row(name: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    formats_table = readme[readme.index("## Formats") :]
    assert re.search(rf"^\| `{name}` \|", formats_table, flags=re.MULTILINE), (
        f"add a row for `{name}` to the table of README.md's Formats section"
    )


@pytest.mark.parametrize("name", FORMATS)
def test_has_an_export_entry(name: str) -> None:
    """What the constrained-decoding tests (``test_export.py``) need beyond the format's call syntax."""
    assert isinstance(profile(name).grammar_forbid, tuple), (
        f"set grammar_forbid in tests/formats/{name}.py: the regexes its grammar keeps out of string values"
    )


@pytest.mark.parametrize("name", FORMATS)
def test_has_a_round_trip_strategy(name: str) -> None:
    """What ``test_round_trip.py`` draws: which messages the format carries, and what parsing gives back."""
    assert isinstance(profile(name).round_trip, RoundTrip), (
        f"set round_trip in tests/formats/{name}.py: RoundTrip(messages=..., expected=..., keeps_key_order=...)"
    )


@pytest.mark.parametrize("name", FORMATS)
def test_has_a_decode_normal_form(name: str) -> None:
    """What ``test_decode.py`` compares decoded renderings with: the conversation less what the template drops."""
    assert isinstance(profile(name).decode, Decode), (
        f"set decode in tests/formats/{name}.py: Decode(normal_form=...), what decode(render(case)) gives back"
    )


#: The sections of a format module, in order (their ``# ---...--- name`` lines; a section may have
#: parts, ``render: values``...): the prompt's renderer, the reply renderer where the template's
#: assistant turn is the format's own, the prompt's decoder, the reply syntax (a wire spec), the class.
SECTIONS = ("markers", "render", "reply", "decode", "wire", "format")
OPTIONAL = {"reply"}


@pytest.mark.parametrize("name", FORMATS)
def test_has_the_module_shape(name: str) -> None:
    """The module defines the functions the Format class lists, in its sections, in order, with
    its wire spec, and the Format class last."""
    fmt = codec.get_format(name)
    module = sys.modules[type(fmt).__module__]
    for function in ("prompt_text", "prompt_conversation", "reply_text"):
        own = getattr(fmt.functions, function)
        if own is None:
            continue
        assert own is getattr(module, function, None), (
            f"{module.__name__} must define {function}() and list it in {type(fmt).__name__}.functions"
        )
    assert isinstance(fmt.wire, wire.WireSpec) and fmt.wire.family in wire.FAMILIES
    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    found = [m[1] for m in re.finditer(r"^# -{20,} (\w+)", source, re.MULTILINE)]
    sections = [section for i, section in enumerate(found) if i == 0 or found[i - 1] != section]  # parts as one
    expected = [s for s in SECTIONS if s not in OPTIONAL or s in sections]
    assert sections == expected, f"{module.__name__}: sections {sections}, expected {expected}"
    last = re.findall(r"^class (\w+)", source, re.MULTILINE)[-1]
    assert last == type(fmt).__name__, f"{module.__name__}: the Format class comes last, not {last}"


def test_pythonic_is_llama4_pythonic() -> None:
    """vLLM's ``pythonic`` parser is Llama 3.2/4's format: the name resolves to ``llama4_pythonic``."""
    assert codec.get_format("pythonic") is codec.get_format("llama4_pythonic")


@pytest.mark.parametrize("name", ["deepseek"])
def test_an_alias_that_was_not_true_is_refused_with_what_to_use(name: str) -> None:
    """An alias must be true of the prompts too: these named formats whose templates are not
    those models' own, and now say so."""
    with pytest.raises(codec.UnknownFormat, match="is not an alias any more") as info:
        codec.get_format(name)
    assert "deepseek_pythonic" in str(info.value)


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("qwen2_5", "qwen2_5"),
        ("qwen25", "qwen2_5"),
        ("Qwen2.5", "qwen2_5"),
        ("qwen2.5-coder", "qwen2_5"),
        ("QwQ-32B", "qwq"),
    ],
)
def test_qwen2_5_names_are_formats_of_their_own_prompts(name: str, canonical: str) -> None:
    """Qwen2.5's names, once refused (hermes' prompts were not Qwen2.5's), name its own template's format."""
    assert codec.get_format(name).name == canonical


@pytest.mark.parametrize("name", codec.formats())
def test_call_ids_come_from_the_given_function_whole_and_streamed(name: str) -> None:
    fmt = codec.get_format(name)
    calls = [{"function": {"name": "f", "arguments": {"a": 1}}}] * 2
    message = {"role": "assistant", "content": "", "tool_calls": calls}
    reply = fmt.render_reply(message)
    ids = lambda index: f"chatcmpl-tool-{index:04d}"  # noqa: E731
    # Where the reply writes its calls' ids, those are the calls' ids.
    written = fmt.reply_ids(
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}] * 2}
    )
    wanted = written if written is not None else ["chatcmpl-tool-0000", "chatcmpl-tool-0001"]
    assert [c.id for c in fmt.parse(reply, call_id=ids).tool_calls] == wanted
    stream = fmt.stream(call_id=ids)
    stream.feed(reply)
    stream.close()
    assert stream.result == fmt.parse(reply, call_id=ids)


@pytest.mark.parametrize("bad", ["not a list", {"role": "user", "content": "Hi"}, b"x"])
def test_messages_or_tools_that_are_no_list_are_a_render_error(bad: object) -> None:
    fmt = codec.get_format("hermes")
    with pytest.raises(codec.RenderError, match="messages must be a list"):
        fmt.render(bad)  # type: ignore[arg-type]
    with pytest.raises(codec.RenderError, match="tools must be a list"):
        fmt.render([{"role": "user", "content": "Hi"}], bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", FORMATS)
def test_every_alias_resolves_in_either_spelling(name: str) -> None:
    """``-`` and ``_`` are one character to get_format: an alias written with ``-`` resolves too,
    not only where its ``_`` spelling is listed as well (``gemma-4-31b`` did not)."""
    for alias in codec.get_format(name).aliases:
        for spelling in (alias, alias.replace("-", "_"), alias.replace("_", "-"), alias.upper()):
            assert codec.get_format(spelling).name == name, spelling
