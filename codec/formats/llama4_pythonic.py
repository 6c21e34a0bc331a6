"""``llama4_pythonic``: Llama 4 header turns with tool calls as a Python-like list, every value quoted.

Reference template: ``tool_chat_template_llama4_pythonic.jinja`` (vLLM's example template, whose
default system prompt is the Llama 4 tool prompt of llama.com). A reply after the generation prompt
``<|header_start|>assistant<|header_end|>\\n\\n`` looks like::

    [get_weather(city="Paris", days="3"), get_time(zone="UTC")]<|eot|>

Every value is ``"`` + ``str(value)`` + ``"`` with **nothing escaped** (``"%s" | format(value)``): ``7`` is
``"7"``, ``True`` is ``"True"``, a list ``"['a', 1]"``, so values come back typed by the tool's
schema. Keyword arguments and calls are separated by ``", "``.

Quirks of the reference template, reproduced by the renderer:

* T1. The prompt opens with ``bos_token``; ``custom_tools`` stands for ``tools``; an empty tools list is none.
* T2. A first system message's text (a content list: its first part's text), trimmed, is the system
  turn's; with tools it is followed by ``\\nHere is a list of functions...`` and the tools as JSON
  indented by 4. Without a system message, tools bring the default system prompt, the tools' JSON
  right after it. A system text that trims to nothing writes no system turn, the tools with it.
* T3. A turn is ``<|header_start|>ROLE<|header_end|>\\n\\n`` + text + ``<|eot|>``; a message's content
  list gives ``<|image|>`` for an image part and each text part trimmed.
* T4. An assistant message with calls writes its content (text parts untrimmed) and
  ``[f(k="v"), g()]<|eot|>``; a message of another role with calls writes nothing at all.
  ``arguments`` given as a string are iterated: each character a key with an empty value.
* T5. A ``tool`` (or ``ipython``) message is an ``ipython`` turn whose text is its content as JSON
  (a content list: each text part as JSON, run together).
* T6. The generation prompt is ``<|header_start|>assistant<|header_end|>\\n\\n``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

from codec.errors import parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import bos_token
from codec.formats._pythonic import CallListSyntax, decoded_call, raw_string_readings, read_call_list
from codec.formats._reading import find_all
from codec.formats._render import attr, concat, defined, iterate, string, subscript, tojson, trim
from codec.models import Conversation, Message
from codec.schema import tool_name, tool_parameters
from codec.wire import WireSpec
from codec.wire._call_list_python import render_python, typed_arguments

# ---------------------------------------------------------------------------- markers

HEADER_START = "<|header_start|>"
HEADER_END = "<|header_end|>\n\n"
EOT = "<|eot|>"
IMAGE = "<|image|>"
GENERATION_PROMPT = HEADER_START + "assistant" + HEADER_END
SYSTEM_TOOLS = (
    "\nHere is a list of functions in JSON format that you can invoke. Use exact format: "
    "[func_name1(param1=value1, param2=value2), func_name2(...)]\n"
)
#: The system prompt written where tools come without a system message (T2): Llama 4's tool prompt.
DEFAULT_SYSTEM = (
    "You are a helpful assistant and an expert in function composition. You can answer general questions "
    "using your internal knowledge OR invoke functions when necessary. Follow these strict guidelines:\n"
    "\n"
    "1. FUNCTION CALLS:\n"
    "- ONLY use functions that are EXPLICITLY listed in the function list below\n"
    '- If NO functions are listed (empty function list []), respond ONLY with internal knowledge or "I '
    "don't have access to [Unavailable service] information\"\n"
    "- If a function is not in the list, respond ONLY with internal knowledge or \"I don't have access to "
    '[Unavailable service] information"\n'
    "- If ALL required parameters are present AND the query EXACTLY matches a listed function's purpose: "
    "output ONLY the function call(s)\n"
    "- Use exact format: [func_name1(param1=value1, param2=value2), func_name2(...)]\n"
    "Examples:\n"
    'CORRECT: [get_weather(location="Vancouver"), calculate_route(start="Boston", end="New York")] <- '
    "Only if get_weather and calculate_route are in function list\n"
    'INCORRECT: get_weather(location="New York")\n'
    'INCORRECT: Let me check the weather: [get_weather(location="New York")]\n'
    'INCORRECT: [get_events(location="Singapore")] <- If function not in list\n'
    "\n"
    "2. RESPONSE RULES:\n"
    "- For pure function requests matching a listed function: ONLY output the function call(s)\n"
    "- For knowledge questions: ONLY output text\n"
    "- For missing parameters: ONLY request the specific missing parameters\n"
    "- For unavailable services (not in function list): output ONLY with internal knowledge or \"I don't "
    'have access to [Unavailable service] information". Do NOT execute a function call.\n'
    "- If the query asks for information beyond what a listed function provides: output ONLY with "
    "internal knowledge about your limitations\n"
    "- NEVER combine text and function calls in the same response\n"
    "- NEVER suggest alternative functions when the requested service is unavailable\n"
    "- NEVER create or invent new functions not listed below\n"
    "\n"
    "3. STRICT BOUNDARIES:\n"
    "- ONLY use functions from the list below - no exceptions\n"
    "- NEVER use a function as an alternative to unavailable information\n"
    "- NEVER call functions not present in the function list\n"
    "- NEVER add explanatory text to function calls\n"
    "- NEVER respond with empty brackets\n"
    "- Use proper Python/JSON syntax for function calls\n"
    "- Check the function list carefully before responding\n"
    "\n"
    "4. TOOL RESPONSE HANDLING:\n"
    "- When receiving tool responses: provide concise, natural language responses\n"
    "- Don't repeat tool response verbatim\n"
    "- Don't add supplementary information\n"
    "\n"
    "Here is a list of functions in JSON format that you can invoke:\n"
)


# ---------------------------------------------------------------------------- render


def header(role: Any) -> str:
    """``<|header_start|>ROLE<|header_end|>\\n\\n`` (T3)."""
    return concat(HEADER_START, role, HEADER_END)


def part_texts(content: Any, *, trimmed: bool) -> str:
    """A content's text as T3 writes it: a string as is, else ``<|image|>`` and text parts (``trimmed``) joined."""
    if isinstance(content, str):
        return content
    out = []
    for part in iterate(content):
        kind = subscript(part, "type")
        if kind == "image":
            out.append(IMAGE)
        elif kind == "text":
            text = subscript(part, "text")
            out.append(trim(text) if trimmed else string(text))
    return "".join(out)


def render_call(call: Any) -> str:
    """``NAME(key="value", ...)`` (T4): each value ``"%s" | format(value)``, a missing one empty."""
    function = attr(call, "function")
    if defined(function):
        call = function
    arguments = attr(call, "arguments")
    pairs = [concat(key, '="', _formatted(subscript(arguments, key)), '"') for key in iterate(arguments)]
    return concat(attr(call, "name"), "(") + ", ".join(pairs) + ")"


def _formatted(value: Any) -> str:
    """``"%s" | format(value)``: ``str()``, an undefined value empty."""
    return render_python(value, "python_str")[1:-1] if defined(value) else ""


def system_turn(messages: list[dict[str, Any]], tools: Any) -> tuple[str, list[dict[str, Any]]]:
    """The system turn (T1, T2) and the messages after the system message."""
    definition = tojson(tools, indent=4) if tools else None
    provided = False
    text = ""
    if subscript(messages[0], "role") == "system":
        provided = True
        content = subscript(messages[0], "content")
        text = trim(content if isinstance(content, str) else subscript(subscript(content, 0), "text"))
        messages = messages[1:]
    elif definition is not None:
        text = DEFAULT_SYSTEM
    if not text:
        return "", messages
    if provided and definition is not None:
        text += SYSTEM_TOOLS + definition
    elif definition is not None:
        text += definition
    return header("system") + text + EOT, messages


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it."""
    custom = variables.get("custom_tools")
    if custom:
        tools = custom
    out = [string(variables.get("bos_token", ""))]
    system, messages = system_turn(messages, tools or None)
    out.append(system)
    for message in messages:
        role = attr(message, "role")
        calls = attr(message, "tool_calls")
        has_calls = "tool_calls" in message and len(calls) != 0
        if not (role in ("ipython", "tool") or has_calls):
            out.append(header(role) + part_texts(subscript(message, "content"), trimmed=True) + EOT)
        elif "tool_calls" in message:
            if role == "assistant":
                content = part_texts(subscript(message, "content"), trimmed=False)
                listed = ", ".join(render_call(call) for call in iterate(calls))
                out.append(header("assistant") + content + "[" + listed + "]" + EOT)
        else:
            content = subscript(message, "content")
            if isinstance(content, str):
                text = tojson(content)
            else:
                text = "".join(
                    tojson(subscript(part, "text")) for part in iterate(content) if subscript(part, "type") == "text"
                )
            out.append(header("ipython") + text + EOT)
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """The assistant turn as the model writes it after the generation prompt: the content (text parts
    joined), and the call list where there are calls (T4), then ``<|eot|>``."""
    calls = attr(message, "tool_calls")
    if defined(calls) and calls:
        content = part_texts(attr(message, "content"), trimmed=False)
        return content + "[" + ", ".join(render_call(call) for call in iterate(calls)) + "]" + EOT
    return part_texts(attr(message, "content"), trimmed=True) + EOT


# ---------------------------------------------------------------------------- decode
#
# A turn runs from its header to the first <|eot|> that the next header (or the end) follows. The
# call list's strings are unescaped, so each way a value may end is tried; values come back typed by
# the tools the system turn declares.

CALL_SYNTAX = CallListSyntax(call_separator=", ", argument_separator=", ", read_value=raw_string_readings)


def read_tools(text: str) -> list[dict[str, Any]] | None:
    """The tools written as ``text``, JSON indented by 4 exactly as T2 writes them, or None."""
    try:
        tools = json.loads(text)
    except ValueError:
        return None
    if not isinstance(tools, list) or not tools or not all(isinstance(t, dict) for t in tools):
        return None
    return tools if tojson(tools, indent=4) == text else None


def read_system(text: str) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The system text and the tools of the system turn's text (T2)."""
    if text.startswith(DEFAULT_SYSTEM):
        tools = read_tools(text[len(DEFAULT_SYSTEM) :])
        if tools is not None:
            return None, tools
    for at in find_all(text, 0, (SYSTEM_TOOLS,)):
        tools = read_tools(text[at + len(SYSTEM_TOOLS) :])
        if tools is not None:
            return text[:at], tools
    return text, None


def split_calls(text: str) -> tuple[str, list[tuple[str, Any]] | None]:
    """An assistant turn's text: the content, and the call list that ends it (T4), the leftmost that reads."""
    if not text.endswith(")]"):
        return text, None
    for start in find_all(text, 0, ("[",)):
        calls = read_call_list(text[start:], CALL_SYNTAX)
        if calls:
            return text[:start], calls
    return text, None


def _turns(prompt: str, pos: int) -> tuple[list[tuple[str, str]], bool]:
    """The turns from ``pos`` (role, text), and whether the prompt ends with the generation prompt."""
    turns: list[tuple[str, str]] = []
    while pos < len(prompt):
        if prompt.startswith(GENERATION_PROMPT, pos) and len(prompt) - pos == len(GENERATION_PROMPT):
            return turns, True
        end_role = prompt.find(HEADER_END, pos + len(HEADER_START))
        if not prompt.startswith(HEADER_START, pos) or end_role < 0:
            raise parse_error_at(prompt, pos, "expected a turn", expected=[HEADER_START])
        body = end_role + len(HEADER_END)
        end = next(
            (
                e
                for e in find_all(prompt, body, (EOT,))
                if e + len(EOT) == len(prompt) or prompt.startswith(HEADER_START, e + len(EOT))
            ),
            None,
        )
        if end is None:
            raise parse_error_at(prompt, len(prompt), "the turn is never closed by <|eot|>", expected=[EOT])
        turns.append((prompt[pos + len(HEADER_START) : end_role], prompt[body:end]))
        pos = end + len(EOT)
    return turns, False


def _tool_result(text: str) -> Any:
    """A tool result's content from its JSON (T5): a string, or the text parts of several strings run together."""
    decoder = json.JSONDecoder()
    parts, pos = [], 0
    while pos < len(text):
        try:
            value, pos = decoder.raw_decode(text, pos)
        except ValueError:
            return None
        if not isinstance(value, str):
            return None
        parts.append(value)
    if len(parts) == 1:
        return parts[0]
    return [{"type": "text", "text": part} for part in parts]


def _assistant(text: str, ids: Iterator[int], tools: dict[str, Any]) -> Message:
    content, read = split_calls(text)
    if read is None:
        return Message(role="assistant", content=text)
    calls = []
    for name, arguments in read:
        parameters = tool_parameters(tools[name]) if name in tools else None
        calls.append(decoded_call(name, typed_arguments(dict(arguments), parameters), next(ids)))
    return Message(role="assistant", content=content or None, tool_calls=calls)


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` renders; where the template writes several alike, one fixed reading.

    The system turn gives the system message and the tools (none after the default system prompt);
    ``ipython`` turns are tool results, their JSON strings the content; an assistant turn ending in a
    call list that reads is content and calls, whose values come back typed by the declared tools'
    schemas (the prompt writes every value as text). Call ids are ``call_0``, ``call_1``...
    """
    first = prompt.find(HEADER_START)
    if first < 0:  # nothing but a BOS token: a lone system message writes no turn
        first = len(prompt)
    bos = bos_token(prompt, first, HEADER_START)
    turns, generation = _turns(prompt, first)
    messages: list[Message] = []
    tools = None
    if turns and turns[0][0] == "system":
        system, tools = read_system(turns[0][1])
        if system is not None and (not system or system != system.strip()):
            # Not the first system message's (T2 writes it trimmed, and not at all where it is empty): a
            # later one's, after a first system message that wrote nothing.
            messages.append(Message(role="system", content=""))
            tools = None
        else:
            if system is not None:
                messages.append(Message(role="system", content=system))
            turns = turns[1:]
    declared = {str(tool_name(tool)): tool for tool in tools or ()}
    ids = itertools.count()
    for role, text in turns:
        if role == "ipython":
            result = _tool_result(text)
            if result is None:
                raise parse_error_at(prompt, prompt.find(text), "a tool result is not JSON text")
            messages.append(Message(role="tool", content=result))
        elif role == "assistant":
            messages.append(_assistant(text, ids, declared))
        else:
            messages.append(Message(role=role, content=text))
    return Conversation(
        messages=messages or [Message(role="system", content="")],
        tools=tools,
        add_generation_prompt=generation,
        variables={"bos_token": bos} if bos else {},
    )


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "call_list",
    stop=EOT,
    arguments="python",
    values="python_str",
    separator=", ",
    argument_separator=", ",
    recover=("python_tag", "json_calls"),
)


# ---------------------------------------------------------------------------- format


class Llama4Pythonic(Format):
    """Llama 4 with Python-list calls (reference: vLLM's ``tool_chat_template_llama4_pythonic.jinja``)."""

    name = "llama4_pythonic"
    aliases = ("llama4", "llama-4", "llama_4_pythonic", "llama-4-pythonic", "pythonic")
    summary = 'Llama 4 pythonic: [get_weather(city="Paris", days="3")]<|eot|>, values typed by the schema'
    stop_token = EOT
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/llama4/tool_chat_template_llama4_pythonic.jinja"
    template_markers = (HEADER_START, "<|header_end|>", EOT, "ipython", "tool_calls")

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
