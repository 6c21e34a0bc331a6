"""``qwen2_5``: the prompts of Qwen2.5 and Qwen2.5-Coder (Instruct), around hermes' JSON tool calls.

Reference template: ``Qwen-Qwen2.5-7B-Instruct.jinja`` (``../shared/templates/families/qwen2_5``,
the template the Qwen2.5 and Qwen2.5-Coder Instruct models ship). Replies are ``hermes``' JSON calls
between ``<tool_call>`` tags: the reply side is hermes' spec (``Hermes.wire``) as the
``json_object`` wire family compiles it, not a copy. Only the prompt differs, reproduced by
:func:`prompt_text` and read back by :func:`prompt_conversation`; ``qwq`` (QwQ-32B) renders with
the same pieces (:func:`system_turn`, :func:`turn`, :func:`call_block`).

Quirks of the template, cited by ID below:

- ``P1`` A system turn always comes first. With tools (a non-empty list): ``<|im_start|>system\\n``,
  the first message's content when it is a system message (printed: parts as their Python text),
  else Qwen2.5's default system prompt (:data:`DEFAULT_SYSTEM`), then ``\\n\\n`` and qwen3's English
  tools header, one ``tojson`` line per tool and qwen3's call instructions. Without tools, the
  first system message's content joined with ``+`` (it must be text), else the default prompt.
  So a first system message whose content is the default prompt writes what no system message
  does.
- ``P2`` A user message, a system message that is not the first, and an assistant message without
  ``tool_calls`` (missing, None or empty) are ``<|im_start|>ROLE\\n`` + content + ``<|im_end|>\\n``,
  joined with ``+``: a missing content or content parts raise.
- ``P3`` An assistant message with ``tool_calls`` is ``<|im_start|>assistant``, ``\\n`` + its content
  when the content is truthy (joined with ``+``: parts raise), then per call (its ``function``
  where it has one) ``\\n<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>``, then
  ``<|im_end|>\\n``. The name is printed; ARGS is ``arguments | tojson`` always, **also for
  arguments given as a JSON string**, which is written as a JSON string literal
  (``"arguments": "{\\"a\\": 1}"``: pass arguments as objects); missing arguments raise Python's
  ``Object of type Undefined is not JSON serializable``.
- ``P4`` Tool results: consecutive tool messages share one ``<|im_start|>user`` turn, each
  ``\\n<tool_response>\\nRESULT\\n</tool_response>`` (printed), the group closed by ``<|im_end|>\\n``.
  Roles other than system, user, assistant and tool leave no trace.
- ``P5`` The generation prompt is ``<|im_start|>assistant\\n``. The template reads no variable.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from codec import jinja
from codec.format import Format, Functions
from codec.formats import hermes, qwen3
from codec.formats._chatml import (
    GENERATION_PROMPT,
    IM_START,
    RESPONSE_CLOSE,
    RESPONSE_OPEN,
    TURN_END,
    ChatMLTurn,
    read_turns,
)
from codec.formats._decode import arguments_as_written, call_id, trailing_blocks
from codec.formats._render import attr, concat, defined, iterate, string, tojson
from codec.formats.hermes import UNSHOWN_MESSAGE, Hermes
from codec.models import Conversation, FunctionCall

__all__ = ["Qwen2_5", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers

#: The system prompt written where the conversation has none (P1).
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
SYSTEM_OPEN = IM_START + "system\n"
#: What follows the system text in the first turn when there are tools (P1): qwen3's header and footer.
TOOLS_HEADER = "\n\n" + qwen3.SYSTEM_TOOLS_HEADER
TOOLS_FOOTER = qwen3.SYSTEM_TOOLS_FOOTER
CALL_HEAD = "\n" + hermes.CALL_OPEN + '\n{"name": "'
CALL_ARGUMENTS = '", "arguments": '
CALL_TAIL = "}\n" + hermes.CALL_CLOSE

# ---------------------------------------------------------------------------- render


def system_turn(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, default: str | None) -> str:
    """The first turn (P1): the system text (``default`` where the first message is no system
    message; None: no turn without tools, no text with them) and the tools block."""
    first = messages[0]
    is_system = attr(first, "role") == "system"
    if tools:
        system = string(attr(first, "content")) if is_system else default or ""
        lines = "".join("\n" + jinja.tojson(tool) for tool in tools)
        return SYSTEM_OPEN + system + TOOLS_HEADER + lines + TOOLS_FOOTER
    if is_system:
        return concat(SYSTEM_OPEN, attr(first, "content"), TURN_END)
    return "" if default is None else SYSTEM_OPEN + default + TURN_END


def call_block(call: Any) -> str:
    """One call of an assistant's ``tool_calls``, its newline first (P3): arguments always ``tojson``."""
    function = attr(call, "function")
    if defined(function):
        call = function
    head = CALL_HEAD + string(attr(call, "name")) + CALL_ARGUMENTS
    return head + tojson(attr(call, "arguments")) + CALL_TAIL


#: ``content(message, is_last)``: the content an assistant turn writes (``qwq`` cuts reasoning off).
ShownContent = Callable[[dict[str, Any], bool], Any]


def turn(messages: list[dict[str, Any]], i: int, content: ShownContent) -> str:
    """What message ``i`` writes (P2-P4); ``content`` gives an assistant turn's content."""
    message, last = messages[i], len(messages) - 1
    role = attr(message, "role")
    calls = attr(message, "tool_calls")
    if role == "user" or (role == "system" and i):
        return concat(IM_START, role, "\n", attr(message, "content"), TURN_END)
    if role == "assistant" and not calls:
        return concat(IM_START, role, "\n", content(message, i == last), TURN_END)
    if role == "assistant":  # P3
        shown = content(message, i == last)
        out = IM_START + "assistant"
        if attr(message, "content"):
            out += concat("\n", shown)
        return out + "".join(call_block(call) for call in iterate(calls)) + TURN_END
    if role == "tool":  # P4
        out = ""
        if i == 0 or attr(messages[i - 1], "role") != "tool":
            out += IM_START + "user"
        out += RESPONSE_OPEN + string(attr(message, "content")) + RESPONSE_CLOSE
        if i == last or attr(messages[i + 1], "role") != "tool":
            out += TURN_END
        return out
    return ""


def _content(message: dict[str, Any], is_last: bool) -> Any:
    return attr(message, "content")


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads no ``variables``: P5)."""
    out = [system_turn(messages, tools, DEFAULT_SYSTEM)]
    out += [turn(messages, i, _content) for i in range(len(messages))]
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- decode

#: How the turns the template writes begin (the generation prompt is the assistant's opener).
OPENERS = (SYSTEM_OPEN, IM_START + "user\n", GENERATION_PROMPT)
TOOLS_END = TOOLS_FOOTER.removesuffix(TURN_END)


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (README, "Decoding prompts").

    The turns read as hermes' do; a system text that is the default prompt reads as no system
    message (P1), and string arguments come back as the text they were (P3).
    """
    turns, generation_prompt = read_turns(prompt, 0, OPENERS)
    messages, tools = read_messages(prompt, turns, DEFAULT_SYSTEM, lambda turn, ids: assistant_turn(prompt, turn, ids))
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation_prompt}
    )


def read_messages(
    text: str,
    turns: list[ChatMLTurn],
    unwritten: str | None,
    assistant: Callable[[ChatMLTurn, Iterator[int]], dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The messages and tools of the Qwen2.5-style ``turns``: hermes' reading, less the first
    system message where it is the text the template writes without one (``unwritten``: the
    default prompt; None: the empty text, and only in the tools turn)."""
    ids = itertools.count()
    messages, tools = hermes.read_messages(
        text, turns, qwen3.SYSTEM_TOOLS_HEADER, TOOLS_END, lambda turn: assistant(turn, ids)
    )
    first = messages[0]
    written = unwritten if unwritten is not None else "" if tools else None
    if turns and turns[0].start == 0 and first == {"role": "system", "content": written}:
        messages = messages[1:]
        if messages and messages[0]["role"] == "system":  # a later system message: it must stay later
            messages.insert(0, dict(UNSHOWN_MESSAGE))
    return messages or [dict(UNSHOWN_MESSAGE)], tools


def read_call(text: str, pos: int, end: int) -> tuple[tuple[str, Any], int] | None:
    """The call block at ``pos`` (its ``<tool_call>``): (name, arguments) and the offset after it, where
    it renders back as written; arguments are an object, or the string a JSON string literal holds (P3)."""
    name_start = pos + len(CALL_HEAD) - 1
    name_end = text.find(CALL_ARGUMENTS, name_start, end)
    if name_end < 0:
        return None
    got = arguments_as_written(text, name_end + len(CALL_ARGUMENTS))
    if got is None:
        return None
    value, stop = got
    if not text.startswith(CALL_TAIL, stop, end):
        return None
    return (text[name_start:name_end], value), stop + len(CALL_TAIL)


def assistant_turn(
    text: str, turn: ChatMLTurn, ids: Iterator[int], *, lone_newline: bool = False, empty: str | None = None
) -> dict[str, Any]:
    """An assistant turn: its content, then the calls that end it (each block that reads back exactly).

    ``lone_newline``: a content of only ``\\n`` may come before the calls (a truthy content that
    ``qwq`` writes as nothing); ``empty``: what an empty content before calls reads as.
    """
    start = turn.body + 1

    def may_end(pos: int) -> bool:
        return pos == start or (text[pos - 1] == "\n" and (pos - start >= 2 or lone_newline))

    cut, calls = trailing_blocks(text, start, turn.end, CALL_HEAD[1:], read_call, may_end)
    if not calls:
        return {"role": "assistant", "content": text[start : turn.end]}
    content = text[start : cut - 1] if cut > start else empty
    if cut == start + 1:
        content = "\n"
    message: dict[str, Any] = {"role": "assistant", "content": content}
    message["tool_calls"] = [
        {"id": call_id(next(ids)), "type": "function", "function": _function(name, arguments)}
        for name, arguments in calls
    ]
    return message


def _function(name: str, arguments: Any) -> FunctionCall | dict[str, Any]:
    """A call's function; arguments that were a string stay that string (P3), unvalidated."""
    if isinstance(arguments, str):
        return FunctionCall.model_construct(name=name, arguments=arguments)
    return {"name": name, "arguments": arguments}


# ---------------------------------------------------------------------------- wire
# The reply syntax is hermes' (``Hermes.wire``): parse, stream and export are its family's.

# ---------------------------------------------------------------------------- format


class Qwen2_5(Format):
    """Qwen2.5 / Qwen2.5-Coder prompts with hermes' JSON calls (reference: Qwen2.5-7B-Instruct's template)."""

    name = "qwen2_5"
    aliases = ("qwen25", "qwen2.5", "qwen2_5_coder", "qwen2.5_coder", "qwen25_coder")
    summary = "Qwen2.5 / Qwen2.5-Coder: hermes' JSON <tool_call> blocks, Qwen2.5's default system prompt"
    stop_token = Hermes.stop_token
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/qwen2_5/Qwen-Qwen2.5-7B-Instruct.jinja"
    #: hermes' markers, the tools header's English and the default system prompt (more markers than hermes').
    template_markers = (*Hermes.template_markers, "You may call one or more functions", DEFAULT_SYSTEM)

    functions = Functions(prompt_text, prompt_conversation)
    wire = Hermes.wire
