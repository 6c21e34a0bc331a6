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

from datetime import datetime
from typing import Any

from codec.errors import RenderError, parse_error_at
from codec.format import Format, Functions
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
from codec.models import Conversation
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
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, add_generation_prompt: bool, variables: dict[str, Any]
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
                later_final = any(
                    _eq(attr(m, "role"), "assistant") and "tool_calls" not in m for m in rest[i + 1 :]
                )
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
                    out.append(concat(START + "assistant" + CHANNEL + "analysis" + MESSAGE, attr(message, "thinking"), END))
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


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of; not read yet: a ParseError."""
    raise parse_error_at(prompt, 0, "gpt_oss prompts are not decoded yet")


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
    summary = "OpenAI gpt-oss: Harmony messages, <|channel|>commentary to=functions.f <|constrain|>json<|message|>{...}<|call|>"
    stop_token = RETURN
    reference_template = "families/gpt_oss/openai-gpt-oss-120b.jinja"
    template_markers = ("<|channel|>", "to=functions.", "<|call|>")
    wire = WIRE
    functions = Functions(prompt_text, prompt_conversation)
