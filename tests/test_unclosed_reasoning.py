"""A call opened inside reasoning ends it, in the json_object and xml_params families.

A model that forgets its ``</think>`` (or answers a prompt that opened the block) and writes a call
still makes the call: the call opener ends the reasoning, the text before it is the reasoning, and
the repair is reported as ``unclosed_reasoning``, whether the reply or the prompt opened the block
and however the reply is chunked. Prose that names the tag stays reasoning, and reasoning the reply
merely ends inside is still a ``missing_closer`` at the end.
"""

from __future__ import annotations

import pytest
from harness import assert_consistent, examples, parse_chunked
from hypothesis import given
from hypothesis import strategies as st

import codec

#: A call as each format's template writes it.
CALLS = {
    "hermes": '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>',
    "qwen3": '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>',
    "qwen3_coder": (
        "<tool_call>\n<function=read_file>\n<parameter=path>\na.txt\n</parameter>\n</function>\n</tool_call>"
    ),
}
#: A generation prompt that opens a think block (the reply then starts inside it).
OPENED = "<|im_start|>user\nRead a.txt<|im_end|>\n<|im_start|>assistant\n<think>\n"
#: What the reasoning must not hold for the property to know where it ends.
MARKERS = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>", "<function=")


def _kinds(result: codec.ParseResult) -> list[str]:
    return [issue.kind for issue in result.issues]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_call_after_an_unclosed_think_is_a_call(name: str) -> None:
    fmt = codec.get_format(name)
    call = CALLS[name]
    expected = fmt.parse(call).tool_calls
    for reply, prompt in (
        ("<think>I need to read the file.\n\n" + call, None),
        ("<think>\nI need to read the file.\n\n" + call + "<|im_end|>", None),
        ("I need to read the file.\n\n" + call, OPENED),
    ):
        result = fmt.parse(reply, prompt=prompt)
        assert (result.reasoning, result.content, result.tool_calls) == ("I need to read the file.", "", expected)
        assert [(i.kind, i.severity, i.call_index) for i in result.issues] == [("unclosed_reasoning", "repaired", None)]
        assert result.issues[0].pos == reply.index("<tool_call>")


@pytest.mark.parametrize("name", sorted(CALLS))
def test_prose_naming_the_tag_stays_reasoning(name: str) -> None:
    fmt = codec.get_format(name)
    result = fmt.parse("<think>\nI write a <tool_call> tag.\n</think>\n\nDone.")
    assert (result.reasoning, result.content, result.tool_calls, result.issues) == (
        "I write a <tool_call> tag.",
        "Done.",
        [],
        [],
    )


@pytest.mark.parametrize("name", sorted(CALLS))
def test_reasoning_cut_short_is_still_a_missing_closer(name: str) -> None:
    result = codec.get_format(name).parse("<think>\nI need to read")
    assert (result.reasoning, _kinds(result)) == ("I need to read", ["missing_closer"])


_THOUGHT = st.text(st.sampled_from("ab .<>/=|\n"), min_size=1, max_size=40).filter(
    lambda text: text == text.strip() and text != "" and not any(marker in text for marker in MARKERS)
)


@examples(300)
@given(
    name=st.sampled_from(sorted(CALLS)),
    thought=_THOUGHT,
    gap=st.sampled_from(["", "\n", "\n\n", "\n\n\n\n"]),
    opened_by_prompt=st.booleans(),
    size=st.integers(1, 9),
)
def test_the_call_opener_ends_any_reasoning(
    name: str, thought: str, gap: str, opened_by_prompt: bool, size: int
) -> None:
    fmt = codec.get_format(name)
    call = CALLS[name]
    reply = thought + gap + call if opened_by_prompt else "<think>\n" + thought + gap + call
    prompt = OPENED if opened_by_prompt else None
    result = fmt.parse(reply, prompt=prompt)
    assert (result.reasoning, result.content) == (thought, "")
    assert result.tool_calls == fmt.parse(call).tool_calls
    assert _kinds(result) == ["unclosed_reasoning"]
    assert_consistent(fmt, reply, parse_chunked(fmt, reply, size, prompt=prompt), prompt=prompt)
