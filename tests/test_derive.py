"""codec.derive: a format fitted to a chat template from its probe renders, or the reason it is refused.

The acceptance test derives each built-in format's reference template (from ../shared, skipped
without it) and expects the built-in's spec; the toy templates below, written for these tests, are
members of two families with markers no built-in format uses, and the refusals each show one reason.
"""

from __future__ import annotations

import functools
import io
import json
import warnings
from contextlib import redirect_stdout
from pathlib import Path

import pytest

import codec
from codec.cli import main
from codec.derive import PROBE_TOOLS, DeriveError, derive_source, derive_spec
from codec.formats import builtins
from codec.wire import WireSpec

SHARED = Path(__file__).resolve().parents[1].parent / "shared"

#: Formats whose reference template's history writes calls otherwise than the format's replies.
NOT_DERIVED = {
    "gpt_oss": "the template's history writes a call's recipient before its channel "
    "(' to=functions.NAME<|channel|>commentary json'), the harmony family and the model after it",
}

#: A JSON call object between <call> tags, turns ended by <|end|> (a json_object member).
JSON_TOY = """\
{%- for m in messages -%}
<|turn|>{{ m.role }}
{% if m.content %}{{ m.content }}{% endif %}
{%- for c in m.tool_calls or [] %}
<call>
{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}
</call>
{%- endfor %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|turn|>assistant
{% endif -%}
"""

#: A function tag and a tag per argument, raw string values (an xml_params member).
XML_TOY = """\
{%- for m in messages -%}
{{ '[' + m.role + ']' }}
{%- if m.content %}{{ m.content }}{% endif %}
{%- for c in m.tool_calls or [] %}
{{- '\\n<act>\\n<fn=' + c.function.name + '>' }}
{%- for k, v in c.function.arguments.items() %}
{{- '\\n<arg=' + k + '>\\n' + (v if v is string else v | tojson) + '\\n</arg>' }}
{%- endfor %}
{{- '\\n</fn>\\n</act>' }}
{%- endfor %}
{{- '</turn>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt %}[assistant]{% endif -%}
"""

#: A JSON list of call objects between <calls> and </calls> (a json_object member whose list has a closer).
LISTED_TOY = """\
{%- for m in messages -%}
<|turn|>{{ m.role }}
{% if m.content %}{{ m.content }}{% endif %}
{%- if m.tool_calls %}<calls>[
{%- for c in m.tool_calls %}{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}
{%- if not loop.last %}, {% endif %}{% endfor %}]</calls>{% endif %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|turn|>assistant
{% endif -%}
"""

#: Key and value tags with a line break between them and none before a key (an arg_pairs member
#: whose spacing differs on each side of the key), reasoning in <r> tags.
PAIRS_TOY = """\
{%- for m in messages -%}
<|turn|>{{ m.role }}
{%- if m.reasoning_content %}<r>{{ m.reasoning_content }}</r>{% endif %}
{%- if m.content %}{{ m.content }}{% endif %}
{%- for c in m.tool_calls or [] %}
<act>{{ c.function.name }}
{%- for k, v in c.function.arguments.items() %}<k>{{ k }}</k>
<v>{{ v if v is string else v | tojson }}</v>{% endfor %}</act>
{%- endfor %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|turn|>assistant{% endif -%}
"""

#: Turns of text only: calls are never written.
#: The whole turn one JSON list of call objects, ", " apart, its content left out (named_json with a
#: separator: a bare list).
BARE_LIST_TOY = """\
{%- for m in messages -%}
<|turn|>{{ m.role }}
{% if m.tool_calls %}[{% for c in m.tool_calls %}
{%- set a = c.function.arguments | tojson -%}
{"fn": "{{ c.function.name }}", "args": {{ a }}}
{%- if not loop.last %}, {% endif %}{% endfor %}]{% else %}{{ m.content }}{% endif %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|turn|>assistant
{% endif -%}
"""

#: One call object a line between <acts> lines (the line breaks read as the opener's and each call's).
LINES_TOY = """\
{%- for m in messages -%}
<|turn|>{{ m.role }}
{{ m.content or '' }}
{%- if m.tool_calls %}<acts>
{% for c in m.tool_calls %}{"tool": "{{ c.function.name }}", "input": {{ c.function.arguments | tojson }}}
{% endfor %}</acts>{% endif %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|turn|>assistant
{% endif -%}
"""

#: Each call opened by '<<fn>> ' and closed by nothing, a line apart.
UNCLOSED_TOY = """\
{%- for m in messages -%}
<|turn|>{{ m.role }}
{{ m.content or '' }}
{%- for c in m.tool_calls or [] %}{{ '\n<<fn>> ' }}
{%- set a = c.function.arguments | tojson -%}
{"name": "{{ c.function.name }}", "arguments": {{ a }}}
{%- endfor %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|turn|>assistant
{% endif -%}
"""

#: Calls in a section; the history then writes an empty turn of text after a turn of calls.
AFTER_STOP_TOY = """\
{%- for m in messages -%}
<|turn|>{{ m.role }}
{{ m.content or '' }}
{%- if m.tool_calls %}<calls>{% for c in m.tool_calls %}@{{ c.function.name }}=>{{ c.function.arguments | tojson }};
{%- endfor %}</calls><|end|><|turn|>assistant
{% endif %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|turn|>assistant
{% endif -%}
"""

#: Arguments written as Python's str() of the dict ({'city': 'Paris'}), each call in <run> tags.
PY_ARGS_TOY = """\
{%- for m in messages -%}
<|turn|>{{ m.role }}
{{ m.content or '' }}
{%- for c in m.tool_calls or [] %}<run>{{ c.function.name }}: {{ c.function.arguments|string }}</run>{% endfor %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|turn|>assistant
{% endif -%}
"""

#: Python-style calls one a line in a <do> block, no list brackets, strings between ' as they are and
#: every other value JSON (a call_list member without brackets, values "raw_single").
LINED_CALLS_TOY = """\
{%- for m in messages -%}
<|turn|>{{ m.role }}
{{ m.content or '' }}
{%- if m.tool_calls %}<do>
{% for c in m.tool_calls %}{{ c.function.name }}(
{%- for k, v in c.function.arguments.items() %}{{ k }}={{ "'" + v + "'" if v is string else v | tojson }}
{%- if not loop.last %}, {% endif %}{% endfor %})
{% endfor %}</do>{% endif %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|turn|>assistant
{% endif -%}
"""

#: The generation prompt opens reasoning with a phrase ("Let me think:") its history never writes; the
#: history writes the reasoning first, then "[ANSWER]", then the content and the calls.
PROMPT_REASONS_TOY = """\
{%- for m in messages -%}
<|turn|>{{ m.role }}
{% if m.reasoning_content %}{{ m.reasoning_content }}
[ANSWER]
{% endif %}{{ m.content or '' }}
{%- if m.tool_calls %}<calls>[
{%- for c in m.tool_calls %}{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}
{%- if not loop.last %}, {% endif %}{% endfor %}]</calls>{% endif %}<|end|>
{% endfor -%}
{%- if add_generation_prompt %}<|turn|>assistant
Let me think:
{% endif -%}
"""

#: As above, but the history leaves reasoning out: the phrase opens nothing the history shows.
PROMPT_ONLY_TOY = PROMPT_REASONS_TOY.replace("{% if m.reasoning_content %}", "{% if false %}")

#: Arguments in a code fence after the name's line (markers that start with a line break).
FENCED_TOY = AFTER_STOP_TOY.replace("=>{{", "\n```\n{{").replace("}};", "}}\n```;")

NO_CALLS = """\
{%- for m in messages %}<|turn|>{{ m.role }}
{{ m.content }}<|end|>
{% endfor %}{% if add_generation_prompt %}<|turn|>assistant
{% endif %}"""

#: Refuses every assistant turn with calls.
RAISES = NO_CALLS.replace(
    "{{ m.content }}", "{% if m.tool_calls %}{{ raise_exception('no calls here') }}{% endif %}{{ m.content }}"
)

#: Asks the model to continue after 'ASSISTANT:' but writes past turns after 'assistant:'.
HISTORY = JSON_TOY.replace("<|turn|>assistant\n{% endif", "ASSISTANT:{% endif")

#: Calls written as 'CALL name with k=v;' lines: no family writes them so.
NO_FIT = NO_CALLS.replace(
    "{{ m.content }}",
    "{{ m.content }}{% for c in m.tool_calls or [] %}CALL {{ c.function.name }} with "
    "{% for k, v in c.function.arguments.items() %}{{ k }}={{ v }};{% endfor %}{% endfor %}",
)


def _reference(cls: type[codec.Format]) -> str:
    for folder in (SHARED / "seeds", SHARED / "templates", SHARED):
        path = folder / cls.reference_template
        if path.is_file():
            return path.read_text(encoding="utf-8")
    pytest.skip(f"reference template {cls.reference_template} is not available (../shared is absent)")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(cls.name, marks=pytest.mark.xfail(strict=True, reason=NOT_DERIVED[cls.name]))
        if cls.name in NOT_DERIVED
        else cls.name
        for cls in builtins()
    ],
)
def test_every_reference_template_derives_its_builtin_spec(name: str) -> None:
    fmt = codec.get_format(name)
    found = derive_spec(_reference(type(fmt)), **dict(fmt.tokenizer_variables))
    assert found.spec == fmt.wire
    assert name in found.builtins
    assert found.arguments == fmt.template_arguments


@pytest.mark.parametrize("name", ["qwen3_coder", "deepseek_v3_1", "mistral_nemo"])
def test_the_families_alone_find_a_builtin_spec_s_markers(name: str) -> None:
    fmt = codec.get_format(name)
    found = derive_spec(_reference(type(fmt)), builtins=False, **dict(fmt.tokenizer_variables))
    assert found.builtins == ()
    mine, theirs = found.spec.to_json(), fmt.wire.to_json()
    for key in ("family", "call", "block", "name", "parameter", "values", "stop"):
        assert mine[key] == theirs[key], key


@pytest.mark.parametrize(
    ("template", "family", "markers"),
    [
        (JSON_TOY, "json_object", {"call": ("<call>", "</call>"), "stop": "<|end|>"}),
        (XML_TOY, "xml_params", {"call": ("<act>", "</act>"), "name": ("<fn=", ">"), "stop": "</turn>"}),
        (LISTED_TOY, "json_object", {"block": ("<calls>", "</calls>"), "separator": ", ", "stop": "<|end|>"}),
        (BARE_LIST_TOY, "named_json", {"block": ("[", "]"), "call": ('{"fn": "', "}"), "separator": ", "}),
        (LINES_TOY, "named_json", {"block": ("<acts>\n", "</acts>"), "call": ('{"tool": "', "}\n")}),
        (UNCLOSED_TOY, "named_json", {"block": ("", ""), "call": ('<<fn>> {"name": "', "}"), "separator": "\n"}),
        (AFTER_STOP_TOY, "named_json", {"block": ("<calls>", "</calls>"), "call": ("@", ";"), "stop": "<|end|>"}),
        (FENCED_TOY, "named_json", {"call": ("@", "\n```;"), "name": ("", "\n```\n")}),
        (PY_ARGS_TOY, "named_json", {"call": ("<run>", "</run>"), "name": ("", ": "), "values": "python_repr"}),
        (LINED_CALLS_TOY, "call_list", {"block": ("<do>\n", "\n</do>"), "brackets": False, "values": "raw_single"}),
        (
            PROMPT_REASONS_TOY,
            "json_object",
            {"block": ("<calls>", "</calls>"), "reasoning": ("Let me think:", "[ANSWER]")},
        ),
        (
            PAIRS_TOY,
            "arg_pairs",
            {
                "call": ("<act>", "</act>"),
                "argument_separator": "",
                "value_separator": "\n",
                "reasoning": ("<r>", "</r>"),
            },
        ),
    ],
)
def test_a_toy_member_derives_and_its_format_works(template: str, family: str, markers: dict[str, object]) -> None:
    fmt = codec.derive(template)
    spec = fmt.wire
    assert spec.family == family and fmt.derivation.builtins == ()  # type: ignore[attr-defined]
    for key, value in markers.items():
        assert getattr(spec, key) == value
    messages = [{"role": "user", "content": "Hi"}]
    assert fmt.render(messages, PROBE_TOOLS, add_generation_prompt=True) == codec.jinja.render_template(
        template, messages, PROBE_TOOLS, add_generation_prompt=True
    )
    call = {"name": "record", "arguments": {"text": 'a "quoted" <b>\nline', "count": 7, "items": [1, 2]}}
    reply = fmt.render_reply(
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]}
    )
    whole = fmt.parse(reply, tools=PROBE_TOOLS)
    assert [(c.function.name, c.function.arguments) for c in whole.tool_calls] == [(call["name"], call["arguments"])]
    stream = fmt.stream(tools=PROBE_TOOLS)
    for char in reply:
        stream.feed(char)
    stream.close()
    assert stream.result.model_dump() == whole.model_dump()
    grammar = fmt.grammar(PROBE_TOOLS, dialect="lark")
    assert "record" in grammar


@pytest.mark.parametrize(
    ("template", "reason", "words"),
    [
        (NO_CALLS, "no_calls", "renders no tool calls"),
        (RAISES, "raises", "no calls here"),
        (HISTORY, "history", "history form differs"),
        (PROMPT_ONLY_TOY, "history", "Let me think:"),
        (NO_FIT, "no_fit", "closest"),
    ],
)
def test_refusals_say_why(template: str, reason: str, words: str) -> None:
    with pytest.raises(DeriveError) as caught:
        codec.derive(template)
    assert caught.value.reason == reason
    assert words in str(caught.value)
    assert isinstance(caught.value, codec.CodecError)


#: JSON_TOY that leaves a last assistant turn out of its history (the turn is fitted as written
#: before a later user's message).
MOVED_TOY = JSON_TOY.replace(
    "{%- for m in messages -%}", "{%- for m in messages -%}{%- if not (loop.last and m.role == 'assistant') -%}", 1
).replace("{% endfor -%}", "{% endif -%}{% endfor -%}")

#: Writes users' messages alone, never an assistant's turn.
NO_TURNS = """\
{%- for m in messages if m.role == 'user' %}USER: {{ m.content }}
{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"""

#: JSON_TOY whose tools block writes each parameter's description, raising on one without it.
DESCRIBED_TOY = JSON_TOY.replace(
    "{%- for m in messages -%}",
    "{%- for t in tools or [] %}{% for k, v in t.function.parameters.properties.items() %}"
    "{{ k + ': ' + v.description }}\n{% endfor %}{% endfor -%}\n{%- for m in messages -%}",
    1,
)


def test_a_last_turn_the_history_leaves_out_is_fitted_before_a_later_message() -> None:
    from codec.derive import BEFORE_LATER

    found = derive_spec(MOVED_TOY)
    assert found.spec.call == ("<call>", "</call>") and found.spec.stop == "<|end|>"
    assert BEFORE_LATER in found.notes
    assert BEFORE_LATER not in derive_spec(JSON_TOY).notes


def test_a_template_of_no_assistant_turns_is_refused_as_writing_no_calls() -> None:
    with pytest.raises(DeriveError) as caught:
        codec.derive(NO_TURNS)
    assert caught.value.reason == "no_calls"


def test_every_probe_parameter_is_described() -> None:
    assert derive_spec(DESCRIBED_TOY).spec == derive_spec(JSON_TOY).spec
    for tool in PROBE_TOOLS:
        assert all(p.get("description") for p in tool["function"]["parameters"]["properties"].values())


def test_added_tokens_snap_the_stop_token() -> None:
    # Without tokens, the stop token is the first word of what ends a turn; with them, the given
    # token it starts with, whatever it is made of.
    template = JSON_TOY.replace("<|end|>", "END OF TURN")
    assert derive_spec(template).spec.stop == "END"
    found = derive_spec(template, added_tokens=["END OF TURN"])
    assert found.spec.stop == "END OF TURN"


def _cli(*argv: str, command: str = "derive") -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        status = main([command, *argv])
    return status, out.getvalue()


def test_cli_prints_the_spec_or_the_reason(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.jinja", tmp_path / "bad.jinja"
    good.write_text(JSON_TOY, encoding="utf-8")
    bad.write_text(NO_CALLS, encoding="utf-8")
    status, out = _cli(str(good))
    assert status == 0 and "derived a json_object spec" in out and '"<call>"' in out
    status, out = _cli(str(good), "--json")
    data = json.loads(out)
    assert status == 0 and data["derived"] is True
    assert WireSpec.from_json(data["spec"]) == derive_spec(JSON_TOY).spec
    status, out = _cli(str(bad))
    assert status == 1 and "not derived (no_calls)" in out
    status, out = _cli(str(bad), "--json")
    assert status == 1 and json.loads(out)["reason"] == "no_calls"


def test_cli_reads_a_tokenizer_config(tmp_path: Path) -> None:
    config = {
        "chat_template": JSON_TOY.replace("<|end|>", "END OF TURN"),
        "added_tokens_decoder": {"7": {"content": "END OF TURN", "special": True}},
    }
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    status, out = _cli(str(path), "--json")
    assert status == 0 and json.loads(out)["spec"]["stop"] == "END OF TURN"


def test_detect_says_it_derived_what_no_format_renders(tmp_path: Path) -> None:
    path = tmp_path / "toy.jinja"
    path.write_text(JSON_TOY, encoding="utf-8")
    status, out = _cli(str(path), command="detect")
    assert status == 1  # still no known format: the derived one is no name to render with
    assert (
        out
        == "no known format\nderived from the template: replies of the json_object family ('codec derive' prints it)\n"
    )
    status, out = _cli("--json", str(path), command="detect")
    data = json.loads(out)
    assert status == 1 and data["format"] is None
    assert WireSpec.from_json(data["derived"]["spec"]) == derive_spec(JSON_TOY).spec


def test_check_falls_back_to_the_derived_format(tmp_path: Path) -> None:
    pytest.importorskip("hypothesis")
    path = tmp_path / "toy.jinja"
    path.write_text(XML_TOY, encoding="utf-8")
    status, out = _cli("-n", "5", "--json", str(path), command="check")
    report = json.loads(out)
    assert status == 0 and report["ok"] is True and report["format"] == "derived"
    assert report["derived"]["spec"]["family"] == "xml_params"
    assert report["checks"]["decode"]["ok"] is True and "round_trip" in report["checks"]


def test_derive_source_reads_a_tokenizer_config() -> None:
    config = {
        "chat_template": [{"name": "other", "template": NO_CALLS}, {"name": "default", "template": JSON_TOY}],
        "added_tokens_decoder": {"3": {"content": "<|end|>", "special": True}},
        "eos_token": {"content": "<|end|>"},
    }
    fmt = derive_source(json.dumps(config))
    assert fmt.wire.call == ("<call>", "</call>") and fmt.tokenizer_variables == {"eos_token": "<|end|>"}
    assert derive_source(JSON_TOY).wire == fmt.wire


def test_the_vllm_plugin_derives_the_template_its_variable_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codec.integrations import vllm as plugin

    plugin.derived_format.cache_clear()
    monkeypatch.delenv(plugin.TEMPLATE_VARIABLE, raising=False)
    with pytest.raises(codec.CodecError, match=plugin.TEMPLATE_VARIABLE):
        plugin.parser_format(plugin.DERIVED)
    path = tmp_path / "chat_template.jinja"
    path.write_text(XML_TOY, encoding="utf-8")
    monkeypatch.setenv(plugin.TEMPLATE_VARIABLE, str(path))
    plugin.derived_format.cache_clear()
    try:
        assert plugin.parser_format(plugin.DERIVED).wire == derive_spec(XML_TOY).spec
        assert plugin.parser_format("hermes") is codec.get_format("hermes")
        assert plugin.parser_name(plugin.DERIVED) == "codec_derived"
    finally:
        plugin.derived_format.cache_clear()


#: Replies of the two toys' derived formats and the calls they hold (the closer of a listed member's
#: list may be missing; a reply without the line break between key and value reads the same).
GOLDEN_REPLIES = [
    (
        LISTED_TOY,
        'Let me look.<calls>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}, '
        '{"name": "search_notes", "arguments": {"query": "a </calls> b"}}]</calls><|end|>',
        "Let me look.",
        [("get_weather", {"city": "Paris", "days": 2}), ("search_notes", {"query": "a </calls> b"})],
    ),
    (
        LISTED_TOY,
        '<calls>[{"name": "search_notes", "arguments": {"query": "x", "limit": 3}}]<|end|>',
        "",
        [("search_notes", {"query": "x", "limit": 3})],
    ),
    (LISTED_TOY, "No call: a <calls> tag in prose.<|end|>", "No call: a <calls> tag in prose.", []),
    (
        BARE_LIST_TOY,
        '[{"fn": "get_weather", "args": {"city": "Oslo"}}, {"fn": "record", "args": {"items": ["a, b", null]}}]<|end|>',
        "",
        [("get_weather", {"city": "Oslo"}), ("record", {"items": ["a, b", None]})],
    ),
    (BARE_LIST_TOY, "Yes, it rains, sadly.<|end|>", "Yes, it rains, sadly.", []),
    (
        PY_ARGS_TOY,
        "<run>record: {'text': 'it\\'s \"so\"\\n', 'items': [None, True, 1.5]}</run><|end|>",
        "",
        [("record", {"text": 'it\'s "so"\n', "items": [None, True, 1.5]})],
    ),
    (
        LINES_TOY,
        'On it.<acts>\n{"tool": "search_notes", "input": {"query": "q"}}\n'
        '{"tool": "record", "input": {}}\n</acts><|end|>',
        "On it.",
        [("search_notes", {"query": "q"}), ("record", {})],
    ),
    (
        UNCLOSED_TOY,
        '\n<<fn>> {"name": "get_weather", "arguments": {"city": "Rome"}}\n'
        '<<fn>> {"name": "record", "arguments": {}}<|end|>',
        "\n\n",  # (without a section, the blanks before and between calls are text: kept, not dropped)
        [("get_weather", {"city": "Rome"}), ("record", {})],
    ),
    (
        PAIRS_TOY,
        "<act>get_weather<k>city</k>\n<v>Rome</v><k>days</k>\n<v>4</v></act>\n"
        "<act>record<k>items</k><v>[1, null]</v></act><|end|>",
        "",
        [("get_weather", {"city": "Rome", "days": 4}), ("record", {"items": [1, None]})],
    ),
]


@pytest.mark.parametrize(("template", "reply", "content", "calls"), GOLDEN_REPLIES)
def test_a_derived_format_reads_golden_replies(
    template: str, reply: str, content: str, calls: list[tuple[str, dict[str, object]]]
) -> None:
    fmt = codec.derive(template)
    whole = fmt.parse(reply, tools=PROBE_TOOLS)
    assert (whole.content or "") == content
    assert [(c.function.name, c.function.arguments) for c in whole.tool_calls] == calls
    stream = fmt.stream(tools=PROBE_TOOLS)
    for start in range(0, len(reply), 3):
        stream.feed(reply[start : start + 3])
    stream.close()
    assert stream.result.model_dump() == whole.model_dump()


def test_a_reasoning_opener_only_the_generation_prompt_writes_is_read_after_it() -> None:
    fmt = codec.derive(PROMPT_REASONS_TOY)
    prompt = fmt.render([{"role": "user", "content": "Hi"}], PROBE_TOOLS, add_generation_prompt=True)
    assert prompt.endswith("Let me think:\n")
    reply = 'It rains.\n[ANSWER]\nSure.<calls>[{"name": "record", "arguments": {"count": 2}}]</calls><|end|>'
    whole = fmt.parse(reply, tools=PROBE_TOOLS, prompt=prompt)
    assert (whole.reasoning, whole.content) == ("It rains.", "Sure.")
    assert [(c.function.name, c.function.arguments) for c in whole.tool_calls] == [("record", {"count": 2})]
    stream = fmt.stream(tools=PROBE_TOOLS, prompt=prompt)
    for char in reply:
        stream.feed(char)
    stream.close()
    assert stream.result.model_dump() == whole.model_dump()


def test_the_outcome_table_script_derives_a_folder(tmp_path: Path) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / "derive_table.py"
    spec = importlib.util.spec_from_file_location("derive_table", path)
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    (tmp_path / "lists.jinja").write_text(BARE_LIST_TOY, encoding="utf-8")
    (tmp_path / "none.jinja").write_text(NO_CALLS, encoding="utf-8")
    (tmp_path / "index.json").write_text(json.dumps({"lists.jinja": {"source": "a toy"}}), encoding="utf-8")
    out = io.StringIO()
    with redirect_stdout(out):
        status = table.main([str(tmp_path), "--json"])
    rows = {row["name"]: row for row in json.loads(out.getvalue())}
    assert status == 0 and set(rows) == {"lists", "none"}
    assert rows["lists"]["outcome"] == "derived" and rows["lists"]["source"] == "a toy"
    assert (rows["lists"]["whole"], rows["lists"]["streamed"]) == ("ok", "ok")
    assert (rows["none"]["outcome"], rows["none"]["reason"]) == ("refused", "no_calls")


# --------------------------------------------------------------------------- decoding prompts


#: JSON_TOY with the tools declared as JSON lines in a turn of their own.
TOOLS_TOY = JSON_TOY.replace(
    "{%- for m in messages -%}",
    "{%- if tools %}<|tools|>\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|end|>\n{% endif -%}\n"
    "{%- for m in messages -%}",
    1,
)

#: TOOLS_TOY with each tool written as a line of its name and description, not as JSON.
PROSE_TOOLS_TOY = TOOLS_TOY.replace("{{ t | tojson }}", "- {{ t.function.name }}: {{ t.function.description }}")


def _conversation() -> list[dict[str, object]]:
    call = {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    other = {"id": "call_1", "type": "function", "function": {"name": "record", "arguments": {"text": 'a <b> "c"'}}}
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [call, other]},
        {"role": "tool", "tool_call_id": "call_0", "name": "get_weather", "content": "Rain, 9C"},
        {"role": "tool", "tool_call_id": "call_1", "name": "record", "content": "stored"},
        {"role": "assistant", "content": "It rains."},
        {"role": "user", "content": "Thanks!"},
    ]


@functools.cache
def _derived(template: str, builtins: bool = True, **variables: str) -> codec.Format:
    from codec.derive import _derived_format

    found = derive_spec(template, builtins=builtins, **variables)
    return _derived_format(template, found, "derived", variables)


def _assert_decodes(fmt: codec.Format, messages: list[dict[str, object]], tools: object) -> codec.Conversation:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", codec.RenderWarning)
        prompt = fmt.render(messages, tools, add_generation_prompt=True)
        decoded = fmt.decode(prompt)
        again = fmt.render(decoded.messages, decoded.tools, add_generation_prompt=decoded.add_generation_prompt)
    assert again == prompt
    calls = [(c["function"]["name"], c["function"]["arguments"]) for m in messages for c in m.get("tool_calls") or []]
    got = [(c.function.name, c.function.arguments) for m in decoded.messages for c in m.tool_calls or []]
    assert got == calls
    assert [m.content for m in decoded.messages if m.role == "tool"] == [
        m["content"] for m in messages if m["role"] == "tool"
    ]
    return decoded


@pytest.mark.parametrize("template", [JSON_TOY, XML_TOY, PAIRS_TOY, TOOLS_TOY])
def test_a_derived_format_decodes_its_prompts(template: str) -> None:
    fmt = _derived(template)
    decoded = _assert_decodes(fmt, _conversation(), PROBE_TOOLS)
    assert [m.role for m in decoded.messages] == [m["role"] for m in _conversation()]
    assert decoded.messages[2].content == "Checking." and decoded.add_generation_prompt
    # Tools the template writes as JSON are read back; a template that writes none leaves them out.
    assert decoded.tools == (codec.jinja.prepare_tools(PROBE_TOOLS) if "tojson }}\n{%" in template else None)


def test_reasoning_decodes_where_the_template_writes_it() -> None:
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello.", "reasoning_content": "Greet back."},
        {"role": "user", "content": "Bye"},
    ]
    decoded = _assert_decodes(_derived(PAIRS_TOY), messages, None)
    assert decoded.messages[1].reasoning_content == "Greet back."


@pytest.mark.parametrize("name", ["qwen3", "minimax_m2", "lfm2", "mistral_nemo"])
def test_a_reference_template_s_prompts_decode_with_the_families_alone(name: str) -> None:
    fmt = codec.get_format(name)
    derived = _derived(_reference(type(fmt)), False, **dict(fmt.tokenizer_variables))
    assert derived.derivation.builtins == ()  # type: ignore[attr-defined]
    messages = _conversation()
    for message in messages:  # (Mistral's templates take ids of nine letters and digits alone)
        for call in message.get("tool_calls") or []:
            call["id"] = call["id"].replace("call_", "callA000")
        if "tool_call_id" in message:
            message["tool_call_id"] = str(message["tool_call_id"]).replace("call_", "callA000")
    decoded = _assert_decodes(derived, messages, PROBE_TOOLS)
    assert decoded.tools == codec.jinja.prepare_tools(PROBE_TOOLS)


def test_a_prompt_that_does_not_render_back_is_refused_where_it_differs() -> None:
    fmt = _derived(JSON_TOY)
    prompt = fmt.render(_conversation(), PROBE_TOOLS, add_generation_prompt=True)
    broken = prompt.replace("<|turn|>user\nThanks", "<|turn|>usr\nThanks", 1)
    with pytest.raises(codec.ParseError) as caught:
        fmt.decode(broken)
    assert isinstance(caught.value, codec.CodecError)
    assert "first difference" in str(caught.value) and "usr" in str(caught.value)
    assert caught.value.pos == broken.index("<|turn|>usr") + len("<|turn|>us")


def test_tools_written_otherwise_than_as_json_are_refused_not_taken_for_text() -> None:
    fmt = _derived(PROSE_TOOLS_TOY)
    prompt = fmt.render(_conversation(), PROBE_TOOLS, add_generation_prompt=True)
    with pytest.raises(codec.ParseError, match="otherwise than as JSON"):
        fmt.decode(prompt)
