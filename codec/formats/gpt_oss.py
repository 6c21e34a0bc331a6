"""``gpt_oss``: OpenAI's gpt-oss models, whose prompts and replies are Harmony messages.

Reference template: ``openai-gpt-oss-120b.jinja`` (``../shared/templates/families/gpt_oss``,
llama.cpp's copy of OpenAI's template). Replies are the ``harmony`` family's
(:mod:`codec.wire.harmony`): reasoning on the ``analysis`` channel, calls on ``commentary``
addressed ``to=functions.NAME``, the answer on ``final``.

Quirks of the template, cited by ID below:

- ``O1`` A system message is always written first, built from variables: ``model_identity``
  (default ``You are ChatGPT, a large language model trained by OpenAI.``), the knowledge cutoff,
  ``Current date:`` and the date of the day of rendering (``strftime_now("%Y-%m-%d")``: here the
  ``current_date`` variable, whose default is that same date), ``Reasoning:`` and
  ``reasoning_effort`` (default ``medium``), the built-in tools of ``builtin_tools`` (``browser``,
  ``python``), the valid channels, and with tools the line sending their calls to ``commentary``.
  A variable given as other than text raises Python's error for ``+``.
- ``O2`` A first message of role ``system`` or ``developer`` is the developer message: written,
  printed as ``{{ }}`` prints it (a list of parts as Python writes the list), under
  ``# Instructions``, where it is truthy; with tools, ``# Tools`` and the TypeScript namespace
  ``functions`` follow (``O3``). Without either no developer message is written. Later system and
  developer messages (and messages of any other role) leave no trace.
- ``O3`` A tool is declared as ``// DESCRIPTION`` (a missing description raises) and ``type NAME
  = (_: {...}) => any;``, a parameter per line: its description as a comment, ``?`` unless
  required, its TypeScript type (``O4``), its default (an enum's and a ``oneOf``'s joined with
  ``+``, so only text; others ``tojson``) and ``,``. A tool without parameters' properties is
  ``() => any;``.
- ``O4`` Types: arrays by their items' type (``string[]``...; a nested type longer than 50
  characters or ``object | object`` is ``any[]``), ``| null`` after arrays and strings marked
  ``nullable``, a list of types joined with `` | ``, a ``oneOf``'s variants each followed by their
  description and, after 20 spaces, their default, joined by `` | `` and a line break (the check
  for object variants sets a variable inside its loop, which Jinja forgets: it never applies),
  string enums quoted, ``number`` for integers, objects with properties written inline after a
  line break and 16 spaces (their own optional keys marked), others ``object``, and ``any``.
- ``O5`` An assistant message with calls writes only its first call, recipient first:
  ``<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>`` (``json`` unless
  the call's function has a ``content_type``), the arguments ``tojson`` (a JSON string's text as a
  JSON string literal), ``<|call|>``. Before it, its content or else its reasoning (both raise) as
  an ``analysis`` message, unless a later assistant message without calls follows. An empty
  ``tool_calls`` list raises Jinja's error for its first element.
- ``O6`` Other assistant messages are ``final`` messages closed by ``<|end|>``; the last message
  without a generation prompt closes with ``<|return|>`` and is preceded by its reasoning as an
  ``analysis`` message. A content or reasoning holding ``<|channel|>analysis<|message|>`` or
  ``<|channel|>final<|message|>`` raises.
- ``O7`` A tool result is ``<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>``,
  its content ``tojson`` (a string as a JSON string literal), ``<|end|>``, NAME the last call's;
  a result with no call before it (or after a ``final`` message) raises.
- ``O8`` The generation prompt is ``<|start|>assistant``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from codec import jinja
from codec.errors import ParseError, RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import call_id
from codec.formats._render import (
    Undefined,
    attr,
    call_method,
    concat,
    contains,
    defined,
    is_iterable,
    is_mapping,
    iterate,
    lookup,
    string,
    subscript,
    tojson,
)
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation, FunctionCall, Message
from codec.wire import WireSpec

__all__ = ["GptOss", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers

START, END, MESSAGE, CHANNEL = "<|start|>", "<|end|>", "<|message|>", "<|channel|>"
RETURN, CALL, CONSTRAIN = "<|return|>", "<|call|>", "<|constrain|>"
GENERATION_PROMPT = START + "assistant"
DEFAULT_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
DEFAULT_EFFORT = "medium"
CHANNELS_LINE = "# Valid channels: analysis, commentary, final. Channel must be included for every message."
TOOLS_LINE = "\nCalls to these tools must go to the commentary channel: 'functions'."
TAGGED = (CHANNEL + "analysis" + MESSAGE, CHANNEL + "final" + MESSAGE)
TAGS_IN = (
    "You have passed a message containing <|channel|> tags in the {field} field. Instead of doing this, you "
    "should pass analysis messages (the string between '<|message|>' and '<|end|>') in the 'thinking' field, "
    "and final messages (the string between '<|message|>' and '<|end|>') in the 'content' field."
)
BOTH = (
    "Cannot pass both content and thinking in an assistant message with tool calls! Put the analysis message "
    "in one or the other, but not both."
)
ORPHAN_RESULT = "Message has tool role, but there was no previous assistant message with a tool call!"

#: The built-in tools' declarations (``O1``), as the template writes them.
BROWSER = (
    "## browser\n\n"
    "// Tool for browsing.\n"
    "// The `cursor` appears in brackets before each browsing display: `[{cursor}]`.\n"
    "// Cite information from the tool using the following format:\n"
    "// `【{cursor}†L{line_start}(-L{line_end})?】`, for example: `【6†L9-L11】` or `【8†L3】`.\n"
    "// Do not quote more than 10 words directly from the tool output.\n"
    "// sources=web (default: web)\n"
    "namespace browser {\n\n"
    "// Searches for information related to `query` and displays `topn` results.\n"
    "type search = (_: {\n"
    "query: string,\n"
    "topn?: number, // default: 10\n"
    "source?: string,\n"
    "}) => any;\n\n"
    "// Opens the link `id` from the page indicated by `cursor` starting at line number `loc`, showing "
    "`num_lines` lines.\n"
    "// Valid link ids are displayed with the formatting: `【{id}†.*】`.\n"
    "// If `cursor` is not provided, the most recent page is implied.\n"
    "// If `id` is a string, it is treated as a fully qualified URL associated with `source`.\n"
    "// If `loc` is not provided, the viewport will be positioned at the beginning of the document or "
    "centered on the most relevant passage, if available.\n"
    "// Use this function without `id` to scroll to a new location of an opened page.\n"
    "type open = (_: {\n"
    "id?: number | string, // default: -1\n"
    "cursor?: number, // default: -1\n"
    "loc?: number, // default: -1\n"
    "num_lines?: number, // default: -1\n"
    "view_source?: boolean, // default: false\n"
    "source?: string,\n"
    "}) => any;\n\n"
    "// Finds exact matches of `pattern` in the current page, or the page given by `cursor`.\n"
    "type find = (_: {\n"
    "pattern: string,\n"
    "cursor?: number, // default: -1\n"
    "}) => any;\n\n"
    "} // namespace browser\n\n"
)
PYTHON = (
    "## python\n\n"
    "Use this tool to execute Python code in your chain of thought. The code will not be shown to the user. "
    "This tool should be used for internal reasoning, but not for code that is intended to be visible to the "
    "user (e.g. when creating plots, tables, or files).\n\n"
    "When you send a message containing Python code to python, it will be executed in a stateful Jupyter "
    "notebook environment. python will respond with the output of the execution or time out after 120.0 "
    "seconds. The drive at '/mnt/data' can be used to save and persist user files. Internet access for this "
    "session is UNKNOWN. Depends on the cluster.\n\n"
)
#: The indentation the template's layout leaves before a ``oneOf`` variant's default and an
#: object property's type (``O4``).
VARIANT_DEFAULT_INDENT = " " * 20
PROPERTY_INDENT = " " * 16

# ---------------------------------------------------------------------------- render: declarations


def _eq(value: Any, text: str) -> bool:
    """``value == "text"`` in Jinja: an undefined value equals nothing."""
    return not isinstance(value, Undefined) and value == text


def typescript_type(spec: Any, required: Any) -> str:
    """``render_typescript_type(spec, required)`` (``O4``)."""
    kind = attr(spec, "type")
    if _eq(kind, "array"):
        items = subscript(spec, "items")
        if items:
            item_kind = subscript(items, "type")
            if _eq(item_kind, "string"):
                out = "string[]"
            elif _eq(item_kind, "number") or _eq(item_kind, "integer"):
                out = "number[]"
            elif _eq(item_kind, "boolean"):
                out = "boolean[]"
            else:
                inner = typescript_type(items, required)
                out = "any[]" if inner == "object | object" or len(inner) > 50 else inner + "[]"
        else:
            out = "any[]"
        return out + (" | null" if attr(spec, "nullable") else "")
    if (
        defined(kind)
        and is_iterable(kind)
        and not isinstance(kind, str)
        and not is_mapping(kind)
        and defined(subscript(kind, 0))
    ):
        return " | ".join(map(string, kind)) if len(kind) > 1 else string(kind[0])
    variants = attr(spec, "oneOf")
    if variants:
        out = ""
        items_ = list(iterate(variants))
        for i, variant in enumerate(items_):
            out += typescript_type(variant, required)
            description = attr(variant, "description")
            if description:
                out += concat("// ", description)
            default = attr(variant, "default")
            if defined(default):
                out += VARIANT_DEFAULT_INDENT + concat("// default: ", tojson(default))
            if i < len(items_) - 1:
                out += " | \n"
        return out
    if _eq(kind, "string"):
        enum = attr(spec, "enum")
        if enum:
            return '"' + '" | "'.join(map(string, iterate(enum))) + '"'
        return "string" + (" | null" if attr(spec, "nullable") else "")
    if _eq(kind, "number") or _eq(kind, "integer"):
        return "number"
    if _eq(kind, "boolean"):
        return "boolean"
    if _eq(kind, "object"):
        properties = attr(spec, "properties")
        if not properties:
            return "object"
        own_required = attr(spec, "required") or []
        pairs = list(call_method(properties, "items"))
        out = "{\n"
        for i, (name, prop) in enumerate(pairs):
            out += string(name) + ("" if contains(own_required, name) else "?") + ": "
            out += "\n" + PROPERTY_INDENT + typescript_type(prop, own_required)
            if i < len(pairs) - 1:
                out += ", "
        return out + "}"
    return "any"


def tool_namespace(tools: list[Any]) -> str:
    """``render_tool_namespace("functions", tools)`` (``O3``)."""
    out = ["## functions\n\nnamespace functions {\n\n"]
    for declared in tools:
        tool = attr(declared, "function")
        out.append(concat("// ", lookup(tool, "description"), "\n"))
        out.append(concat("type ", lookup(tool, "name"), " = "))
        parameters = attr(tool, "parameters")
        properties = lookup(parameters, "properties") if parameters else None
        if not (parameters and properties):
            out.append("() => any;\n\n")
            continue
        out.append("(_: {\n")
        required = lookup(parameters, "required") or []
        for name, spec in call_method(properties, "items"):
            description = attr(spec, "description")
            if description:
                out.append(concat("// ", description, "\n"))
            out.append(string(name) + ("" if contains(required, name) else "?") + ": ")
            out.append(typescript_type(spec, required))
            default = attr(spec, "default")
            if defined(default):
                if attr(spec, "enum"):
                    out.append(concat(", // default: ", default))
                elif attr(spec, "oneOf"):
                    out.append(concat("// default: ", default))
                else:
                    out.append(concat(", // default: ", tojson(default)))
            out.append(",\n")
        out.append("}) => any;\n\n")
    out.append("} // namespace functions")
    return "".join(out)


# ---------------------------------------------------------------------------- render: the prompt


def today() -> str:
    """The date the template writes (``strftime_now("%Y-%m-%d")``): the default of ``current_date``."""
    return datetime.now().strftime("%Y-%m-%d")


def system_text(tools: list[Any] | None, variables: dict[str, Any]) -> str:
    """The system message's text (``O1``)."""
    identity = variables.get("model_identity", DEFAULT_IDENTITY)
    out = concat(identity, "\n") + "Knowledge cutoff: 2024-06\n"
    out += concat("Current date: ", variables.get("current_date", today()), "\n\n")
    out += concat("Reasoning: ", variables.get("reasoning_effort", DEFAULT_EFFORT), "\n\n")
    builtin = variables.get("builtin_tools")
    if builtin:
        names = list(iterate(builtin))
        out += "# Tools\n\n" + (BROWSER if "browser" in names else "") + (PYTHON if "python" in names else "")
    return out + CHANNELS_LINE + (TOOLS_LINE if tools else "")


def _check_tags(message: dict[str, Any], key: str) -> None:
    if key in message:
        text = attr(message, key)
        if any(contains(text, tag) for tag in TAGGED):
            raise RenderError(TAGS_IN.format(field=key))


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, byte for byte as the reference template renders it."""
    out = [START + "system" + MESSAGE, system_text(tools, variables), END]
    first = subscript(messages, 0)
    role = lookup(first, "role")
    if _eq(role, "developer") or _eq(role, "system"):  # O2
        developer, rest = attr(first, "content"), messages[1:]
    else:
        developer, rest = "", messages
    if developer or tools:
        out.append(START + "developer" + MESSAGE)
        if developer:
            out.append("# Instructions\n\n" + string(developer) + "\n\n")
        if tools:
            out.append("# Tools\n\n" + tool_namespace(tools))
        out.append(END)
    last_call: Any = None
    for i, message in enumerate(rest):
        role = attr(message, "role")
        if _eq(role, "assistant"):
            _check_tags(message, "content")  # O6
            _check_tags(message, "thinking")
            if "tool_calls" in message:  # O5
                later_final = any(_eq(attr(m, "role"), "assistant") and "tool_calls" not in m for m in rest[i + 1 :])
                call = lookup(subscript(attr(message, "tool_calls"), 0), "function") or subscript(
                    attr(message, "tool_calls"), 0
                )
                content, thinking = attr(message, "content"), attr(message, "thinking")
                if content and thinking:
                    raise RenderError(BOTH)
                if content and not later_final:
                    out.append(concat(START + "assistant" + CHANNEL + "analysis" + MESSAGE, content, END))
                elif thinking and not later_final:
                    out.append(concat(START + "assistant" + CHANNEL + "analysis" + MESSAGE, thinking, END))
                out.append(concat(START + "assistant to=functions.", lookup(call, "name"), CHANNEL + "commentary "))
                content_type = attr(call, "content_type")
                out.append(concat(content_type if defined(content_type) else "json", MESSAGE))
                out.append(tojson(attr(call, "arguments")) + CALL)
                last_call = lookup(call, "name")
            elif i == len(rest) - 1 and not add_generation_prompt:  # O6
                if "thinking" in message:
                    out.append(
                        concat(START + "assistant" + CHANNEL + "analysis" + MESSAGE, attr(message, "thinking"), END)
                    )
                out.append(concat(START + "assistant" + CHANNEL + "final" + MESSAGE, attr(message, "content"), RETURN))
            else:
                out.append(concat(START + "assistant" + CHANNEL + "final" + MESSAGE, attr(message, "content"), END))
                last_call = None
        elif _eq(role, "tool"):  # O7
            if last_call is None:
                raise RenderError(ORPHAN_RESULT)
            out.append(concat(START + "functions.", last_call, " to=assistant" + CHANNEL + "commentary" + MESSAGE))
            out.append(tojson(attr(message, "content")) + END)
        elif _eq(role, "user"):
            out.append(concat(START + "user" + MESSAGE, attr(message, "content"), END))
    if add_generation_prompt:  # O8
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- decode


#: A type the declarations write, read back as the schema that writes it (``O4``); any other
#: type text reads as a one-element list of types, which writes that text as it is.
TYPE_SCHEMAS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "object": {"type": "object"},
    "any": {},
    "string | null": {"type": "string", "nullable": True},
    "string[]": {"type": "array", "items": {"type": "string"}},
    "number[]": {"type": "array", "items": {"type": "number"}},
    "boolean[]": {"type": "array", "items": {"type": "boolean"}},
    "any[]": {"type": "array"},
}
DEFAULT_MARK = ", // default: "
#: A message the prompt does not show: what decode puts where one stood (after an answer closed by
#: ``<|end|>`` at the end of a prompt), or for a conversation of such messages only.
UNSHOWN = {"role": "developer", "content": ""}
SYSTEM_HEAD = START + "system" + MESSAGE
DEVELOPER_HEAD = START + "developer" + MESSAGE
NAMESPACE_HEAD = "# Tools\n\n## functions\n\nnamespace functions {\n\n"
NAMESPACE_END = "} // namespace functions" + END
ASSISTANT = START + "assistant"
ANALYSIS = ASSISTANT + CHANNEL + "analysis" + MESSAGE
FINAL = ASSISTANT + CHANNEL + "final" + MESSAGE
CALL_HEAD = ASSISTANT + " to=functions."
RESULT_HEAD = START + "functions."
RESULT_MIDDLE = " to=assistant" + CHANNEL + "commentary" + MESSAGE


def declared_schema(text: str) -> dict[str, Any]:
    """The schema a parameter's TypeScript type ``text`` reads as: one that writes that text (``O4``)."""
    if text in TYPE_SCHEMAS:
        return dict(TYPE_SCHEMAS[text])
    names = text.split(" | ")
    if len(names) > 1 and all(len(n) > 1 and n[0] == n[-1] == '"' and '"' not in n[1:-1] for n in names):
        return {"type": "string", "enum": [n[1:-1] for n in names]}
    return {"type": [text]}


def _fail(prompt: str, pos: int, message: str) -> ParseError:
    return parse_error_at(prompt, pos, f"not a gpt_oss prompt: {message}")


def _expect(prompt: str, pos: int, literal: str) -> int:
    if not prompt.startswith(literal, pos):
        raise _fail(prompt, pos, f"expected {literal!r}")
    return pos + len(literal)


def _until(prompt: str, pos: int, marker: str, what: str) -> int:
    end = prompt.find(marker, pos)
    if end < 0:
        raise _fail(prompt, pos, f"{what} is not closed ({marker!r} missing)")
    return end


def read_system(prompt: str) -> tuple[dict[str, Any], bool, int]:
    """The system message's variables (``O1``), whether it says tools follow, and where it ends."""
    pos = _expect(prompt, 0, SYSTEM_HEAD)
    cut = _until(prompt, pos, "\nKnowledge cutoff: 2024-06\nCurrent date: ", "the model identity")
    variables: dict[str, Any] = {}
    if prompt[pos:cut] != DEFAULT_IDENTITY:
        variables["model_identity"] = prompt[pos:cut]
    pos = cut + len("\nKnowledge cutoff: 2024-06\nCurrent date: ")
    cut = _until(prompt, pos, "\n\nReasoning: ", "the date")
    variables["current_date"] = prompt[pos:cut]
    pos = cut + len("\n\nReasoning: ")
    ends = [prompt.find("\n\n" + tail, pos) for tail in ("# Tools\n\n", CHANNELS_LINE)]
    cut = min((e for e in ends if e >= 0), default=-1)
    if cut < 0:
        raise _fail(prompt, pos, "the reasoning effort is not followed by the channels")
    if prompt[pos:cut] != DEFAULT_EFFORT:
        variables["reasoning_effort"] = prompt[pos:cut]
    pos = cut + 2
    if prompt.startswith("# Tools\n\n", pos):
        pos += len("# Tools\n\n")
        builtin = []
        for name, text in (("browser", BROWSER), ("python", PYTHON)):
            if prompt.startswith(text, pos):
                builtin.append(name)
                pos += len(text)
        variables["builtin_tools"] = builtin or [""]
    pos = _expect(prompt, pos, CHANNELS_LINE)
    tools = prompt.startswith(TOOLS_LINE, pos)
    pos = _expect(prompt, pos + (len(TOOLS_LINE) if tools else 0), END)
    return variables, tools, pos


#: What starts a parameter's line after its description: its name, ``?`` where it is optional, ``: ``.
PARAMETER = re.compile(r"([^\s:?]+)(\??): ")
#: A tool's name, after its description, and what its declaration goes on with.
TOOL_NAME = re.compile(r"\ntype ([^\s=]+) = (?=\(\) => any;\n\n|\(_: \{\n)")


def read_tools(prompt: str, pos: int, end: int) -> list[dict[str, Any]]:
    """The tools the namespace ``prompt[pos:end]`` declares (``O3``), each read back as a tool that
    declares it so. Descriptions may hold line breaks: every reading that covers the namespace
    whole writes it alike (each part writes its own text), so the first one found is taken."""
    found = next(_tools(prompt, pos, end), None)
    if found is None:
        raise _fail(prompt, pos, "the functions namespace does not read as tool declarations")
    return found


def _tools(prompt: str, pos: int, end: int) -> Iterator[list[dict[str, Any]]]:
    """Every reading of the declarations ``prompt[pos:end]``, the shortest descriptions first."""
    if pos == end:
        yield []
        return
    if not prompt.startswith("// ", pos):
        return
    for head in TOOL_NAME.finditer(prompt, pos + 3, end):
        function: dict[str, Any] = {"name": head[1], "description": prompt[pos + 3 : head.start()]}
        after = head.end()
        if prompt.startswith("() => any;\n\n", after):
            for rest in _tools(prompt, after + len("() => any;\n\n"), end):
                yield [{"type": "function", "function": function}, *rest]
            continue
        start = after + len("(_: {\n")
        close = prompt.find("}) => any;\n\n", start, end)
        while close >= 0:
            for parameters in _parameters(prompt, start, close):
                with_parameters = {**function, "parameters": _object(parameters)}
                for rest in _tools(prompt, close + len("}) => any;\n\n"), end):
                    yield [{"type": "function", "function": with_parameters}, *rest]
            close = prompt.find("}) => any;\n\n", close + 1, end)


def _object(parameters: list[tuple[str, bool, dict[str, Any]]]) -> dict[str, Any]:
    """The parameters schema of declared parameters (name, whether optional, schema)."""
    out: dict[str, Any] = {"type": "object", "properties": {name: schema for name, _, schema in parameters}}
    required = [name for name, optional, _ in parameters if not optional]
    if required:
        out["required"] = required
    return out


def _parameters(prompt: str, pos: int, end: int) -> Iterator[list[tuple[str, bool, dict[str, Any]]]]:
    """Every reading of the declared parameters ``prompt[pos:end]`` (``O3``)."""
    if pos == end:
        yield []
        return
    starts: list[tuple[str | None, int]] = [(None, pos)]
    if prompt.startswith("// ", pos):  # a description, to one of the line breaks after it
        starts = []
        line = prompt.find("\n", pos + 3, end)
        while line >= 0:
            starts.append((prompt[pos + 3 : line], line + 1))
            line = prompt.find("\n", line + 1, end)
    for description, at in starts:
        name = PARAMETER.match(prompt, at, end)
        if name is None or description == "":
            continue
        cut = prompt.find(",\n", name.end(), end)
        if cut < 0:
            continue
        schema = _parameter(prompt[name.end() : cut])
        if description is not None:
            schema = {"description": description, **schema}
        for rest in _parameters(prompt, cut + 2, end):
            yield [(name[1], bool(name[2]), schema), *rest]


def _parameter(written: str) -> dict[str, Any]:
    """A parameter's schema from its type and default as written."""
    at = written.rfind(DEFAULT_MARK)
    if at >= 0:
        schema = declared_schema(written[:at])
        default = written[at + len(DEFAULT_MARK) :]
        if "enum" in schema:
            return {**schema, "default": default}
        try:
            value = json.loads(default)
        except ValueError:
            pass
        else:
            if jinja.tojson(value) == default:
                return {**schema, "default": value}
    return declared_schema(written)


def read_developer(prompt: str, pos: int, tools: bool) -> tuple[str | None, list[dict[str, Any]] | None, int]:
    """The developer message (``O2``): its instructions, the tools, and where it ends."""
    if not prompt.startswith(DEVELOPER_HEAD, pos):
        if tools:
            raise _fail(prompt, pos, "the tools' developer message is missing")
        return None, None, pos
    pos += len(DEVELOPER_HEAD)
    instructions = None
    if prompt.startswith("# Instructions\n\n", pos):
        pos += len("# Instructions\n\n")
        cut = _until(prompt, pos, "\n\n" + (NAMESPACE_HEAD if tools else END), "the instructions")
        instructions, pos = prompt[pos:cut], cut + 2
    declared = None
    if tools:
        pos = _expect(prompt, pos, NAMESPACE_HEAD)
        close = _until(prompt, pos, NAMESPACE_END, "the functions namespace")
        declared = read_tools(prompt, pos, close)
        pos = close + len(NAMESPACE_END)
    else:
        pos = _expect(prompt, pos, END)
    return instructions, declared, pos


def read_messages(prompt: str, pos: int) -> tuple[list[dict[str, Any] | Message], bool]:
    """The messages after the developer message, and whether the prompt ends with the generation prompt."""
    messages: list[dict[str, Any] | Message] = []
    analysis: str | None = None
    calls = 0
    while pos < len(prompt):
        if prompt.startswith(ANALYSIS, pos):
            pos += len(ANALYSIS)
            cut = _until(prompt, pos, END, "an analysis message")
            analysis, pos = prompt[pos:cut], cut + len(END)
            if not prompt.startswith((CALL_HEAD, FINAL), pos):
                raise _fail(prompt, pos, "an analysis message is followed by a call or the last answer")
            continue
        if prompt.startswith(CALL_HEAD, pos):  # O5
            pos += len(CALL_HEAD)
            cut = _until(prompt, pos, CHANNEL + "commentary json" + MESSAGE, "a call's header")
            name, pos = prompt[pos:cut], cut + len(CHANNEL + "commentary json" + MESSAGE)
            try:
                arguments, stop = PLAIN_JSON_DECODER.raw_decode(prompt, pos)
            except (ValueError, RecursionError):
                raise _fail(prompt, pos, "a call's arguments are no JSON") from None
            if not isinstance(arguments, dict | str) or jinja.tojson(arguments) != prompt[pos:stop]:
                raise _fail(prompt, pos, "a call's arguments are not written as tojson writes them")
            pos = _expect(prompt, stop, CALL)
            function: Any = {"name": name, "arguments": arguments}
            if isinstance(arguments, str):  # a JSON string's text, written as a string literal
                function = FunctionCall.model_construct(name=name, arguments=arguments)
            message: dict[str, Any] = {"role": "assistant", "content": None}
            if analysis is not None:
                message["reasoning_content"] = analysis
            message["tool_calls"] = [{"id": call_id(calls), "type": "function", "function": function}]
            messages.append(message)
            analysis, calls = None, calls + 1
            continue
        if prompt.startswith(FINAL, pos):  # O6
            pos += len(FINAL)
            ends = [e for e in (prompt.find(END, pos), prompt.find(RETURN, pos)) if e >= 0]
            if not ends:
                raise _fail(prompt, pos, "an answer is not closed")
            cut = min(ends)
            message = {"role": "assistant", "content": prompt[pos:cut]}
            if prompt.startswith(RETURN, cut):
                if analysis is not None:
                    message["reasoning_content"] = analysis
                pos = cut + len(RETURN)
                if pos != len(prompt):
                    raise _fail(prompt, pos, "the last answer is not the prompt's end")
            else:
                pos = cut + len(END)
            messages.append(message)
            analysis = None
            continue
        if analysis is not None:
            raise _fail(prompt, pos, "an analysis message is followed by a call or the last answer")
        if prompt.startswith(RESULT_HEAD, pos):  # O7
            cut = _until(prompt, pos, RESULT_MIDDLE, "a tool result's header")
            pos = cut + len(RESULT_MIDDLE)
            try:
                content, stop = PLAIN_JSON_DECODER.raw_decode(prompt, pos)
            except (ValueError, RecursionError):
                raise _fail(prompt, pos, "a tool result is no JSON") from None
            if isinstance(content, str | list):
                messages.append({"role": "tool", "content": content})
            else:  # a result given as an object (or a number...): kept as that value, unvalidated
                messages.append(Message.model_construct(role="tool", content=content))
            pos = _expect(prompt, stop, END)
            continue
        if prompt.startswith(START + "user" + MESSAGE, pos):
            pos += len(START + "user" + MESSAGE)
            cut = _until(prompt, pos, END, "a user message")
            messages.append({"role": "user", "content": prompt[pos:cut]})
            pos = cut + len(END)
            continue
        if prompt.startswith(GENERATION_PROMPT, pos) and pos + len(GENERATION_PROMPT) == len(prompt):
            return messages, True
        raise _fail(prompt, pos, "expected a message")
    return messages, False


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of: the system message's variables, the
    developer message as a system message, the tools read back from their declarations (as
    schemas that declare them alike), the messages; an analysis message is the reasoning of the
    call or the last answer after it."""
    variables, has_tools, pos = read_system(prompt)
    instructions, tools, pos = read_developer(prompt, pos, has_tools)
    messages, generation = read_messages(prompt, pos)
    if instructions is not None:
        messages.insert(0, {"role": "system", "content": instructions})
    last = messages[-1] if messages else None
    answer = isinstance(last, dict) and last["role"] == "assistant" and "tool_calls" not in last
    if answer and not generation and not prompt.endswith(RETURN):
        messages.append(dict(UNSHOWN))  # an answer closed by <|end|> was not the last message (O6)
    read = [m if isinstance(m, Message) else Message.model_validate(m) for m in messages or [dict(UNSHOWN)]]
    return Conversation(messages=read, tools=tools, add_generation_prompt=generation, variables=variables)


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "harmony",
    block=(START, END),
    stop=RETURN,
    call=("to=", CALL),
    name=("functions.", ""),
    header=(CHANNEL, CONSTRAIN, MESSAGE, "assistant"),
    channels=("analysis", "commentary", "final"),
    special_tokens=(START, END, RETURN, CALL, CHANNEL, CONSTRAIN, MESSAGE),
    recover=("stripped_tokens",),
)

# ---------------------------------------------------------------------------- format


class GptOss(Format):
    """gpt-oss: Harmony messages; reasoning on ``analysis``, calls on ``commentary``, answers on ``final``."""

    name = "gpt_oss"
    aliases = ("gpt-oss", "harmony")
    summary = "OpenAI gpt-oss: Harmony messages, <|channel|>commentary to=functions.f <|constrain|>json<|message|>..."
    stop_token = RETURN
    reference_template = "families/gpt_oss/openai-gpt-oss-120b.jinja"
    template_markers = ("<|channel|>", "to=functions.", "<|call|>")
    wire = WIRE
    functions = Functions(prompt_text, prompt_conversation)
