"""codec's vLLM parsers driven by vLLM's own serving classes, compared with ``fmt.parse``.

What is installed, and why: vLLM 0.33.0 from its released wheel, with ``--no-deps`` (a plain
install pulls CUDA torch and about 200 packages), next to the CPU torch wheel and the
pure-Python packages vLLM's parser, reasoning and chat-completion modules import (listed in
``tests/vllm-requirements.txt``; ``tests/vllm-env.sh`` builds that environment). No model, GPU or
tokenizer file is needed: the tokenizer is a stand-in whose token ids are the characters.

The tests drive the path of a streamed chat completion: ``ParserManager.get_parser`` composes
vLLM's ``Parser`` from ``--tool-call-parser`` / ``--reasoning-parser`` names registered by codec's
``vllm.general_plugins`` entry point, and ``ChatStreamProcessor.step`` feeds it the reply in
chunks (text and token ids), as vLLM's ``OpenAIServingChat`` does; the non-streamed path is
``Parser.parse``. Where vLLM is absent, the module is skipped with the reason.
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (build its environment with tests/vllm-env.sh)")
pytest.importorskip("xgrammar", reason="vLLM's parser module needs xgrammar (tests/vllm-requirements.txt)")

from formats import profile
from harness import examples, load_golden
from hypothesis import given
from hypothesis import strategies as st
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
from vllm.parser.parser_manager import ParserManager
from vllm.plugins import load_general_plugins
from vllm.reasoning import ReasoningParser, ReasoningParserManager
from vllm.tool_parsers import ToolParser, ToolParserManager

import codec
from codec import export
from codec.integrations import vllm as plugin
from codec.integrations.vllm.handover import harmony_markers
from codec.integrations.vllm.parsers import reasoning_markers

load_general_plugins()

FORMATS = codec.formats()
REPLY_SYNTAXES = ["gemma4", "qwen3_coder", "hermes", "gemma3_tool_code", "deepseek_pythonic"]


class CharTokenizer:
    """A stand-in tokenizer: one token per character, its id the code point; ``added`` its added tokens."""

    def __init__(self, added: dict[str, int] | None = None) -> None:
        self.added = added or {}

    def get_vocab(self) -> dict[str, int]:
        return dict(self.added)

    def get_added_vocab(self) -> dict[str, int]:
        return dict(self.added)

    def encode(self, text: str, **_: Any) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: Any, skip_special_tokens: bool = False) -> str:
        return "".join(chr(i) for i in ([ids] if isinstance(ids, int) else ids))


def ids(text: str) -> list[int]:
    return [ord(c) for c in text]


def request(tools: list[dict[str, Any]] | None, **fields: Any) -> Any:
    return ChatCompletionRequest(
        messages=[{"role": "user", "content": "hi"}], model="m", tools=tools or None, stream=True, **fields
    )


def parser_class(name: str, *, reasoning: bool) -> Any:
    use_reasoning = reasoning and name in plugin.REASONING_FORMATS
    return ParserManager.get_parser(
        tool_parser_name=plugin.parser_name(name),
        reasoning_parser_name=plugin.parser_name(name) if use_reasoning else None,
        enable_auto_tools=True,
    )


def make_parser(cls: Any, req: Any, tokenizer: CharTokenizer | None = None) -> Any:
    """A parser for one request, made as vLLM's ``OpenAIServingChat._make_parser`` makes it."""
    return cls(tokenizer or CharTokenizer(), req.tools, chat_template_kwargs=None, model_config=None)


@dataclass
class Streamed:
    """What a client reassembles from the streamed deltas."""

    content: str = ""
    reasoning: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None


def stream(
    name: str, reply: str, tools: Any, sizes: list[int], *, prompt: str = "", reasoning: bool = True, **fields: Any
) -> tuple[Streamed, Any]:
    """``reply`` through vLLM's stream processor in chunks of ``sizes`` (cycled), as the server sends it."""
    cls = parser_class(name, reasoning=reasoning)
    req = request(tools, **fields)
    parser = make_parser(cls, req)
    processor = ChatStreamProcessor(req, parser, enable_auto_tools=True, parser_cls=cls)
    out, pos, turn = Streamed(), 0, 0
    while pos < len(reply) or turn == 0:
        size = sizes[turn % len(sizes)]
        chunk, pos, turn = reply[pos : pos + size], pos + size, turn + 1
        step = processor.step(chunk, ids(chunk), "stop" if pos >= len(reply) else None, ids(prompt))
        out.finish_reason = step.finish_reason or out.finish_reason
        delta = step.delta
        if delta is None:
            continue
        out.content += delta.content or ""
        out.reasoning += delta.reasoning or ""
        for call in delta.tool_calls:
            if call.id is not None:
                assert call.index == len(out.calls), "a call's id comes once, in order"
                out.calls.append({"id": call.id, "name": call.function.name, "arguments": ""})
            out.calls[call.index]["arguments"] += (call.function and call.function.arguments) or ""
    return out, parser


def expected_calls(result: codec.ParseResult) -> list[tuple[str, str]]:
    return [(c.function.name, c.model_dump(mode="json")["function"]["arguments"]) for c in result.tool_calls]


def rewrapped(name: str, result: codec.ParseResult) -> str:
    """The content the tool parser alone gives: the reasoning block written back before the content."""
    markers = reasoning_markers(codec.get_format(name))
    if not result.reasoning or markers is None:
        return result.content
    return f"{markers.open}{markers.open_rest}{result.reasoning}{markers.close}{result.content}"


def check_ids(fmt: codec.Format, reply: str, tools: Any, prompt: str, sent: list[str]) -> None:
    """The ids sent for a reply's calls: the one the reply writes (Kimi K2's functions.NAME:IDX,
    Mistral's nine characters), as vLLM's own parsers of those formats send it; else one of vLLM's."""
    unwritten = "\0unwritten"
    written = fmt.parse(reply, tools=tools, prompt=prompt, call_id=lambda _: unwritten).tool_calls
    for sent_id, ours in zip(sent, written, strict=True):
        assert sent_id == ours.id if ours.id != unwritten else sent_id.startswith("chatcmpl-tool-")


def check_stream(name: str, reply: str, tools: Any, sizes: list[int], prompt: str | None) -> None:
    fmt = codec.get_format(name)
    prompt_text = prompt or ""
    out, parser = stream(name, reply, tools, sizes, prompt=prompt_text)
    want = fmt.parse(reply, tools=tools, prompt=prompt_text)
    assert (out.reasoning, out.content) == (want.reasoning, want.content)
    tool_parser = parser.tool_parser
    read = [(c["name"], c["arguments"]) for c in tool_parser.prev_tool_call_arr]
    assert read == expected_calls(want)  # what the tool parser read, in step with what it streamed
    assert tool_parser.streamed_args_for_tool == [arguments for _, arguments in read]
    assert tool_parser.get_remaining_unstreamed_args() == ""
    # vLLM's serving layer sends calls only to a request that has tools.
    assert [(c["name"], c["arguments"]) for c in out.calls] == (read if tools else [])
    if tools:
        check_ids(fmt, reply, tools, prompt_text, [c["id"] for c in out.calls])
    assert len({c["id"] for c in out.calls}) == len(out.calls)
    assert out.finish_reason == ("tool_calls" if out.calls else "stop")


GOLDEN = [(name, case) for name in FORMATS for case in load_golden(name) if not case.xfail]
SIZES = [[1], [3], [7], [64], [1, 5, 2, 11]]


def test_every_format_is_registered_with_vllm() -> None:
    for name in FORMATS:
        cls = ToolParserManager.get_tool_parser(plugin.parser_name(name))
        assert issubclass(cls, ToolParser) and cls.format_name == name
        assert cls.engine_based_streaming and callable(cls.finish_streaming)
        if name in plugin.REASONING_FORMATS:
            rcls = ReasoningParserManager.get_reasoning_parser(plugin.parser_name(name))
            assert issubclass(rcls, ReasoningParser) and rcls.format_name == name
        else:
            with pytest.raises(KeyError):
                ReasoningParserManager.get_reasoning_parser(plugin.parser_name(name))


@pytest.mark.parametrize("sizes", SIZES, ids=lambda s: "-".join(map(str, s)))
@pytest.mark.parametrize(("name", "case"), GOLDEN, ids=[c.id for _, c in GOLDEN])
def test_golden_streamed_like_parse(name: str, case: Any, sizes: list[int]) -> None:
    check_stream(name, case.text, case.tools, sizes, case.prompt)


@pytest.mark.parametrize(("name", "case"), GOLDEN, ids=[c.id for _, c in GOLDEN])
def test_golden_whole_like_parse(name: str, case: Any) -> None:
    cls = parser_class(name, reasoning=True)
    req = request(case.tools)
    parser = make_parser(cls, req)
    parser.set_prompt_token_ids(ids(case.prompt or ""))
    reasoning, content, calls = parser.parse(case.text, req, enable_auto_tools=True)
    want = codec.get_format(name).parse(case.text, tools=case.tools, prompt=case.prompt or "")
    assert (reasoning or "") == want.reasoning
    if case.tools:  # without tools vLLM returns the reply as it is
        assert (content or "").strip() == want.content.strip()
    # vLLM's serving layer reads calls only for a request that has tools.
    assert [(c.name, c.arguments) for c in calls or []] == (expected_calls(want) if case.tools else [])
    if case.tools:
        check_ids(codec.get_format(name), case.text, case.tools, case.prompt or "", [c.id for c in calls or []])


@pytest.mark.parametrize(("name", "case"), GOLDEN[::3], ids=[c.id for _, c in GOLDEN[::3]])
def test_without_a_reasoning_parser_reasoning_is_content(name: str, case: Any) -> None:
    fmt = codec.get_format(name)
    out, _ = stream(name, case.text, case.tools, [5], prompt=case.prompt or "", reasoning=False)
    want = fmt.parse(case.text, tools=case.tools)
    assert (out.reasoning, out.content) == ("", rewrapped(name, want))
    assert [(c["name"], c["arguments"]) for c in out.calls] == (expected_calls(want) if case.tools else [])
    cls = parser_class(name, reasoning=False)
    req = request(case.tools)
    _, content, calls = make_parser(cls, req).parse(case.text, req, enable_auto_tools=True)
    if case.tools:
        assert (content or "").strip() == rewrapped(name, want).strip()
    assert [(c.name, c.arguments) for c in calls or []] == (expected_calls(want) if case.tools else [])


@pytest.mark.parametrize("name", FORMATS)
@examples(60)
@given(data=st.data())
def test_generated_replies_streamed_like_parse(name: str, data: st.DataObject) -> None:
    spec = profile(name).round_trip
    fmt = spec.fmt or codec.get_format(name)
    message, tools = data.draw(spec.messages(True), label="message")
    reply = fmt.render_reply(message)
    seed = data.draw(st.integers(0, 2**16), label="seed")
    sizes = [random.Random(seed).randint(1, 16) for _ in range(8)]
    check_stream(name, reply, tools, sizes, "")


# ---------------------------------------------------------------------------- adjust_request

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}


def adjusted(name: str, tokenizer: CharTokenizer | None = None, **fields: Any) -> Any:
    cls = parser_class(name, reasoning=True)
    req = request(fields.pop("tools", [WEATHER, TIME]), **fields)
    return make_parser(cls, req, tokenizer).adjust_request(req)


@pytest.mark.parametrize("name", FORMATS)
def test_forced_calls_get_codecs_grammar(name: str) -> None:
    import xgrammar

    fmt = codec.get_format(name)
    required = adjusted(name, tool_choice="required")
    assert required.structured_outputs.grammar == fmt.grammar([WEATHER, TIME], tool_choice="required", dialect="gbnf")
    named = adjusted(name, tool_choice={"type": "function", "function": {"name": "get_time"}})
    assert named.structured_outputs.grammar == fmt.grammar([TIME], tool_choice="required", dialect="gbnf")
    single = adjusted(name, tool_choice="required", parallel_tool_calls=False)
    assert single.structured_outputs.grammar == fmt.grammar(
        [WEATHER, TIME], tool_choice="required", parallel=False, dialect="gbnf"
    )
    strict = {**WEATHER, "function": {**WEATHER["function"], "strict": True}}
    auto_strict = adjusted(name, tools=[strict, TIME], tool_choice="auto")
    tools = [tool.model_dump(mode="json", exclude_none=True) for tool in auto_strict.tools]
    assert auto_strict.structured_outputs.grammar == fmt.grammar(tools, tool_choice="auto", dialect="gbnf")
    assert adjusted(name, tool_choice="auto").structured_outputs is None
    assert adjusted(name, tool_choice="none").structured_outputs is None
    for req in (required, named, auto_strict):
        xgrammar.Grammar.from_ebnf(req.structured_outputs.grammar)  # vLLM's default backend takes it


@pytest.mark.parametrize("name", FORMATS)
def test_special_token_markers_are_kept_in_the_text(name: str) -> None:
    fmt = codec.get_format(name)
    assert adjusted(name, tool_choice="auto").skip_special_tokens is None  # markers are plain text here
    marker = fmt.stop_token or fmt.grammar_special_tokens[0]
    tokenizer = CharTokenizer({marker: 100_000})
    assert adjusted(name, tokenizer, tool_choice="auto").skip_special_tokens is False


def test_gemma4_markers_as_special_tokens() -> None:
    fmt = codec.get_format("gemma4")
    tokenizer = CharTokenizer({token: 100_000 + i for i, token in enumerate(fmt.grammar_special_tokens)})
    assert adjusted("gemma4", tokenizer, tool_choice="auto").skip_special_tokens is False


# ---------------------------------------------------------------------------- damaged calls, reasoning ids

DAMAGED = [
    (name, case)
    for name, case in GOLDEN
    if case.tools
    and any(codec.issues.severity(kind) == "damaged" for kind in case.expected["issues"])
    and case.expected["tool_calls"]
]


@pytest.mark.parametrize(("name", "case"), DAMAGED[:12], ids=[c.id for _, c in DAMAGED[:12]])
def test_damaged_calls_are_sent_and_reported(name: str, case: Any, caplog: pytest.LogCaptureFixture) -> None:
    want = codec.get_format(name).parse(case.text, tools=case.tools, prompt=case.prompt or "")
    with caplog.at_level(logging.WARNING, logger="codec.integrations.vllm"):
        out, _ = stream(name, case.text, case.tools, [4], prompt=case.prompt or "")
    assert len(out.calls) == len(want.tool_calls)
    damaged_kinds = {i.kind for i in want.issues if i.severity == "damaged"}
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert damaged_kinds and all(kind in logged for kind in damaged_kinds)


def test_damaged_golden_cases_exist() -> None:
    assert DAMAGED, "no golden reply with a damaged call: the damage test would test nothing"


@pytest.mark.parametrize("name", sorted(plugin.REASONING_FORMATS))
def test_reasoning_end_and_content_ids(name: str) -> None:
    fmt = codec.get_format(name)
    markers = reasoning_markers(fmt)
    assert markers is not None
    rcls = ReasoningParserManager.get_reasoning_parser(plugin.parser_name(name))
    parser = rcls(CharTokenizer())
    text = f"{markers.open}{markers.open_rest}thinking{markers.close}answer"
    assert parser.is_reasoning_end(ids(text))
    assert not parser.is_reasoning_end(ids(text[: text.index(markers.close)]))
    assert parser.extract_content_ids(ids(text)) == ids("answer")
    assert parser.extract_content_ids(ids("plain answer")) == ids("plain answer")


def test_call_ids_are_random_per_request() -> None:
    reply = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
    first, _ = stream("hermes", reply, [TIME], [4])
    second, _ = stream("hermes", reply, [TIME], [4])
    assert first.calls[0]["id"] != second.calls[0]["id"]
    assert json.loads(first.calls[0]["arguments"]) == {}


def test_reasoning_tokens_are_counted_up_to_the_closer() -> None:
    parser = ReasoningParserManager.get_reasoning_parser("codec_hermes")(CharTokenizer())
    assert parser.count_reasoning_tokens(ids("<think>ab</think>cd")) == len("<think>ab</think>")
    assert parser.count_reasoning_tokens(ids("plain")) == 0


# ---------------------------------------------------------------------------- tool_choice through the serving path

CALL = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'


def test_tool_choice_none_keeps_the_content_and_sends_no_call() -> None:
    out, _ = stream("hermes", "Hello." + CALL, [TIME], [3], tool_choice="none")
    assert out.calls == []
    assert out.content == "Hello."


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "get_time"}}])
def test_forced_calls_are_read_in_the_formats_own_syntax(choice: Any) -> None:
    # vLLM's own path for these choices reads JSON; codec's parsers read the format's calls.
    out, _ = stream("hermes", CALL, [WEATHER, TIME], [3], tool_choice=choice)
    assert [(c["name"], c["arguments"]) for c in out.calls] == [("get_time", "{}")]


def _without_end(fmt: codec.Format, reply: str) -> str:
    """A reply less what ends the turn (the tokens the engine stops at, not grammar text)."""
    for end in export.call_syntax(fmt, [])[1].stops:
        reply = reply.removesuffix(end)
    return reply


def _reply(fmt: codec.Format, name: str, arguments: dict[str, Any]) -> str:
    # An id of nine letters and digits, as Mistral's templates and grammars require.
    call = {"id": "abc123xyz", "type": "function", "function": {"name": name, "arguments": arguments}}
    return _without_end(fmt, fmt.render_reply({"role": "assistant", "content": None, "tool_calls": [call]}))


@pytest.mark.parametrize("name", FORMATS)
def test_the_requests_grammar_takes_the_calls_it_forces(name: str) -> None:
    from vllm.sampling_params import SamplingParams
    from vllm.v1.structured_output.backend_guidance import validate_guidance_grammar
    from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar
    from xgrammar import Grammar
    from xgrammar.testing import _is_grammar_accept_string as accepts

    fmt = codec.get_format(name)
    required = adjusted(name, tool_choice="required").structured_outputs
    named = adjusted(name, tool_choice={"type": "function", "function": {"name": "get_time"}}).structured_outputs
    for outputs in (required, named):
        validate_xgrammar_grammar(SamplingParams(structured_outputs=outputs))  # both vLLM backends take it
        validate_guidance_grammar(SamplingParams(structured_outputs=outputs))
    weather, time = _reply(fmt, "get_weather", {"city": "Paris"}), _reply(fmt, "get_time", {})
    assert accepts(Grammar.from_ebnf(required.grammar), weather)
    assert accepts(Grammar.from_ebnf(required.grammar), time)
    assert not accepts(Grammar.from_ebnf(required.grammar), "No call, just text.")
    assert not accepts(Grammar.from_ebnf(required.grammar), _reply(fmt, "get_wether", {"city": "Paris"}))
    assert accepts(Grammar.from_ebnf(named.grammar), time)
    assert not accepts(Grammar.from_ebnf(named.grammar), weather)


def test_finishing_twice_sends_nothing_and_feeding_after_it_fails() -> None:
    cls = ToolParserManager.get_tool_parser("codec_hermes")
    parser = cls(CharTokenizer(), request([TIME]).tools)
    req = request([TIME])
    parser.extract_tool_calls_streaming("", "", CALL, [], [], [], req)
    parser.finish_streaming()
    assert parser.finish_streaming() is None
    with pytest.raises(codec.CodecError, match="already finished"):
        parser.extract_tool_calls_streaming("", "", "more", [], [], [], req)


SERVE_CHECK = """
import argparse, types
import vllm.plugins
assert not vllm.plugins.plugins_loaded
vllm.plugins.load_general_plugins()  # what `vllm serve` does before it reads its arguments
from vllm.entrypoints.common.cli_args import validate_api_server_args
def args(tool, reasoning):
    return argparse.Namespace(enable_auto_tool_choice=True, tool_call_parser=tool,
        structured_outputs_config=types.SimpleNamespace(reasoning_parser=reasoning))
validate_api_server_args(args("codec_gemma4", "codec_gemma4"))
try:
    validate_api_server_args(args("codec_nope", None))
except KeyError:
    print("checked")
"""


def test_serve_takes_the_names_from_the_entry_point_alone() -> None:
    # A fresh interpreter: the names come only from the installed vllm.general_plugins entry point.
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", SERVE_CHECK], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("checked")


HISTORY = "<|im_start|>assistant\n<think>\nold\n</think>\n\nold answer<|im_end|>\n<|im_start|>user\nq<|im_end|>\n"
PROMPTS = {
    "fresh turn": "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n",
    "reasoning in the history": HISTORY + "<|im_start|>assistant\n",
    "prompt opens reasoning": HISTORY + "<|im_start|>assistant\n<think>\n",
    "thinking off": HISTORY + "<|im_start|>assistant\n<think>\n\n</think>\n\n",
}


@pytest.mark.parametrize("sizes", [[1], [4], [50]], ids=lambda s: str(s[0]))
@pytest.mark.parametrize("prompt", list(PROMPTS.values()), ids=list(PROMPTS))
def test_reasoning_is_reasoning_whatever_the_prompt_holds(prompt: str, sizes: list[int]) -> None:
    # A prompt whose history closes reasoning makes vLLM skip the reasoning parser: the tool
    # parser then reads the reply's think block, and still sends it as reasoning.
    opened = prompt.endswith("<think>\n")
    reply = ("" if opened else "<think>\n") + "Let me see.\n</think>\n\nSure." + CALL
    out, _ = stream("qwen3", reply, [TIME], sizes, prompt=prompt)
    want = codec.get_format("qwen3").parse(reply, tools=[TIME], prompt=prompt)
    assert (out.reasoning, out.content) == (want.reasoning, want.content) == ("Let me see.", "Sure.")
    assert [(c["name"], c["arguments"]) for c in out.calls] == [("get_time", "{}")]


def test_strict_tools_leave_a_requests_own_structured_output(caplog: pytest.LogCaptureFixture) -> None:
    strict = {**WEATHER, "function": {**WEATHER["function"], "strict": True}}
    with caplog.at_level(logging.WARNING, logger="codec.integrations.vllm"):
        req = adjusted("hermes", tools=[strict], tool_choice="auto", response_format={"type": "json_object"})
    assert req.structured_outputs is None and req.response_format is not None
    assert "strict tools are not enforced" in caplog.text


# ---------------------------------------------------------------------------- Responses API requests

WEATHER_FLAT = {"type": "function", **WEATHER["function"]}  # a Responses function tool: flat


def responses_request(tools: list[dict[str, Any]], **fields: Any) -> Any:
    from vllm.entrypoints.openai.responses.protocol import ResponsesRequest

    return ResponsesRequest(input="hi", model="m", tools=tools, stream=True, **fields)


@pytest.mark.parametrize("name", FORMATS)
def test_responses_requests_with_tools_get_codecs_grammar(name: str) -> None:
    # Flat Responses tools, the Responses named choice and custom tools: what vLLM's
    # /v1/responses hands adjust_request (a KeyError on tool["function"] before).
    fmt = codec.get_format(name)
    cls = parser_class(name, reasoning=True)
    time_flat = {"type": "function", **TIME["function"]}
    for choice, want in [("required", [WEATHER, TIME]), ({"type": "function", "name": "get_weather"}, [WEATHER])]:
        req = responses_request([WEATHER_FLAT, time_flat], tool_choice=choice)
        make_parser(cls, req).adjust_request(req)
        assert req.extract_structured_outputs().grammar == fmt.grammar(want, tool_choice="required", dialect="gbnf")
        assert req.text is None  # the client's fields stay as sent
    custom = responses_request([{"type": "custom", "name": "emit"}], tool_choice={"type": "custom", "name": "emit"})
    make_parser(cls, custom).adjust_request(custom)
    grammar = custom.extract_structured_outputs().grammar
    assert grammar is not None and "emit" in grammar
    auto = responses_request([WEATHER_FLAT], tool_choice="auto")
    make_parser(cls, auto).adjust_request(auto)
    assert auto.extract_structured_outputs() is None


def test_responses_tools_are_read_like_chat_tools() -> None:
    # The calls of a reply are checked against a Responses request's flat tools as against chat tools.
    reply = '<tool_call>\n{"name": "get_weather", "arguments": {"city": 3}}\n</tool_call>'
    parser = ToolParserManager.get_tool_parser("codec_hermes")(CharTokenizer())
    req = responses_request([WEATHER_FLAT])
    assert [c.function.name for c in parser.extract_tool_calls(reply, req).tool_calls] == ["get_weather"]
    assert parser._request_tools(req) == [WEATHER]


def test_a_tokenizer_without_added_vocab_is_asked_its_vocab() -> None:
    class VocabOnly:  # vLLM's TokenizerLike requires get_vocab only
        def get_vocab(self) -> dict[str, int]:
            return {"<|tool_call>": 1}

    req = request([WEATHER], tool_choice="auto")
    ToolParserManager.get_tool_parser("codec_gemma4")(VocabOnly()).adjust_request(req)
    assert req.skip_special_tokens is False


# ---------------------------------------------------------------------------- tools given to the constructor

TYPED = {
    "type": "function",
    "function": {"name": "f", "parameters": {"type": "object", "properties": {"precision": {"type": "integer"}}}},
}
TYPED_REPLY = "<tool_call>\n<function=f>\n<parameter=precision>\n3\n</parameter>\n</function>\n</tool_call>"


@pytest.mark.parametrize("given", [TYPED, {"type": "function", **TYPED["function"]}], ids=["chat", "flat"])
def test_tools_given_to_the_constructor_type_the_values(given: dict[str, Any]) -> None:
    cls = ToolParserManager.get_tool_parser("codec_qwen3_coder")
    req = ChatCompletionRequest(messages=[{"role": "user", "content": "hi"}], model="m")  # no tools of its own
    whole = cls(CharTokenizer(), tools=[given]).extract_tool_calls(TYPED_REPLY, req)
    assert json.loads(whole.tool_calls[0].function.arguments) == {"precision": 3}
    parser = cls(CharTokenizer(), tools=[given])
    for char in TYPED_REPLY:
        parser.extract_tool_calls_streaming("", "", char, [], [], [], req)
    parser.finish_streaming()
    assert parser.streamed_args_for_tool == ['{"precision": 3}']


# ---------------------------------------------------------------------------- reasoning parser, whole replies


def whole_reasoning(name: str, reply: str) -> tuple[str | None, str | None]:
    parser = ReasoningParserManager.get_reasoning_parser(plugin.parser_name(name))(CharTokenizer())
    result: tuple[str | None, str | None] = parser.extract_reasoning(reply, request(None))
    return result


def streamed_reasoning(name: str, reply: str, size: int) -> tuple[str, str]:
    parser = ReasoningParserManager.get_reasoning_parser(plugin.parser_name(name))(CharTokenizer())
    reasoning = content = ""
    deltas = [
        parser.extract_reasoning_streaming("", "", reply[i : i + size], [], [], []) for i in range(0, len(reply), size)
    ]
    for delta in [*deltas, parser.finish_streaming()]:
        if delta is not None:
            reasoning, content = reasoning + (delta.reasoning or ""), content + (delta.content or "")
    return reasoning, content


@pytest.mark.parametrize(
    ("name", "reply", "want"),
    [
        ("qwen3", "</think>Answer", (None, "Answer")),  # an empty block the prompt opened: a block
        ("qwen3", "<think></think>Answer", (None, "Answer")),
        ("hermes", "Thinking</think>\n\nAnswer", ("Thinking", "Answer")),
        ("gemma4", "Before\n<|channel>thought\nhm<channel|>\nrest", ("hm", "Before\n\nrest")),  # text before it kept
        ("gemma4", "<|channel>thought\nhm<channel|>rest", ("hm", "rest")),
    ],
)
def test_whole_replies_read_reasoning_as_the_stream_does(name: str, reply: str, want: tuple[str | None, str]) -> None:
    assert whole_reasoning(name, reply) == want
    result = codec.get_format(name).parse(reply)
    assert (result.reasoning or None, result.content) == want
    for size in (1, 3, len(reply)):  # the serving path (reasoning parser, then tool parser)
        opened = "<|im_start|>assistant\n<think>\n" if not reply.startswith(("<think>", "<|", "B")) else ""
        out, _ = stream(name, reply, [TIME], [size], prompt=opened)
        assert (out.reasoning or None, out.content) == want
    if reply.startswith(("<", "</")):  # the reasoning parser driven alone, as vLLM's own tests do
        for size in (1, 3):
            reasoning, content = streamed_reasoning(name, reply, size)
            assert (reasoning or None, content) == want


TEXT_FIRST = [
    "Before\n<|channel>thought\nhm<channel|>\nrest",
    "Before\n<|channel>thought\nhm<channel|>\n<|tool_call>call:get_time{}<tool_call|>",
    "Let me check. <|tool_call>call:get_time{}<tool_call|>",
    "Let me check. call:get_time{}",  # a call inside a line of text: get_time is a declared tool
    "Let me check.\n<|channel>thought\nhm",  # a block cut: reasoning to the end
]


@pytest.mark.parametrize("reply", TEXT_FIRST)
def test_text_before_a_gemma4_block_then_the_block_is_reasoning(reply: str) -> None:
    # The reasoning parser hands over at the first text (it has no tools: it cannot tell prose
    # from a call in it); the tool parser reads the block after it as reasoning, and the calls.
    fmt = codec.get_format("gemma4")
    want = fmt.parse(reply, tools=[TIME])
    assert want.content.startswith(("Before", "Let me"))
    assert bool(want.reasoning) is ("<|channel>" in reply)
    for size in (1, 3, 7, len(reply)):
        out, _ = stream("gemma4", reply, [TIME], [size])
        assert (out.reasoning, out.content) == (want.reasoning, want.content), size
        assert [(c["name"], c["arguments"]) for c in out.calls] == expected_calls(want)


@pytest.mark.parametrize("name", sorted(plugin.REASONING_FORMATS))
def test_reasoning_ends_where_a_block_closed_or_none_opened(name: str) -> None:
    markers = reasoning_markers(codec.get_format(name))
    assert markers is not None
    opener = markers.open + markers.open_rest
    parser = ReasoningParserManager.get_reasoning_parser(plugin.parser_name(name))(CharTokenizer())
    assert not parser.is_reasoning_end(ids(""))  # nothing read yet
    # (no opener: the text reads as content, as a reply with no marker and no prompt does)
    assert parser.is_reasoning_end(ids("<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"))
    assert not parser.is_reasoning_end(ids(f"prompt{opener}thinking"))
    assert parser.is_reasoning_end(ids(f"{opener}x{markers.close}y"))
    assert not parser.is_reasoning_end(ids(f"{opener}x{markers.close}y{opener}z"))


@pytest.mark.parametrize("name", sorted(plugin.REASONING_FORMATS))
def test_of_its_prompt_reasoning_has_ended_only_where_the_prompt_closed_a_block(name: str) -> None:
    # vLLM's serving layer skips the reasoning parser where this is True of the prompt: a reply
    # after a prompt whose history closed a block may still open one of its own.
    markers = reasoning_markers(codec.get_format(name))
    assert markers is not None
    opener = markers.open + markers.open_rest
    rcls = ReasoningParserManager.get_reasoning_parser(plugin.parser_name(name))
    for prompt, ended in [
        ("user: hi\nassistant:", False),
        (f"assistant: {opener}old{markers.close}answer\nuser: q\nassistant:", False),
        (f"user: q\nassistant: {opener}{markers.close}\n\n", True),  # thinking off
        (f"user: q\nassistant: {opener}", False),
    ]:
        parser = rcls(CharTokenizer())
        parser.set_prompt_token_ids(ids(prompt))
        assert parser.is_reasoning_end(ids(prompt)) is ended, prompt


def reasoning_parser_alone(name: str, reply: str, prompt: str, size: int) -> tuple[str, str]:
    """``reply`` through vLLM's stream processor with a reasoning parser and no tool parser."""
    cls = ParserManager.get_parser(
        tool_parser_name=None, reasoning_parser_name=plugin.parser_name(name), enable_auto_tools=False
    )
    req = request(None)
    processor = ChatStreamProcessor(req, make_parser(cls, req), enable_auto_tools=False, parser_cls=cls)
    reasoning = content = ""
    for at in range(0, len(reply), size):
        chunk = reply[at : at + size]
        step = processor.step(chunk, ids(chunk), "stop" if at + size >= len(reply) else None, ids(prompt))
        if step.delta is not None:
            reasoning, content = reasoning + (step.delta.reasoning or ""), content + (step.delta.content or "")
    return reasoning, content


@pytest.mark.parametrize("size", [1, 4, 1000])
@pytest.mark.parametrize("name", sorted(plugin.REASONING_FORMATS))
def test_a_reasoning_parser_without_a_tool_parser_sends_reasoning_as_reasoning(name: str, size: int) -> None:
    # (it was skipped where the prompt opened no block: the block went out as content)
    fmt = codec.get_format(name)
    markers = reasoning_markers(fmt)
    assert markers is not None
    reply = f"{markers.open}{markers.open_rest}Let me think.{markers.close}The answer."
    if harmony_markers(fmt) is not None:
        reply = f"{markers.open}Let me think.{markers.close}{markers.open.replace('analysis', 'final')}The answer."
    want = fmt.parse(reply, prompt="")
    assert want.reasoning == "Let me think." and want.content == "The answer."
    assert reasoning_parser_alone(name, reply, "", size) == (want.reasoning, want.content)


def test_forced_calls_are_constrained_from_the_first_token() -> None:
    # codec's grammars allow a reasoning block before the calls: vLLM is told to apply them at once.
    for choice in ["required", {"type": "function", "function": {"name": "get_time"}}]:
        req = adjusted("qwen3", tool_choice=choice)
        parser = make_parser(parser_class("qwen3", reasoning=True), req)
        assert req.resolve_reasoning_ended(parser, ids("user: q\nassistant:")) is True
        assert req._grammar_from_parser is True
    assert adjusted("qwen3", tool_choice="auto")._grammar_from_parser is False  # nothing constrained


HARMONY_REPLIES = [
    "<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final<|message|>rest<|return|>",
    "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|>"
    "<|start|>assistant<|channel|>final<|message|>rest",
    "<|channel|>analysis<|message|>hm<|end|><|channel|>final<|message|>rest, and more of the answer",
    # Decoded without its special tokens (a channel's name followed by a small letter would be
    # a word of prose, "analysist", so the reasoning starts with a capital, as models write it);
    # an answer long enough that the stream hands it over before the reply ends.
    "analysisHmm.assistantfinalrest",
    "analysisHmm.assistantfinalrest of the answer, written out at some length",
]


@pytest.mark.parametrize("reply", HARMONY_REPLIES)
def test_gpt_oss_reasoning_is_the_leading_analysis_messages(reply: str) -> None:
    # The final answer after the reasoning is handed over as its text alone: content as it
    # stands, whether the tool parser reads it or vLLM sends it on (no tool parser).
    want = codec.get_format("gpt_oss").parse(reply)
    assert want.content.startswith("rest")
    reasoning, rest = whole_reasoning("gpt_oss", reply)
    assert reasoning == want.reasoning and rest is not None and rest.startswith(want.content)
    assert codec.get_format("gpt_oss").parse(rest, prompt="").content == want.content
    cls = parser_class("gpt_oss", reasoning=True)
    req = request([TIME])
    assert make_parser(cls, req).parse(reply, req, enable_auto_tools=True)[:2] == (want.reasoning, want.content)
    for size in (1, 3, len(reply)):
        out, _ = stream("gpt_oss", reply, [TIME], [size])
        assert (out.reasoning, out.content) == (want.reasoning, want.content)
    for size in (1, 2, 5, len(reply)):  # the reasoning parser driven alone, as vLLM's own tests do
        reasoning_alone, content = streamed_reasoning("gpt_oss", reply, size)
        assert reasoning_alone == want.reasoning and content == rest


def test_gpt_oss_call_after_analysis_goes_to_the_tool_parser() -> None:
    reply = (
        "<|channel|>analysis<|message|>Need the time.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}<|call|>"
    )
    for size in (1, 4, len(reply)):
        out, _ = stream("gpt_oss", reply, [TIME], [size])
        assert out.reasoning == "Need the time." and out.content == ""
        assert [(c["name"], c["arguments"]) for c in out.calls] == [("get_time", "{}")]


# ---------------------------------------------------------------------------- calls that end reasoning


def _opened_by_the_prompt(name: str, case: Any) -> tuple[str, str] | None:
    """A golden reply whose reasoning a call ends, as the prompt opening the block gives it:
    (prompt, reply less its opener), or None where the reply does not open with the block."""
    fmt = codec.get_format(name)
    markers = reasoning_markers(fmt)
    opens = fmt.syntax().prompt_opens_reasoning
    if markers is None or opens is None or not case.text.startswith(markers.open + markers.open_rest):
        return None
    prompt = (case.prompt or "") + markers.open + markers.open_rest
    return (prompt, case.text.removeprefix(markers.open + markers.open_rest)) if opens(prompt) else None


ENDED_BY_A_CALL = [
    (name, case)
    for name, case in GOLDEN
    if name in plugin.REASONING_FORMATS
    and case.tools
    and "unclosed_reasoning" in case.expected["issues"]
    and case.expected["tool_calls"]
    and _opened_by_the_prompt(name, case) is not None
]


def test_replies_whose_reasoning_a_call_ends_exist() -> None:
    assert ENDED_BY_A_CALL, "no golden reply whose reasoning a call ends: the test below would test nothing"


@pytest.mark.parametrize("size", [1, 7, 100_000], ids=lambda s: str(s))
@pytest.mark.parametrize(("name", "case"), ENDED_BY_A_CALL, ids=[c.id for _, c in ENDED_BY_A_CALL])
def test_a_call_that_ends_reasoning_the_prompt_opened_is_sent(name: str, case: Any, size: int) -> None:
    # The reasoning parser reads the reply (the prompt opened the block) and hands the call over to
    # the tool parser: in one chunk or many, with the closer written after the calls (Kimi K2's
    # late </think>) read as the format reads it there, not sent as content.
    opened = _opened_by_the_prompt(name, case)
    assert opened is not None
    prompt, reply = opened
    want = codec.get_format(name).parse(reply, tools=case.tools, prompt=prompt)
    out, _ = stream(name, reply, case.tools, [size], prompt=prompt)
    assert (out.reasoning, out.content) == (want.reasoning, want.content)
    assert [(c["name"], c["arguments"]) for c in out.calls] == expected_calls(want)


def test_a_call_is_sent_when_its_closer_arrives() -> None:
    """A closer that arrives alone, after a line break the stream could not decide yet, ends the call
    in that delta: a token shorter than the holdback is asked again at every chunk."""
    # As vLLM's test_hermes_parser_streaming_failure_case_bug_19056 feeds it: the closer is a token.
    tools = [{"type": "function", "function": {"name": "final_answer", "parameters": {"type": "object"}}}]
    head = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n'
    parser = ToolParserManager.get_tool_parser("codec_hermes")(CharTokenizer())
    req = request(tools)
    for chunk in (head, "</tool_call>"):
        parser.extract_tool_calls_streaming("", "", chunk, [], [], [], req)
    assert parser.streamed_args_for_tool == ['{"trigger": true}']
