"""``codec.detect`` and ``codec.detect_template`` (chat templates), ``codec.detect_reply`` (model
replies) and ``codec detect``.

Templates: the reference templates, verified; the ways a model repository ships them (a
``tokenizer_config.json``, named templates); near misses, whose replies look like a format's but
whose prompts differ (hand-written variants, a one-byte edit of every reference template, the
example template that lacks a byte, real templates of other models in ``../shared``), never
named by ``detect``; and templates of formats that are not ours. Replies: every golden reply and
replies rendered from generated messages.
"""

from __future__ import annotations

import io
import json
import re
import string
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import jinja2
import pytest
import strategies
from harness import GoldenCase, examples, load_golden
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec._compare import format_outcome
from codec.cli import main
from codec.detect import PROBES, Detection, TemplateDetection
from codec.formats import reply_owner

FORMATS = codec.formats()
ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"
FAMILIES = ROOT.parent / "shared" / "templates" / "families"
EXAMPLES = ROOT / "examples"


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
    assert codec.detect_template(seed(name)) == TemplateDetection(name, verified=True)


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_renders_the_probes_with_tools(name: str) -> None:
    """A verified template is one whose prompts were compared, not one that raises wherever its
    format does: every format renders every probe that declares tools (``hermes3``'s template,
    like its format, raises without tools)."""
    fmt = codec.get_format(name)
    for conversation in PROBES.values():
        if conversation["tools"]:
            assert format_outcome(fmt, conversation).startswith("RenderError: ") is False


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
    """Their replies are the format's (the markers, in whatever spelling), their prompts are not."""
    template, expected = VARIANTS[case]
    found = codec.detect_template(template)
    assert found is not None and (found.format, found.verified) == (expected, False)
    assert found.difference is not None and found.difference.probe in PROBES
    assert codec.detect(template) is None


@pytest.mark.parametrize("case", sorted(NOT_OURS), ids=str)
def test_templates_that_are_not_ours(case: str) -> None:
    assert codec.detect(NOT_OURS[case]) is None
    assert codec.detect({"chat_template": NOT_OURS[case]}) is None


def test_shared_call_tag_is_not_confused() -> None:
    """hermes and qwen3_coder both write <tool_call>: each reference template is only its own."""
    hermes, qwen = seed("hermes"), seed("qwen3_coder")
    assert (codec.detect(hermes), codec.detect(qwen)) == ("hermes", "qwen3_coder")
    assert codec.detect_template(hermes.replace("arguments", "args")) is None  # <tool_call> alone says nothing
    assert codec.detect_template(qwen.replace("<parameter=", "<param=")) is None


@examples(40)
@given(data=st.data())
def test_markers_of_several_formats(data: st.DataObject) -> None:
    """A template showing every marker of several formats looks like the one with the most markers
    (of a tie, the one whose prompts agree the longest), and renders the prompts of none."""
    chosen = data.draw(st.lists(st.sampled_from(FORMATS), min_size=1, max_size=3, unique=True), label="formats")
    markers = [m for name in chosen for m in codec.get_format(name).template_markers]
    # A template that compiles (blanks around the expression: a marker may end or start with a brace).
    filler = st.sampled_from([" {{ x }} ", "{%- if y %}{% endif %}", "\n", " ", "text"])
    pieces = data.draw(st.permutations(markers + data.draw(st.lists(filler, max_size=6))), label="pieces")
    template = "".join(pieces)
    found = codec.detect_template(template)
    # Markers of formats not chosen may appear by accident (joined pieces): weigh every format.
    present = [f for f in FORMATS if all(m in template for m in codec.get_format(f).template_markers)]
    most = max(len(codec.get_format(f).template_markers) for f in present)
    best = [f for f in present if len(codec.get_format(f).template_markers) == most]
    assert found is not None and found.format in best and not found.verified
    assert codec.detect(template) is None


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
    assert codec.detect_template("{{ bos_token }}" + CHATML) is None
    found = codec.detect_template("{#- a comment -#}" + QWEN25_HERMES)
    assert found is not None and found.format == "hermes"


# --------------------------------------------------------------------------- near misses


@pytest.mark.parametrize("name", FORMATS)
def test_a_one_byte_edit_of_a_reference_template_is_a_near_miss(name: str) -> None:
    """One byte added after the first stop token the template writes: the markers still say the
    format, its prompts no longer are the template's, and the difference shows the byte."""
    fmt = codec.get_format(name)
    template = seed(name)
    # (a template that writes its stop token from a variable: after its first marker instead)
    mark = fmt.stop_token if fmt.stop_token in template else next(m for m in fmt.template_markers if m in template)
    cut = template.index(mark) + len(mark)
    found = codec.detect_template(template[:cut] + "X" + template[cut:])
    assert found is not None and (found.format, found.verified) == (name, False)
    difference = found.difference
    assert difference is not None and difference.probe in PROBES
    assert (
        difference.template[difference.offset] == "X" and difference.format[: difference.offset] in difference.template
    )
    assert difference.conversation == PROBES[difference.probe]
    assert codec.detect(template[:cut] + "X" + template[cut:]) is None


def test_the_example_templates() -> None:
    """``examples/hermes_template.jinja`` renders hermes' prompts; ``chat_template.jinja``, the same
    less the ``/`` of each ``</tool_call>``, does not, and the difference is that byte (no
    ``../shared`` needed)."""
    assert codec.detect((EXAMPLES / "hermes_template.jinja").read_text(encoding="utf-8")) == "hermes"
    broken = (EXAMPLES / "chat_template.jinja").read_text(encoding="utf-8")
    found = codec.detect_template(broken)
    assert found is not None and (found.format, found.verified) == ("hermes", False)
    assert found.difference is not None and found.difference.probe == "a call and its result"
    offset = found.difference.offset
    assert (found.difference.template[offset - 1 : offset + 1], found.difference.format[offset - 1 : offset + 1]) == (
        "<t",
        "</",
    )
    assert codec.detect(broken) is None


@pytest.mark.parametrize(
    ("path", "name"),
    [("qwen3_5/Qwen3.5-4B.jinja", "qwen3_5"), ("nemotron/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", "nemotron3")],
)
def test_real_templates_whose_replies_are_qwen3_coders(path: str, name: str | None) -> None:
    """Qwen3.5 and Nemotron 3 write Qwen3-Coder's XML calls, but prompts of their own (Qwen3.5's
    generation prompt opens reasoning; Nemotron writes an empty system turn): named for their own
    format where there is one, never for qwen3_coder."""
    if not (FAMILIES / path).is_file():
        pytest.skip(f"{FAMILIES / path} is not available (../shared is absent)")
    template = (FAMILIES / path).read_text(encoding="utf-8")
    found = codec.detect_template(template)
    assert found is not None and reply_owner(found.format) == "qwen3_coder"
    if name is not None:
        assert (found.format, found.verified) == (name, True)
        assert codec.detect(template) == name
        return
    assert not found.verified
    assert found.difference is not None and found.difference.probe == "a user's message"
    assert codec.detect(template) is None


def test_a_verified_named_template_wins_over_a_near_miss(tmp_path: Path) -> None:
    hermes, near = (EXAMPLES / "hermes_template.jinja").read_text(encoding="utf-8"), QWEN25_HERMES
    named = [{"name": "default", "template": near}, {"name": "tool_use", "template": hermes}]
    assert codec.detect_template({"chat_template": named}) == TemplateDetection("hermes", True, None, "tool_use")
    found = codec.detect_template({"chat_template": [named[0], {"name": "rag", "template": CHATML}]})
    assert found is not None and (found.format, found.verified, found.template_name) == ("hermes", False, "default")


def test_a_format_registered_later_is_verified_with_no_list_to_update(monkeypatch: pytest.MonkeyPatch) -> None:
    """detect tries every registered format: one that renders the example's broken template (a
    variant of hermes, whose markers it shares) is named for it as soon as it is registered."""
    broken = (EXAMPLES / "chat_template.jinja").read_text(encoding="utf-8")
    hermes = type(codec.get_format("hermes"))

    class Typo(hermes):  # type: ignore[misc, valid-type]
        name = "hermes_typo"

        def render(self, messages: Any, tools: Any = None, **options: Any) -> str:
            options.setdefault("template", broken)
            return super().render(messages, tools, **options)

    assert codec.detect(broken) is None
    monkeypatch.setitem(codec.formats.__globals__["_INSTANCES"], "hermes_typo", Typo())
    assert codec.detect(broken) == "hermes_typo"
    assert codec.detect((EXAMPLES / "hermes_template.jinja").read_text(encoding="utf-8")) == "hermes"


def test_a_template_that_does_not_compile_raises_its_syntax_error() -> None:
    with pytest.raises(jinja2.TemplateSyntaxError):
        codec.detect_template("{% for m in messages %}{{ m.content }")
    with pytest.raises(jinja2.TemplateSyntaxError):
        codec.detect("{% if tools %}<tool_call>")


# --------------------------------------------------------------------------- codec detect


def detect_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(["detect", *argv])
    return status, out.getvalue(), err.getvalue()


def test_cli_names_a_verified_format_and_exits_0() -> None:
    assert detect_cli(str(EXAMPLES / "hermes_template.jinja")) == (0, "hermes\n", "")
    status, out, _ = detect_cli("--json", str(EXAMPLES / "hermes_template.jinja"))
    assert (status, json.loads(out)) == (
        0,
        {"format": "hermes", "verified": True, "template": None, "difference": None},
    )


def test_cli_says_a_near_miss_in_words_and_exits_1() -> None:
    """``codec detect t.jinja && codec render -f "$(codec detect t.jinja)" ...`` never renders with
    a format whose prompts are not the template's: no bare name on stdout, exit status 1."""
    status, out, err = detect_cli(str(EXAMPLES / "chat_template.jinja"))
    lines = out.splitlines()
    assert (status, err) == (1, "")
    assert (
        lines[0]
        == "no known format: the replies look like hermes's, but hermes renders the template's prompts differently"
    )
    assert lines[1].startswith("first difference for a call and its result ({") and " at offset " in lines[1]
    assert lines[2].startswith("  template ...") and "<' | 'tool_call>" in lines[2]
    assert lines[3].startswith("  hermes   ...") and "<' | '/tool_call>" in lines[3]
    status, out, _ = detect_cli("--json", str(EXAMPLES / "chat_template.jinja"))
    report = json.loads(out)
    assert status == 1 and (report["format"], report["verified"], report["template"]) == ("hermes", False, None)
    difference = report["difference"]
    assert set(difference) == {"probe", "conversation", "offset", "line", "column", "template", "format"}
    assert difference["template"][difference["offset"]] == "t" and difference["format"][difference["offset"]] == "/"


def test_cli_json_of_no_format_and_of_replies(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(CHATML, encoding="utf-8")
    assert detect_cli(str(path)) == (1, "no known format\n", "")
    status, out, _ = detect_cli("--json", str(path))
    empty = {"format": None, "verified": False, "template": None, "difference": None, "derived": None}
    assert (status, json.loads(out)) == (1, empty)  # (derive refuses it: it renders no tool calls)
    reply = tmp_path / "reply.txt"
    reply.write_text('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call><|im_end|>', encoding="utf-8")
    status, out, _ = detect_cli("--reply", "--json", str(reply))
    assert status == 0 and json.loads(out)[0] == {"format": "hermes", "confidence": 1.0}


def test_cli_template_that_does_not_compile_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text("{% for m in messages %}{{ m.content }\n", encoding="utf-8")
    status, out, err = detect_cli(str(path))
    assert (status, out) == (2, "") and err.startswith("codec: error: template error (line 1)")


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
#: Golden replies of a format's deviations that are another format's own syntax (or its deviation,
#: read with fewer issues): that format is named first, and the case's format after it. Mistral
#: Small 3.2's call without ``[CALL_ID]`` is how Ministral 3 writes a call; the older list form
#: that both write by mistake is Mistral Nemo's.
ANOTHERS_SYNTAX = {
    "mistral_small3_2/call_without_id": "ministral3",
    "mistral_small3_2/args_marker_lost": "ministral3",
    "mistral_small3_2/args_marker_lost_twice_vllm": "ministral3",
    "mistral_small3_2/args_marker_lost_after_content_vllm": "ministral3",
    "mistral_small3_2/older_list_form_vllm": "mistral_nemo",
    "mistral_small3_2/older_list_form_with_ids": "mistral_nemo",
    "mistral_small3_2/two_lists_vllm": "mistral_nemo",
    "ministral3/older_list_form_vllm": "mistral_nemo",
    "ministral3/two_lists_vllm": "mistral_nemo",
}


@pytest.mark.parametrize("case", GOLDEN, ids=lambda case: case.id)
def test_golden_replies(case: GoldenCase) -> None:
    detections = codec.detect_reply(case.text)
    assert_well_formed(detections)
    other = ANOTHERS_SYNTAX.get(f"{case.format}/{case.name}")
    if other is not None:
        assert detections[0].format == other
        assert reply_format(case.format) in [d.format for d in detections]
    elif has_call_marker(case.format, case.text):
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


# ---------------------------------------------------------------------------- replies stripped of their call tokens

#: A FunctionGemma call whose <start_function_call> and <end_function_call> a server stripped (its
#: special tokens), and the same call in Gemma 4's own quote token.
FUNCTIONGEMMA_STRIPPED = "call:get_weather{city:<escape>Paris<escape>}"
GEMMA4_STRIPPED = 'call:get_weather{city:<|"|>Paris<|"|>}'


def confidences(reply: str) -> dict[str, float]:
    return {d.format: d.confidence for d in codec.detect_reply(reply)}


@pytest.mark.parametrize("tail", ["", "<start_function_response>", "\nThe weather is fetched."])
def test_a_stripped_functiongemma_call_is_told_by_its_string_quote(tail: str) -> None:
    found = confidences(FUNCTIONGEMMA_STRIPPED + tail)
    assert max(found, key=found.__getitem__) == "functiongemma"
    assert found["functiongemma"] > found["gemma4"]
    assert codec.detect_reply(FUNCTIONGEMMA_STRIPPED + tail)[0].format == "functiongemma"


def test_a_stripped_gemma4_call_is_told_by_its_string_quote() -> None:
    found = confidences(GEMMA4_STRIPPED)
    assert found["gemma4"] > found["functiongemma"]
    assert codec.detect_reply(GEMMA4_STRIPPED)[0].format == "gemma4"


@pytest.mark.parametrize("reply", ["call:get_weather{days:3}", "call:get_weather{city:Paris}"])
def test_a_stripped_call_without_a_quote_token_is_ambiguous(reply: str) -> None:
    # Nothing in the reply tells the two apart (a server that strips special tokens strips
    # FunctionGemma's <escape> too): both are given, equally confident.
    found = confidences(reply)
    assert found["gemma4"] == found["functiongemma"] > 0


def test_repairs_lower_a_formats_confidence() -> None:
    # Read with one kind of repair (the missing call tokens) against two (and a value kept unquoted).
    found = confidences(FUNCTIONGEMMA_STRIPPED)
    assert codec.get_format("functiongemma").parse(FUNCTIONGEMMA_STRIPPED).tool_calls[0].function.arguments == {
        "city": "Paris"
    }
    assert found["functiongemma"] - found["gemma4"] == pytest.approx(0.15 - 0.075)
