"""What is particular to ``granite4`` (Granite 4.0's template): the default system prompt, documents
and ``available_tools``, and a reply ended by ``<|end_of_text|>`` told from hermes'."""

from __future__ import annotations

import pytest

import codec

GRANITE = codec.get_format("granite4")
USER = {"role": "user", "content": "Weather in Lisbon?"}
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
DOCUMENTS = [{"doc_id": 1, "title": "Lisbon", "text": "Sunny in June."}, {"title": "Porto", "text": "Rain."}]


def test_an_empty_system_text_is_written_as_the_default_prompt_and_read_as_none() -> None:
    default = GRANITE.render([USER])
    assert GRANITE.render([{"role": "system", "content": ""}, USER]) == default
    assert "You are a helpful assistant. Please ensure responses are professional" in default
    assert [m.role for m in GRANITE.decode(default).messages] == ["user"]


@pytest.mark.parametrize("tools", [None, [TOOL]])
def test_documents_come_back_as_the_documents_variable(tools: list[dict[str, object]] | None) -> None:
    prompt = GRANITE.render([{"role": "system", "content": "Be brief."}, USER], tools, documents=DOCUMENTS)
    conversation = GRANITE.decode(prompt)
    assert conversation.variables == {"documents": DOCUMENTS}
    assert conversation.messages[0].content == "Be brief."
    assert (conversation.tools is not None) == (tools is not None)


def test_available_tools_stand_for_tools() -> None:
    assert GRANITE.render([USER], available_tools=[TOOL]) == GRANITE.render([USER], [TOOL])


def test_documents_that_are_no_mappings_are_refused_as_transformers_refuses_them() -> None:
    with pytest.raises(TypeError, match="list of mappings"):
        GRANITE.render([USER], documents=["Sunny in June."])


def test_a_reply_with_granite_s_stop_token_is_granite_s_and_without_it_hermes() -> None:
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lisbon"}}\n</tool_call>'
    assert codec.detect_reply(call + "<|end_of_text|>")[0].format == "granite4"
    assert codec.detect_reply(call)[0].format == "hermes"  # the older format first, on a tie
