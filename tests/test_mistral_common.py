"""The official ``mistral-common`` library as a second judge of the Mistral formats' prompts and
replies (skipped without the ``mistral`` extra): ``mistral_small3_2`` against its tokenizer of
version 11, ``ministral3`` against version 13 (``mistral_nemo``'s, version 3, is in
``test_mistral_nemo.py``).

mistral-common ships tekken vocabularies of version 3 only; a tokenizer of version 11 or 13 is
that vocabulary with the newer versions' special tokens (``[ARGS]``, ``[CALL_ID]``, ``[THINK]``,
``[/THINK]`` at their ranks) and version, which is what its instruct encoder and its call and
reasoning decoders dispatch on. The prompt is compared as text: mistral-common's tokens decoded
with their special tokens kept, against codec's prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness import examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec.formats.ministral3 import DEFAULT_SYSTEM as MINISTRAL_SYSTEM
from codec.formats.mistral_small3_2 import default_system_prompt

#: Each format, the mistral-common tokenizer version its models use.
VERSIONS = {"mistral_small3_2": "v11", "ministral3": "v13"}
#: The newer versions' special tokens beyond the deprecated list, by rank.
NEWER_SPECIALS = {32: "[ARGS]", 33: "[CALL_ID]", 34: "[THINK]", 35: "[/THINK]"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
CALLS = [
    {"id": "a1B2c3D4e", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    {"id": "Zx9Yw8Vu7", "function": {"name": "get_weather", "arguments": {"city": "Roma é"}}},
]
REQUEST = {
    "messages": [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "tool_calls": CALLS},
        {"role": "tool", "tool_call_id": "a1B2c3D4e", "content": '{"sky": "sunny"}'},
        {"role": "tool", "tool_call_id": "Zx9Yw8Vu7", "content": '{"sky": "rain"}'},
        {"role": "assistant", "content": "Sunny in Paris, rain in Rome."},
        {"role": "user", "content": "Thanks. And tomorrow?"},
    ],
    "tools": TOOLS,
}


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """mistral-common's tokenizer of each format's version (the test skips without mistral-common)."""
    common = pytest.importorskip("mistral_common", reason="mistral-common is not installed (the 'mistral' extra)")
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    shipped = json.loads((Path(common.__file__).parent / "data" / "tekken_240911.json").read_text(encoding="utf-8"))
    folder = tmp_path_factory.mktemp("mistral_common")
    found = {}
    for name, version in VERSIONS.items():
        # The first 10,000 merges of the vocabulary are plenty for text compared as text, and quick to load.
        config = {**shipped["config"], "version": version, "num_vocab_tokens": 10_000, "default_vocab_size": 11_000}
        data = dict(shipped, config=config, vocab=shipped["vocab"][:10_000])
        data.pop("image", None)
        specials = [dict(token) for token in Tekkenizer.DEPRECATED_SPECIAL_TOKENS]
        for rank in range(len(specials), data["config"]["default_num_special_tokens"]):
            specials.append(
                {"rank": rank, "token_str": NEWER_SPECIALS.get(rank, f"<SPECIAL_{rank}>"), "is_control": True}
            )
        data["special_tokens"] = specials
        path = folder / f"tekken_{version}.json"  # mistral-common tells a tekken file by its name
        path.write_text(json.dumps(data), encoding="utf-8")
        found[name] = MistralTokenizer.from_file(str(path))
    return found


def their_prompt(tokenizer: Any, request: dict[str, Any]) -> str:
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy

    tokens = tokenizer.encode_chat_completion(ChatCompletionRequest.model_validate(request)).tokens
    return str(tokenizer.instruct_tokenizer.tokenizer.decode(tokens, special_token_policy=SpecialTokenPolicy.KEEP))


@pytest.mark.parametrize("name", VERSIONS)
def test_mistral_common_writes_the_same_prompt(tokenizers: dict[str, Any], name: str) -> None:
    fmt = codec.get_format(name)
    # Ministral 3's template writes no ids: the same request, its ids left out of the prompt.
    ours = fmt.render(REQUEST["messages"], REQUEST["tools"], bos_token="<s>")
    assert ours == their_prompt(tokenizers[name], REQUEST)


# Generated conversations: user turns, answers and rounds of calls with nine-character ids, as both accept.
_TEXT = st.text(st.characters(categories=("L", "N", "P", "Zs"), exclude_characters="[]"), min_size=1, max_size=12)
_IDS = st.from_regex(r"[A-Za-z0-9]{9}", fullmatch=True)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(_TEXT)})
    for turn in range(draw(st.integers(1, 3))):
        # Users that say different things: Small 3.2's template writes the tools before each user
        # message equal to the last one, mistral-common before the last alone (a test below).
        messages.append({"role": "user", "content": f"{draw(_TEXT)} ({turn})"})
        if draw(st.booleans()):
            ids = draw(st.lists(_IDS, min_size=1, max_size=2, unique=True))
            calls = [{"id": i, "function": {"name": "get_weather", "arguments": {"city": draw(_TEXT)}}} for i in ids]
            messages.append({"role": "assistant", "tool_calls": calls})
            messages += [{"role": "tool", "tool_call_id": i, "content": draw(_TEXT)} for i in ids]
        # An answer that ends otherwise than with a space: mistral-common drops trailing spaces (a test below).
        messages.append({"role": "assistant", "content": draw(_TEXT) + "."})
    messages.append({"role": "user", "content": f"{draw(_TEXT)} (last)"})
    return {"messages": messages, "tools": draw(st.sampled_from([TOOLS, None]))}


@pytest.mark.parametrize("name", VERSIONS)
@examples(100)
@given(request=requests())
def test_mistral_common_writes_the_same_prompts_for_generated_conversations(
    tokenizers: dict[str, Any], name: str, request: dict[str, Any]
) -> None:
    ours = codec.get_format(name).render(request["messages"], request["tools"], bos_token="<s>", current_date=DAY)
    assert ours == their_prompt(tokenizers[name], with_default_system(name, request))


#: The day Mistral Small 3.2's default system prompt says (``current_date``).
DAY = "2026-01-15"


def with_default_system(name: str, request: dict[str, Any]) -> dict[str, Any]:
    """``request`` with the template's default system prompt as its system message where it has
    none: the one difference found, mistral-common writes no system prompt of its own (the models'
    repositories ship it beside the tokenizer, and the templates write it)."""
    messages = request["messages"]
    if messages and messages[0]["role"] == "system":
        return request
    default = DEFAULT_SYSTEM[name]()
    return {**request, "messages": [{"role": "system", "content": default}, *messages]}


DEFAULT_SYSTEM = {
    "mistral_small3_2": lambda: default_system_prompt(DAY),
    "ministral3": lambda: MINISTRAL_SYSTEM,
}


def test_without_a_system_message_the_template_writes_its_default_and_mistral_common_none(
    tokenizers: dict[str, Any],
) -> None:
    request = {"messages": [{"role": "user", "content": "Hi"}], "tools": None}
    assert their_prompt(tokenizers["ministral3"], request) == "<s>[INST]Hi[/INST]"
    ours = codec.get_format("ministral3").render(request["messages"], bos_token="<s>")
    assert ours == f"<s>[SYSTEM_PROMPT]{MINISTRAL_SYSTEM}[/SYSTEM_PROMPT][INST]Hi[/INST]"


# --------------------------------------------------------------------------- replies


def _reply_tokens(tokenizer: Any, reply: str) -> list[int]:
    """The tokens of ``reply``: its special tokens as those tokens (encoding the text would spell them)."""
    inner = tokenizer.instruct_tokenizer.tokenizer
    specials = ["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]"]
    tokens: list[int] = []
    text = reply.removesuffix("</s>")
    while text:
        found = [(text.find(s), s) for s in specials if s in text]
        at, special = min(found) if found else (len(text), "")
        if at:
            tokens += inner.encode(text[:at], bos=False, eos=False)
        if special:
            tokens.append(inner.get_special_token(special))
        text = text[at + len(special) :]
    return tokens


@pytest.mark.parametrize("name", VERSIONS)
def test_mistral_common_reads_the_reply_as_codec_does(tokenizers: dict[str, Any], name: str) -> None:
    from mistral_common.experimental.think import _split_content_and_think_chunks
    from mistral_common.experimental.tools import _decode_tool_calls, _split_content_and_tool_calls

    fmt, tokenizer = codec.get_format(name), tokenizers[name]
    inner = tokenizer.instruct_tokenizer.tokenizer
    message = {"role": "assistant", "content": "Let me look.", "tool_calls": CALLS}
    if name == "ministral3":
        message["reasoning_content"] = "Two cities, one call each."
    reply = fmt.render_reply(message)
    tokens = _reply_tokens(tokenizer, reply)
    reasoning = ""
    if name == "ministral3":
        chunks = _split_content_and_think_chunks(
            tokens, inner.get_special_token("[THINK]"), inner.get_special_token("[/THINK]")
        )
        reasoning = "".join(inner.decode(chunk[1:-1]) for chunk, think in chunks if think)
        tokens = [token for chunk, think in chunks if not think for token in chunk]
    content, calls = _split_content_and_tool_calls(tokens, inner.get_special_token("[TOOL_CALLS]"))
    theirs = [(c.function.name, json.loads(c.function.arguments), c.id) for c in _decode_tool_calls(calls, inner)]
    ours = fmt.parse(reply, tools=TOOLS)
    assert ours.issues == []
    assert (ours.reasoning, ours.content) == (reasoning, inner.decode(content))
    # mistral-common gives a call without a written id the id "null"; codec its own nine-character one.
    assert [(c.function.name, c.function.arguments) for c in ours.tool_calls] == [t[:2] for t in theirs]
    if name == "mistral_small3_2":
        assert [c.id for c in ours.tool_calls] == [t[2] for t in theirs] == ["a1B2c3D4e", "Zx9Yw8Vu7"]


def test_small3_2s_template_repeats_the_tools_before_a_user_message_equal_to_the_last(
    tokenizers: dict[str, Any],
) -> None:
    """The other difference found: the template's ``message == user_messages[-1]`` (S4) holds for
    every user message equal to the last, and mistral-common writes the tools once."""
    hi = {"role": "user", "content": "Hi"}
    request = {
        "messages": [{"role": "system", "content": "Be brief."}, hi, {"role": "assistant", "content": "Hello"}, hi],
        "tools": TOOLS,
    }
    tools = "[AVAILABLE_TOOLS]" + json.dumps(TOOLS, ensure_ascii=False) + "[/AVAILABLE_TOOLS]"
    ours = codec.get_format("mistral_small3_2").render(request["messages"], TOOLS, bos_token="<s>")
    theirs = their_prompt(tokenizers["mistral_small3_2"], request)
    assert ours.count(tools) == 2 and theirs.count(tools) == 1
    assert ours.replace(tools, "", 1) == theirs


@pytest.mark.parametrize("name", VERSIONS)
def test_mistral_common_drops_the_trailing_spaces_of_an_answer_the_template_keeps(
    tokenizers: dict[str, Any], name: str
) -> None:
    """The third difference found: an assistant's content ending in spaces (or all spaces) is
    written by the templates as it is, by mistral-common without those spaces (line breaks kept)."""

    def request(answer: str) -> dict[str, Any]:
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
        return {"messages": [*messages, {"role": "assistant", "content": answer}, {"role": "user", "content": "x"}]}

    fmt = codec.get_format(name)
    for answer, kept in ((" a  ", " a"), (" ", ""), ("a\n", "a\n")):
        ours = fmt.render(request(answer)["messages"], bos_token="<s>")
        assert ours.replace(f"[/INST]{answer}</s>", f"[/INST]{kept}</s>") == their_prompt(
            tokenizers[name], request(answer)
        )
