"""The vLLM plugin's registration side, which needs no vLLM: the entry point codec declares, a
module that stays cheap to import (vLLM only inside ``register``), and the names it registers.
The parsers themselves are tested against vLLM's own classes in ``test_vllm.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from harness import chunkings, load_golden

import codec
from codec.integrations import vllm as plugin
from codec.integrations.vllm.handover import harmony_markers, leading_reasoning
from codec.models import ReasoningDelta

ROOT = Path(__file__).resolve().parent.parent


def test_entry_point_and_extra_are_declared() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # no tomllib before Python 3.11
    entry = '[project.entry-points."vllm.general_plugins"]\ncodec = "codec.integrations.vllm:register"\n'
    assert entry in text
    assert '\nvllm = ["vllm>=0.33,<0.34"]\n' in text


def test_importing_codec_and_the_plugin_does_not_import_vllm() -> None:
    code = "import sys, codec, codec.integrations.vllm; print('vllm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_names_are_hyphen_free_and_one_per_format() -> None:
    names = [plugin.parser_name(name) for name in codec.formats()]
    assert all("-" not in name and name.startswith("codec_") for name in names)
    assert len(set(names)) == len(codec.formats())
    classes = [plugin.tool_class_name(name) for name in codec.formats()]
    assert len(set(classes)) == len(classes) and all(c.isidentifier() for c in classes)


def test_reasoning_formats_are_those_whose_replies_read_reasoning() -> None:
    # (a harmony member's reasoning is a message on its reasoning channel, not a block)
    reads_reasoning = {
        name
        for name in codec.formats()
        if codec.get_format(name).syntax().reasoning_open or harmony_markers(codec.get_format(name)) is not None
    }
    assert reads_reasoning == plugin.REASONING_FORMATS


# ---------------------------------------------------------------------------- harmony's handover

HARMONY = [name for name in codec.formats() if harmony_markers(codec.get_format(name)) is not None]
HARMONY_GOLDEN = [(name, case) for name in HARMONY for case in load_golden(name) if not case.xfail]


def calls_of(result: codec.ParseResult) -> list[tuple[str, str]]:
    return [(c.function.name, c.model_dump(mode="json")["function"]["arguments"]) for c in result.tool_calls]


def test_harmony_formats_are_there() -> None:
    assert "gpt_oss" in HARMONY and HARMONY_GOLDEN


@pytest.mark.parametrize(("name", "case"), HARMONY_GOLDEN, ids=[c.id for _, c in HARMONY_GOLDEN])
def test_harmony_leading_reasoning_hands_over_a_rest_read_alike(name: str, case: Any) -> None:
    # What vLLM's reasoning parser reports and the raw text its tool parser reads (no prompt) give
    # the whole reply's reasoning, content and calls.
    fmt = codec.get_format(name)
    whole = fmt.parse(case.text, tools=case.tools, prompt=case.prompt)
    split = leading_reasoning(fmt, case.text, prompt=case.prompt)
    if split is None:
        rest_text, reasoning = case.text, ""
    else:
        rest_text, reasoning = case.text[split.rest :], split.reasoning
        assert fmt.parse(case.text[: split.end], prompt=case.prompt).content == ""
    rest = fmt.parse(rest_text, tools=case.tools, prompt="")
    assert reasoning + rest.reasoning == whole.reasoning
    assert (rest.content, calls_of(rest)) == (whole.content, calls_of(whole))
    opens_with_reasoning = fmt.parse(case.text[:40], prompt=case.prompt).reasoning
    assert (split is not None) == bool(opens_with_reasoning)


def handed_over(fmt: codec.Format, chunks: list[str], tools: Any, prompt: str | None) -> tuple[str, codec.ParseResult]:
    """The reasoning a reasoning parser streams (the leading reasoning events, until the first other
    one) and what its tool parser reads of the rest, handed over there as the raw text after the
    split (or, for a reply that leaves reasoning only at its end, all the stream read)."""
    stream, raw, sent = fmt.stream(prompt=prompt), "", ""
    for at, chunk in enumerate(chunks):
        raw += chunk
        events = stream.feed(chunk)
        leading = next((i for i, e in enumerate(events) if not isinstance(e, ReasoningDelta)), None)
        sent += "".join(e.text for e in events[:leading] if isinstance(e, ReasoningDelta))
        if leading is None:
            continue
        split = leading_reasoning(fmt, raw, prompt=prompt)
        start = split.rest if split is not None else 0
        whole = split.reasoning if split is not None else ""
        assert whole.startswith(sent), "the reasoning streamed is the split's"
        rest = fmt.stream(tools=tools, prompt="")
        for piece in [raw[start:], *chunks[at + 1 :]]:
            rest.feed(piece)
        rest.close()
        return whole, rest.result
    # Still in reasoning at the end: the reasoning parser gives all the stream read.
    stream.close()
    return "", stream.result


@pytest.mark.parametrize(("name", "case"), HARMONY_GOLDEN, ids=[c.id for _, c in HARMONY_GOLDEN])
def test_harmony_handover_streamed_like_parse(name: str, case: Any) -> None:
    fmt = codec.get_format(name)
    whole = fmt.parse(case.text, tools=case.tools, prompt=case.prompt)
    for chunks in [list(case.text), *chunkings(case.text, case.id, count=4)]:
        reasoning, rest = handed_over(fmt, chunks, case.tools, case.prompt)
        assert reasoning + rest.reasoning == whole.reasoning
        assert (rest.content, calls_of(rest)) == (whole.content, calls_of(whole))


@pytest.mark.parametrize(
    ("text", "skipped"),
    [
        ("analysisThe user greets.assistantfinalHello!", "assistantfinal"),
        # (a small letter after the channel's name: read alone, "finalhello" would be a word of prose)
        ("analysisThe user greets.assistantfinalhello there!", "assistantfinal"),
        ("<|channel|>analysis<|message|>Greets.<|end|><|start|>assistant<|channel|>final<|message|>hello", None),
        ("<|channel|>analysis<|message|>Greets.<|end|><|channel|>final<|message|>hello<|return|>", None),
    ],
)
def test_harmony_final_answer_is_handed_over_as_its_text(text: str, skipped: str | None) -> None:
    # The answer's header is left out: the rest is content as it stands, read alone or sent on.
    fmt = codec.get_format("gpt_oss")
    whole = fmt.parse(text)
    split = leading_reasoning(fmt, text)
    assert split is not None and split.reasoning == whole.reasoning
    assert text[split.rest :].removesuffix("<|return|>") == whole.content
    if skipped is not None:
        assert text[split.end : split.rest] == skipped
    assert fmt.parse(text[split.rest :], prompt="").content == whole.content


def test_harmony_reasoning_after_a_preamble_is_the_tool_parsers() -> None:
    fmt = codec.get_format("gpt_oss")
    text = (
        "<|channel|>commentary<|message|>Checking.<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>Think.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Done.<|return|>"
    )
    assert leading_reasoning(fmt, text) is None
    assert fmt.parse(text).reasoning == "Think."


def test_leading_reasoning_is_for_harmony_members() -> None:
    with pytest.raises(ValueError, match="harmony"):
        leading_reasoning(codec.get_format("hermes"), "<think>x</think>")
