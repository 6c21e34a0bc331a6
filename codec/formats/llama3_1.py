"""``llama3_1``: the prompts and replies of Meta Llama 3.1 and 3.3 (Instruct): bare JSON calls.

Reference template: ``meta-llama-Llama-3.1-8B-Instruct.jinja`` (``../shared/templates/families/llama3``,
the template of Llama 3.1 and 3.3 Instruct). A reply is text, or one call right after the
assistant's header, bare or after ``<|python_tag|>``::

    {"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>

and a call of a built-in tool (``brave_search``, ``wolfram_alpha``...) is a Python call after
``<|python_tag|>``, ended by ``<|eom_id|>``: ``<|python_tag|>brave_search.call(query="...")<|eom_id|>``.
The reply side is the ``json_object`` wire family's (:data:`WIRE`), with its ``bare_calls``
recovery: call objects that are the whole reply are calls.

Quirks of the template, cited by ID below:

- ``L1`` ``bos_token`` first (absent: ``''``). The variables: ``custom_tools`` (where given, even
  None, it stands for ``tools``), ``tools_in_user_message`` (default true), ``date_string``
  (default ``26 Jul 2024``: :data:`DEFAULT_DATE`), ``builtin_tools`` (a list of names; only its
  being given matters for most of what follows).
- ``L2`` A first system message is taken out of the messages, its content ``trim``\\ med (printed:
  parts as their Python text). The system turn is ``<|start_header_id|>system<|end_header_id|>\\n\\n``,
  ``Environment: ipython\\n`` where ``builtin_tools`` is given or ``tools`` is not None (``[]``
  too), ``Tools: `` + the built-in tools but ``code_interpreter`` joined by ``, `` + ``\\n\\n``
  where ``builtin_tools`` is given, the knowledge and today's dates (``Today Date: `` +
  ``date_string``, joined with ``+``), then the system text and ``<|eot_id|>``.
- ``L3`` Tools (``tools`` not None) go into the first message after the system one, whatever its
  role, written as a user turn: :data:`USER_TOOLS_HEADER`, each tool ``tojson(indent=4)`` and a
  blank line, then that message's content ``trim``\\ med; with no such message the template raises
  ``Cannot put tools in the first user message when there's no first user message!``. With
  ``tools_in_user_message`` false they go into the system turn instead, before the system text,
  after :data:`SYSTEM_TOOLS_HEADER`.
- ``L4`` A message with neither the role ``tool`` or ``ipython`` nor a ``tool_calls`` key is
  ``<|start_header_id|>ROLE<|end_header_id|>\\n\\n`` + its content ``trim``\\ med + ``<|eot_id|>`` (the
  role joined with ``+``: a message without one raises). Reasoning is never written.
- ``L5`` A message with a ``tool_calls`` key (``[]`` too) must hold exactly one call, else the
  template raises ``This model only supports single tool-calls at once!``; its content is dropped.
  The call (its ``function``) is ``{"name": "NAME", "parameters": ARGS}`` after the assistant's
  header, ARGS ``tojson`` (arguments given as a JSON string are written as a JSON string
  literal); a call of one of ``builtin_tools`` is ``<|python_tag|>NAME.call(k="v", ...)``, each
  value joined with ``+`` (strings only). The turn ends with ``<|eom_id|>`` where ``builtin_tools``
  is given, else ``<|eot_id|>``.
- ``L6`` A tool result (role ``tool`` or ``ipython``) is an ``ipython`` turn whose text is its
  content ``tojson`` where the content is a mapping or iterable (**a string is**: it is written as a
  JSON string literal, ``"sunny"``), else printed.
- ``L7`` The generation prompt is ``<|start_header_id|>assistant<|end_header_id|>\\n\\n``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from codec import jinja
from codec.errors import RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import arguments_as_written, bos_token, call_id, expected_error
from codec.formats._render import (
    Undefined,
    attr,
    concat,
    contains,
    defined,
    is_iterable,
    is_mapping,
    items,
    iterate,
    lookup,
    string,
    subscript,
    tojson,
    trim,
)
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation, FunctionCall
from codec.wire import WireSpec

__all__ = ["Llama3_1", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers

HEADER_OPEN = "<|start_header_id|>"
HEADER_CLOSE = "<|end_header_id|>\n\n"
EOT = "<|eot_id|>"
EOM = "<|eom_id|>"
PYTHON_TAG = "<|python_tag|>"
SYSTEM_OPEN = HEADER_OPEN + "system" + HEADER_CLOSE
GENERATION_PROMPT = HEADER_OPEN + "assistant" + HEADER_CLOSE
ENVIRONMENT = "Environment: ipython\n"
BUILTIN_OPEN = "Tools: "
KNOWLEDGE = "Cutting Knowledge Date: December 2023\n"
TODAY = "Today Date: "
#: The date the template writes where ``date_string`` is not given (L1).
DEFAULT_DATE = "26 Jul 2024"
FORMAT_LINE = 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.'
SYSTEM_TOOLS_HEADER = (
    "You have access to the following functions. To call a function, please respond with JSON for a function call."
    + FORMAT_LINE
    + "Do not use variables.\n\n"
)
USER_TOOLS_HEADER = (
    "Given the following functions, please respond with a JSON for a function call "
    "with its proper arguments that best answers the given prompt.\n\n" + FORMAT_LINE + "Do not use variables.\n\n"
)
NO_FIRST_USER = "Cannot put tools in the first user message when there's no first user message!"
SINGLE_CALL = "This model only supports single tool-calls at once!"
CALL_HEAD = '{"name": "'
CALL_PARAMETERS = '", "parameters": '
#: The built-in tool the system turn never names (L2).
CODE_INTERPRETER = "code_interpreter"

# ---------------------------------------------------------------------------- render


def _tools_text(tools: Any) -> str:
    return "".join(tojson(tool, indent=4) + "\n\n" for tool in iterate(tools))


def _builtin_names(builtin: Any) -> str:
    """``builtin_tools | reject('equalto', 'code_interpreter') | join(", ")`` (L2)."""
    return ", ".join(string(name) for name in iterate(builtin) if name != CODE_INTERPRETER)


def call_text(call: Any, builtin: Any) -> str:
    """An assistant's one call (L5): JSON, or a built-in tool's Python call (``builtin``: the
    ``builtin_tools`` variable, :class:`Undefined` where not given)."""
    function = attr(call, "function")
    name = lookup(function, "name")
    if defined(builtin) and contains(builtin, name):
        out = concat(PYTHON_TAG, name, ".call(")
        out += ", ".join(concat(key, '="', value, '"') for key, value in items(lookup(function, "arguments")))
        return out + ")"
    return concat(CALL_HEAD, name, '", ') + '"parameters": ' + tojson(lookup(function, "arguments")) + "}"


def render(
    messages: list[dict[str, Any]],
    tools: Any,
    add_generation_prompt: bool,
    variables: dict[str, Any],
    *,
    default_date: Callable[[], str],
    reads_builtin: bool,
) -> str:
    """The prompt of a Llama 3.x template: ``default_date`` gives the date where ``date_string``
    is not given; ``reads_builtin``: whether the template reads ``builtin_tools`` (3.1 does, 3.2 not)."""
    out = [string(variables.get("bos_token", ""))]
    if "custom_tools" in variables:
        tools = variables["custom_tools"]
    in_user = variables.get("tools_in_user_message", True)
    date = variables["date_string"] if "date_string" in variables else default_date()
    builtin: Any = variables["builtin_tools"] if reads_builtin and "builtin_tools" in variables else Undefined(None, "")
    first = subscript(messages, 0)
    system = ""
    if subscript(first, "role") == "system":  # L2
        system = trim(subscript(first, "content"))
        messages = messages[1:]
    out.append(SYSTEM_OPEN)
    if defined(builtin) or tools is not None:
        out.append(ENVIRONMENT)
    if defined(builtin):
        out.append(BUILTIN_OPEN + _builtin_names(builtin) + "\n\n")
    out.append(KNOWLEDGE + concat(TODAY, date, "\n\n"))
    if tools is not None and not in_user:
        out.append(SYSTEM_TOOLS_HEADER + _tools_text(tools))
    out.append(system + EOT)
    if in_user and tools is not None:  # L3
        if not messages:
            raise RenderError(NO_FIRST_USER)
        first_user = trim(subscript(messages[0], "content"))
        messages = messages[1:]
        out.append(HEADER_OPEN + "user" + HEADER_CLOSE + USER_TOOLS_HEADER + _tools_text(tools) + first_user + EOT)
    for message in messages:
        role = attr(message, "role")
        has_calls = contains(message, "tool_calls")
        if not (role == "ipython" or role == "tool" or has_calls):  # L4
            out.append(
                concat(HEADER_OPEN, subscript(message, "role"), HEADER_CLOSE, trim(subscript(message, "content")))
            )
            out.append(EOT)
        elif has_calls:  # L5
            calls = attr(message, "tool_calls")
            if len(calls) != 1:
                raise RenderError(SINGLE_CALL)
            out.append(GENERATION_PROMPT + call_text(subscript(calls, 0), builtin) + (EOM if defined(builtin) else EOT))
        else:  # L6
            content = attr(message, "content")
            text = tojson(content) if is_mapping(content) or is_iterable(content) else string(content)
            out.append(HEADER_OPEN + "ipython" + HEADER_CLOSE + text + EOT)
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)  # L7
    return "".join(out)


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (variables: L1)."""
    return render(
        messages, tools, add_generation_prompt, variables, default_date=lambda: DEFAULT_DATE, reads_builtin=True
    )


# ---------------------------------------------------------------------------- decode


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (README, "Decoding prompts"): its variables
    from the system turn (L1, L2), the tools from the system or the first user turn (L3)."""
    return read_prompt(prompt, DEFAULT_DATE, reads_builtin=True)


def read_prompt(prompt: str, default_date: str | None, *, reads_builtin: bool) -> Conversation:
    """A Llama 3.x prompt read back; ``default_date``: the date that comes back as no ``date_string``
    (None: every date comes back, the template's default being the day it renders)."""
    start = prompt.find(SYSTEM_OPEN)
    if start < 0:
        raise expected_error(prompt, 0, (SYSTEM_OPEN,))
    variables: dict[str, Any] = {}
    bos = bos_token(prompt, start, SYSTEM_OPEN)
    if bos:
        variables["bos_token"] = bos
    pos = start + len(SYSTEM_OPEN)
    environment = prompt.startswith(ENVIRONMENT, pos)
    pos += len(ENVIRONMENT) if environment else 0
    builtin: list[str] | None = None
    if environment and reads_builtin and prompt.startswith(BUILTIN_OPEN, pos):
        line_end = _find(prompt, "\n\n", pos)
        names = prompt[pos + len(BUILTIN_OPEN) : line_end]
        builtin = names.split(", ") if names else []
        pos = line_end + 2
    pos = _expect(prompt, pos, KNOWLEDGE + TODAY)
    date_end = _find(prompt, "\n\n", pos)
    if prompt[pos:date_end] != default_date:
        variables["date_string"] = prompt[pos:date_end]
    pos = date_end + 2
    tools: list[Any] | None = None
    if environment and prompt.startswith(SYSTEM_TOOLS_HEADER, pos):
        tools, pos = _read_tools(prompt, pos + len(SYSTEM_TOOLS_HEADER))
        variables["tools_in_user_message"] = False
    turns, generation_prompt = _turns(prompt, pos)
    system_end, _ = turns[0]
    system = prompt[pos:system_end]
    messages: list[dict[str, Any]] = []
    if system or (len(turns) > 1 and _role(prompt, turns[1]) == "system"):
        messages.append({"role": "system", "content": system})  # else a later one would be the first
    ids = itertools.count()
    rest = turns[1:]
    if (
        environment
        and tools is None
        and rest
        and prompt.startswith(HEADER_OPEN + "user" + HEADER_CLOSE + USER_TOOLS_HEADER, rest[0][1])
    ):
        body = rest[0][1] + len(HEADER_OPEN + "user" + HEADER_CLOSE + USER_TOOLS_HEADER)
        tools, body = _read_tools(prompt, body)
        messages.append({"role": "user", "content": prompt[body : rest[0][0]]})
        rest = rest[1:]
    for end, opener in rest:
        role = _role(prompt, (end, opener))
        body = opener + len(HEADER_OPEN) + len(role) + len(HEADER_CLOSE)
        closer = EOM if prompt.startswith(EOM, end) else EOT
        if role == "assistant" and (closer == EOM) == (builtin is not None):
            call = _read_call(prompt, body, end, builtin)
            if call is not None:
                messages.append(
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": call_id(next(ids)), "type": "function", "function": call}],
                    }
                )
                continue
        if closer == EOM:
            raise parse_error_at(
                prompt, end, "only a call of the assistant ends with <|eom_id|>, and only with builtin_tools"
            )
        if role == "ipython":
            messages.append(_result(prompt, body, end))
        else:
            messages.append({"role": role, "content": prompt[body:end]})
    if builtin is not None:
        variables["builtin_tools"] = builtin
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation_prompt, "variables": variables}
    )


def _find(text: str, literal: str, pos: int) -> int:
    found = text.find(literal, pos)
    if found < 0:
        raise expected_error(text, len(text), (literal,))
    return found


def _expect(text: str, pos: int, literal: str) -> int:
    if not text.startswith(literal, pos):
        raise expected_error(text, pos, (literal,))
    return pos + len(literal)


def _read_tools(text: str, pos: int) -> tuple[list[Any], int]:
    """The tools written from ``pos`` (each ``tojson(indent=4)`` and a blank line: L3), and the offset after them."""
    tools: list[Any] = []
    while text.startswith(("{", "["), pos):
        try:
            value, end = PLAIN_JSON_DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        if not text.startswith("\n\n", end) or jinja.tojson(value, indent=4) != text[pos:end]:
            break
        tools.append(value)
        pos = end + 2
    return tools, pos


#: A turn: (the offset of its closer, the offset of its header).
_Turn = tuple[int, int]


def _turns(text: str, pos: int) -> tuple[list[_Turn], bool]:
    """The system turn's end, then each turn after it, and whether the prompt ends with the
    generation prompt. A turn ends at the first ``<|eot_id|>`` (or ``<|eom_id|>``) that a header or
    the end of the prompt follows."""
    turns: list[_Turn] = []
    opener = pos
    while True:
        end = _turn_end(text, pos)
        turns.append((end, opener))
        pos = end + len(EOT)
        if pos == len(text):
            return turns, False
        if text[pos:] == GENERATION_PROMPT:
            return turns, True
        opener = pos
        close = text.find(HEADER_CLOSE, pos + len(HEADER_OPEN))
        if close < 0:
            raise expected_error(text, pos, (HEADER_OPEN,), "the next turn or the end of the prompt")
        pos = close + len(HEADER_CLOSE)


def _turn_end(text: str, pos: int) -> int:
    while True:
        eot, eom = text.find(EOT, pos), text.find(EOM, pos)
        found = min((f for f in (eot, eom) if f >= 0), default=-1)
        if found < 0:
            raise parse_error_at(text, len(text), f"the turn is never closed by {EOT!r}", expected=(EOT,))
        after = found + len(EOT)
        if after == len(text) or text.startswith(HEADER_OPEN, after):
            return found
        pos = found + 1


def _role(text: str, turn: _Turn) -> str:
    start = turn[1] + len(HEADER_OPEN)
    return text[start : text.find(HEADER_CLOSE, start)]


def _result(text: str, start: int, end: int) -> dict[str, Any]:
    """A tool result: the text or parts its ``tojson`` writes (L6). An object (a result given as a
    mapping) is refused: no message's content holds one."""
    try:
        value = PLAIN_JSON_DECODER.decode(text[start:end])
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        raise parse_error_at(text, start, "a tool result written as a JSON object: no message's content holds one")
    if not isinstance(value, str | list) or jinja.tojson(value) != text[start:end]:
        raise parse_error_at(text, start, "a tool result is written as a JSON string (tojson): this one is not")
    return {"role": "tool", "content": value}


def _read_call(text: str, start: int, end: int, builtin: list[str] | None) -> Any:
    """The function of the call an assistant turn writes (L5), or None where the turn is no call."""
    if builtin is not None and text.startswith(PYTHON_TAG, start):
        builtin_call = _read_builtin(text, start + len(PYTHON_TAG), end)
        if builtin_call is not None and builtin_call["name"] not in builtin:
            builtin.append(builtin_call["name"])  # code_interpreter: called, and never named in the system turn
        return builtin_call
    if not text.startswith(CALL_HEAD, start) or not text.endswith("}", start, end):
        return None
    name_end = text.find(CALL_PARAMETERS, start + len(CALL_HEAD), end)
    if name_end < 0:
        return None
    got = arguments_as_written(text, name_end + len(CALL_PARAMETERS))
    if got is None or got[1] != end - 1:
        return None
    value = got[0]
    name = text[start + len(CALL_HEAD) : name_end]
    if builtin is not None and name in builtin:
        return None  # a built-in tool's call is written as Python
    if isinstance(value, str):  # arguments given as a JSON string, written as one (L5)
        return FunctionCall.model_construct(name=name, arguments=value)
    return {"name": name, "arguments": value}


def _read_builtin(text: str, start: int, end: int) -> dict[str, Any] | None:
    """``NAME.call(k="v", ...)`` from ``start`` to ``end``: the call, its values strings (L5)."""
    head = text.find(".call(", start, end)
    if head < 0 or not text.endswith(")", start, end):
        return None
    name, pos, stop = text[start:head], head + len(".call("), end - 1
    arguments: dict[str, str] = {}
    while pos < stop:
        key_end = text.find('="', pos, stop)
        if key_end < 0:
            return None
        value_start = key_end + 2
        value_end = _value_end(text, value_start, stop)
        if value_end < 0:
            return None
        arguments[text[pos:key_end]] = text[value_start:value_end]
        pos = value_end + 1 if value_end + 1 == stop else value_end + 3
    return {"name": name, "arguments": arguments}


def _value_end(text: str, pos: int, stop: int) -> int:
    """Where a built-in call's value from ``pos`` ends: at its closing quote before the next
    ``, KEY="`` or the ``)``; -1 where there is none."""
    while True:
        quote = text.find('"', pos, stop)
        if quote < 0:
            return -1
        if quote + 1 == stop:
            return quote
        if text.startswith('", ', quote) and text.find('="', quote + 3, stop) > quote + 3:
            return quote
        pos = quote + 1


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "json_object",
    call=(PYTHON_TAG, EOM),
    stop=EOT,
    name=('"name"', ""),
    arguments_keys=("parameters", "arguments"),
    separator="; ",
    recover=("bare_calls",),
)

# ---------------------------------------------------------------------------- format


class Llama3_1(Format):
    """Meta Llama 3.1 / 3.3 prompts and bare JSON calls (reference: Llama 3.1 8B Instruct's template)."""

    name = "llama3_1"
    aliases = ("llama-3.1", "llama3.1", "llama31", "llama3_3", "llama-3.3", "llama3.3", "llama33", "llama3_json")
    summary = 'Llama 3.1 / 3.3: {"name": ..., "parameters": {...}} after the assistant header, or <|python_tag|>'
    stop_token = EOT
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/llama3/meta-llama-Llama-3.1-8B-Instruct.jinja"
    template_markers = (HEADER_OPEN, EOT, "Environment: ipython", '"parameters": ', "builtin_tools")

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
