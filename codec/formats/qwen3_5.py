"""``qwen3_5``: the prompts of Qwen3.5 (and 3.6), around Qwen3-Coder's XML calls, with ``<think>`` reasoning.

Reference template: ``Qwen3.5-4B.jinja`` (``../shared/templates/families/qwen3_5``, llama.cpp's copy
of Qwen3.5-4B's template). Replies are the ``xml_params`` family's, with ``qwen3_coder``'s markers
(the same grammar, builder and syntax), but a non-string value that is no mapping or list is written
through Python's ``str()`` (the spec's ``values="python_scalars"``): ``True``, ``None``, ``1.5``,
read back typed by the tool's schema. The generation prompt opens a think block, so a reply starts
inside the reasoning::

    The user wants the weather.
    </think>

    Let me check.

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    <parameter=metric>
    True
    </parameter>
    </function>
    </tool_call><|im_end|>

Quirks of the template, reproduced by the renderer and cited by ID below:

* F1. Every message's content is rendered the same way and trimmed: text, or parts joined (a
  part holding ``image``/``image_url`` or of type ``image`` is
  ``<|vision_start|><|image_pad|><|vision_end|>``, ``video`` likewise with ``<|video_pad|>``,
  numbered ``Picture N: ``/``Video N: `` with ``add_vision_id``; a part with ``text`` is its text;
  any other raises ``Unexpected item type in content.``); absent content is empty, a mapping or a
  number raises ``Unexpected content type.``. A system message's images or videos raise
  ``System message cannot contain images.`` (``videos``) where the system turn is written.
* F2. With tools, the first turn is ``<|im_start|>system\\n# Tools...<tools>``, one ``tojson`` line
  per tool, ``</tools>`` and the call instructions, then ``\\n\\n`` + the first system message's
  content when it trims to something. Without tools, a first system message is a turn of its own.
  A later system message raises ``System message must be at the beginning.``.
* F3. The *last query* is the last user message whose content does not both start with
  ``<tool_response>`` and end with ``</tool_response>``; there must be one (``No user query found
  in messages.``). Only user messages from the end back to it are looked at.
* F4. An assistant turn after the last query writes a think block,
  ``<think>\\nREASONING\\n</think>\\n\\n``, before its content (an empty one without reasoning);
  before it, the content alone. Reasoning is ``reasoning_content`` when it is text; else, where
  the content holds ``</think>``, the text before the first ``</think>`` (after its last
  ``<think>``, newlines trimmed), the content then being the text after the last ``</think>``
  (leading newlines removed). Reasoning is trimmed.
* F5. Calls follow the content, the first after a blank line when the content trims to something,
  the others one ``\\n`` apart: ``<tool_call>\\n<function=NAME>\\n`` + per argument
  ``<parameter=KEY>\\nVALUE\\n</parameter>\\n`` + ``</function>\\n</tool_call>``. A mapping or a list
  is written as JSON, a string raw, anything else through ``str()`` (``True``, ``None``, ``1.5``);
  arguments given as text raise ``Can only get item pairs from a mapping.``.
* F6. Tool results: consecutive tool messages share one ``<|im_start|>user`` turn, each
  ``\\n<tool_response>\\nRESULT\\n</tool_response>``; a tool message first in the conversation gets
  no ``<|im_start|>user``. Roles other than system, user, assistant and tool raise ``Unexpected
  message role.``.
* F7. The generation prompt is ``<|im_start|>assistant\\n<think>\\n``; with ``enable_thinking``
  false (the boolean) the think block is closed at once: ``<think>\\n\\n</think>\\n\\n``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from codec.errors import ParseError, RenderError, parse_error_at
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
    turn_end,
)
from codec.formats._decode import assistant_message, expected_error, json_object_as_written, trailing_blocks
from codec.formats._render import attr, concat, contains, defined, is_iterable, is_mapping, items, tojson
from codec.formats.qwen3_coder import Qwen3Coder, _read_call
from codec.literals import PLAIN_JSON_DECODER, python_literal
from codec.models import Conversation
from codec.schema import declared_types, type_text
from codec.wire import compile_spec
from codec.wire.xml_params import XmlParams, python_scalar_text

__all__ = ["Qwen3_5", "argument", "prompt_conversation", "prompt_text", "reply_text"]

# ---------------------------------------------------------------------------- markers

STOP = IM_END
THINK_OPEN = "<think>\n"
THINK_CLOSE = "\n</think>\n\n"
#: What ``enable_thinking=False`` writes after the generation prompt (F7); otherwise ``THINK_OPEN``.
EMPTY_THINK = THINK_OPEN + THINK_CLOSE
TOOLS_HEADER = "# Tools\n\nYou have access to the following functions:\n\n<tools>"
TOOLS_FOOTER = (
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n"
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n"
    "- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested "
    "within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n"
    "- You may provide optional reasoning for your function call in natural language BEFORE the function call, "
    "but NOT after\n"
    "- If there is no function call available, answer the question like normal with your current knowledge and "
    "do not tell the user about function calls\n</IMPORTANT>"
)
IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"
VIDEO = "<|vision_start|><|video_pad|><|vision_end|>"
_SYSTEM_TURN = IM_START + "system\n"
_USER_TURN = IM_START + "user\n"


# ---------------------------------------------------------------------------- render


@functools.cache
def _replies() -> XmlParams:
    """The family's renderer of this format's calls (``values="python_scalars"``: F5)."""
    kit = compile_spec(WIRE)
    assert isinstance(kit, XmlParams)
    return kit


class _Vision:
    """The template's picture and video counters (F1), counted where the messages are written."""

    def __init__(self, numbered: bool) -> None:
        self.numbered = numbered
        self.images = 0
        self.videos = 0

    def content(self, content: Any, count: bool, system: bool = False) -> str:
        """``render_content(content, count, system) | trim`` (F1)."""
        if isinstance(content, str):
            return content.strip()
        if is_iterable(content) and not is_mapping(content):
            out = []
            for item in content:
                if contains(item, "image") or contains(item, "image_url") or attr(item, "type") == "image":
                    if system:
                        raise RenderError("System message cannot contain images.")
                    self.images += count
                    out.append((f"Picture {self.images}: " if self.numbered else "") + IMAGE)
                elif contains(item, "video") or attr(item, "type") == "video":
                    if system:
                        raise RenderError("System message cannot contain videos.")
                    self.videos += count
                    out.append((f"Video {self.videos}: " if self.numbered else "") + VIDEO)
                elif contains(item, "text"):
                    out.append(str(attr(item, "text")))
                else:
                    raise RenderError("Unexpected item type in content.")
            return "".join(out).strip()
        if content is None or not defined(content):
            return ""
        raise RenderError("Unexpected content type.")


def _is_result(content: str) -> bool:
    """Whether a user message's (trimmed) content is a tool result written by hand (F3)."""
    return content.startswith("<tool_response>") and content.endswith("</tool_response>")


def last_query(messages: list[dict[str, Any]], vision: _Vision) -> int:
    """The index of the last query (F3), reading the user messages from the end back to it."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if attr(message, "role") == "user" and not _is_result(vision.content(attr(message, "content"), False)):
            return index
    raise RenderError("No user query found in messages.")


def split_reasoning(message: Any, content: str) -> tuple[str, str]:
    """The assistant message's (content, reasoning) as the template reads them (F4), reasoning trimmed."""
    reasoning = attr(message, "reasoning_content")
    if isinstance(reasoning, str):
        return content, reasoning.strip()
    if "</think>" in content:
        before = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
        return content.split("</think>")[-1].lstrip("\n"), before.strip()
    return content, ""


def render_call(call: Any) -> str:
    """One ``<tool_call>...</tool_call>`` block (F5)."""
    function = attr(call, "function")
    if defined(function):
        call = function
    head = concat("<tool_call>\n<function=", attr(call, "name"), ">\n")
    arguments = attr(call, "arguments")
    if not defined(arguments):
        return head + "</function>\n</tool_call>"
    params = [
        concat("<parameter=", key, ">\n") + python_scalar_text(value) + "\n</parameter>\n"
        for key, value in items(arguments)
    ]
    return head + "".join(params) + "</function>\n</tool_call>"


def render_calls(content: str, calls: Any) -> str:
    """The call blocks after an assistant turn's content (F5): a blank line before the first where the
    content is not blank, one ``\\n`` between the others."""
    out = []
    for index, call in enumerate(calls):
        out.append(("\n" if index else "\n\n" if content.strip() else "") + render_call(call))
    return "".join(out)


def _has_calls(message: Any) -> Any:
    calls = attr(message, "tool_calls")
    return calls if calls and is_iterable(calls) and not is_mapping(calls) else None


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads ``enable_thinking`` and ``add_vision_id``)."""
    vision = _Vision(bool(variables.get("add_vision_id")))
    first = messages[0]
    out = []
    if tools:  # F2
        out.append(_SYSTEM_TURN + TOOLS_HEADER + "".join("\n" + tojson(tool) for tool in tools) + TOOLS_FOOTER)
        if attr(first, "role") == "system":
            system = vision.content(attr(first, "content"), False, system=True)
            out.append("\n\n" + system if system else "")
        out.append(TURN_END)
    elif attr(first, "role") == "system":
        out.append(_SYSTEM_TURN + vision.content(attr(first, "content"), False, system=True) + TURN_END)
    query = last_query(messages, vision)
    last = len(messages) - 1
    for i, message in enumerate(messages):
        content = vision.content(attr(message, "content"), True)
        role = attr(message, "role")
        if role == "system":
            if i:
                raise RenderError("System message must be at the beginning.")
        elif role == "user":
            out.append(_USER_TURN + content + TURN_END)
        elif role == "assistant":
            content, reasoning = split_reasoning(message, content)
            head = GENERATION_PROMPT + (THINK_OPEN + reasoning + THINK_CLOSE if i > query else "")
            calls = _has_calls(message)
            out.append(head + content + (render_calls(content, calls) if calls is not None else "") + TURN_END)
        elif role == "tool":  # F6
            if i and messages[i - 1] and attr(messages[i - 1], "role") != "tool":
                out.append(IM_START + "user")
            out.append(RESPONSE_OPEN + content + RESPONSE_CLOSE)
            if i == last or attr(messages[i + 1], "role") != "tool":
                out.append(TURN_END)
        else:
            raise RenderError("Unexpected message role.")
    if add_generation_prompt:  # F7
        out.append(GENERATION_PROMPT + (EMPTY_THINK if variables.get("enable_thinking") is False else THINK_OPEN))
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes for ``message``: the think block a reply with reasoning opens with, then the
    content and the calls as the template writes the turn (F4, F5), then ``<|im_end|>``."""
    content = message.get("content")
    content = content.strip() if isinstance(content, str) else ""
    reasoning = message.get("reasoning_content")
    head = THINK_OPEN + reasoning.strip() + THINK_CLOSE if isinstance(reasoning, str) and reasoning.strip() else ""
    calls = _has_calls(message)
    return head + content + (render_calls(content, calls) if calls is not None else "") + STOP


# ---------------------------------------------------------------------------- decode

_OPENERS = (_SYSTEM_TURN, _USER_TURN, GENERATION_PROMPT)
#: A user turn opened by a tool group (F6).
_USER_RESULTS = IM_START + "user" + RESPONSE_OPEN
_CALL_START = "<tool_call>\n<function="


def argument(raw: str, schema: Any) -> Any:
    """A call's value from its text (F5): by the declared schema where the value read is written so, else
    the mapping or list whose JSON it is, else the scalar whose ``str()`` it is, else the text."""
    if declared_types(schema):
        value, problem = type_text(raw, schema)
        if problem is None and python_scalar_text(value) == raw:
            return value
    if raw[:1] in ("{", "["):
        try:
            value = PLAIN_JSON_DECODER.decode(raw)
        except (ValueError, RecursionError):
            return raw
        return value if isinstance(value, (dict, list)) and tojson(value) == raw else raw
    try:
        value = python_literal(raw)
    except (ValueError, RecursionError):
        return raw
    written = not isinstance(value, (str, dict, list, tuple)) and python_scalar_text(value) == raw
    return value if written else raw


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (README, "Decoding prompts")."""
    variables: dict[str, Any] = {}
    text, generation = prompt, False
    if prompt.endswith(GENERATION_PROMPT + EMPTY_THINK):  # F7
        text, generation = prompt[: -len(EMPTY_THINK)], True
        variables["enable_thinking"] = False
    elif prompt.endswith(GENERATION_PROMPT + THINK_OPEN):
        text, generation = prompt[: -len(THINK_OPEN)], True
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] | None = None
    pos = 0
    if text.startswith(_SYSTEM_TURN):
        end = turn_end(text, len(_SYSTEM_TURN), (*_OPENERS, RESPONSE_OPEN))
        system, tools = _system_turn(text, len(_SYSTEM_TURN), end)
        pos = end + len(TURN_END)
        if system is None and text.startswith(_USER_RESULTS, pos):
            # A tool group opening a user turn right after the tools: a message came before it (F6),
            # a system message whose text trims to nothing (F2 writes none of it).
            system = ""
        messages += [] if system is None else [{"role": "system", "content": system}]
    if text.startswith(RESPONSE_OPEN, pos) and not messages:  # a first tool message has no opener (F6)
        end = turn_end(text, pos, _OPENERS)
        results = tool_responses(text, pos, end)
        if results is None:
            raise parse_error_at(text, pos, "expected the first tool results: <tool_response> blocks")
        messages += [{"role": "tool", "content": result} for result in results]
        pos = end + len(TURN_END)
    elif pos < len(text) and not text.startswith(_OPENERS, pos):
        raise expected_error(text, pos, _OPENERS, "a system, user or assistant turn")
    turns, _ = read_turns(text, pos, _OPENERS)
    assistants: list[tuple[int, ChatMLTurn]] = []
    for turn in turns:
        if turn.role == "system":
            raise parse_error_at(text, turn.start, "a system turn after the first (the template refuses it: F2)")
        if turn.role == "assistant":
            assistants.append((len(messages), turn))
            messages.append({"role": "assistant"})
            continue
        # A tool group opens a turn only after a message that is no tool result (F6): else a user's text.
        results = tool_responses(text, turn.body, turn.end) if messages and messages[-1]["role"] != "tool" else None
        if results is not None and all(result == result.strip() for result in results):
            messages += [{"role": "tool", "content": result} for result in results]
        else:
            messages.append({"role": "user", "content": text[turn.body + 1 : turn.end]})
    query = max((i for i, m in enumerate(messages) if m["role"] == "user" and not _is_result(m["content"])), default=-1)
    schemas = {tool["function"]["name"]: tool["function"].get("parameters") for tool in tools or () if _named(tool)}
    ids = itertools.count()
    for index, turn in assistants:
        messages[index] = _assistant_message(text, turn, index > query, schemas, ids)
    if not messages:
        raise parse_error_at(prompt, 0, "a prompt holds at least one message", expected=_OPENERS)
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation, "variables": variables}
    )


def _named(tool: Any) -> bool:
    function = tool.get("function") if isinstance(tool, dict) else None
    return isinstance(function, dict) and isinstance(function.get("name"), str)


def _system_turn(text: str, body: int, end: int) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The system text (None where there is none) and the tools (None without) of the first turn (F2)."""
    if not text.startswith(TOOLS_HEADER, body):
        return text[body:end], None
    pos = body + len(TOOLS_HEADER)
    tools: list[dict[str, Any]] = []
    while text.startswith("\n{", pos):
        got = json_object_as_written(text, pos + 1)
        if got is None:
            raise parse_error_at(text, pos + 1, "expected a tool as tojson writes it")
        tools.append(got[0])
        pos = got[1]
    if not tools:
        raise parse_error_at(text, pos, "the tools block declares no tool")
    if not text.startswith(TOOLS_FOOTER, pos):
        raise expected_error(text, pos, (TOOLS_FOOTER,), "the end of the tools block")
    pos += len(TOOLS_FOOTER)
    if pos == end:
        return None, tools
    if not text.startswith("\n\n", pos):
        raise expected_error(text, pos, ("\n\n", IM_END))
    return text[pos + 2 : end], tools


def _think_close(text: str, start: int, end: int) -> int:
    """The offset of the ``\\n</think>\\n\\n`` ending the think block whose reasoning starts at ``start``
    (reasoning is trimmed: the first closer after no blank), or -1."""
    found = text.find(THINK_CLOSE, start, end)
    while found >= 0 and found > start and text[found - 1].isspace():
        found = text.find(THINK_CLOSE, found + 1, end)
    return found


def _assistant_message(
    text: str, turn: ChatMLTurn, thinks: bool, schemas: Mapping[str, Any], ids: Iterator[int]
) -> dict[str, Any]:
    """An assistant turn: its think block where it is after the last query (F4), its content, then the
    calls that end it (F5)."""
    start, end = turn.body + 1, turn.end
    reasoning: str | None = None
    if thinks:
        if not text.startswith(THINK_OPEN, start, end):
            raise expected_error(text, start, (THINK_OPEN,), "the think block of a turn after the last query")
        close = _think_close(text, start + len(THINK_OPEN), end)
        if close < 0:
            raise parse_error_at(text, start, "the think block is never closed", expected=(THINK_CLOSE,))
        reasoning = text[start + len(THINK_OPEN) : close]
        start = close + len(THINK_CLOSE)

    def read(text: str, pos: int, stop: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
        try:
            got = _read_call(text, pos, stop, schemas, argument)
        except ParseError:
            return None
        return got if got[1] <= stop else None

    def content_may_end(pos: int) -> bool:
        content = text[start : pos - 2]
        return pos == start or (pos - start >= 3 and text.startswith("\n\n", pos - 2) and content.strip() == content)

    cut, calls = trailing_blocks(text, start, end, _CALL_START, read, content_may_end)
    content = text[start : max(start, cut - 2)] if calls else text[start:end]
    message = assistant_message(content, calls, ids)
    if reasoning is not None or "</think>" in content:
        message["reasoning_content"] = reasoning or ""  # F4: a text reasoning keeps the content whole
    return message


# ---------------------------------------------------------------------------- wire

#: qwen3_coder's XML (the same grammar, builder and syntax), non-string values that are no mapping or
#: list written through Python's ``str()`` (F5).
WIRE = dataclasses.replace(Qwen3Coder.wire, values="python_scalars")


# ---------------------------------------------------------------------------- format


class Qwen3_5(Format):
    """Qwen3.5's template with Qwen3-Coder's XML calls and ``<think>`` reasoning (reference: Qwen3.5-4B's)."""

    name = "qwen3_5"
    aliases = ("qwen3.5", "qwen3.6", "qwen3_6")
    summary = "Qwen3.5/3.6: Qwen3-Coder XML calls (scalars via str()), <think> reasoning the prompt opens"
    stop_token = STOP
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/qwen3_5/Qwen3.5-4B.jinja"
    template_markers = (*Qwen3Coder.template_markers, "No user query found in messages.", IMAGE)

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
