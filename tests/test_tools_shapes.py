"""Tools in the shapes users have (OpenAI chat, the Responses API's flat tools, Anthropic's), read
alike by every function that takes tools, and anything else refused with the tool's index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from harness import examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec.cli import main
from codec.models import Tool
from codec.testing import tools as draw_tools
from codec.tools import normalize_tools

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CHAT = {"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": PARAMETERS}}
RESPONSES = {"type": "function", "name": "get_weather", "description": "Weather.", "parameters": PARAMETERS}
ANTHROPIC = {"name": "get_weather", "description": "Weather.", "input_schema": PARAMETERS}
REPLY = '<tool_call>\n{"name": "get_weather", "arguments": {"city": 3}}\n</tool_call>'
MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
FORMATS = [codec.get_format(name) for name in codec.formats()]

#: Tools in no shape codec reads, and what the error says.
REFUSED = [
    ({"foo": 1}, r"tools\[0\]: not a tool in any shape codec reads \(its keys: 'foo'\)"),
    ({"type": "web_search"}, r"tools\[0\]: type 'web_search' is not a function tool"),
    ({"type": "bash_20250124", "name": "bash"}, r"tools\[0\]: type 'bash_20250124' is not a function tool"),
    ({"type": "function", "function": "f"}, r"tools\[0\]: function must be an object, not a string"),
    ({"type": "function", "name": ""}, r"tools\[0\]: name must be a non-empty string"),
    ({"name": "f", "input_schema": [1]}, r"tools\[0\]: input_schema of 'f' must be a JSON schema object, not a list"),
    ({"type": "function", "name": "f", "parameters": "{}"}, r"parameters of 'f' must be a JSON schema object"),
    ({"name": "f", "description": 3}, r"description of 'f' must be a string, not a number"),
]


def test_the_shapes_read_as_openai_chat() -> None:
    assert normalize_tools([CHAT, RESPONSES, ANTHROPIC]) == [CHAT, CHAT, CHAT]
    assert normalize_tools([CHAT])[0] is CHAT  # (not copied: parse reads tools on every call)
    assert normalize_tools(None) is None and normalize_tools([]) == []
    bare = {"name": "f", "parameters": PARAMETERS}  # templates read a bare function as it is
    assert normalize_tools([bare]) == [bare]
    strict = normalize_tools([{**RESPONSES, "strict": True}])
    assert strict == [{"type": "function", "function": {**CHAT["function"], "strict": True}}]
    cached = normalize_tools([{**ANTHROPIC, "type": "custom", "cache_control": {"type": "ephemeral"}}])
    assert cached == [CHAT]  # an API directive, not part of the tool
    assert normalize_tools([Tool.model_validate(CHAT)]) == [CHAT]


@pytest.mark.parametrize(("tool", "message"), REFUSED, ids=lambda v: str(v)[:30])
def test_other_shapes_are_refused_by_every_function(tool: Any, message: str) -> None:
    fmt = codec.get_format("hermes")
    tools = [CHAT, tool]
    indexed = message.replace(r"tools\[0\]", r"tools\[1\]")
    for call in (
        lambda: fmt.render(MESSAGES, tools),
        lambda: fmt.render(MESSAGES, tools, template="{{ tools | length }}"),
        lambda: fmt.parse(REPLY, tools=tools),
        lambda: fmt.stream(tools=tools).feed(REPLY),
        lambda: fmt.grammar(tools),
        lambda: fmt.structural_tag(tools),
    ):
        with pytest.raises(codec.ToolError, match=indexed):
            call()
    with pytest.raises(ValueError, match=message.replace(r"tools\[0\]: ", "")):
        Tool.model_validate(tool)


def test_a_nameless_function_in_openais_shape_renders_as_given_and_has_no_grammar() -> None:
    """The template is the judge of what it writes (decode gives such a tool back as declared); a
    grammar of calls needs the name, so it refuses the tool, naming it."""
    fmt = codec.get_format("hermes")
    tools = [CHAT, {"type": "function", "function": {"parameters": {}}}]
    assert fmt.render(MESSAGES, tools, template="{{ tools | length }}") == "2"
    assert fmt.parse(REPLY, tools=tools).tool_calls == fmt.parse(REPLY, tools=[CHAT]).tool_calls
    for call in (lambda: fmt.grammar(tools), lambda: fmt.structural_tag(tools)):
        with pytest.raises(codec.ToolError, match=r"tools\[1\]: function.name must be a non-empty string"):
            call()


def test_tools_must_be_a_list() -> None:
    with pytest.raises(TypeError, match="tools must be a list of tools, not an object"):
        normalize_tools(CHAT)  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", [RESPONSES, ANTHROPIC], ids=["responses", "anthropic"])
@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_each_shape_renders_parses_and_constrains_as_chat(fmt: codec.Format, shape: dict[str, Any]) -> None:
    assert fmt.render(MESSAGES, [shape], add_generation_prompt=True) == fmt.render(
        MESSAGES, [CHAT], add_generation_prompt=True
    )
    reply = fmt.render_reply(
        {"role": "assistant", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": 3}}}]}
    )
    assert fmt.parse(reply, tools=[shape]) == fmt.parse(reply, tools=[CHAT]) != fmt.parse(reply, tools=[])
    assert fmt.grammar([shape], dialect="gbnf") == fmt.grammar([CHAT], dialect="gbnf")


@examples(20)
@given(tools=draw_tools(), flat=st.booleans())
def test_generated_tools_in_other_shapes_render_alike(tools: list[dict[str, Any]], flat: bool) -> None:
    def other(tool: dict[str, Any]) -> dict[str, Any]:
        function = dict(tool["function"])
        if flat:
            return {"type": "function", **function}
        renamed = {("input_schema" if key == "parameters" else key): value for key, value in function.items()}
        return {"type": "custom", **renamed}  # (Anthropic's type: without input_schema, a bare function)

    assert normalize_tools([other(tool) for tool in tools]) == tools


def test_the_command_reads_the_shapes_and_names_a_bad_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    messages = tmp_path / "messages.json"
    messages.write_text(json.dumps(MESSAGES), encoding="utf-8")
    outputs = []
    for tools in ([CHAT], [RESPONSES], [ANTHROPIC], {"tools": [ANTHROPIC]}):
        path = tmp_path / "tools.json"
        path.write_text(json.dumps(tools), encoding="utf-8")
        assert main(["render", "-f", "hermes", "--tools", str(path), str(messages)]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[1:] == outputs[:1] * 3
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([CHAT, {"foo": 1}]), encoding="utf-8")
    for argv in (
        ["render", "-f", "hermes", "--tools", str(path), str(messages)],
        ["parse", "-f", "hermes", "--tools", str(path), str(messages)],
        ["grammar", "-f", "hermes", "--tools", str(path)],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "tools[1]: not a tool in any shape codec reads (its keys: 'foo')" in err, err
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"messages": MESSAGES, "tools": [RESPONSES]}), encoding="utf-8")
    assert main(["render", "-f", "hermes", str(record)]) == 0
    assert capsys.readouterr().out == outputs[0]


@pytest.mark.parametrize("declared", [5, ["string", 5], {"a": 1}])
def test_a_bad_schema_type_names_the_tool_and_the_property(declared: Any) -> None:
    # It was: TypeError: 'int' object is not iterable.
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": declared}}}}}
    tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
    with pytest.raises(ValueError, match=r"tool 'f', property 'a\.b': type .* is not a JSON type name"):
        codec.get_format("hermes").grammar([tool])


@pytest.mark.parametrize(
    ("name", "reply", "words"),
    [
        ("hermes", '<tool_call>\n{"name": "f", "arguments": {"a": }}\n</tool_call>', "expected a value"),
        ("hermes", '<tool_call>\n{"name" 3}\n</tool_call>', "expected ':'"),
        ("hermes", '<tool_call>\n["x"]\n</tool_call>', "expected '{'"),
        ("deepseek_pythonic", "[f(a=)]", "expected one of: a value, '('"),
    ],
)
def test_strict_errors_say_what_was_expected_in_words(name: str, reply: str, words: str) -> None:
    with pytest.raises(codec.ParseError) as info:
        codec.get_format(name).parse(reply, strict=True)
    assert words in str(info.value).splitlines()[0]
    assert not any(term in str(info.value) for term in ("LBRACE", "STRING", "NUMBER", "COLON"))
    assert info.value.expected and all(term.isupper() for term in info.value.expected)  # the names stay for code
