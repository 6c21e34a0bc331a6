"""``functiongemma``: FunctionGemma's Gemma turns, calls ``call:NAME{key:<escape>value<escape>}`` between call tokens.

Reference template: ``tool_chat_template_functiongemma.jinja`` (vLLM's simplified FunctionGemma
template). A reply after the generation prompt ``<start_of_turn>model`` looks like::

    <start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call><start_function_response>

The model writes ``<start_function_response>`` after its calls and stops there; a turn without
calls is its content and ``<end_of_turn>``. Replies are a member of the ``gemma4`` family
(:mod:`codec.wire.gemma4`) with FunctionGemma's markers and ``<escape>`` as the quote token.

Quirks of the reference template, reproduced by the renderer:

* F1. No ``bos_token``; every turn is ``<start_of_turn>ROLE\\n...<end_of_turn>``, with nothing
  between turns. The generation prompt is ``<start_of_turn>model``, without a line break.
* F2. Without ``tools`` (``None``), the template fails (``object of type 'NoneType' has no len()``):
  it tests ``tools is defined``, which ``None`` is. ``tools: []`` renders.
* F3. A ``system`` or ``developer`` message is a ``user`` turn; with tools, each one ends with
  ``\\nAvailable functions:`` and ``\\nFunction: NAME\\nDescription: TEXT\\nParameters: JSON`` for
  each tool of type ``function`` (a missing description reads ``No description provided``). Without
  a system message the tools are not shown.
* F4. An assistant message with calls is ``<start_of_turn>model`` followed directly by
  ``<start_function_call>call:NAME{k:<escape>v<escape>,...}<end_function_call>`` per call: its
  content is dropped. Every value, whatever its type, is written through ``str()`` between
  ``<escape>`` tokens (``n:<escape>7<escape>``, ``b:<escape>True<escape>``,
  ``d:<escape>{'k': 1}<escape>``), keys in their given order, nothing escaped.
* F5. ``arguments`` given as a string fail (``No filter named 'fromjson' found.``: transformers has
  no ``fromjson``); arguments that are no mapping fail at ``.items()``.
* F6. An assistant message without calls (``tool_calls`` absent or empty) is
  ``<start_of_turn>model\\n`` + content (none: nothing). Reasoning is dropped.
* F7. A tool message is a user turn ``Function result for NAME: CONTENT``, NAME the message's
  ``name`` (``function`` where it has none).
* F8. Messages of any other role are dropped.
"""

from __future__ import annotations

import itertools
from typing import Any

from codec.errors import RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._pythonic import decoded_call, decoded_tool, json_readings
from codec.formats._reading import find_all
from codec.formats._render import attr, call_method, default, defined, length, lookup, string, tojson
from codec.models import Conversation, Message
from codec.wire import WireSpec

# ---------------------------------------------------------------------------- markers

TURN_OPEN = "<start_of_turn>"
TURN_CLOSE = "<end_of_turn>"
USER_OPEN = TURN_OPEN + "user\n"
MODEL_OPEN = TURN_OPEN + "model"
GENERATION_PROMPT = MODEL_OPEN
CALL_OPEN = "<start_function_call>"
CALL_CLOSE = "<end_function_call>"
RESPONSE_OPEN = "<start_function_response>"
ESCAPE = "<escape>"
CALL_WORD = "call:"
TOOLS_HEAD = "\nAvailable functions:"
FUNCTION_HEAD = "\nFunction: "
DESCRIPTION_HEAD = "\nDescription: "
PARAMETERS_HEAD = "\nParameters: "
NO_DESCRIPTION = "No description provided"
RESULT_HEAD = "Function result for "
#: The name F7 writes for a tool message without one.
NO_NAME = "function"

# ---------------------------------------------------------------------------- render


def tools_text(tools: list[dict[str, Any]]) -> str:
    """What follows a system message's content where there are tools (F3)."""
    out = [TOOLS_HEAD]
    for tool in tools:
        if attr(tool, "type") != "function":
            continue
        function = attr(tool, "function")
        out.append(FUNCTION_HEAD + string(lookup(function, "name")))
        out.append(DESCRIPTION_HEAD + string(default(lookup(function, "description"), NO_DESCRIPTION)))
        out.append(PARAMETERS_HEAD + tojson(lookup(function, "parameters")))
    return "".join(out)


def render_call(call: Any) -> str:
    """``<start_function_call>call:NAME{k:<escape>v<escape>,...}<end_function_call>`` (F4, F5)."""
    function = attr(call, "function")
    name = string(lookup(function, "name"))
    arguments = lookup(function, "arguments")
    if isinstance(arguments, str):
        raise RenderError("No filter named 'fromjson' found.")
    pairs = call_method(arguments, "items")
    body = ",".join(string(key) + ":" + ESCAPE + string(value) + ESCAPE for key, value in pairs)
    return CALL_OPEN + CALL_WORD + name + "{" + body + "}" + CALL_CLOSE


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads no variables)."""
    has_tools = length(tools) > 0  # F2
    out: list[str] = []
    for message in messages:
        role = attr(message, "role")
        content = string(attr(message, "content"))
        if role in ("developer", "system"):  # F3
            assert tools is not None
            out.append(USER_OPEN + content + (tools_text(tools) if has_tools else "") + TURN_CLOSE)
        elif role == "user":
            out.append(USER_OPEN + content + TURN_CLOSE)
        elif role == "assistant":
            calls = attr(message, "tool_calls")
            if defined(calls) and length(calls) > 0:  # F4
                out.append(MODEL_OPEN + "".join(render_call(call) for call in calls) + TURN_CLOSE)
            else:  # F6
                out.append(MODEL_OPEN + "\n" + content + TURN_CLOSE)
        elif role == "tool":  # F7
            name = string(default(attr(message, "name"), NO_NAME))
            out.append(USER_OPEN + RESULT_HEAD + name + ": " + content + TURN_CLOSE)
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- decode


def read_tools(text: str, pos: int) -> list[dict[str, Any]] | None:
    """The tools F3 lists from ``pos`` (right after ``\\nAvailable functions:``) to the end of
    ``text``, or None where the text is no such list (or lists none)."""
    tools: list[dict[str, Any]] = []
    while pos < len(text):
        if not text.startswith(FUNCTION_HEAD, pos):
            return None
        start = pos + len(FUNCTION_HEAD)
        described = text.find(DESCRIPTION_HEAD, start)
        if described < 0:
            return None
        name = text[start:described]
        at = described + len(DESCRIPTION_HEAD)
        for parameters_at in find_all(text, at, (PARAMETERS_HEAD,)):
            value_at = parameters_at + len(PARAMETERS_HEAD)
            reading = next(json_readings(text, value_at), None)
            if reading is None or not (reading[1] == len(text) or text.startswith(FUNCTION_HEAD, reading[1])):
                continue
            function = {"name": name, "description": text[at:parameters_at], "parameters": reading[0]}
            tools.append(decoded_tool({"type": "function", "function": function}, text, pos))
            pos = reading[1]
            break
        else:
            return None
    return tools or None


def read_calls(text: str) -> list[tuple[str, dict[str, str]]] | None:
    """The calls F4 writes, back to back, making up all of ``text``; values read as the strings
    they are written as (nearest closing ``<escape>`` first), or None."""
    calls: list[tuple[str, dict[str, str]]] = []
    pos = 0
    head = CALL_OPEN + CALL_WORD
    end_call = "}" + CALL_CLOSE
    while pos < len(text):
        if not text.startswith(head, pos):
            return None
        brace = text.find("{", pos + len(head))
        if brace < 0:
            return None
        name, pos = text[pos + len(head) : brace], brace + 1
        arguments: dict[str, str] = {}
        while not text.startswith(end_call, pos):
            separator = text.find(":" + ESCAPE, pos)
            if separator < 0:
                return None
            key, start = text[pos:separator], separator + 1 + len(ESCAPE)
            close = next(
                (c for c in find_all(text, start, (ESCAPE,)) if text.startswith((",", end_call), c + len(ESCAPE))),
                None,
            )
            if close is None or key in arguments:
                return None
            arguments[key] = text[start:close]
            pos = close + len(ESCAPE)
            if text.startswith(",", pos):
                pos += 1
        calls.append((name, arguments))
        pos += len(end_call)
    return calls


def _turns(prompt: str) -> tuple[list[tuple[str, str]], bool]:
    """The turns (``user`` or ``model`` and their text) and whether the generation prompt ends the
    prompt (F1). A turn ends at the first ``<end_of_turn>`` a turn or the end follows."""
    turns: list[tuple[str, str]] = []
    pos = 0
    while pos < len(prompt):
        if prompt[pos:] == GENERATION_PROMPT:
            return turns, True
        if prompt.startswith(USER_OPEN, pos):
            role, body = "user", pos + len(USER_OPEN)
        elif prompt.startswith(MODEL_OPEN, pos):
            role, body = "model", pos + len(MODEL_OPEN)
        else:
            raise parse_error_at(prompt, pos, "expected a turn", expected=[USER_OPEN, MODEL_OPEN])
        end = next(
            (
                e
                for e in find_all(prompt, body, (TURN_CLOSE,))
                if e + len(TURN_CLOSE) == len(prompt) or prompt.startswith(TURN_OPEN, e + len(TURN_CLOSE))
            ),
            None,
        )
        if end is None:
            raise parse_error_at(prompt, body, "a turn without its <end_of_turn>", expected=[TURN_CLOSE])
        turns.append((role, prompt[body:end]))
        pos = end + len(TURN_CLOSE)
    return turns, False


def _system_tools(turns: list[tuple[str, str]]) -> tuple[list[dict[str, Any]], str]:
    """The tools the first system turn lists (F3) and the text each system turn ends with, or no
    tools and ``""``."""
    for role, body in turns:
        if role != "user":
            continue
        for at in find_all(body, 0, (TOOLS_HEAD,)):
            tools = read_tools(body, at + len(TOOLS_HEAD))
            if tools is not None:
                return tools, body[at:]
    return [], ""


def _message(role: str, body: str, listed: str, ids: Any) -> Message:
    """The message a turn's text reads as (F3, F4, F6, F7)."""
    if role == "model":
        if body.startswith("\n"):
            return Message(role="assistant", content=body[1:])
        calls = read_calls(body)
        if not calls:
            raise ValueError("a model turn that is neither text nor calls")
        return Message(
            role="assistant", content=None, tool_calls=[decoded_call(name, args, next(ids)) for name, args in calls]
        )
    if listed and body.endswith(listed):
        return Message(role="system", content=body[: len(body) - len(listed)])
    if body.startswith(RESULT_HEAD):
        colon = body.find(": ", len(RESULT_HEAD))
        if colon >= 0:
            return Message(role="tool", name=body[len(RESULT_HEAD) : colon], content=body[colon + 2 :])
    return Message(role="user", content=body)


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` renders; where the template writes several alike, one fixed reading.

    A user turn that ends with the tools block (F3, read from the first turn that lists them) is a
    system message; one that starts ``Function result for NAME: `` a tool message named NAME; a
    model turn is the content after its line break, or its calls, every value a string (F4). The
    tools are ``[]`` where no turn lists them (F2). Call ids are ``call_0``, ``call_1``...
    """
    turns, generation = _turns(prompt)
    tools, listed = _system_tools(turns)
    ids = itertools.count()
    messages = []
    for index, (role, body) in enumerate(turns):
        try:
            messages.append(_message(role, body, listed, ids))
        except ValueError as exc:
            raise parse_error_at(prompt, prompt.find(body) if index else 0, str(exc)) from None
    if not messages:
        raise parse_error_at(prompt, 0, "no turn", expected=[USER_OPEN, MODEL_OPEN])
    return Conversation(messages=messages, tools=tools, add_generation_prompt=generation, variables={})


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "gemma4",
    call=(CALL_OPEN, CALL_CLOSE),
    block=("", RESPONSE_OPEN),
    stop=TURN_CLOSE,
    arguments="quoted",
    values="python_str",
    quote=ESCAPE,
    special_tokens=(CALL_OPEN, CALL_CLOSE, RESPONSE_OPEN, TURN_CLOSE, ESCAPE),
    recover=("bare_call",),
)


# ---------------------------------------------------------------------------- format


class FunctionGemma(Format):
    """Google FunctionGemma (reference: vLLM's ``tool_chat_template_functiongemma.jinja``)."""

    name = "functiongemma"
    aliases = ("function-gemma", "function_gemma", "functiongemma-270m")
    summary = "Google FunctionGemma: <start_function_call>call:f{city:<escape>Paris<escape>}<end_function_call>"
    stop_token = TURN_CLOSE
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/functiongemma/tool_chat_template_functiongemma.jinja"
    template_markers = (CALL_OPEN, CALL_CLOSE, ESCAPE, "Available functions:", RESULT_HEAD.strip())

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
