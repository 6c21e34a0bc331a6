"""What is particular to ``seed_oss`` (S1-S6 of its module): render parity with the template's own variables
(``thinking_budget``, ``use_json_tooldef``), calls sent while the reply streams, and detection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec import testing
from codec.models import ToolCallDelta, ToolCallEnd, ToolCallStart

FMT = codec.get_format("seed_oss")
FIXTURE = Path(__file__).resolve().parents[1].parent / "shared" / "templates" / "families" / "seed_oss"
TEMPLATE = FIXTURE / "ByteDance-Seed-OSS.jinja"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string"}, "note": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["location"],
        },
    },
}
REPLY = (
    "<seed:think>The user wants Barcelona.<seed:cot_budget_reflect>I have used 12 tokens, and there are 500 "
    "tokens remaining for use.</seed:cot_budget_reflect></seed:think>\n<seed:tool_call>\n<function=get_weather>\n"
    "<parameter=location>Barcelona, Spain</parameter>\n<parameter=note>"
    + "Sunny or not, tell me. "
    * 20
    + "</parameter>\n<parameter=days>2</parameter>\n</function>\n"
    "</seed:tool_call><seed:eos>"
)


def _fixture() -> str:
    if not TEMPLATE.is_file():
        pytest.skip(f"{TEMPLATE} is not available (../shared is absent)")
    return TEMPLATE.read_text(encoding="utf-8")


_VARIABLES = st.sampled_from(
    [{}, {"thinking_budget": 0}, {"thinking_budget": 512}, {"thinking_budget": 20000}, {"use_json_tooldef": True}]
)


@examples(60)
@given(case=testing.conversations(), variables=_VARIABLES)
def test_renders_as_its_template_with_budgets_and_json_tools(case: dict[str, Any], variables: dict[str, Any]) -> None:
    testing.assert_renders_like(_fixture(), FMT, {**case, "variables": {**case.get("variables", {}), **variables}})


@pytest.mark.parametrize("size", [1, 3, 7])
def test_calls_stream_before_the_reply_ends(size: int) -> None:
    """vLLM issue #26573: Seed-OSS gave no calls while streaming. Here the call starts once its name has
    arrived and its arguments stream while the call is still arriving."""
    stream = FMT.stream(tools=[WEATHER])
    seen: list[tuple[int, type]] = []
    for at in range(0, len(REPLY), size):
        seen += [(at, type(event)) for event in stream.feed(REPLY[at : at + size])]
    seen += [(len(REPLY), type(event)) for event in stream.close()]
    start = next(at for at, kind in seen if kind is ToolCallStart)
    note = REPLY.index("<parameter=note>")
    assert start < REPLY.index("</parameter>", note)
    assert len([kind for at, kind in seen if kind is ToolCallDelta and at < REPLY.index("</parameter>", note)]) > 2
    assert [kind for _, kind in seen].count(ToolCallEnd) == 1
    result = stream.result
    assert result == FMT.parse(REPLY, tools=[WEATHER])
    assert result.reasoning.endswith("</seed:cot_budget_reflect>")
    assert [(c.function.name, c.function.arguments) for c in result.tool_calls] == [
        ("get_weather", {"location": "Barcelona, Spain", "note": "Sunny or not, tell me. " * 20, "days": 2})
    ]


def test_the_template_is_detected() -> None:
    assert codec.detect(_fixture()) == "seed_oss"
    assert codec.detect_reply(REPLY)[0].format == "seed_oss"


def test_decode_reads_the_budget_and_the_python_tool_docs_back() -> None:
    messages = [{"role": "user", "content": "Weather?"}]
    for variables in ({"thinking_budget": 0}, {"thinking_budget": 700}, {"use_json_tooldef": True}):
        prompt = FMT.render(messages, [WEATHER], add_generation_prompt=True, **variables)
        conversation = FMT.decode(prompt)
        assert conversation.variables == variables
        again = FMT.render(conversation.messages, conversation.tools, add_generation_prompt=True, **variables)
        assert again == prompt
