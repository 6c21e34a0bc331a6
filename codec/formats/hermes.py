"""``hermes``: Hermes / Qwen2.5-style JSON tool calls inside ``<tool_call>`` tags.

Reference template: the Portuguese Hermes template of the Tucano2 models
(``hermes-json-pt.jinja``). A reply looks like::

    Some text
    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call><|im_end|>

Argument values are JSON and keep their JSON types; with ``tools`` they are checked against the
tool's schema, never coerced. Tolerated (each reported as an Issue): a missing
``</tool_call>`` (or ``}``) before the end of the reply or before the next block; ``parameters``
for ``arguments``; ``arguments`` given as a JSON string; Python-literal or single-quoted objects
(``True``, ``None``); raw control characters in strings; two JSON objects in one block, or a JSON
list of them; a code fence around a block's JSON; text after ``<|im_end|>``. A leading
``<think>...</think>`` block (Qwen3-style models) is reasoning.

Other Hermes-style models (Hermes 2 Pro, Qwen 2.5) write calls without ``<tool_call>``: in a
code fence (```` ```json ````), in other tags (``<tool>``, ``<response>``, ``<function_call>``...),
as ``<function=NAME>{arguments}</function>``, or as the bare call objects that make the whole
reply. Those shapes are read too (each reported), and only where they hold nothing but calls:
a JSON example in a fence or a paragraph stays content.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from codec import jinja
from codec.errors import parse_error_at
from codec.format import Format, Functions
from codec.formats._chatml import (
    GENERATION_PROMPT,
    IM_END,
    IM_START,
    RESPONSE_CLOSE,
    RESPONSE_OPEN,
    TURN_END,
    ChatMLTurn,
    read_turns,
    tool_responses,
)
from codec.formats._decode import assistant_message, json_object_as_written, trailing_blocks
from codec.formats._render import concat, required
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation
from codec.wire import WireSpec, compile_spec
from codec.wire.json_object import JsonObject

# ---------------------------------------------------------------------------- markers

SYSTEM_TOOLS_HEADER = (
    "# Tools / Ferramentas\n\nVocê pode chamar uma ou mais funções para auxiliar na consulta do usuário.\n\n"
    "Você recebe assinaturas de funções dentro de tags XML <tools></tools>:\n<tools>"
)
SYSTEM_TOOLS_FOOTER = (
    "\n</tools>\n\nPara cada chamada de função, retorne um objeto json com o nome da função e os "
    "argumentos dentro das tags XML <tool_call></tool_call>:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
) + TURN_END
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
STOP = IM_END


# ---------------------------------------------------------------------------- render


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads no ``variables``)."""
    first = messages[0]
    first_is_system = required(first, "role") == "system"
    out: list[str] = []
    if tools:
        out.append(IM_START + "system\n")
        if first_is_system:
            out.append(concat(required(first, "content"), "\n\n"))
        out.append(SYSTEM_TOOLS_HEADER)
        for tool in tools:
            out.append("\n" + jinja.tojson(tool))
        out.append(SYSTEM_TOOLS_FOOTER)
    elif first_is_system:
        out.append(concat(IM_START + "system\n", required(first, "content"), TURN_END))
    for i, message in enumerate(messages):
        role = required(message, "role")
        content = message.get("content")
        content = content if isinstance(content, str) else ""
        if role == "user" or (role == "system" and i):
            out.append(concat(IM_START, role, "\n", content, TURN_END))
        elif role == "assistant":
            out.append(GENERATION_PROMPT + assistant_reply(message) + "\n")
        elif role == "tool":
            if i == 0 or messages[i - 1].get("role") != "tool":
                out.append(IM_START + "user")
            out.append(RESPONSE_OPEN + content + RESPONSE_CLOSE)
            if i == len(messages) - 1 or messages[i + 1].get("role") != "tool":
                out.append(TURN_END)
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
    return "".join(out)


def _kit() -> JsonObject:
    kit = compile_spec(WIRE)
    assert isinstance(kit, JsonObject)
    return kit


def assistant_reply(message: dict[str, Any]) -> str:
    """What the model writes for ``message``, the family's reply for :data:`WIRE`: what follows
    ``<|im_start|>assistant\\n``, ``<|im_end|>`` included (the template writes no other)."""
    return _kit().reply_text(message)


def call_block(call: Any) -> str:
    """One ``<tool_call>`` block for an OpenAI tool call, as the family writes it for :data:`WIRE`."""
    return _kit().call_text(call)


# ---------------------------------------------------------------------------- decode

#: How the turns the template writes begin (the generation prompt is the assistant's opener).
_OPENERS = (IM_START + "system\n", IM_START + "user\n", GENERATION_PROMPT)
#: The end of the tools block, up to the ``<|im_end|>`` that closes the first system turn.
_TOOLS_END = SYSTEM_TOOLS_FOOTER.removesuffix(TURN_END)
_CALL_HEAD = CALL_OPEN + '\n{"name": "'
_CALL_ARGUMENTS = '", "arguments": '
_CALL_TAIL = "}\n" + CALL_CLOSE
#: Stands for messages the template does not render (any role but system, user, assistant and
#: tool) where the prompt shows there were some: between two turns of tool results, before a
#: system turn that the tools header does not hold, or as the whole conversation.
UNSHOWN_MESSAGE: dict[str, Any] = {"role": "developer", "content": ""}


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts")."""
    turns, generation_prompt = read_turns(prompt, 0, _OPENERS)
    ids = itertools.count()
    messages, tools = read_messages(
        prompt, turns, SYSTEM_TOOLS_HEADER, _TOOLS_END, lambda turn: _assistant_message(prompt, turn, ids)
    )
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation_prompt}
    )


def read_messages(
    text: str,
    turns: Sequence[ChatMLTurn],
    tools_header: str,
    tools_end: str,
    assistant: Callable[[ChatMLTurn], dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The messages and the tools of hermes-style ChatML ``turns`` (the first system turn may end
    with the tools block that ``tools_header`` opens and ``tools_end`` closes); ``assistant``
    reads an assistant turn, in order. Messages the template does not render stand where the
    prompt shows there were some."""
    tools: list[dict[str, Any]] | None = None
    header_system = False  # the tools header holds the first system message
    messages: list[dict[str, Any]] = []
    for turn in turns:
        body = turn.body + 1  # past the newline after the role
        if turn.role == "system" and turn.start == 0 and text.endswith(tools_end, body, turn.end):
            system, tools = _tools_turn(text, body, turn.end - len(tools_end), tools_header)
            if system is not None:
                messages.append({"role": "system", "content": system})
                header_system = True
        elif turn.role == "user":
            results = tool_responses(text, turn.body, turn.end)
            if results is None:
                messages.append({"role": "user", "content": text[body : turn.end]})
            else:
                if messages and messages[-1]["role"] == "tool":  # else the two groups would render as one
                    messages.append(dict(UNSHOWN_MESSAGE))
                messages += [{"role": "tool", "content": result} for result in results]
        elif turn.role == "system":
            messages.append({"role": "system", "content": text[body : turn.end]})
        else:
            messages.append(assistant(turn))
    if tools and messages and messages[0]["role"] == "system" and not header_system:
        messages.insert(0, dict(UNSHOWN_MESSAGE))  # else the system message would move into the header
    if not messages:
        messages.append(dict(UNSHOWN_MESSAGE))
    return messages, tools


def _tools_turn(
    text: str, body: int, footer: int, tools_header: str = SYSTEM_TOOLS_HEADER
) -> tuple[str | None, list[dict[str, Any]]]:
    """The system text (None without one) and the tools of the first system turn; its tools block ends at ``footer``.

    ``tools_header``: the header the tools block opens with (``qwen3`` writes its own).
    """
    header = text.rfind(tools_header, body, footer)  # declarations are one-line JSON: the last header is it
    if header < 0:
        raise parse_error_at(text, footer, "the tools instructions are not preceded by their header")
    system = None
    if header > body:
        if not text.startswith("\n\n", header - 2) or header - 2 < body:
            raise parse_error_at(text, header, "expected a blank line between the system message and the tools")
        system = text[body : header - 2]
    return system, declaration_lines(text, header + len(tools_header), footer, _tool_line)


def declaration_lines(text: str, pos: int, footer: int, read_line: Callable[[str, int, int], Any]) -> list[Any]:
    """The declarations from ``pos`` to ``footer``, one per line, each after a line break and read
    by ``read_line(text, start, end)``; a block that declares nothing raises :class:`ParseError`."""
    found: list[Any] = []
    while pos < footer:
        if not text.startswith("\n", pos):
            raise parse_error_at(text, pos, "expected one declaration per line", expected=("\n",))
        line_end = text.find("\n", pos + 1, footer)
        line_end = footer if line_end < 0 else line_end
        found.append(read_line(text, pos + 1, line_end))
        pos = line_end
    if not found:
        raise parse_error_at(text, pos, "the block declares nothing")
    return found


def _tool_line(text: str, start: int, end: int) -> dict[str, Any]:
    """The tool declared as JSON on ``text[start:end]``, as written (the template writes each tool as given)."""
    line = text[start:end]
    try:
        value, stop = PLAIN_JSON_DECODER.raw_decode(line)
    except json.JSONDecodeError as exc:
        raise parse_error_at(text, start + exc.pos, f"a tool declaration is not JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise parse_error_at(text, start, f"a tool declaration is not plain JSON: {exc}") from None
    if stop != len(line):
        raise parse_error_at(text, start + stop, "unexpected text after a tool declaration")
    if not isinstance(value, dict):
        raise parse_error_at(text, start, "a tool declaration is not a JSON object")
    return value


def _assistant_message(text: str, turn: ChatMLTurn, ids: Iterator[int]) -> dict[str, Any]:
    """An assistant turn: its content, then the calls that end it (each block that reads back exactly)."""
    start = turn.body + 1
    cut, calls = trailing_blocks(
        text,
        start,
        turn.end,
        _CALL_HEAD,
        _read_call,
        lambda pos: pos == start or (pos - start >= 2 and text[pos - 1] == "\n"),
    )
    content = text[start : turn.end] if not calls else text[start : max(start, cut - 1)]
    return assistant_message(content, calls, ids)


def _read_call(text: str, pos: int, end: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
    """The call block at ``pos`` (name, arguments) and the offset after it, if it renders back as written.

    A block whose arguments are not as ``tojson`` writes them (arguments given as a differently
    spelled JSON string), or whose name holds the separator, is not a call: it stays content.
    """
    name_start = pos + len(_CALL_HEAD)
    name_end = text.find(_CALL_ARGUMENTS, name_start, end)
    if name_end < 0:
        return None
    got = json_object_as_written(text, name_end + len(_CALL_ARGUMENTS))
    if got is None or not text.startswith(_CALL_TAIL, got[1], end):
        return None
    return (text[name_start:name_end], got[0]), got[1] + len(_CALL_TAIL)


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "json_object",
    call=(CALL_OPEN, CALL_CLOSE),
    stop=STOP,
    reasoning=("<think>", "</think>"),
    name=('"name"', ""),
    arguments_keys=("arguments", "parameters"),
    separator="\n",
    recover=("foreign_shapes", "unwrapped_calls"),
)


# ---------------------------------------------------------------------------- format


class Hermes(Format):
    """Hermes / Qwen2.5 JSON tool calls (reference: the Tucano2 Portuguese Hermes template)."""

    name = "hermes"
    aliases = ("hermes_json",)
    summary = 'Hermes/Qwen2.5 JSON calls: <tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>'
    stop_token = STOP
    reference_template = "hermes-json-pt.jinja"
    template_markers = (IM_START, CALL_OPEN, '"arguments"')

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
