"""codec.jinja renders chat templates exactly as transformers does.

Differential: every reference template in ``../shared/seeds`` renders generated conversations
identically with ``codec.jinja.render_template`` and with transformers' own renderer (the path
``apply_chat_template`` takes: ``_normalize_chat_messages`` then ``render_jinja_template``),
or both raise. Unit tests pin the environment's behaviour (errors, normalisation, tojson, the
sandbox) with expected values, and compare them with transformers when it is installed.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import itertools
import json
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import strategies
from harness import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2.exceptions import SecurityError

from codec import jinja as codec_jinja
from codec.errors import RenderError
from codec.jinja import prepare_messages, prepare_tools, render_template
from codec.models import FunctionCall, Message, Tool, ToolCall

SEEDS_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
SEEDS = sorted(SEEDS_DIR.glob("*.jinja")) if SEEDS_DIR.is_dir() else []


def _transformers() -> ModuleType:
    module = pytest.importorskip(
        "transformers.utils.chat_template_utils",
        reason="transformers is needed to compare with the reference renderer",
    )
    assert isinstance(module, ModuleType)
    return module


def reference(
    template: str, messages: Any, tools: Any = None, *, add_generation_prompt: bool = False, **variables: Any
) -> str:
    """What ``tokenizer.apply_chat_template(..., tokenize=False)`` renders, without a tokenizer."""
    ctu = _transformers()
    chat = ctu._normalize_chat_messages(messages)
    rendered, _ = ctu.render_jinja_template(
        conversations=[chat],
        tools=tools,
        chat_template=template,
        add_generation_prompt=add_generation_prompt,
        **variables,
    )
    return str(rendered[0])


def outcome(render: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    """("ok", text) or ("error", message): what rendering gave."""
    try:
        return "ok", render(*args, **kwargs)
    except RenderError as exc:
        return "error", str(exc)


# --------------------------------------------------------------------------- differential, on the seeds


@pytest.mark.skipif(not SEEDS, reason=f"reference templates not found in {SEEDS_DIR}")
@pytest.mark.parametrize("seed", SEEDS, ids=lambda path: path.stem)
@examples(300)
@given(conversation=strategies.conversations(content_parts=True))
def test_seed_renders_like_transformers(seed: Path, conversation: dict[str, Any]) -> None:
    _transformers()
    template = seed.read_text(encoding="utf-8")
    messages, tools = conversation["messages"], conversation["tools"]
    agp, variables = conversation["add_generation_prompt"], conversation["variables"]
    before = copy.deepcopy(conversation)

    try:
        expected: tuple[str, str] = ("ok", reference(template, messages, tools, add_generation_prompt=agp, **variables))
    except Exception as exc:  # the template raised in transformers
        expected = ("error", str(exc))
    got = outcome(render_template, template, messages, tools, add_generation_prompt=agp, **variables)

    assert got == expected
    assert conversation == before, "rendering must not modify the caller's messages"


# --------------------------------------------------------------------------- small templates, pinned


CHAT = [{"role": "user", "content": "hi"}]
CHAT2 = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]

# (id, template, messages, tools, variables, expected output or RenderError message)
CASES: list[tuple[str, str, list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any], str]] = [
    (
        "trim_blocks",
        "{% for m in messages %}\n  {% if m %}\n[{{ m.content }}]\n  {% endif %}\n{% endfor %}",
        CHAT,
        None,
        {},
        "[hi]\n",
    ),
    ("expr_keeps_newline", "{{ 'a' }}\n{{ 'b' }}", CHAT, None, {}, "a\nb"),
    (
        "tojson_spacing",
        "{{ {'a': 'ã<>&\\'', 'b': [1, 2.0, none, true]} | tojson }}",
        CHAT,
        None,
        {},
        '{"a": "ã<>&\'", "b": [1, 2.0, null, true]}',
    ),
    ("tojson_indent", "{{ {'a': [1]} | tojson(indent=2) }}", CHAT, None, {}, '{\n  "a": [\n    1\n  ]\n}'),
    (
        "tojson_separators",
        "{{ {'b': 1, 'a': 'é'} | tojson(separators=(',', ':'), sort_keys=true) }}",
        CHAT,
        None,
        {},
        '{"a":"é","b":1}',
    ),
    ("tojson_ascii", "{{ 'é' | tojson(ensure_ascii=true) }}", CHAT, None, {}, '"\\u00e9"'),
    (
        "tojson_big",
        "{{ [12345678901234567890, 1e20, 0.1] | tojson }}",
        CHAT,
        None,
        {},
        "[12345678901234567890, 1e+20, 0.1]",
    ),
    (
        "str_of_values",
        "{{ none }} {{ true }} {{ [1, 'a'] }} {{ {'k': none} }}",
        CHAT,
        None,
        {},
        "None True [1, 'a'] {'k': None}",
    ),
    (
        "dictsort_case",
        "{% for k, v in {'b': 1, 'A': 2, 'a': 3, 'Z': 4} | dictsort %}{{ k }}{% endfor %}",
        CHAT,
        None,
        {},
        "AabZ",
    ),
    (
        "raise_exception",
        "{{ raise_exception('Conversation roles must alternate!') }}",
        CHAT,
        None,
        {},
        "Conversation roles must alternate!",
    ),
    (
        "undefined_attribute",
        "{{ messages[0].nothing.deeper }}",
        CHAT,
        None,
        {},
        "'dict object' has no attribute 'nothing'",
    ),
    ("type_error", "{{ messages[0].content + 1 }}", CHAT, None, {}, 'can only concatenate str (not "int") to str'),
    (
        "string_arguments_items",
        "{% for k, v in messages[0].arguments | items %}{% endfor %}",
        [{"role": "assistant", "arguments": '{"a": 1}'}],
        None,
        {},
        "Can only get item pairs from a mapping.",
    ),
    ("generation_noop", "<{% generation %}{{ messages[0].content }}{% endgeneration %}>", CHAT, None, {}, "<hi>"),
    (
        "generation_scope",
        "{% set x = 1 %}{% generation %}{% set x = 2 %}{{ x }}{% endgeneration %}{{ x }}",
        CHAT,
        None,
        {},
        "21",
    ),
    (
        "loopcontrols",
        "{% for i in range(9) %}{% if i == 1 %}{% continue %}{% endif %}{% if i > 3 %}{% break %}{% endif %}"
        "{{ i }}{% endfor %}",
        CHAT,
        None,
        {},
        "023",
    ),
    (
        "dict_global",
        "{{ dict(a=1, b=none) | tojson }} {{ dict.fromkeys(['x', 'y'], 0) | tojson }}",
        CHAT,
        None,
        {},
        '{"a": 1, "b": null} {"x": 0, "y": 0}',
    ),
    (
        "namespace",
        "{% set ns = namespace(n=0, self=1) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}"
        "{{ ns.n }}{{ ns.self }}",
        CHAT,
        None,
        {},
        "11",
    ),
    (
        "tools_none",
        "{{ tools is none }} {{ tools is defined }} {{ documents is none }}",
        CHAT,
        None,
        {},
        "True True True",
    ),
    (
        "tools_empty",
        "{{ tools is none }} {{ tools | length }} {{ 'yes' if tools else 'no' }}",
        CHAT,
        [],
        {},
        "False 0 no",
    ),
    (
        "variables",
        "{{ bos_token }}{{ enable_thinking }}|{{ eos_token }}|",
        CHAT,
        None,
        {"bos_token": "<s>", "enable_thinking": False},
        "<s>False||",
    ),
    (
        "none_keys_dropped",
        "{{ messages[0] | tojson }}|{{ messages[0].content is defined }}",
        [{"role": "assistant", "content": None, "tool_calls": [{"id": None, "function": {"name": "f"}}], "name": None}],
        None,
        {},
        '{"role": "assistant", "tool_calls": [{"id": null, "function": {"name": "f"}}]}|False',
    ),
    (
        "tool_none_kept",
        "{{ tools | tojson }}",
        CHAT,
        [{"type": "function", "function": {"name": "f", "description": None}}],
        {},
        '[{"type": "function", "function": {"name": "f", "description": null}}]',
    ),
    (
        "reasoning_alias",
        "{{ messages[0] | tojson }}",
        [{"role": "assistant", "content": "a", "reasoning": "r"}],
        None,
        {},
        '{"thinking": "r", "role": "assistant", "content": "a", "reasoning": "r", "reasoning_content": "r"}',
    ),
    (
        "thinking_alias",
        "{{ messages[0] | tojson }}",
        [{"role": "assistant", "content": "a", "thinking": "t"}],
        None,
        {},
        '{"thinking": "t", "role": "assistant", "content": "a", "reasoning_content": "t"}',
    ),
    (
        "reasoning_precedence",
        "{{ messages[0] | tojson }}",
        [{"role": "assistant", "reasoning": "r", "thinking": "t", "reasoning_content": "rc", "content": "a"}],
        None,
        {},
        '{"thinking": "t", "role": "assistant", "reasoning": "r", "reasoning_content": "rc", "content": "a"}',
    ),
    (
        "empty_reasoning_aliased",
        "{{ messages[0] | tojson }}",
        [{"role": "assistant", "reasoning_content": ""}],
        None,
        {},
        '{"thinking": "", "role": "assistant", "reasoning_content": ""}',
    ),
    # what the limits check (loops, slices, ~, formatting, building filters, methods, macros) is unchanged
    (
        "loop_features",
        "{% for m in messages %}{{ loop.index }}/{{ loop.length }}{{ '!' if loop.last }}{{ loop.revindex }} "
        "{% endfor %}",
        CHAT2,
        None,
        {},
        "1/22 2/2!1 ",
    ),
    (
        "loop_filtered_else",
        "{% for i in range(5) if i is odd %}{{ i }}{% else %}none{% endfor %}"
        "{% for i in [] %}{% else %}empty{% endfor %}",
        CHAT2,
        None,
        {},
        "13empty",
    ),
    (
        "loop_recursive",
        "{% for item in [{'c': [{'c': []}, {'c': [{'c': []}]}]}] recursive %}"
        "[{{ loop.depth }}{{ loop(item.c) }}]{% endfor %}",
        CHAT2,
        None,
        {},
        "[1[2][2[3]]]",
    ),
    (
        "slices_and_concat",
        "{{ 'abcdef'[1:4] ~ 'xy'[::-1] ~ 1 ~ none }} {{ messages[::-1][0].role }} {{ [1, 2, 3][:-1] }} "
        "{{ [1, 2] ~ (3,) }}",
        CHAT2,
        None,
        {},
        "bcdyx1None assistant [1, 2] [1, 2](3,)",
    ),
    (
        "formatting",
        "{{ '%-4s|%03d|%.2f|%*d' % ('a', 7, 3.14159, 3, 1) }} {{ '%(a)s%%' % {'a': 5} }} "
        "{{ '{0:>5}|{1!r}|{0}'.format('b', 'c') }} {{ '{a}'.format_map({'a': 1}) }} {{ '%s-%s'|format(1, 2) }}",
        CHAT2,
        None,
        {},
        "a   |007|3.14|  1 5%     b|'c'|b 1 1-2",
    ),
    (
        "building_filters",
        "{{ [[1], [2, 3]]|sum(start=[]) }} {{ 'a b c'|wordwrap(3) }} {{ 'x'|center(5) }}| {{ [1, 2, 3]|join('-') }} "
        "{{ ['a', 'b']|batch(3, 'z')|list }} {{ [1, 2, 3]|slice(2)|list }} {{ 'a\nb'|indent(2, true) }} "
        "{{ {'a': [1]}|pprint }} {{ [1]|tojson(indent=2) }}",
        CHAT2,
        None,
        {},
        "[1, 2, 3] a b\nc   x  | 1-2-3 [['a', 'b', 'z']] [[1, 2], [3]]   a\n  b {'a': [1]} [\n  1\n]",
    ),
    (
        "arithmetic",
        "{{ 2 ** 100 }} {{ 3 * 4 }} {{ 'ab' * 2 }} {{ [0] * 3 }} {{ 7 % 3 }} {{ 10 - 20 }} {{ 1 + 2 }} "
        "{{ 7 // 2 }} {{ 1 / 4 }}",
        CHAT2,
        None,
        {},
        "1267650600228229401496703205376 12 abab [0, 0, 0] 1 -10 3 3 0.25",
    ),
    (
        "methods",
        "{{ 'a'.ljust(3) }}|{{ 'a\tb'.expandtabs(4) }}|{{ 'aXa'.replace('a', 'bb') }}|{{ ','.join(['x', 'y']) }}|"
        "{{ (1).to_bytes(2, 'big') }}|{{ 'ab'.translate({97: 'zz'}) }}|{{ 'ab'.zfill(4) }}",
        CHAT2,
        None,
        {},
        "a  |a   b|bbXbb|x,y|b'\\x00\\x01'|zzb|00ab",
    ),
    (
        "macros_and_caller",
        "{% macro m(x) %}<{{ caller(x) }}>{% endmacro %}{% call(y) m(2) %}{{ y * 3 }}{% endcall %}"
        "{% set b %}[{{ m is defined }}]{% endset %}{{ b }}{% filter upper %}up{% endfilter %}",
        CHAT2,
        None,
        {},
        "<6>[True]UP",
    ),
    (
        "ranges",
        "{{ range(3)|list }} {{ range(10, 0, -3)|list }} {{ lipsum(1, false, 5, 6)|wordcount }}",
        CHAT2,
        None,
        {},
        "[0, 1, 2] [10, 7, 4, 1] 5",
    ),
    (
        "sandbox_list_append",
        "{% set x = [] %}{{ x.append(1) }}",
        CHAT,
        None,
        {},
        "access to attribute 'append' of 'list' object is unsafe.",
    ),
    (
        "sandbox_dict_update",
        "{{ messages[0].update({'role': 'system'}) }}",
        CHAT,
        None,
        {},
        "access to attribute 'update' of 'dict' object is unsafe.",
    ),
    (
        "sandbox_dunder",
        "{{ ''.__class__.__mro__ }}",
        CHAT,
        None,
        {},
        "access to attribute '__class__' of 'str' object is unsafe.",
    ),
]

RENDER_ERRORS = {
    "raise_exception",
    "undefined_attribute",
    "type_error",
    "string_arguments_items",
    "sandbox_list_append",
    "sandbox_dict_update",
    "sandbox_dunder",
}


@pytest.mark.parametrize(
    ("template", "messages", "tools", "variables", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_pinned(
    request: pytest.FixtureRequest,
    template: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    variables: dict[str, Any],
    expected: str,
) -> None:
    case_id = request.node.callspec.id
    got = outcome(render_template, template, messages, tools, **variables)
    assert got == ("error" if case_id in RENDER_ERRORS else "ok", expected)


@pytest.mark.parametrize(
    ("template", "messages", "tools", "variables"),
    [case[1:5] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_pinned_like_transformers(
    template: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, variables: dict[str, Any]
) -> None:
    _transformers()
    try:
        expected = ("ok", reference(template, messages, tools, **variables))
    except Exception as exc:
        expected = ("error", str(exc))
    assert outcome(render_template, template, messages, tools, **variables) == expected


# --------------------------------------------------------------------------- errors


def test_raise_exception_keeps_message_and_cause() -> None:
    with pytest.raises(RenderError, match=r"^No messages provided\.$") as info:
        render_template("{{ raise_exception('No messages provided.') }}", CHAT, None)
    assert type(info.value.__cause__).__name__ == "TemplateError"


@pytest.mark.parametrize(
    "template", ["{% if messages %}", "{{ messages[0] ", "{% for %}{% endfor %}", "{% endgeneration %}"]
)
def test_syntax_error_is_render_error(template: str) -> None:
    with pytest.raises(RenderError) as info:
        render_template(template, CHAT, None)
    assert type(info.value.__cause__).__name__ == "TemplateSyntaxError"
    assert str(info.value)


NAMESPACE_ABUSE = [
    "{% set ns = namespace(_hidden=1) %}",
    "{% set ns = namespace() %}{% set ns._hidden = 1 %}",
    "{% set ns = namespace({'__class__': 1}) %}",
]


@pytest.mark.parametrize("template", NAMESPACE_ABUSE)
def test_namespace_refuses_underscore_names(template: str) -> None:
    with pytest.raises(RenderError, match="underscore"):
        render_template(template, CHAT, None)


@pytest.mark.parametrize("template", NAMESPACE_ABUSE)
def test_namespace_refuses_underscore_names_like_transformers(template: str) -> None:
    with pytest.raises(Exception, match="underscore"):
        reference(template, CHAT)


#: The main ways out of a sandbox: dunder walks to ``object.__subclasses__()``, the ``__globals__`` of
#: every function the environment hands out, the ``attr`` filter and format strings as attribute
#: access, a macro's or ``self``'s internals, and the mutating methods of the messages.
ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{% for c in [].__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ joiner.__init__.__globals__.os }}",
    "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "{{ namespace.__init__.__globals__.os }}",
    "{{ raise_exception.__globals__['sys'].modules }}",
    "{{ strftime_now.__globals__['sys'] }}",
    "{{ dict.__call__.__globals__['sys'] }}",
    "{{ dict.fromkeys.__func__.__globals__ }}",
    "{{ (messages | attr('__class__')).__mro__ }}",
    "{{ '{0.__class__.__mro__}'.format('') }}",
    "{{ '{0.__globals__}'.format(cycler.__init__) }}",
    "{{ '%s' | format(cycler.__init__.__globals__) }}",
    "{% macro m() %}{% endmacro %}{{ m._func.__globals__ }}",
    "{{ self._TemplateReference__context.environment }}",
    "{% for x in [1] %}{{ loop.__class__.__init__.__globals__ }}{% endfor %}",
    "{{ messages.pop() }}",
    "{{ messages[0].clear() }}",
    "{{ messages.__setitem__(0, 1) }}",
    "{% set ns = namespace() %}{% set ns.__class__ = 1 %}",
]


@pytest.mark.parametrize("template", ESCAPES)
def test_sandbox_escapes_are_render_errors(template: str) -> None:
    """Each escape is a SecurityError of the sandbox, surfaced as a RenderError."""
    with pytest.raises(RenderError) as info:
        render_template(template, CHAT, None)
    assert isinstance(info.value.__cause__, SecurityError)


@pytest.mark.parametrize("template", ESCAPES)
def test_sandbox_escapes_are_refused_like_transformers(template: str) -> None:
    with pytest.raises(SecurityError):
        reference(template, CHAT)


def test_empty_conversation_is_render_error() -> None:
    with pytest.raises(RenderError, match="empty conversation"):
        render_template("{{ messages | length }}", [], None)


def test_message_that_is_not_a_mapping_is_type_error() -> None:
    with pytest.raises(TypeError):
        prepare_messages(["hello"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        prepare_tools(["tool"])  # type: ignore[list-item]


def test_strftime_now() -> None:
    year = datetime.now().year
    assert render_template("{{ strftime_now('%Y') }}", CHAT, None) in {str(year), str(year + 1)}


def test_compiled_templates_are_reused() -> None:
    template = "{{ messages[0].content }}!"
    assert render_template(template, CHAT, None) == "hi!"
    hits = codec_jinja._compile.cache_info().hits
    assert render_template(template, [{"role": "user", "content": "x"}], None) == "x!"
    assert codec_jinja._compile.cache_info().hits == hits + 1


# --------------------------------------------------------------------------- normalisation


class Color(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Part:
    type: str
    text: str


def test_prepare_messages_from_pydantic_keeps_argument_dicts() -> None:
    message = Message(
        role="assistant",
        reasoning_content="because",
        tool_calls=[
            ToolCall(
                id="c1", function=FunctionCall.model_validate({"name": "f", "arguments": '{"a": [1, {"b": null}]}'})
            )
        ],
    )
    assert prepare_messages([message]) == [
        {
            "thinking": "because",
            "role": "assistant",
            "reasoning_content": "because",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": [1, {"b": None}]}}}
            ],
        }
    ]


def test_prepare_tools() -> None:
    assert prepare_tools(None) is None
    assert prepare_tools([]) == []
    tool = Tool.model_validate({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}})
    plain = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    assert prepare_tools([tool]) == [plain]
    assert prepare_tools((plain,)) == [plain]


def test_plain_types_only() -> None:
    messages = [
        {
            "role": "user",
            "content": [Part("text", "hi")],
            "color": Color.RED,
            "level": Level.HIGH,
            "when": datetime(2020, 1, 1),
        }
    ]
    prepared = prepare_messages(messages)
    assert prepared == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "color": "red", "level": 3, "when": "<datetime>"}
    ]
    assert type(prepared[0]["color"]) is str and type(prepared[0]["level"]) is int
    assert prepare_messages(prepared) == prepared  # idempotent
    template = (
        "{{ messages[0].color }} {{ messages[0].level }} {{ messages[0].when }} {{ messages[0].content[0].text }}"
    )
    assert render_template(template, messages, None) == "red 3 <datetime> hi"
    assert render_template(template, messages, None) == reference(template, messages)
    variables: dict[str, Any] = {"bos_token": Color.RED, "obj": object()}
    assert render_template("{{ bos_token }} {{ obj }}", CHAT, None, **variables) == "red <object>"


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": None, "reasoning": "r"},
        {"role": "assistant", "thinking": "t", "reasoning": None},
        {"role": "assistant", "reasoning_content": "a", "thinking": "b", "reasoning": "c"},
        {"role": "assistant", "reasoning_content": None, "thinking": "", "reasoning": "c"},
        {"role": "user", "content": "no reasoning", "name": None},
        {"role": "tool", "content": "x", "tool_call_id": None},
    ],
)
def test_prepare_messages_like_transformers(message: dict[str, Any]) -> None:
    ctu = _transformers()
    chat = ctu._alias_reasoning_fields(ctu._plain_template_data(ctu._normalize_chat_messages([message])))
    prepared = prepare_messages([message])
    assert prepared == chat
    assert [list(m.items()) for m in prepared] == [list(m.items()) for m in chat]  # same key order too


def test_apply_chat_template_is_the_reference_path() -> None:
    """The reference used above is what a real tokenizer's apply_chat_template renders."""
    _transformers()
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers builds the in-memory tokenizer")
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "<bos>": 1, "<eos>": 2}
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend, bos_token="<bos>", eos_token="<eos>", unk_token="[UNK]"
    )
    templates = [seed.read_text(encoding="utf-8") for seed in SEEDS]
    templates.append("{{ bos_token }}{{ messages | tojson }}{{ tools }}{{ eos_token }}")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Sé breve.", "name": None},
        {"role": "user", "content": 'tempo em <tool_call> "SP"?'},
        {
            "role": "assistant",
            "content": None,
            "reasoning": "pensar",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": {"c": "São Paulo"}}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "21°C"},
    ]
    tools: list[dict[str, Any]] = [
        {
            "type": "function",
            "function": {"name": "w", "parameters": {"type": "object", "properties": {"c": {"type": "string"}}}},
        }
    ]
    variables = {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "[UNK]"}  # the tokenizer's special tokens
    for template, agp in itertools.product(templates, (False, True)):
        real = tokenizer.apply_chat_template(
            copy.deepcopy(messages),
            tools=list(tools),
            chat_template=template,
            tokenize=False,
            add_generation_prompt=agp,
        )
        assert real == reference(template, messages, tools, add_generation_prompt=agp, **variables)
        assert real == render_template(template, messages, tools, add_generation_prompt=agp, **variables)


# --------------------------------------------------------------------------- the strategies reach what matters


def _has(predicate: Any) -> Any:
    return lambda c: any(predicate(m) for m in c["messages"])


def _consecutive_tools(c: dict[str, Any]) -> bool:
    roles = [m["role"] for m in c["messages"]]
    return any(a == b == "tool" for a, b in itertools.pairwise(roles))


def _calls(c: dict[str, Any]) -> list[dict[str, Any]]:
    return [call for m in c["messages"] for call in m.get("tool_calls") or []]


def _ints(value: Any) -> list[int]:
    if isinstance(value, dict):
        return [i for item in value.values() for i in _ints(item)]
    if isinstance(value, list):
        return [i for item in value for i in _ints(item)]
    return [value] if type(value) is int else []


def _floats(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [f for item in value.values() for f in _floats(item)]
    if isinstance(value, list):
        return [f for item in value for f in _floats(item)]
    return [value] if type(value) is float else []


def _dict_arguments(c: dict[str, Any]) -> list[dict[str, Any]]:
    return [call["function"]["arguments"] for call in _calls(c) if isinstance(call["function"]["arguments"], dict)]


FEATURES = {
    "system_first": lambda c: c["messages"][0]["role"] == "system",
    "late_system": lambda c: any(m["role"] == "system" for m in c["messages"][1:]),
    "no_system": lambda c: all(m["role"] != "system" for m in c["messages"]),
    "parallel_calls": _has(lambda m: len(m.get("tool_calls") or []) >= 2),
    "string_arguments": lambda c: any(isinstance(call["function"]["arguments"], str) for call in _calls(c)),
    "call_without_id": lambda c: any("id" not in call for call in _calls(c)),
    "consecutive_tools": _consecutive_tools,
    "tool_with_id_and_name": _has(lambda m: m["role"] == "tool" and "name" in m and "tool_call_id" in m),
    "tool_with_name_only": _has(lambda m: m["role"] == "tool" and "name" in m and "tool_call_id" not in m),
    "reasoning_content": _has(lambda m: "reasoning_content" in m),
    "content_and_calls": _has(lambda m: m.get("tool_calls") and m.get("content")),
    "content_none": _has(lambda m: "content" in m and m["content"] is None),
    "empty_content": _has(lambda m: m.get("content") == ""),
    "blank_content": _has(lambda m: isinstance(m.get("content"), str) and m["content"] and not m["content"].strip()),
    "marker_text": _has(lambda m: "<tool_call>" in json.dumps(m, ensure_ascii=False)),
    "non_ascii": _has(lambda m: not json.dumps(m, ensure_ascii=False).isascii()),
    "tools_none": lambda c: c["tools"] is None,
    "tools_empty": lambda c: c["tools"] == [],
    "generation_prompt": lambda c: c["add_generation_prompt"],
    "thinking_on": lambda c: c["variables"].get("enable_thinking") is True,
    "thinking_off": lambda c: c["variables"].get("enable_thinking") is False,
    "bos_token": lambda c: "bos_token" in c["variables"],
    "huge_int_argument": lambda c: any(abs(i) > 2**63 for args in _dict_arguments(c) for i in _ints(args)),
    "float_argument": lambda c: any(_floats(args) for args in _dict_arguments(c)),  # at any depth, as huge ints
    "nested_argument": lambda c: any(isinstance(v, (dict, list)) and v for a in _dict_arguments(c) for v in a.values()),
    "nullable_schema": lambda c: '"nullable": true' in json.dumps(c["tools"]),
    "anyof_schema": lambda c: "anyOf" in json.dumps(c["tools"]),
    "enum_schema": lambda c: '"enum"' in json.dumps(c["tools"]),
    "array_schema": lambda c: '"array"' in json.dumps(c["tools"]),
}


def test_strategies_reach_every_feature() -> None:
    """300 conversations (derandomized, so not flaky) show every feature at least 3 times."""
    seen = dict.fromkeys(FEATURES, 0)

    @settings(max_examples=300)  # a fixed sample: the counts below are of exactly 300
    @given(conversation=strategies.conversations())
    def collect(conversation: dict[str, Any]) -> None:
        for name, predicate in FEATURES.items():
            seen[name] += bool(predicate(conversation))

    collect()
    assert [name for name, count in seen.items() if count < 3] == [], seen


@examples(50)
@given(schema=strategies.object_schemas(), data=st.data())
def test_arguments_fit_their_schema_and_are_json(schema: dict[str, Any], data: st.DataObject) -> None:
    args = data.draw(strategies.arguments(schema))
    assert set(schema.get("required", ())) <= set(args) <= set(schema["properties"])
    assert json.loads(json.dumps(args)) == args
