"""``codec.detect`` (chat templates) and ``codec.detect_reply`` (model replies).

Templates: the five reference templates, the ways a model repository ships them (a
``tokenizer_config.json``, named templates), hand-written variants in other Jinja spellings, and
templates of formats that are not ours. Replies: every golden reply and replies rendered from
generated messages.
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

import pytest
import strategies
from harness import GoldenCase, examples, load_golden
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec.detect import Detection

FORMATS = codec.formats()
SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"


def seed(name: str) -> str:
    """The reference template of format ``name`` (the test is skipped where the seeds are absent)."""
    path = SEEDS / codec.get_format(name).reference_template
    if not path.is_file():
        path = SEEDS.parent / "templates" / path.name  # a prompt variant's real-world template
    if not path.is_file():
        pytest.skip(f"reference template not found: {path}")
    return path.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- templates that are not ours

CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
LLAMA3 = (
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
    " + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
)
# DeepSeek's own tool calls: full-width bars and its own call tokens, not the ASCII pythonic format.
DEEPSEEK_NATIVE = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
    "{{ '<｜User｜>' + message['content'] }}"
    "{% elif message['tool_calls'] %}{{ '<｜Assistant｜><｜tool▁calls▁begin｜>' }}"
    "{% for tool in message['tool_calls'] %}"
    "{{ '<｜tool▁call▁begin｜>' + tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] }}"
    "{% endfor %}{{ '<｜tool▁calls▁end｜><｜end▁of▁sentence｜>' }}{% endif %}{% endfor %}"
)
MISTRAL = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + "
    "' [/INST]' }}{% elif message.tool_calls %}{{ '[TOOL_CALLS] ' + message.tool_calls | tojson + eos_token }}"
    "{% else %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}"
)
GEMMA3_PLAIN = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<start_of_turn>' + message['role'] + '\\n' + message['content'] | trim"
    " + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)
NOT_OURS = {
    "chatml_without_tools": CHATML,
    "llama3": LLAMA3,
    "deepseek_native_calls": DEEPSEEK_NATIVE,
    "mistral": MISTRAL,
    "gemma3_without_tool_code": GEMMA3_PLAIN,
    "empty": "",
    "plain_text": "Hello, world.",
}

# --------------------------------------------------------------------------- variants of ours, written out here

# Qwen2.5 style: ChatML with JSON calls, the quotes of "arguments" inside a single-quoted literal.
QWEN25_HERMES = (
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') }}"
    '{%- for tool_call in message.tool_calls or [] %}{{- \'\\n<tool_call>\\n{"name": "\' + tool_call.function.name'
    " + '\", \"arguments\": ' + tool_call.function.arguments | tojson + '}\\n</tool_call>' }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}{%- endfor %}"
)
# The same, in double-quoted Jinja literals: the template text reads \"arguments\".
HERMES_DOUBLE_QUOTED = (
    '{%- for message in messages %}{{- "<|im_start|>" + message.role + "\\n" + (message.content or "") }}'
    '{%- for tool_call in message.tool_calls or [] %}{{- "<tool_call>\\n{\\"name\\": \\"" + tool_call.function.name'
    ' + "\\", \\"arguments\\": " + tool_call.function.arguments | tojson + "}\\n</tool_call>" }}{%- endfor %}'
    '{{- "<|im_end|>\\n" }}{%- endfor %}'
)
# Qwen3-Coder style that also shows a JSON "arguments" key in its instructions: still XML calls.
QWEN3_CODER_MENTIONING_JSON = (
    '{{- \'<|im_start|>system\\nNever answer with {"name": ..., "arguments": ...}; use XML.<|im_end|>\\n\' }}'
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' }}"
    "{%- for tool_call in message.tool_calls or [] %}"
    "{{- '<tool_call>\\n<function=' + tool_call.function.name + '>\\n' }}"
    "{%- for k, v in tool_call.function.arguments | items %}{{- '<parameter=' + k + '>\\n' + v | string"
    " + '\\n</parameter>\\n' }}{%- endfor %}{{- '</function>\\n</tool_call>' }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}{%- endfor %}"
)
VARIANTS = {
    "qwen25_single_quoted": (QWEN25_HERMES, "hermes"),
    "hermes_double_quoted": (HERMES_DOUBLE_QUOTED, "hermes"),
    "qwen3_coder_mentioning_json": (QWEN3_CODER_MENTIONING_JSON, "qwen3_coder"),
}


@pytest.mark.parametrize("name", FORMATS)
def test_reference_templates_are_detected(name: str) -> None:
    assert codec.detect(seed(name)) == name


@pytest.mark.parametrize("name", FORMATS)
def test_tokenizer_config_wrappings(name: str) -> None:
    template = seed(name)
    config = {"bos_token": "<s>", "chat_template": template, "model_max_length": 8192}
    assert codec.detect(config) == name
    assert codec.detect(json.dumps(config)) == name
    assert codec.detect(json.dumps(config, indent=2, ensure_ascii=False)) == name
    named = [{"name": "default", "template": template}, {"name": "rag", "template": CHATML}]
    assert codec.detect({"chat_template": named}) == name
    assert codec.detect({"chat_template": named[::-1]}) == name  # "default" is tried first


@pytest.mark.parametrize("name", FORMATS)
def test_a_named_tool_template_beside_a_plain_default(name: str) -> None:
    # Some repositories keep a plain default and the tool-calling template under another name.
    named = [{"name": "default", "template": CHATML}, {"name": "tool_use", "template": seed(name)}]
    assert codec.detect(json.dumps({"chat_template": named})) == name


@pytest.mark.parametrize("name", FORMATS)
def test_a_default_of_another_format_wins(name: str) -> None:
    others = [other for other in FORMATS if other != name]
    named = [{"name": "tool_use", "template": seed(others[0])}, {"name": "default", "template": seed(name)}]
    assert codec.detect({"chat_template": named}) == name


@pytest.mark.parametrize("case", sorted(VARIANTS), ids=str)
def test_variants_in_other_spellings(case: str) -> None:
    template, expected = VARIANTS[case]
    assert codec.detect(template) == expected


@pytest.mark.parametrize("case", sorted(NOT_OURS), ids=str)
def test_templates_that_are_not_ours(case: str) -> None:
    assert codec.detect(NOT_OURS[case]) is None
    assert codec.detect({"chat_template": NOT_OURS[case]}) is None


def test_shared_call_tag_is_not_confused() -> None:
    """hermes and qwen3_coder both write <tool_call>: each reference template is only its own."""
    hermes, qwen = seed("hermes"), seed("qwen3_coder")
    assert (codec.detect(hermes), codec.detect(qwen)) == ("hermes", "qwen3_coder")
    assert codec.detect(hermes.replace("arguments", "args")) is None  # <tool_call> alone says nothing
    assert codec.detect(qwen.replace("<parameter=", "<param=")) is None


@examples(60)
@given(data=st.data())
def test_markers_of_several_formats(data: st.DataObject) -> None:
    """A template showing every marker of several formats is the one with the most markers; a tie is None."""
    chosen = data.draw(st.lists(st.sampled_from(FORMATS), min_size=1, max_size=3, unique=True), label="formats")
    markers = [m for name in chosen for m in codec.get_format(name).template_markers]
    filler = st.sampled_from(["{{ x }}", "{%- if y %}", "\n", " ", "text"])
    pieces = data.draw(st.permutations(markers + data.draw(st.lists(filler, max_size=6))), label="pieces")
    template = "".join(pieces)
    detected = codec.detect(template)
    # Markers of formats not chosen may appear by accident (joined pieces): weigh every format.
    present = [f for f in FORMATS if all(m in template for m in codec.get_format(f).template_markers)]
    most = max(len(codec.get_format(f).template_markers) for f in present)
    best = [f for f in present if len(codec.get_format(f).template_markers) == most]
    assert detected == (best[0] if len(best) == 1 else None)
    assert detected is None or detected in present


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ({"bos_token": "<s>"}, ValueError),
        ('{"bos_token": "<s>"}', ValueError),
        ({"chat_template": 3}, ValueError),
        ({"chat_template": []}, ValueError),
        ({"chat_template": [{"name": "default"}]}, ValueError),
        ('{"chat_template": ' + "[" * 100_000 + "]" * 100_000 + "}", ValueError),  # too deep to read
        (42, TypeError),
        (None, TypeError),
    ],
)
def test_bad_sources(source: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        codec.detect(source)


def test_template_text_starting_with_a_brace_is_a_template() -> None:
    assert codec.detect("{{ bos_token }}" + CHATML) is None
    assert codec.detect("{#- a comment -#}" + QWEN25_HERMES) == "hermes"


# --------------------------------------------------------------------------- replies


def reply_format(name: str) -> str:
    """The format whose replies ``name`` writes: itself, or the format whose reply syntax a prompt variant reuses."""
    from codec.formats import reply_owner

    return reply_owner(name)


def has_call_marker(name: str, text: str) -> bool:
    return any(re.search(pattern, text) for pattern in codec.get_format(name).reply_markers)


def assert_well_formed(detections: list[Detection]) -> None:
    assert all(0.0 <= d.confidence <= 1.0 for d in detections)
    assert [d.confidence for d in detections] == sorted((d.confidence for d in detections), reverse=True)
    assert len({d.format for d in detections}) == len(detections)
    assert {d.format for d in detections} <= {reply_format(name) for name in FORMATS}


GOLDEN = [case for name in FORMATS for case in load_golden(name)]


@pytest.mark.parametrize("case", GOLDEN, ids=lambda case: case.id)
def test_golden_replies(case: GoldenCase) -> None:
    detections = codec.detect_reply(case.text)
    assert_well_formed(detections)
    if has_call_marker(case.format, case.text):
        assert detections[0].format == reply_format(case.format)
        assert detections[0].confidence >= 0.5


def test_every_format_has_golden_replies_with_a_call_marker() -> None:
    """The golden test above bites for every format."""
    for name in FORMATS:
        assert any(has_call_marker(name, case.text) for case in GOLDEN if case.format == name), name


PLAIN = st.text(st.sampled_from(string.ascii_letters + string.digits + " .,!?\n"), min_size=1, max_size=40)


@pytest.mark.parametrize("name", FORMATS)
@examples(60)
@given(data=st.data())
def test_rendered_replies(name: str, data: st.DataObject) -> None:
    """A reply rendered from generated calls is its own format, and surer than plain text."""
    fmt = codec.get_format(name)
    tools = data.draw(st.one_of(st.none(), strategies.tools()), label="tools")
    content = data.draw(st.one_of(st.none(), PLAIN), label="content")
    calls = data.draw(strategies.tool_calls(tools, string_arguments=False), label="calls")
    reply = fmt.render_reply({"role": "assistant", "content": content, "tool_calls": calls})
    detections = codec.detect_reply(reply)
    assert_well_formed(detections)
    assert has_call_marker(name, reply)
    assert detections[0].format == reply_format(name)

    plain = codec.detect_reply(fmt.render_reply({"role": "assistant", "content": data.draw(PLAIN, label="plain")}))
    assert_well_formed(plain)
    assert all(d.confidence < detections[0].confidence for d in plain)


def test_plain_text_without_a_stop_token_gives_nothing() -> None:
    assert codec.detect_reply("") == []
    assert codec.detect_reply("The weather in Paris is sunny.") == []


def test_detect_reply_takes_text() -> None:
    with pytest.raises(TypeError):
        codec.detect_reply(b"<tool_call>")  # type: ignore[arg-type]
