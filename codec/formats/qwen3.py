"""``qwen3``: Qwen3's own prompt template around ``hermes``' JSON tool calls.

Reference template: the official Qwen3 template (``qwen3.jinja``, the one the 0.6B-235B models
ship). The reply syntax is ``hermes``' spec (``Hermes.wire``), compiled by the ``json_object``
wire family (grammar, builder, stream syntax and export are the family's, shared): a reply is an
optional ``<think>...</think>`` block, content and
``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` blocks, then ``<|im_end|>``.
Only the prompt differs, reproduced by :func:`prompt_text` and read back by
:func:`prompt_conversation`; :func:`reply_text` is hermes' reply after the think block a reply
with reasoning opens with (Q3's block).

Quirks of the reference template, reproduced by the renderer:

* Q1. With tools, the first system turn holds the system text, a blank line, then an English
  tools header, one ``tojson`` line per tool and the English call instructions (the hermes
  seed's layout, other words). Without tools, a first system message is its own turn. A later
  system message is a turn of its own either way.
* Q2. The *last query* is the last user message that is not a tool result written by hand
  (content both starting with ``<tool_response>`` and ending with ``</tool_response>``); only user
  messages from the end back to it are looked at, and their content must be a string
  (``'list object' has no attribute 'startswith'`` otherwise). With no such message the last
  query is the last message, so that no assistant turn counts as after it.
* Q3. An assistant turn after the last query is written with a think block,
  ``<think>\\nREASONING\\n</think>\\n\\n`` + content with its leading newlines removed (reasoning
  with its surrounding newlines removed), when it is the last message or its reasoning is not
  empty; else, and before the last query, it is ``<|im_start|>assistant\\n`` + content:
  reasoning before the last query is dropped.
* Q4. Reasoning is ``reasoning_content`` when given (not None); else, where content holds
  ``</think>``, the text before the first ``</think>`` (after its last ``<think>``, newlines
  trimmed) is the reasoning and the text after the last ``</think>`` (leading newlines removed)
  is the content, wherever the turn is: before the last query both are lost but that content.
* Q5. Content is joined with ``+``: an assistant message without content, or with content
  parts, raises (``'dict object' has no attribute 'content'``, ``can only concatenate``...);
  user and system content must be text too. A tool result's content is printed (``{{ }}``):
  parts print as their Python text, a missing one as nothing.
* Q6. Calls are hermes' blocks (name printed, arguments as given when a string, else
  ``tojson``), one ``\\n`` apart, and one ``\\n`` after the content when the content (as read
  by Q4, before its newlines are trimmed) is not empty.
* Q7. Tool results: consecutive tool messages share one ``<|im_start|>user`` turn, each
  ``\\n<tool_response>\\nRESULT\\n</tool_response>``. Roles other than system, user, assistant and
  tool leave no trace.
* Q8. The generation prompt is ``<|im_start|>assistant\\n``; with ``enable_thinking`` false (the
  boolean: ``0`` is not), an empty think block ``<think>\\n\\n</think>\\n\\n`` follows it.
  ``enable_thinking`` changes nothing else.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from codec import jinja
from codec.errors import parse_error_at
from codec.format import Format, Functions
from codec.formats import hermes
from codec.formats._chatml import (
    GENERATION_PROMPT,
    IM_START,
    RESPONSE_CLOSE,
    RESPONSE_OPEN,
    TURN_END,
    ChatMLTurn,
    read_turns,
)
from codec.formats._decode import call_id, trailing_blocks
from codec.formats._reading import find_all
from codec.formats._render import Undefined, attr, call_method, concat, contains, string
from codec.formats.hermes import UNSHOWN_MESSAGE, Hermes
from codec.models import Conversation

# ---------------------------------------------------------------------------- markers

SYSTEM_TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
SYSTEM_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
) + TURN_END
THINK_OPEN = "<think>\n"
THINK_CLOSE = "\n</think>\n\n"
#: What ``enable_thinking=False`` appends to the generation prompt (Q8).
EMPTY_THINK = THINK_OPEN + THINK_CLOSE
RESPONSE_TAGS = ("<tool_response>", "</tool_response>")

# ---------------------------------------------------------------------------- render


def _is_query(message: dict[str, Any]) -> bool:
    """Whether a user message is a query (Q2): not a tool result written by hand."""
    if attr(message, "role") != "user":
        return False
    content = attr(message, "content")
    return not (
        call_method(content, "startswith", RESPONSE_TAGS[0]) and call_method(content, "endswith", RESPONSE_TAGS[1])
    )


def last_query(messages: list[dict[str, Any]]) -> int:
    """The index of the last query (Q2), or of the last message when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        if _is_query(messages[index]):
            return index
    return len(messages) - 1


def _reasoning(message: dict[str, Any]) -> tuple[Any, Any]:
    """The assistant message's (content, reasoning) as the template reads them (Q4)."""
    content = attr(message, "content")
    reasoning = attr(message, "reasoning_content")
    if not isinstance(reasoning, Undefined) and reasoning is not None:
        return content, reasoning
    if contains(content, "</think>"):
        after = call_method(call_method(content, "split", "</think>")[-1], "lstrip", "\n")
        before = call_method(content, "split", "</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
        return after, before
    return content, ""


def _assistant_turn(message: dict[str, Any], thinks: bool, is_last: bool) -> str:
    content, reasoning = _reasoning(message)
    if thinks and (is_last or reasoning):
        head = concat(IM_START, "assistant", "\n" + THINK_OPEN, call_method(reasoning, "strip", "\n"))
        out = [concat(head, THINK_CLOSE, call_method(content, "lstrip", "\n"))]
    else:
        out = [concat(IM_START, "assistant", "\n", content)]
    calls = attr(message, "tool_calls")
    if calls:
        for i, call in enumerate(calls):
            if i or content:
                out.append("\n")
            out.append(hermes.call_block(call))  # Q6: the same block as hermes'
    out.append(TURN_END)
    return "".join(out)


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads ``enable_thinking`` only: Q8)."""
    first = messages[0]
    first_is_system = attr(first, "role") == "system"
    out: list[str] = []
    if tools:  # Q1
        out.append(IM_START + "system\n")
        if first_is_system:
            out.append(concat(attr(first, "content"), "\n\n"))
        out.append(SYSTEM_TOOLS_HEADER)
        for tool in tools:
            out.append("\n" + jinja.tojson(tool))
        out.append(SYSTEM_TOOLS_FOOTER)
    elif first_is_system:
        out.append(concat(IM_START + "system\n", attr(first, "content"), TURN_END))
    query = last_query(messages)
    last = len(messages) - 1
    for i, message in enumerate(messages):
        role = attr(message, "role")
        if role == "user" or (role == "system" and i):
            out.append(concat(IM_START, role, "\n", attr(message, "content"), TURN_END))
        elif role == "assistant":
            out.append(_assistant_turn(message, i > query, i == last))
        elif role == "tool":  # Q7
            if i == 0 or attr(messages[i - 1], "role") != "tool":
                out.append(IM_START + "user")
            out.append(RESPONSE_OPEN + string(attr(message, "content")) + RESPONSE_CLOSE)
            if i == last or attr(messages[i + 1], "role") != "tool":
                out.append(TURN_END)
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)
        if variables.get("enable_thinking") is False:
            out.append(EMPTY_THINK)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes for ``message``: hermes' reply, after a think block when the message has
    reasoning (``<think>\nREASONING\n</think>\n\n``, as the template shows the turns it thinks in)."""
    reasoning = message.get("reasoning_content")
    if not isinstance(reasoning, str) or not reasoning.strip("\n"):
        return hermes.assistant_reply(message)
    content = message.get("content")
    content = content.lstrip("\n") if isinstance(content, str) else content
    return THINK_OPEN + reasoning.strip("\n") + THINK_CLOSE + hermes.assistant_reply({**message, "content": content})


# ---------------------------------------------------------------------------- decode


#: How the turns the template writes begin (the generation prompt is the assistant's opener).
_OPENERS = (IM_START + "system\n", IM_START + "user\n", GENERATION_PROMPT)
_TOOLS_END = SYSTEM_TOOLS_FOOTER.removesuffix(TURN_END)
_CALL_HEAD = hermes.CALL_OPEN + '\n{"name": "'


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (README, "Decoding prompts").

    The turns read as hermes' do (the same ChatML turns, calls and tool results); then, once the
    last query is known (Q2), each assistant turn after it is read with its think block (Q3).
    """
    variables: dict[str, Any] = {}
    text = prompt
    if prompt.endswith(GENERATION_PROMPT + EMPTY_THINK):  # Q8
        variables["enable_thinking"] = False
        text = prompt[: -len(EMPTY_THINK)]
    turns, generation_prompt = read_turns(text, 0, _OPENERS)
    # The assistant turns are read once Q2 is known: placeholders until then, found by identity.
    placeholders: list[tuple[dict[str, Any], ChatMLTurn]] = []

    def placeholder(turn: ChatMLTurn) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant"}
        placeholders.append((message, turn))
        return message

    messages, tools = hermes.read_messages(text, turns, SYSTEM_TOOLS_HEADER, _TOOLS_END, placeholder)
    where = {id(message): index for index, message in enumerate(messages)}
    assistants = {where[id(message)]: turn for message, turn in placeholders}  # index in messages -> turn
    query = last_query(messages)
    if assistants and max(assistants) == len(messages) - 1 > query:
        turn = assistants[len(messages) - 1]
        if not text.startswith(THINK_OPEN, turn.body + 1):
            messages.append(dict(UNSHOWN_MESSAGE))  # only a message after it keeps its think block away
    ids = itertools.count()
    for index, turn in sorted(assistants.items()):
        messages[index] = _assistant_message(text, turn, index > query, index == len(messages) - 1, ids)
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation_prompt, "variables": variables}
    )


def _think_close(text: str, start: int, end: int) -> int:
    """The offset of the ``\n</think>\n\n`` that ends the think block opening at ``start``, or -1.

    The reasoning is written stripped of newlines and the content after the block with its leading
    newlines removed, so the block ends at the first closer with no newline either side of it
    (or right before a call: content that was only newlines).
    """
    if text.startswith(EMPTY_THINK, start, end):
        return start + len(THINK_OPEN)
    pos = start + len(THINK_OPEN)
    for found in find_all(text, pos, (THINK_CLOSE,), end):
        after = found + len(THINK_CLOSE)
        if text[found - 1] != "\n" and (
            not text.startswith("\n", after, end) or text.startswith(_CALL_HEAD, after + 1)
        ):
            return found
    return -1


def _assistant_message(text: str, turn: ChatMLTurn, thinks: bool, is_last: bool, ids: Iterator[int]) -> dict[str, Any]:
    """An assistant turn: its reasoning where the turn is after the last query and shows it (Q3), its
    content, then the calls that end it (hermes' blocks, as hermes reads them)."""
    start = turn.body + 1
    reasoning: str | None = None
    if thinks and text.startswith(THINK_OPEN, start, turn.end):
        close = _think_close(text, start, turn.end)
        if close > start + len(THINK_OPEN) or (close >= 0 and is_last):  # an empty block only ends the turns
            reasoning = text[start + len(THINK_OPEN) : close]
            start = close + len(THINK_CLOSE)
    if thinks and is_last and reasoning is None:  # Q3: the last message always has its think block
        raise parse_error_at(
            text, start, f"the last assistant turn after the last user query has no think block {EMPTY_THINK!r}"
        )
    lone_newline = reasoning is not None  # Q6: content that was only newlines still writes the "\n"
    cut, calls = trailing_blocks(
        text,
        start,
        turn.end,
        _CALL_HEAD,
        hermes._read_call,
        lambda pos: pos == start or (pos - start >= (1 if lone_newline else 2) and text[pos - 1] == "\n"),
    )
    if not calls:
        content = text[start : turn.end]
    elif cut == start:
        content = ""
    else:
        content = text[start : cut - 1] or "\n"
    if reasoning is None and "</think>" in content:
        reasoning = ""  # Q4: else the content would be split at its </think>
    message: dict[str, Any] = {"role": "assistant", "content": content}  # Q5: never absent
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [
            {"id": call_id(next(ids)), "type": "function", "function": {"name": name, "arguments": arguments}}
            for name, arguments in calls
        ]
    return message


# ---------------------------------------------------------------------------- wire
# The reply syntax is hermes' (``Hermes.wire``): parse, stream and export are its family's.

# ---------------------------------------------------------------------------- format


class Qwen3(Format):
    """Qwen3's template with hermes' JSON tool calls (reference: the official Qwen3 template)."""

    name = "qwen3"
    stop_token = Hermes.stop_token
    summary = "Qwen3: hermes' JSON <tool_call> blocks, <think> reasoning, the official Qwen3 prompt"
    reference_template = "../templates/qwen3.jinja"
    #: hermes' markers and two of the Qwen3 template's own (more markers: detected before hermes).
    template_markers = (*Hermes.template_markers, "You may call one or more functions", "last_query_index")

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = Hermes.wire
