"""``hermes3``: the prompts of NousResearch Hermes 3 (Llama 3.1), ``tool_use`` template; hermes replies.

Reference template: ``hermes3-tool-use.jinja`` (``../shared/templates``, the ``tool_use`` entry of
Hermes 3's tokenizer config). Replies are ``hermes``' JSON calls between ``<tool_call>`` tags: the
reply side is hermes' spec (``Hermes.wire``) as the ``json_object`` wire family compiles it
(grammar, builder, syntax, export and the reply renderer), not a copy.

Quirks of the template, cited by ID below:

- ``H1`` ``bos_token`` first (the variable as text: absent is ``''``), then always a system turn
  with the tools instructions, tools or not. ``tools`` is looped over as it is: ``None`` (no tools
  given) raises ``'NoneType' object is not iterable``, ``[]`` writes an empty block.
- ``H2`` The tools block is one line, ``<tools> `` + the tools joined by ``\\n`` + `` </tools>``,
  glued to the pydantic instructions (``</tools>Use the following...``). A tool's ``function`` is
  used when present (so a bare function object writes the same).
- ``H3`` Each tool is a JSON-looking line written by hand: ``{"type": "function", "function":
  {"name": "NAME", "description": "DESCRIPTION", "parameters": PARAMETERS}}``. Nothing is escaped:
  the description is free text (quotes, line breaks). ``name`` and ``description`` are joined with
  ``+``: missing raises, ``None`` or a number raises Python's concatenation error.
- ``H4`` The description field is a Python signature, ``NAME(a: str, b: int)``, `` -> TYPE`` when
  the tool has a ``return`` schema, `` - `` + the description, a blank line, then ``    Args:\\n``
  and every parameter as ``        NAME(TYPE): DESCRIPTION|trim`` with no line break between
  them, then ``\\n    Returns:\\n        `` + the return's description where it has one.
- ``H5`` JSON-schema types as Python (``json_to_python_type``): ``string`` ``str``, ``number``
  ``float``, ``integer`` ``int``, ``boolean`` ``bool``; ``array`` is always ``list[Union[]]`` (the
  macro is given ``spec|items``, pairs with no ``type``); ``object`` is ``dict``, or ``dict[str,
  T]`` with ``additionalProperties`` (``true``/``false`` give ``Union[]``); a list of types is
  ``Union[a,b]`` (no space); no ``type`` (``anyOf``, a non-object schema) is ``Union[]``; a type
  that is no string, list or mapping (a number, ``null``) is ``Any``. Any other type name
  (``"null"``, ``["string", "null"]``) recurses on its characters without end: the render fails
  with Python's ``maximum recursion depth exceeded while calling a Python object`` (where the
  stack runs out decides the message's tail: tests compare its start). A type naming a ``dict``
  method (``"keys"``) writes that method in Jinja: not reproduced.
- ``H6`` ``PARAMETERS`` is ``{}`` when ``parameters.properties`` is missing or empty (whatever else
  ``parameters`` holds), else ``parameters | tojson``. A missing ``parameters`` raises.
- ``H7`` Turns of ``user`` and ``system`` (every system message: the first one is a turn of its
  own after the instructions) and assistants without ``tool_calls`` are ``<|im_start|>ROLE\\n`` +
  content + ``<|im_end|>\\n``; the content is joined with ``+``: it must be text (a missing one, a
  list of parts raise). Messages of other roles, or without a role, write nothing.
- ``H8`` An assistant with ``tool_calls`` (even ``[]``) writes ``<|im_start|>assistant``, then
  ``\\n<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>`` per call, then
  ``<|im_end|>\\n``: its content is dropped. The name is printed (missing: ``''``); ``ARGS`` is a
  string argument as it is, else ``tojson``; without ``arguments`` the call is ``{"name": "f", }``.
- ``H9`` A tool result is ``<tool_response>\\n`` + content (printed: ``None`` dropped, parts as
  their Python text) + ``\\n</tool_response>``; consecutive results share one ``<|im_start|>tool\\n``
  turn, one line apart. The opener is left out for the first message. The group's ``<|im_end|>``
  has no line break after it, and before it a line break unless the result is the last message.
- ``H10`` ``add_generation_prompt`` appends ``<|im_start|>assistant\\n``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from codec import jinja
from codec.errors import RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._chatml import GENERATION_PROMPT, IM_END, IM_START, TURN_END
from codec.formats._decode import bos_token, call_id, expected_error
from codec.formats._render import (
    Undefined,
    attr,
    concat,
    defined,
    is_iterable,
    items,
    iterate,
    length,
    lookup,
    string,
    trim,
)
from codec.formats.hermes import CALL_CLOSE, CALL_OPEN, STOP, Hermes
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation, FunctionCall

__all__ = ["Hermes3", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers

SYSTEM_OPEN = IM_START + "system\n"
TOOLS_OPEN = (
    "You are a function calling AI model. You are provided with function signatures within <tools></tools> XML "
    "tags. You may call one or more functions to assist with the user query. Don't make assumptions about what "
    "values to plug into functions. Here are the available tools: <tools> "
)
TOOLS_CLOSE = (
    " </tools>Use the following pydantic model json schema for each tool call you will make: "
    '{"properties": {"name": {"title": "Name", "type": "string"}, "arguments": {"title": "Arguments", "type": '
    '"object"}}, "required": ["name", "arguments"], "title": "FunctionCall", "type": "object"}}\n'
    "For each function call return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags as follows:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-dict>}\n</tool_call>' + TURN_END
)
TOOL_HEAD = '{"type": "function", "function": {"name": "'
DESCRIPTION_KEY = '", "description": "'
PARAMETERS_KEY = '", "parameters": '
ARGS_HEAD = "    Args:\n"
RETURNS_HEAD = "\n    Returns:\n        "
TOOL_TURN = IM_START + "tool\n"
RESPONSE_OPEN = "<tool_response>\n"
RESPONSE_CLOSE = "\n</tool_response>"
CALL_HEAD = "\n" + CALL_OPEN + '\n{"name": "'
CALL_ARGUMENTS = '", "arguments": '
CALL_NO_ARGUMENTS = '", '
CALL_TAIL = "}\n" + CALL_CLOSE
ASSISTANT = IM_START + "assistant"

# ---------------------------------------------------------------------------- render: types (H5)

_BASIC_TYPES = {"string": "str", "number": "float", "integer": "int", "boolean": "bool"}
_RECURSION = "maximum recursion depth exceeded while calling a Python object"


def _type_value(spec: Any) -> Any:
    """``json_spec.type``: the mapping's ``type``, else undefined."""
    return attr(spec, "type")


def python_type(spec: Any) -> str:
    """``json_to_python_type(spec)`` (H5)."""
    kind = _type_value(spec)
    if isinstance(kind, str) and kind in _BASIC_TYPES:
        return _BASIC_TYPES[kind]
    if isinstance(kind, str) and kind == "array":
        return "list[Union[]]"  # the macro gets spec|items: pairs, which have no type
    if isinstance(kind, str) and kind == "object":
        if "additionalProperties" in spec:
            return "dict[str, " + python_type(spec["additionalProperties"]) + "]"
        return "dict"
    if isinstance(kind, Undefined) or is_iterable(kind):
        return "Union[" + ",".join(_member_type(member) for member in iterate(kind)) + "]"
    return "Any"


def _member_type(member: Any) -> str:
    """``json_to_python_type({"type": member})``: a name it does not know recurses on its characters (H5)."""
    if isinstance(member, str) and member and member not in _BASIC_TYPES and member not in ("array", "object"):
        raise RenderError(_RECURSION)
    return python_type({"type": member})


# ---------------------------------------------------------------------------- render


def _properties(tool: Any) -> Any:
    """``tool.parameters.properties``: a missing ``parameters`` raises (H6)."""
    return lookup(attr(tool, "parameters"), "properties")


def _tool_line(tool: Any) -> str:
    """One tool as the template writes it (H3, H4, H6)."""
    if defined(attr(tool, "function")):
        tool = attr(tool, "function")
    name = attr(tool, "name")
    out = [concat('{"name": "', name, '", ')]
    properties = _properties(tool)
    signature = ", ".join(concat(key, ": ", python_type(fields)) for key, fields in items(properties))
    out.append(concat('"description": "', name, "(") + signature + ")")
    returns = attr(tool, "return")
    if defined(returns):
        out.append(concat(" -> ", python_type(returns)))
    out.append(concat(" - ", attr(tool, "description"), "\n\n"))
    for i, (key, fields) in enumerate(items(properties)):
        if i == 0:
            out.append(ARGS_HEAD)
        out.append(concat("        ", key, "(", python_type(fields), "): ", trim(attr(fields, "description"))))
    if defined(returns) and defined(attr(returns, "description")):
        out.append(concat(RETURNS_HEAD, attr(returns, "description")))
    out.append('"' + ', "parameters": ')
    out.append("{}" if length(properties) == 0 else jinja.tojson(attr(tool, "parameters")))
    return '{"type": "function", "function": ' + "".join(out) + "}"


def _call_block(call: Any) -> str:
    """One call of an assistant's ``tool_calls`` (H8)."""
    function = attr(call, "function")
    if defined(function):
        call = function
    arguments = attr(call, "arguments")
    out = '\n<tool_call>\n{"name": "' + string(attr(call, "name")) + '", '
    if defined(arguments):
        out += '"arguments": ' + (arguments if isinstance(arguments, str) else jinja.tojson(arguments))
    return out + CALL_TAIL


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads ``bos_token``)."""
    out = [string(variables.get("bos_token", "")), SYSTEM_OPEN, TOOLS_OPEN]  # H1
    lines = [_tool_line(tool) for tool in iterate(tools)]
    out += ["\n".join(lines), TOOLS_CLOSE]  # H2
    last = len(messages) - 1
    for i, message in enumerate(messages):
        role = attr(message, "role")
        if role in ("user", "system") or (role == "assistant" and not defined(attr(message, "tool_calls"))):
            out.append(concat(IM_START, role, "\n", attr(message, "content"), TURN_END))  # H7
        elif role == "assistant":
            out.append(ASSISTANT)
            out += [_call_block(call) for call in iterate(message["tool_calls"])]
            out.append(TURN_END)  # H8
        elif role == "tool":  # H9
            if i and messages[i - 1] and attr(messages[i - 1], "role") != "tool":
                out.append(TOOL_TURN)
            out.append(RESPONSE_OPEN + string(attr(message, "content")))
            if i < last:
                out.append(RESPONSE_CLOSE + "\n")
                if attr(messages[i + 1], "role") != "tool":
                    out.append(IM_END)
            else:
                out.append(RESPONSE_CLOSE + IM_END)
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)  # H10
    return "".join(out)


# ---------------------------------------------------------------------------- decode

#: What a message's text may be followed by: the next message's opener (H7-H9).
_OPENERS = (IM_START + "user\n", SYSTEM_OPEN, ASSISTANT + "\n", ASSISTANT + IM_END, TOOL_TURN + RESPONSE_OPEN)
#: Stands for messages the template writes nothing for, where the prompt shows there were some.
UNSHOWN_MESSAGE: dict[str, Any] = {"role": "developer", "content": ""}
_RETURN_TYPES: dict[str, dict[str, Any]] = {python: {"type": kind} for kind, python in _BASIC_TYPES.items()} | {
    "dict": {"type": "object"},
    "list[Union[]]": {"type": "array"},
    "Union[]": {},
    "Any": {"type": None},
}


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts").

    ``bos_token`` comes back when the prompt starts with one; ``tools`` is a list, never None (the
    template cannot render without one, H1).
    """
    start = prompt.find(SYSTEM_OPEN + TOOLS_OPEN)
    if start < 0:
        raise expected_error(prompt, 0, (SYSTEM_OPEN + TOOLS_OPEN,), "the system turn with the tools instructions")
    bos = bos_token(prompt, start, SYSTEM_OPEN)
    block = start + len(SYSTEM_OPEN + TOOLS_OPEN)
    block_end = prompt.find(TOOLS_CLOSE, block)
    if block_end < 0:
        raise parse_error_at(prompt, block, "the tools block is never closed", expected=(TOOLS_CLOSE,))
    tools = _tools(prompt, block, block_end)
    messages, generation_prompt = _messages(prompt, block_end + len(TOOLS_CLOSE))
    return Conversation.model_validate(
        {
            "messages": messages or [dict(UNSHOWN_MESSAGE)],
            "tools": tools,
            "add_generation_prompt": generation_prompt,
            "variables": {"bos_token": bos} if bos else {},
        }
    )


def _tools(text: str, pos: int, end: int) -> list[dict[str, Any]]:
    """The tools of the block ``text[pos:end]``: lines starting with :data:`TOOL_HEAD`, one line apart (H2)."""
    tools: list[dict[str, Any]] = []
    while pos < end:
        if tools:
            if not text.startswith("\n" + TOOL_HEAD, pos, end):
                raise expected_error(text, pos, ("\n" + TOOL_HEAD,), "the next tool")
            pos += 1
        tool, pos = _tool(text, pos, end)
        tools.append(tool)
    return tools


def _tool(text: str, pos: int, end: int) -> tuple[dict[str, Any], int]:
    """The tool written at ``pos`` and the offset after it: of the places its line may end and its
    parameters start, the first whose reading writes the line back exactly (H3). The parameters are
    tried from the line's end: each try reads at most the rest of the line."""
    if not text.startswith(TOOL_HEAD, pos, end):
        raise expected_error(text, pos, (TOOL_HEAD,), "a tool")
    name_start = pos + len(TOOL_HEAD)
    name_end = text.find(DESCRIPTION_KEY, name_start, end)
    if name_end < 0:
        raise parse_error_at(text, name_start, "a tool's name is never followed by its description")
    name = text[name_start:name_end]
    field = name_end + len(DESCRIPTION_KEY)
    for stop in _tool_ends(text, field, end):
        key = stop
        while (key := text.rfind(PARAMETERS_KEY, field, key)) >= 0:  # the last first: parameters end the line
            params = _parameters(text[key + len(PARAMETERS_KEY) : stop])
            function = None if params is None else _function(name, text[field:key], params)
            if function is not None:
                return {"type": "function", "function": function}, stop + 1
    raise parse_error_at(text, pos, "a tool that does not read back as the template writes one")


def _tool_ends(text: str, start: int, end: int) -> Iterator[int]:
    """Where the tool line from ``start`` may end: each ``}`` before the next tool or the block's end."""
    at = start
    while (found := text.find("}\n" + TOOL_HEAD, at, end)) >= 0:
        yield found
        at = found + 1
    if end > start and text[end - 1] == "}":
        yield end - 1


def _parameters(written: str) -> dict[str, Any] | None:
    """The parameters written as ``written`` (``{}`` or their ``tojson``), None where none is (H6)."""
    if written == "{}":
        return {}
    try:
        value = PLAIN_JSON_DECODER.decode(written)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and jinja.tojson(value) == written else None


def _function(name: str, field: str, parameters: dict[str, Any]) -> dict[str, Any] | None:
    """The function whose description field is ``field``, given its parameters; None where none writes it (H4)."""
    properties = attr(parameters, "properties")
    try:
        signature = ", ".join(f"{key}: {python_type(fields)}" for key, fields in items(properties))
        args = "".join(
            f"        {key}({python_type(fields)}): {trim(attr(fields, 'description'))}"
            for key, fields in items(properties)
        )
    except RenderError:
        return None
    head = f"{name}({signature})"
    if not field.startswith(head):
        return None
    rest = field[len(head) :]
    function: dict[str, Any] = {"name": name}
    returns: dict[str, Any] | None = None
    if rest.startswith(" -> "):
        cut = rest.find(" - ")
        if cut < 0 or rest[4:cut] not in _RETURN_TYPES:
            return None
        returns = dict(_RETURN_TYPES[rest[4:cut]])
        rest = rest[cut:]
    if not rest.startswith(" - "):
        return None
    rest = rest[3:]
    tail = "\n\n" + (ARGS_HEAD + args if args else "")
    if returns is not None and (found := rest.find(tail + RETURNS_HEAD)) >= 0:
        returns["description"] = rest[found + len(tail + RETURNS_HEAD) :]
        rest = rest[: found + len(tail)]
    if not rest.endswith(tail):
        return None
    function["description"] = rest[: len(rest) - len(tail)]
    if returns is not None:
        function["return"] = returns
    function["parameters"] = parameters
    return function


def _next_is_opener(text: str, pos: int) -> bool:
    return pos == len(text) or text.startswith(_OPENERS, pos)


def _messages(text: str, pos: int) -> tuple[list[dict[str, Any]], bool]:
    """The messages from ``pos`` on, and whether the prompt ends with the generation prompt."""
    messages: list[dict[str, Any]] = []
    ids = itertools.count()
    first = True
    while pos < len(text):
        if text.startswith(GENERATION_PROMPT, pos) and pos + len(GENERATION_PROMPT) == len(text):
            return messages, True
        if first and text.startswith(RESPONSE_OPEN, pos):  # H9: no opener for the first message
            pos = _results(text, pos, messages)
        elif text.startswith(TOOL_TURN + RESPONSE_OPEN, pos):
            if first or (messages and messages[-1]["role"] == "tool"):
                messages.append(dict(UNSHOWN_MESSAGE))  # else the results would have no opener or share it
            pos = _results(text, pos + len(TOOL_TURN), messages)
        elif text.startswith(ASSISTANT, pos) and (calls := _calls(text, pos + len(ASSISTANT), ids)) is not None:
            message, pos = calls
            messages.append(message)
        else:
            for role in ("user", "system", "assistant"):
                opener = IM_START + role + "\n"
                if text.startswith(opener, pos):
                    end = _turn_end(text, pos + len(opener))
                    messages.append({"role": role, "content": text[pos + len(opener) : end]})
                    pos = end + len(TURN_END)
                    break
            else:
                raise expected_error(text, pos, (*_OPENERS, RESPONSE_OPEN), "a message or the generation prompt")
        first = False
    return messages, False


def _turn_end(text: str, body: int) -> int:
    """The ``<|im_end|>\\n`` that ends a turn: the first one the next message (or the end) follows."""
    at, last = body, -1
    while (found := text.find(TURN_END, at)) >= 0:
        if _next_is_opener(text, found + len(TURN_END)):
            return found
        at = last = found + len(TURN_END)
    if last < 0:
        raise parse_error_at(text, len(text), f"the turn is never closed by {TURN_END!r}", expected=(IM_END,))
    raise expected_error(text, last, _OPENERS, "the next message or the end of the prompt")


def _results(text: str, pos: int, messages: list[dict[str, Any]]) -> int:
    """A group of tool results at ``pos`` (H9): appended to ``messages``; the offset after the group.

    The group ends at the first ``\n</tool_response>`` followed by ``\n<|im_end|>`` and the next
    message (or nothing: a message written as nothing came last), or by ``<|im_end|>`` and the
    end of the prompt (the results are the last message).
    """
    body = pos + len(RESPONSE_OPEN)
    at = body
    while (close := text.find(RESPONSE_CLOSE, at)) >= 0:
        at = close + 1
        inner = close + len(RESPONSE_CLOSE + "\n" + IM_END)
        last = close + len(RESPONSE_CLOSE + IM_END)
        rest_after_inner = text[inner:] if text.startswith(RESPONSE_CLOSE + "\n" + IM_END, close) else None
        if rest_after_inner is not None and (not rest_after_inner or text.startswith(_OPENERS, inner)):
            after, unshown = inner, rest_after_inner in ("", GENERATION_PROMPT)
        elif text.startswith(RESPONSE_CLOSE + IM_END, close) and text[last:] in ("", GENERATION_PROMPT):
            after, unshown = last, False
        else:
            continue
        messages += [{"role": "tool", "content": result} for result in text[body:close].split(_RESULTS_SEPARATOR)]
        if unshown:
            messages.append(dict(UNSHOWN_MESSAGE))  # a message written as nothing came after the results
        return after
    raise parse_error_at(text, pos, "tool results that are never closed", expected=(RESPONSE_CLOSE,))


_RESULTS_SEPARATOR = RESPONSE_CLOSE + "\n" + RESPONSE_OPEN


def _calls(text: str, pos: int, ids: Iterator[int]) -> tuple[dict[str, Any], int] | None:
    """An assistant turn of calls after ``<|im_start|>assistant`` (H8), and the offset after it; None if it is none."""
    calls: list[dict[str, Any]] = []
    while text.startswith(CALL_HEAD, pos):
        name_start = pos + len(CALL_HEAD)
        tail = text.find(CALL_TAIL, name_start)
        if tail < 0:
            return None
        with_arguments = text.find(CALL_ARGUMENTS, name_start, tail)
        function: dict[str, Any]
        if with_arguments >= 0:
            raw = text[with_arguments + len(CALL_ARGUMENTS) : tail]
            function = {"name": text[name_start:with_arguments], "arguments": _arguments(raw)}
        elif text.endswith(CALL_NO_ARGUMENTS, name_start, tail):
            message = 'a call without arguments (`{"name": ..., }`): a tool call always has arguments'
            raise parse_error_at(text, name_start, message)
        else:
            return None
        calls.append({"id": call_id(next(ids)), "type": "function", "function": _function_call(function)})
        pos = tail + len(CALL_TAIL)
    if not text.startswith(TURN_END, pos) or not _next_is_opener(text, pos + len(TURN_END)):
        return None
    return {"role": "assistant", "content": None, "tool_calls": calls}, pos + len(TURN_END)


def _function_call(function: dict[str, Any]) -> FunctionCall:
    """A call's function; arguments written as given text (H8) are kept as that text, unvalidated."""
    if isinstance(function["arguments"], str):
        return FunctionCall.model_construct(**function)
    return FunctionCall(**function)


def _arguments(raw: str) -> Any:
    """Arguments as written: the JSON object ``tojson`` writes as ``raw``, else the raw text (a string argument)."""
    try:
        value = PLAIN_JSON_DECODER.decode(raw)
    except (ValueError, RecursionError):
        return raw
    return value if isinstance(value, dict) and jinja.tojson(value) == raw else raw


# ---------------------------------------------------------------------------- wire
# The reply syntax is hermes' (``Hermes.wire``): parse, stream and export are its family's.

# ---------------------------------------------------------------------------- format


class Hermes3(Format):
    """Hermes 3 ``tool_use`` prompts with hermes' JSON calls (reference: ``hermes3-tool-use.jinja``)."""

    name = "hermes3"
    aliases = ("hermes_3", "hermes3_tool_use")
    summary = "Hermes 3 tool_use prompts (Python-style signatures, <|im_start|>tool results); hermes JSON calls"
    stop_token = STOP
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates``.
    reference_template = "../templates/hermes3-tool-use.jinja"
    #: hermes' markers and the signature macro only this template has: it wins over hermes on its own template.
    template_markers = (IM_START, CALL_OPEN, '"arguments"', "json_to_python_type", "<|im_start|>tool")

    functions = Functions(prompt_text, prompt_conversation)
    wire = Hermes.wire
