"""``kimi_k2``: Kimi K2, calls named by their ids (``functions.NAME:IDX``), JSON arguments, in a section.

Reference template: Kimi K2 Instruct's (``families/kimi_k2/moonshotai-Kimi-K2.jinja``, CRLF line
ends, which Jinja reads as line breaks). A reply after the generation prompt looks like (one line:
the breaks are only for this page)::

    Let me check.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0
    <|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|><|im_end|>

The id is the only place the call's name stands: codec's ids for Kimi's calls have that shape
(``functions.get_weather:0``), a parsed call's id is the one its reply writes, and a reply
rendered for a message writes the message's ids back where they have it. The template's quirks,
by the IDs the renderer cites:

* ``K1``: with tools, a first turn ``<|im_system|>tool_declare<|im_middle|>`` holds them as one
  ``tojson`` list.
* ``K2``: a conversation whose first message is not a system message gets the system turn
  ``You are a helpful assistant`` first.
* ``K3``: each message is its role's header (system and tool results ``<|im_system|>``, user
  ``<|im_user|>``, assistant ``<|im_assistant|>``, then the role's name and ``<|im_middle|>``; other
  roles none), its text and ``<|im_end|>``.
* ``K4``: an assistant message with calls (a list that is not empty) writes its content when it
  has one, then the section; each call's id is written as ``functions.NAME:INDEX`` (its index in
  the message), whatever the call's own id, and its arguments as ``tojson`` writes them: an object
  as JSON, a string (OpenAI's JSON text) as a JSON string holding it (encoded twice).
* ``K5``: a tool result is ``## Return of ID\\nCONTENT``, the ``\\n`` a backslash and an ``n``,
  ``ID`` its ``tool_call_id`` (nothing without one); its content printed as Jinja prints it.
* ``K6``: any other message's content: a string as it is; a list of parts, each text part's
  text, each image part (``type`` image, or an ``image`` or ``image_url`` key)
  ``<|media_start|>image<|media_content|><|media_pad|><|media_end|>`` and a line break; no content
  nothing.
* ``K7``: the generation prompt is ``<|im_assistant|>assistant<|im_middle|>``; the template reads
  no variable and writes no reasoning.
"""

from __future__ import annotations

from typing import Any

from codec import jinja
from codec.errors import RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import expected_error
from codec.formats._render import Undefined, attr, call_method, concat, iterate, string, subscript
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation, FunctionCall
from codec.wire import WireSpec

# ---------------------------------------------------------------------------- markers

IM_SYSTEM, IM_USER, IM_ASSISTANT = "<|im_system|>", "<|im_user|>", "<|im_assistant|>"
IM_MIDDLE, IM_END = "<|im_middle|>", "<|im_end|>"
TOOL_DECLARE = IM_SYSTEM + "tool_declare" + IM_MIDDLE
DEFAULT_SYSTEM = IM_SYSTEM + "system" + IM_MIDDLE + "You are a helpful assistant" + IM_END
HEADERS = {
    "system": IM_SYSTEM + "system" + IM_MIDDLE,
    "user": IM_USER + "user" + IM_MIDDLE,
    "assistant": IM_ASSISTANT + "assistant" + IM_MIDDLE,
    "tool": IM_SYSTEM + "tool" + IM_MIDDLE,
}
SECTION_BEGIN, SECTION_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CALL_BEGIN, CALL_END = "<|tool_call_begin|>", "<|tool_call_end|>"
ARGUMENT_BEGIN = "<|tool_call_argument_begin|>"
RETURN_OF = "## Return of "
RETURN_BREAK = "\\n"  # a backslash and an n, as the template's text writes them (K5)
MEDIA = "<|media_start|>image<|media_content|><|media_pad|><|media_end|>\n"
ID_PREFIX = "functions."


def call_id(name: str, index: int) -> str:
    """The id Kimi writes for call ``index`` of a message, named ``name`` (K4)."""
    return f"{ID_PREFIX}{name}:{index}"


# ---------------------------------------------------------------------------- render


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads no ``variables``)."""
    out = []
    if tools:  # K1
        out.append(TOOL_DECLARE + jinja.tojson(tools) + IM_END)
    for i, message in enumerate(messages):
        if i == 0 and attr(subscript(messages, 0), "role") != "system":  # K2
            out.append(DEFAULT_SYSTEM)
        role = attr(message, "role")
        out.append(HEADERS.get(role, "") if isinstance(role, str) else "")  # K3
        calls = call_method(message, "get", "tool_calls")
        content = attr(message, "content")
        if role == "assistant" and calls:  # K4
            if content:
                out.append(string(content))
            out.append(SECTION_BEGIN)
            for index, call in enumerate(iterate(calls)):
                function = subscript(call, "function")
                formatted = concat(ID_PREFIX, subscript(function, "name"), ":", str(index))
                arguments = jinja.tojson(_undefined_as_none(subscript(function, "arguments")))
                out.append(CALL_BEGIN + formatted + ARGUMENT_BEGIN + arguments + CALL_END)
            out.append(SECTION_END)
        elif role == "tool":  # K5
            out.append(RETURN_OF + string(attr(message, "tool_call_id")) + RETURN_BREAK + string(content))
        elif isinstance(content, str):  # K6
            out.append(content)
        elif content is not None and not isinstance(content, Undefined):
            out.append(_parts(content))
        out.append(IM_END)
    if add_generation_prompt:  # K7
        out.append(HEADERS["assistant"])
    return "".join(out)


def _undefined_as_none(value: Any) -> Any:
    return None if isinstance(value, Undefined) else value


def _parts(content: Any) -> str:
    """A content that is no string, as K6 writes it: its image parts' markers and text parts' texts."""
    out = []
    for part in iterate(content):
        kind = subscript(part, "type")
        if kind == "image" or _has(part, "image") or _has(part, "image_url"):
            out.append(MEDIA)
        else:
            out.append(string(subscript(part, "text")))
    return "".join(out)


def _has(part: Any, key: str) -> bool:
    try:
        return key in part
    except TypeError:
        raise RenderError(f"argument of type '{type(part).__name__}' is not iterable") from None


# ---------------------------------------------------------------------------- decode

#: What a message's text may run to: the end of its turn.
_ROLES = {header: role for role, header in HEADERS.items()}


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of: its tools, its messages (a message without a
    header reads as a ``developer`` one), calls with the ids Kimi writes (``functions.NAME:0``...),
    tool results with the id the prompt names."""
    pos, tools = 0, None
    if prompt.startswith(TOOL_DECLARE):
        tools, pos = _tools(prompt, len(TOOL_DECLARE))
    messages: list[dict[str, Any]] = []
    generation = False
    while pos < len(prompt):
        header = next((h for h in _ROLES if prompt.startswith(h, pos)), None)
        if header is not None and header == HEADERS["assistant"] and pos + len(header) == len(prompt):
            generation = True
            break
        start = pos + (len(header) if header else 0)
        end = prompt.find(IM_END, start)
        if end < 0:
            raise parse_error_at(prompt, pos, "a turn is never ended", expected=(IM_END,))
        role = _ROLES[header] if header else "developer"
        messages.append(_message(prompt, role, start, end))
        pos = end + len(IM_END)
    # K2: a default system turn reads as a system message of that text, which renders the same.
    if not messages:
        messages.append({"role": "developer"})
    return Conversation.model_validate({"messages": messages, "tools": tools, "add_generation_prompt": generation})


def _tools(prompt: str, start: int) -> tuple[list[dict[str, Any]], int]:
    """The tools of the K1 turn at ``start``, as written, and the offset after the turn."""
    try:
        value, end = PLAIN_JSON_DECODER.raw_decode(prompt, start)
    except (ValueError, RecursionError):
        raise parse_error_at(prompt, start, "the tools are not JSON") from None
    if not isinstance(value, list) or not value or jinja.tojson(value) != prompt[start:end]:
        raise parse_error_at(prompt, start, "the tools are not a list as tojson writes it")
    if not prompt.startswith(IM_END, end):
        raise expected_error(prompt, end, (IM_END,))
    return value, end + len(IM_END)


def _message(prompt: str, role: str, start: int, end: int) -> dict[str, Any]:
    text = prompt[start:end]
    if role == "tool":
        if not text.startswith(RETURN_OF) or RETURN_BREAK not in text:
            raise expected_error(prompt, start, (RETURN_OF,))
        link, content = text[len(RETURN_OF) :].split(RETURN_BREAK, 1)
        message: dict[str, Any] = {"role": "tool", "content": content}
        if link:
            message["tool_call_id"] = link
        return message
    if role != "assistant" or not text.endswith(SECTION_END):
        return {"role": role, "content": text}
    section = text.rfind(SECTION_BEGIN)
    calls = _calls(text, section + len(SECTION_BEGIN), len(text) - len(SECTION_END)) if section >= 0 else None
    if calls is None:
        return {"role": role, "content": text}
    return {"role": "assistant", "content": text[:section] or None, "tool_calls": calls}


def _calls(text: str, pos: int, end: int) -> list[dict[str, Any]] | None:
    """The calls K4 writes between ``pos`` and ``end``, if they read back exactly (else None)."""
    calls: list[dict[str, Any]] = []
    while pos < end:
        if not text.startswith(CALL_BEGIN, pos):
            return None
        head_end = text.find(ARGUMENT_BEGIN, pos, end)
        close = text.find(CALL_END, head_end, end) if head_end >= 0 else -1
        if close < 0:
            return None
        head, written = text[pos + len(CALL_BEGIN) : head_end], text[head_end + len(ARGUMENT_BEGIN) : close]
        index = len(calls)
        suffix = f":{index}"
        if not head.startswith(ID_PREFIX) or not head.endswith(suffix) or len(head) <= len(ID_PREFIX + suffix):
            return None
        name = head[len(ID_PREFIX) : -len(suffix)]
        function = _function(name, written)
        if function is None:
            return None
        calls.append({"id": call_id(name, index), "type": "function", "function": function})
        pos = close + len(CALL_END)
    return calls or None


def _function(name: str, written: str) -> FunctionCall | dict[str, Any] | None:
    """A call's function from its arguments as tojson wrote them: an object, or a string (OpenAI's
    JSON text, encoded twice by K4), kept as that text."""
    try:
        value = PLAIN_JSON_DECODER.decode(written)
    except (ValueError, RecursionError):
        return None
    if jinja.tojson(value) != written:
        return None
    if isinstance(value, dict):
        return {"name": name, "arguments": value}
    if isinstance(value, str):
        return FunctionCall.model_construct(name=name, arguments=value)
    return None


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "named_json",
    block=(SECTION_BEGIN, SECTION_END),
    call=(CALL_BEGIN, CALL_END),
    name=(ID_PREFIX, ARGUMENT_BEGIN),
    call_id=(":", ID_PREFIX + "{name}:{id}"),
    stop=IM_END,
    reasoning=("<think>", "</think>"),
    special_tokens=(SECTION_BEGIN, SECTION_END, CALL_BEGIN, CALL_END, ARGUMENT_BEGIN, IM_END),
    recover=("singular_section",),
)


# ---------------------------------------------------------------------------- format


class KimiK2(Format):
    """Kimi K2: ``functions.NAME:IDX<|tool_call_argument_begin|>{...}`` calls in a section."""

    name = "kimi_k2"
    aliases = ("kimi-k2", "kimi_k2_instruct")
    summary = "Kimi K2: <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{...}<|tool_call_end|>"
    stop_token = IM_END
    reference_template = "../templates/families/kimi_k2/moonshotai-Kimi-K2.jinja"
    template_markers = (SECTION_BEGIN, ARGUMENT_BEGIN)

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
