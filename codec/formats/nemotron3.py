"""``nemotron3``: the prompts of NVIDIA Nemotron 3, around Qwen3-Coder's XML calls, with ``<think>`` reasoning.

Reference template: ``NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja`` (``../shared/templates/families/nemotron``,
llama.cpp's copy, CRLF line ends; the template's text renders the same with LF ones). Replies are
the ``xml_params`` family's with ``qwen3_5``'s spec (``qwen3_coder``'s markers, scalars through
Python's ``str()``, mappings and lists as JSON): the same grammar, builder and syntax. The
generation prompt opens a think block, and every call block ends with a line break::

    The user wants the weather.
    </think>
    Let me check.
    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>
    <|im_end|>

Quirks of the template, reproduced by the renderer and cited by ID below:

* N1. The system turn is always written: ``<|im_start|>system\\n`` + the first system message's
  content (joined with ``+``, untrimmed; none: empty), then with tools (a non-empty list) ``\\n\\n``
  (when that content is not empty) and the tools block, then ``<|im_end|>\\n``.
* N2. The tools block declares each tool in XML: ``<name>``, ``<description>`` (trimmed, where
  given), ``<parameters>`` with a ``<parameter>`` per property (``<name>``, ``<type>`` via
  ``str()``, ``<description>`` trimmed, ``<enum>`` as JSON, then every other key as
  ``<key>value</key>``: a mapping or a list as JSON, anything else via ``str()``), the parameters'
  other keys, ``<required>`` as JSON, and the function's other keys.
* N3. An assistant message's text is ``<think>\\nREASONING\\n</think>\\n`` + content where
  ``reasoning_content`` is text that trims to something; else its content (``''`` for a missing or
  empty one), ``<think></think>`` in front where it holds neither ``<think>`` nor ``</think>``.
* N4. With calls, the turn is that text trimmed + ``\\n`` (or ``<think></think>`` alone for content
  that is no text), then each call ``<tool_call>\\n<function=NAME>\\n`` + per argument
  ``<parameter=KEY>\\nVALUE\\n</parameter>\\n`` + ``</function>\\n</tool_call>\\n``, then
  ``<|im_end|>\\n``: no blank line anywhere, and a line break after every call. A mapping or a list
  is written as JSON, a string raw, anything else via ``str()``.
* N5. Before the last user message, with ``truncate_history_thinking`` (true by default), the
  reasoning is cut: with calls, the text after its last ``</think>`` (or before its first
  ``<think>`` where it only opens one) after an empty think block; without calls, the text after
  the last ``</think>`` after an empty think block where it holds both tags.
* N6. User and system messages (a later system message too) are ``<|im_start|>ROLE\\n`` + content
  via ``str()`` + ``<|im_end|>\\n``; other roles join their content with ``+``.
* N7. Tool results: consecutive tool messages share one ``<|im_start|>user\\n`` turn (not opened
  for a tool message first after the system message), each ``<tool_response>\\nRESULT\\n</tool_response>\\n``.
* N8. The generation prompt is ``<|im_start|>assistant\\n<think>\\n``; with ``enable_thinking`` false
  it is ``<|im_start|>assistant\\n<think></think>``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from codec.errors import ParseError, parse_error_at
from codec.format import Format, Functions
from codec.formats._chatml import GENERATION_PROMPT, IM_END, IM_START, TURN_END, ChatMLTurn, read_turns, turn_end
from codec.formats._decode import assistant_message, expect, rendering, trailing_blocks, until
from codec.formats._render import (
    attr,
    concat,
    default,
    defined,
    is_iterable,
    is_mapping,
    is_sequence,
    items,
    string,
    subscript,
    tojson,
    trim,
)
from codec.formats.qwen3_5 import TOOLS_FOOTER, Qwen3_5, argument
from codec.formats.qwen3_coder import _declared_type, _read_call
from codec.formats.qwen3_coder_official import _tool_results
from codec.literals import python_literal
from codec.models import Conversation
from codec.wire.xml_params import python_scalar_text

__all__ = ["Nemotron3", "prompt_conversation", "prompt_text", "reply_text"]

# ---------------------------------------------------------------------------- markers

STOP = IM_END
EMPTY_THINK = "<think></think>"
THINK_OPEN = "<think>\n"
THINK_CLOSE = "\n</think>\n"
TOOLS_HEADER = "# Tools\n\nYou have access to the following functions:\n\n<tools>"
RESPONSE_OPEN = "<tool_response>\n"
RESPONSE_CLOSE = "\n</tool_response>\n"
_SYSTEM_TURN = IM_START + "system\n"
_USER_TURN = IM_START + "user\n"
#: Property keys written otherwise than as ``<key>value</key>`` (N2), and the parameters' and function's.
_PROPERTY_KEYS = ("name", "type", "description", "enum")
_PARAMETERS_KEYS = ("type", "properties", "required")
_FUNCTION_KEYS = ("type", "name", "description", "parameters")


# ---------------------------------------------------------------------------- render


def _extra_keys(fields: Any, handled: tuple[str, ...]) -> str:
    """``render_extra_keys``: ``\\n<key>value</key>`` per other key (N2)."""
    if not is_mapping(fields):
        return ""
    out = []
    for key, value in fields.items():
        if key not in handled:
            text = (
                tojson(value)
                if is_mapping(value) or (is_sequence(value) and not isinstance(value, str))
                else string(value)
            )
            out.append(f"\n<{key}>{text}</{key}>")
    return "".join(out)


def render_declaration(tool: Any) -> str:
    """One tool's ``<function>...</function>`` element of the tools block (N2)."""
    function = attr(tool, "function")
    spec = function if defined(function) else tool
    out = [f"\n<function>\n<name>{string(attr(spec, 'name'))}</name>"]
    description = attr(spec, "description")
    if defined(description):
        out.append(f"\n<description>{trim(description)}</description>")
    out.append("\n<parameters>")
    parameters = attr(spec, "parameters")
    properties = attr(parameters, "properties")
    if is_mapping(parameters) and is_mapping(properties):
        for name, fields in properties.items():
            out.append(f"\n<parameter>\n<name>{string(name)}</name>")
            for key, shown in (("type", string), ("description", trim), ("enum", tojson)):
                value = attr(fields, key)
                if defined(value):
                    out.append(f"\n<{key}>{shown(value)}</{key}>")
            out += [_extra_keys(fields, _PROPERTY_KEYS), "\n</parameter>"]
    out.append(_extra_keys(parameters, _PARAMETERS_KEYS))
    required = attr(parameters, "required") if defined(parameters) else parameters
    if defined(parameters) and defined(required):
        out.append(f"\n<required>{tojson(required)}</required>")
    out += ["\n</parameters>", _extra_keys(spec, _FUNCTION_KEYS), "\n</function>"]
    return "".join(out)


def render_call(call: Any) -> str:
    """One ``<tool_call>...</tool_call>\\n`` block (N4)."""
    function = attr(call, "function")
    if defined(function):
        call = function
    out = [f"<tool_call>\n<function={string(attr(call, 'name'))}>\n"]
    arguments = attr(call, "arguments")
    if defined(arguments):
        for key, value in items(arguments):
            out.append(f"<parameter={string(key)}>\n{python_scalar_text(value)}\n</parameter>\n")
    out.append("</function>\n</tool_call>\n")
    return "".join(out)


def message_text(message: Any) -> Any:
    """The assistant message's text before the history's cut (N3): text, or content that is none."""
    reasoning = attr(message, "reasoning_content")
    content = default(attr(message, "content"), "") or ""
    if isinstance(reasoning, str) and reasoning.strip():
        return THINK_OPEN + reasoning + THINK_CLOSE + string(content)
    if isinstance(content, str) and "<think>" not in content and "</think>" not in content:
        return EMPTY_THINK + content
    return content


def _calls(message: Any) -> Any:
    calls = attr(message, "tool_calls")
    return calls if defined(calls) and is_iterable(calls) and len(calls) > 0 else None


def assistant_turn(message: Any, truncated: bool) -> str:
    """An assistant turn after ``<|im_start|>assistant\\n``, ``<|im_end|>`` excluded (N3-N5)."""
    text = message_text(message)
    calls = _calls(message)
    if calls is None:
        shown = string(text)
        if truncated and "<think>" in shown and "</think>" in shown:
            shown = EMPTY_THINK + shown.split("</think>")[-1]
        return shown.strip()
    if not (isinstance(text, str) and text.strip()):
        head = EMPTY_THINK
    elif not truncated:
        head = text.strip() + "\n"
    else:
        if "</think>" in text:
            text = text.split("</think>")[-1]
        elif "<think>" in text:
            text = text.split("<think>")[0]
        head = EMPTY_THINK + text.strip() + "\n"
    return head + "".join(render_call(call) for call in calls)


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads ``enable_thinking`` and
    ``truncate_history_thinking``, both true by default)."""
    turns = messages
    system: Any = ""
    if subscript(messages[0], "role") == "system":
        system, turns = subscript(messages[0], "content"), messages[1:]
    out = [concat(_SYSTEM_TURN, system)]  # N1
    if is_iterable(tools) and tools:
        out.append("\n\n" if len(system) > 0 else "")
        out += [TOOLS_HEADER, *(render_declaration(tool) for tool in tools), TOOLS_FOOTER]
    out.append(TURN_END)
    last_user = max((i for i, m in enumerate(turns) if subscript(m, "role") == "user"), default=-1)
    truncate = variables.get("truncate_history_thinking", True)
    last = len(turns) - 1
    for i, message in enumerate(turns):
        role = attr(message, "role")
        if role == "assistant":
            out.append(GENERATION_PROMPT + assistant_turn(message, bool(truncate) and i < last_user) + TURN_END)
        elif role in ("user", "system"):  # N6
            out.append(concat(IM_START, role, "\n") + string(attr(message, "content")) + TURN_END)
        elif role == "tool":  # N7
            if i and turns[i - 1] and attr(turns[i - 1], "role") != "tool":
                out.append(_USER_TURN)
            out.append(RESPONSE_OPEN + string(attr(message, "content")) + RESPONSE_CLOSE)
            if i == last or attr(turns[i + 1], "role") != "tool":
                out.append(TURN_END)
        else:
            out.append(concat(IM_START, role, "\n", attr(message, "content"), TURN_END))
    if add_generation_prompt:  # N8
        out.append(GENERATION_PROMPT + ("<think>\n" if variables.get("enable_thinking", True) else EMPTY_THINK))
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes for ``message``: the turn as the template writes it (N3, N4) without the empty
    think block a turn without reasoning opens with (the generation prompt opened a block) and the line
    break after the last call (layout, which the parser takes or leaves alike), then ``<|im_end|>``."""
    turn = assistant_turn(message, False)
    if turn.startswith(EMPTY_THINK):
        turn = turn[len(EMPTY_THINK) :].lstrip("\n")
    return turn.removesuffix("</tool_call>\n") + ("</tool_call>" if turn.endswith("</tool_call>\n") else "") + STOP


# ---------------------------------------------------------------------------- decode


def _read_back(raw: str) -> Any:
    """A ``<key>value</key>`` of a declaration (N2), written as a call's value is (``qwen3_5.argument``)."""
    return argument(raw, None)


_OPENERS = (_SYSTEM_TURN, _USER_TURN, GENERATION_PROMPT, IM_START + "developer\n")
_CALL_START = "<tool_call>\n<function="


def _element(text: str, pos: int, tag: str, end: int) -> tuple[str, int]:
    """The raw text of ``\\n<tag>...</tag>`` at ``pos``, and the offset after it."""
    start = expect(text, pos, f"\n<{tag}>")
    stop = until(text, start, f"</{tag}>", end, pos)
    return text[start:stop], stop + len(tag) + 3


def _extras(text: str, pos: int, end: int, *closers: str) -> tuple[dict[str, Any], int]:
    """The ``\\n<key>value</key>`` elements at ``pos`` up to one of ``closers``."""
    closer = closers[0]
    extras: dict[str, Any] = {}
    while not text.startswith(closers, pos):
        if not text.startswith("\n<", pos) or text.startswith("/", pos + 2):
            raise parse_error_at(text, pos, f"expected {closer!r} or another key", expected=(closer,))
        key = text[pos + 2 : until(text, pos + 2, ">", end, pos)]
        raw, pos = _element(text, pos, key, end)
        extras[key] = argument(raw, None)
    return extras, pos


def _declaration(text: str, pos: int, end: int) -> tuple[dict[str, Any], int]:
    """One ``<function>`` of the tools block as an OpenAI tool, and the offset after it (N2)."""
    name, pos = _element(text, expect(text, pos, "\n<function>"), "name", end)
    function: dict[str, Any] = {"name": name}
    if text.startswith("\n<description>", pos):
        function["description"], pos = _element(text, pos, "description", end)
    pos = expect(text, pos, "\n<parameters>")
    properties: dict[str, Any] = {}
    while text.startswith("\n<parameter>\n", pos):
        key, pos = _element(text, pos + len("\n<parameter>"), "name", end)
        schema: dict[str, Any] = {}
        for field, read in (("type", _declared_type), ("description", str), ("enum", _read_back)):
            if text.startswith(f"\n<{field}>", pos):
                raw, pos = _element(text, pos, field, end)
                schema[field] = read(raw)
        extras, pos = _extras(text, pos, end, "\n</parameter>")
        properties[key] = {**schema, **extras}
        pos = expect(text, pos, "\n</parameter>")
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    extras, pos = _extras(text, pos, end, "\n</parameters>", "\n<required>")
    parameters.update(extras)
    if text.startswith("\n<required>", pos):
        raw, pos = _element(text, pos, "required", end)
        parameters["required"] = argument(raw, None)
    pos = expect(text, pos, "\n</parameters>")
    extras, pos = _extras(text, pos, end, "\n</function>")
    function["parameters"] = parameters
    function.update(extras)
    return {"type": "function", "function": function}, expect(text, pos, "\n</function>")


def _system_turn(text: str, end: int) -> tuple[str, list[dict[str, Any]] | None]:
    """The system text and the tools (None without) of the first turn (N1)."""
    body = len(_SYSTEM_TURN)
    if not text.endswith(TOOLS_FOOTER, body, end):
        return text[body:end], None
    footer = end - len(TOOLS_FOOTER)
    head = text.find(TOOLS_HEADER, body, footer)
    if head < 0:
        raise parse_error_at(text, footer, "the tools instructions are not preceded by their header")
    system = text[body:head]
    if system and not system.endswith("\n\n"):
        raise parse_error_at(text, head, "expected a blank line between the system text and the tools")
    pos = head + len(TOOLS_HEADER)
    tools: list[dict[str, Any]] = []
    while pos < footer:
        tool, pos = _declaration(text, pos, footer)
        tools.append(tool)
    if not tools:
        raise parse_error_at(text, pos, "the tools block declares no tool")
    return system[:-2], tools


def _message(text: str, start: int, end: int) -> dict[str, Any]:
    """An assistant message whose text (N3), trimmed, is ``text[start:end]``."""
    body = text[start:end]
    close = body.find("\n</think>", len(THINK_OPEN))
    if body.startswith(THINK_OPEN) and close >= 0 and body[len(THINK_OPEN) : close].strip():
        rest = body[close + len("\n</think>") :]
        if rest == "" or rest.startswith("\n"):
            reasoning = body[len(THINK_OPEN) : close]
            return {"role": "assistant", "content": rest[1:] or None, "reasoning_content": reasoning}
    rest = body[len(EMPTY_THINK) :]
    if body.startswith(EMPTY_THINK) and "<think>" not in rest and "</think>" not in rest:
        return {"role": "assistant", "content": rest or None}
    return {"role": "assistant", "content": _as_str_of(body)}


def _as_str_of(body: str) -> Any:
    """Content written through ``str()`` (N3): the list of parts whose Python text ``body`` is, else the text."""
    if body.startswith("[{"):
        try:
            value = python_literal(body)
        except (ValueError, RecursionError):
            return body
        if isinstance(value, list) and all(isinstance(part, dict) for part in value) and string(value) == body:
            return value
    return body or None


def _assistant(text: str, turn: ChatMLTurn, schemas: Mapping[str, Any], ids: Iterator[int]) -> dict[str, Any]:
    """An assistant turn: its text, then the call blocks that end it, each followed by a line break (N4)."""
    start, end = turn.body + 1, turn.end
    if not text.endswith("\n", start, end):
        return _message(text, start, end)
    glued = start + len(EMPTY_THINK)

    def read(text: str, pos: int, stop: int) -> tuple[tuple[str, dict[str, Any]], int] | None:
        try:
            got = _read_call(text, pos, stop, schemas, argument)
        except ParseError:
            return None
        return got if got[1] <= stop else None

    def content_may_end(pos: int) -> bool:
        if pos == glued and text.startswith(EMPTY_THINK, start):
            return True
        head = text[start : pos - 1]
        return pos - start >= 2 and text[pos - 1] == "\n" and head == head.strip() != ""

    cut, calls = trailing_blocks(text, start, end - 1, _CALL_START, read, content_may_end)
    if not calls:
        return _message(text, start, end)
    message = assistant_message(None, calls, ids)
    if cut == glued and text.startswith(EMPTY_THINK, start):
        message["content"] = [{"type": "text", "text": ""}]  # N4: content that is no text writes no line break
        return message
    return {**message, **_message(text, start, cut - 1)}


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (README, "Decoding prompts")."""
    variables: dict[str, Any] = {}
    text, generation = prompt, False
    if prompt.endswith(GENERATION_PROMPT + EMPTY_THINK):  # N8
        text, generation, variables = prompt[: -len(EMPTY_THINK)], True, {"enable_thinking": False}
    elif prompt.endswith(GENERATION_PROMPT + "<think>\n"):
        text, generation = prompt[: -len("<think>\n")], True
    if not text.startswith(_SYSTEM_TURN):
        raise parse_error_at(text, 0, "expected the system turn the template always writes", expected=(_SYSTEM_TURN,))
    end = turn_end(text, len(_SYSTEM_TURN), (*_OPENERS, RESPONSE_OPEN))
    system, tools = _system_turn(text, end)
    pos = end + len(TURN_END)
    # An empty system text is no system message, unless a system turn follows (which would be read as it).
    first = bool(system) or text.startswith(_SYSTEM_TURN, pos)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if first else []
    if text.startswith(RESPONSE_OPEN, pos):  # a first tool message gets no opener (N7)
        close = turn_end(text, pos, _OPENERS)
        results = _tool_results(text, pos, close)
        if results is None:
            raise parse_error_at(text, pos, "expected the first tool results: <tool_response> blocks")
        messages += results
        pos = close + len(TURN_END)
    turns, _ = read_turns(text, pos, _OPENERS)
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools or ()}
    ids = itertools.count()
    for turn in turns:
        if turn.role == "assistant":
            messages.append(_assistant(text, turn, schemas, ids))
            continue
        previous = messages[-1]["role"] if len(messages) > (1 if first else 0) else None
        results = (
            _tool_results(text, turn.body + 1, turn.end)
            if turn.role == "user" and previous not in (None, "tool")
            else None
        )
        messages += results or [{"role": turn.role, "content": text[turn.body + 1 : turn.end]}]
    if not messages:
        messages = [{"role": "system", "content": ""}]
    data = {"messages": messages, "tools": tools, "add_generation_prompt": generation, "variables": variables}
    conversation = Conversation.model_validate(data)
    if rendering(conversation, prompt_text) != prompt:  # N5: the history's reasoning was kept
        kept = Conversation.model_validate({**data, "variables": {**variables, "truncate_history_thinking": False}})
        if rendering(kept, prompt_text) == prompt:
            return kept
    return conversation


# ---------------------------------------------------------------------------- wire
# The reply syntax is qwen3_5's (``Qwen3_5.wire``): parse, stream and export are its family's.

# ---------------------------------------------------------------------------- format


class Nemotron3(Format):
    """NVIDIA Nemotron 3's template with Qwen3-Coder's XML calls and ``<think>`` reasoning."""

    name = "nemotron3"
    aliases = ("nemotron-3", "nemotron_3", "nemotron3_nano")
    summary = "NVIDIA Nemotron 3: Qwen3-Coder XML calls (scalars via str()), <think> reasoning the prompt opens"
    stop_token = STOP
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/nemotron/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja"
    template_markers = (*Qwen3_5.template_markers[:-2], "truncate_history_thinking")

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = Qwen3_5.wire
