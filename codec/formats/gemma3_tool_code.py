"""``gemma3_tool_code``: Gemma 3's prompt-based tool calls, a Python list inside a ```` ```tool_code ```` fence.

Reference template: ``gemma3-tool-code.jinja`` (Gemma 3's turns with the cookbook's
```` ```tool_code ```` / ```` ```tool_response ```` fences). Gemma 3 has no tool tokens: the tools
are described in plain text and a reply after the generation prompt looks like::

    ```tool_code
    [get_weather(city="Paris"days=3),get_weather(city="Rome")]
    ```<end_of_turn>

Values are written with ``tojson`` (JSON strings and escapes, ``true`` / ``false`` / ``null``,
JSON objects and lists); keyword arguments follow each other with **no separator** and calls are
joined by a bare ``,``. The application answers in a user turn::

    <start_of_turn>user
    ```tool_response
    Sunny, 22°C
    ```<end_of_turn>

Quirks of the reference template, reproduced by the renderer (FORMATS.md §5.2):

* G1. Keyword arguments get no separator (``f(city="Paris"days=3)``): the template sets its
  "first argument" flag inside the loop, where the assignment is local to one iteration.
* G2. Parallel calls are joined by ``,`` without a space.
* G3. The generation prompt ends with the two characters ``\\`` ``n`` (template text, not an
  escape): ``<start_of_turn>model\\n`` with a backslash and no line break.
* G4. Tools are described only when ``messages[0]`` is a system message (``developer`` is not):
  the system text (a content list gives its first part's ``text``), the tools block with the
  tools as ``tojson(indent=4)``, and ``\\n\\n`` are written at the start of the first turn after it,
  whatever its role. Without a system message the tools silently disappear.
* G5. Role order is checked before anything is written; these raise, in message order:
  ``User message must be followed by assistant``, ``Assistant with tool_calls must be followed by
  tool`` (a ``tool_calls`` key, even ``[]``), ``Assistant without tool_calls must be followed by
  user or tool``, ``Tool message must be followed by assistant or user`` (so two tool results in a
  row always raise). Messages after other roles (a second system message...) are not checked.
* G6. An assistant message with a ``tool_calls`` key is written as the fence alone: its content is
  dropped. Other roles than user/assistant/tool (a second system message) get a turn of their own
  name with no content.
* G7. ``arguments`` given as a string are iterated character by character, each character as a
  JSON string: ``f("{", "\\"", ...)``; a list gives its items, a number or null its JSON.
* G8. Tool messages are user turns holding ```` ```tool_response\\nCONTENT\\n``` ```` (content
  trimmed, a non-string through ``str()``); user and assistant text is trimmed, content lists join
  their trimmed text parts and write ``<start_of_image>`` for ``image`` parts; reasoning is ignored.

``Gemma3ToolCode(corrected=True)`` renders what a corrected template would (a model may be served
with one): the two plain bugs fixed, nothing else changed. See :class:`Gemma3ToolCode`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import partial
from itertools import pairwise
from typing import Any

from codec.errors import ParseError, RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import bos_token
from codec.formats._pythonic import (
    CallListSyntax,
    ReadCall,
    decoded_call,
    decoded_tool,
    json_readings,
    read_call_list,
)
from codec.formats._reading import find_all
from codec.formats._render import (
    attr,
    concat,
    defined,
    is_iterable,
    is_mapping,
    iterate,
    string,
    subscript,
    tojson,
    trim,
)
from codec.models import Conversation, Message
from codec.wire import WireSpec

# ---------------------------------------------------------------------------- markers

TURN_OPEN = "<start_of_turn>"
TURN_CLOSE = "<end_of_turn>"
IMAGE = "<start_of_image>"
CODE_OPEN = "```tool_code\n"
RESPONSE_OPEN = "```tool_response\n"
FENCE_CLOSE = "\n```"
#: The seed's generation prompt: ``model`` followed by a backslash and ``n`` (G3).
GENERATION_PROMPT = TURN_OPEN + "model\\n"
#: The generation prompt of a corrected template: a real line break.
CORRECTED_GENERATION_PROMPT = TURN_OPEN + "model\n"
TOOLS_PROMPT = (
    "\n\nTools (functions) are available. Respond with a python list *inside* a ```tool_code``` block when you "
    'decide to call them.\nExample:\n```tool_code\n[func_name(arg="value")]\n```\n\nAvailable tools (Schemas):\n'
)

USER_ORDER = "User message must be followed by assistant"
CALLS_ORDER = "Assistant with tool_calls must be followed by tool"
ANSWER_ORDER = "Assistant without tool_calls must be followed by user or tool"
TOOL_ORDER = "Tool message must be followed by assistant or user"


# ---------------------------------------------------------------------------- render


def render_arguments(arguments: Any, *, corrected: bool = False) -> str:
    """What goes between a call's parentheses.

    A mapping: ``key=tojson(value)`` per pair, unseparated (G1; ``", "`` when ``corrected``). Any
    other iterable (a string's characters, a list's items): each item's JSON joined by ``", "``
    (G7). Anything else: its JSON (``5``, ``null``).
    """
    if is_mapping(arguments):
        separator = ", " if corrected else ""
        return separator.join(string(key) + "=" + tojson(value) for key, value in arguments.items())
    if is_iterable(arguments):
        return ", ".join(tojson(item) for item in iterate(arguments))
    return tojson(arguments)


def render_call(call: Any, *, corrected: bool = False) -> str:
    """``NAME(ARGUMENTS)`` for an OpenAI tool call (or its bare ``function`` object)."""
    function = attr(call, "function")
    if not defined(function):
        function = call
    arguments = render_arguments(attr(function, "arguments"), corrected=corrected)
    return string(attr(function, "name")) + "(" + arguments + ")"


def tool_code(calls: Any, *, corrected: bool = False) -> str:
    """The ```` ```tool_code\\n[...]\\n``` ```` fence: the calls joined by ``,`` (G2)."""
    rendered = ",".join(render_call(call, corrected=corrected) for call in iterate(calls))
    return CODE_OPEN + "[" + rendered + "]" + FENCE_CLOSE


def content_text(content: Any) -> str:
    """A user or assistant message's text: trimmed, or its trimmed text parts and ``<start_of_image>`` per image."""
    if isinstance(content, str):
        return content.strip()
    if not is_iterable(content):
        return ""
    out = []
    for item in iterate(content):
        kind = subscript(item, "type")
        if kind == "image":
            out.append(IMAGE)
        elif kind == "text":
            out.append(trim(subscript(item, "text")))
    return "".join(out)


def _system_prefix(content: Any, tools: list[dict[str, Any]] | None) -> str:
    """What the first turn after the system message starts with: the system text, the tools block, ``\\n\\n`` (G4)."""
    text = content if isinstance(content, str) else subscript(subscript(content, 0), "text")
    if tools is not None:
        text = concat(text, TOOLS_PROMPT + tojson(tools, indent=4))
    return concat(text, "\n\n")


def check_order(messages: list[dict[str, Any]]) -> None:
    """Raise the template's error for the first message its predecessor may not be followed by (G5)."""
    for previous, message in pairwise(messages):
        before, role = attr(previous, "role"), attr(message, "role")
        if before == "user":
            if role != "assistant":
                raise RenderError(USER_ORDER)
        elif before == "assistant" and "tool_calls" in previous:
            if role != "tool":
                raise RenderError(CALLS_ORDER)
        elif before == "assistant":
            if role not in ("user", "tool"):
                raise RenderError(ANSWER_ORDER)
        elif before == "tool" and role not in ("assistant", "user"):
            raise RenderError(TOOL_ORDER)


def turn_body(message: dict[str, Any], *, corrected: bool = False) -> str:
    """A turn's text between its ``<start_of_turn>ROLE\\n`` head and ``<end_of_turn>``."""
    role = attr(message, "role")
    has_calls = "tool_calls" in message
    out = []
    if role in ("user", "assistant") and not has_calls:
        out.append(content_text(attr(message, "content")))
    if role == "tool":
        out.append(RESPONSE_OPEN + trim(attr(message, "content")) + FENCE_CLOSE)
    if has_calls:
        out.append(tool_code(message["tool_calls"], corrected=corrected))
    return "".join(out)


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
    *,
    corrected: bool = False,
) -> str:
    """The prompt, as the reference template renders it (errors raised in the template's order)."""
    out = [string(variables["bos_token"])] if "bos_token" in variables else []
    prefix = ""
    turns = messages
    if attr(messages[0], "role") == "system":
        prefix = _system_prefix(attr(messages[0], "content"), tools)
        turns = messages[1:]
    check_order(turns)
    for index, message in enumerate(turns):
        role = attr(message, "role")
        head = "model" if role == "assistant" else "user" if role == "tool" else role
        out.append(TURN_OPEN + string(head) + "\n")
        if index == 0:
            out.append(prefix)
        out.append(turn_body(message, corrected=corrected) + TURN_CLOSE + "\n")
    if add_generation_prompt:
        out.append(CORRECTED_GENERATION_PROMPT if corrected else GENERATION_PROMPT)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any], *, corrected: bool = False) -> str:
    """What the model generates after the generation prompt, ``<end_of_turn>`` included.

    For a message with calls (a non-empty ``tool_calls``): the fence
    ```` ```tool_code\\n[...]\\n``` ```` exactly as the template writes it (G1/G2/G7; kwargs
    separated by ``", "`` when ``corrected``), content dropped (G6). Otherwise the content as
    the template writes it (trimmed; text parts trimmed and joined). Then ``<end_of_turn>``.

    This is the model turn of the rendered history between ``<start_of_turn>model`` + line
    break and the ``\\n`` after ``<end_of_turn>``, except for ``tool_calls: []``: the history
    writes an empty fence ``[]`` for it, a reply writes the content. The seed's generation
    prompt ends with a literal backslash-``n`` instead of the line break (G3); the reply is the
    same either way.
    """
    calls = attr(message, "tool_calls")
    body = tool_code(calls, corrected=corrected) if calls else content_text(attr(message, "content"))
    return body + TURN_CLOSE


# ---------------------------------------------------------------------------- decode
#
# A prompt is read turn by turn; each turn may read several ways (a user turn holding only a
# tool_response fence is a tool result or a user's text; the first turn may start with the system
# prefix), and the template's role-order checks (G5) decide between them: the preferred reading
# of each turn that leaves the turns after it a valid reading wins.

_TOOLS_JSON = json.JSONDecoder()


@dataclass(frozen=True)
class Gemma3Turn:
    """One ``<start_of_turn>HEAD\\nBODY<end_of_turn>\\n`` of a prompt."""

    head: str
    start: int
    body_start: int
    body: str


@dataclass(frozen=True)
class TurnReading:
    """One way to read a turn: the message it writes and, for the first turn, the system prefix in front."""

    role: str
    content: str | None = None
    calls: list[ReadCall] | None = None
    #: The system message's text, when the turn starts with its prefix (G4).
    system: str | None = None
    tools: list[dict[str, Any]] | None = None

    @property
    def as_written(self) -> dict[str, Any]:
        """The message as :func:`check_order` looks at it: its role, and whether it has a ``tool_calls`` key."""
        return {"role": self.role, "tool_calls": []} if self.calls is not None else {"role": self.role}

    @property
    def structural(self) -> bool:
        """A tool result or tool calls: preferred over reading the same text as a user's or model's words."""
        return self.role == "tool" or self.calls is not None


def call_syntax(*, corrected: bool) -> CallListSyntax:
    """The fence's call list: calls joined by ``,``, keyword arguments unseparated (G1, seed) or by ``", "``."""
    return CallListSyntax(
        call_separator=",",
        argument_separator=", " if corrected else "",
        # Unseparated, a number may run into the next key (`n=1e5=2` is `n=1`, `e5=2`).
        read_value=partial(json_readings, shorter_numbers=not corrected),
        positional=True,
    )


def split_turns(prompt: str, pos: int, end: int) -> list[Gemma3Turn]:
    """The turns of ``prompt[pos:end]``, which must be nothing but turns."""
    turns = []
    while pos < end:
        if not prompt.startswith(TURN_OPEN, pos):
            raise parse_error_at(prompt, pos, "expected the next turn", expected=[TURN_OPEN])
        head_start = pos + len(TURN_OPEN)
        newline = prompt.find("\n", head_start, end)
        if newline < 0:
            raise parse_error_at(prompt, end, "the turn's role is not followed by a line break", expected=["\\n"])
        close = _turn_close(prompt, newline + 1, end)
        turns.append(Gemma3Turn(prompt[head_start:newline], pos, newline + 1, prompt[newline + 1 : close]))
        pos = close + len(TURN_CLOSE) + 1
    return turns


def _turn_close(prompt: str, body_start: int, end: int) -> int:
    """The ``<end_of_turn>`` closing the turn: the first one that a line break and the next turn (or the end) follow."""
    marker = TURN_CLOSE + "\n"
    first = close = prompt.find(marker, body_start, end)
    while close >= 0:
        after = close + len(marker)
        if after == end or prompt.startswith(TURN_OPEN, after):
            return close
        close = prompt.find(marker, close + 1, end)
    if first < 0:
        raise parse_error_at(prompt, end, "the turn never closes", expected=[TURN_CLOSE])
    raise parse_error_at(prompt, first + len(marker), "expected the next turn", expected=[TURN_OPEN])


def _fence_calls(body: str, syntax: CallListSyntax) -> list[ReadCall] | None:
    """The calls of a body that is exactly a ```` ```tool_code ```` fence, else ``None``."""
    fenced = body.startswith(CODE_OPEN) and body.endswith(FENCE_CLOSE)
    if not fenced or len(body) < len(CODE_OPEN) + len(FENCE_CLOSE):
        return None
    return read_call_list(body[len(CODE_OPEN) : -len(FENCE_CLOSE)], syntax)


def _tool_result(body: str) -> str | None:
    """The result in a body that is exactly a ```` ```tool_response ```` fence around trimmed text, else ``None``."""
    if len(body) < len(RESPONSE_OPEN) + len(FENCE_CLOSE) or not body.startswith(RESPONSE_OPEN):
        return None
    result = body[len(RESPONSE_OPEN) : -len(FENCE_CLOSE)]
    return result if body.endswith(FENCE_CLOSE) and result == result.strip() else None


def body_readings(head: str, body: str, syntax: CallListSyntax) -> list[TurnReading]:
    """The messages a turn body can be (without the system prefix), the preferred first."""
    readings = []
    if head == "model":
        calls = _fence_calls(body, syntax)
        if calls is not None:
            readings.append(TurnReading("assistant", calls=calls))
        if body == body.strip():  # the template trims what it writes
            readings.append(TurnReading("assistant", content=body))
    elif head == "user":
        result = _tool_result(body)
        if result is not None:
            readings.append(TurnReading("tool", content=result))
        if body == body.strip():
            readings.append(TurnReading("user", content=body))
    elif head not in ("assistant", "tool") and not body:  # those two roles are written as model / user
        readings.append(TurnReading(head))  # any other role gets a turn of its name and no text (G6)
    return readings


def first_turn_readings(prompt: str, turn: Gemma3Turn, syntax: CallListSyntax) -> list[TurnReading]:
    """The first turn's readings: with the system prefix (G4) when its body starts with one.

    A tools block forces the prefix. Without one, the system text and the body are joined by a
    blank line that the body may hold too: a tool result or calls are preferred, then no system
    message at all, then the shortest system text.
    """
    body = turn.body
    found = body.find(TOOLS_PROMPT)
    if found >= 0:
        tools, rest = _tools_block(prompt, turn.body_start + found + len(TOOLS_PROMPT), turn.body_start + len(body))
        after = body[rest - turn.body_start :]
        return [replace(r, system=body[:found], tools=tools) for r in body_readings(turn.head, after, syntax)]
    # Every reading of one kind (a tool result or calls, a text) is written the same way for the role
    # order, so only the first of each kind, in prefix order, can be chosen: each is looked for in one
    # pass over the blank lines, and a body is copied only where it may read (its first characters say).
    starts = [0, *(blank + 2 for blank in find_all(body, 0, ("\n\n",)))]
    readings: list[TurnReading] = []
    for structural in (True, False):
        for start in starts:
            if not _may_read(turn.head, body, start, structural):
                continue
            kind = [r for r in body_readings(turn.head, body[start:], syntax) if r.structural == structural]
            if kind:
                readings.append(replace(kind[0], system=body[: start - 2] if start else None))
                break
    return readings


def _may_read(head: str, body: str, start: int, structural: bool) -> bool:
    """Whether ``body[start:]`` may read as a turn of ``head`` of that kind (a tool result or calls, or a
    text), by what :func:`body_readings` asks of its ends, looked at in place."""
    if head not in ("user", "model"):
        return not structural and start == len(body)  # a turn of any other role holds no text (G6)
    if structural:
        opener = RESPONSE_OPEN if head == "user" else CODE_OPEN
        inside = start + len(opener)
        return body.startswith(opener, start) and body.endswith(FENCE_CLOSE) and len(body) - inside >= len(FENCE_CLOSE)
    return start == len(body) or not (body[start].isspace() or body[-1].isspace())  # the template trims text


def _tools_block(prompt: str, pos: int, body_end: int) -> tuple[list[dict[str, Any]], int]:
    """The tools written at ``pos`` as ``tojson(indent=4)``, and the offset after the blank line that follows."""
    try:
        value, end = _TOOLS_JSON.raw_decode(prompt, pos)
    except (ValueError, RecursionError):
        raise parse_error_at(prompt, pos, "the tools block is not JSON", expected=["["]) from None
    if not isinstance(value, list) or end > body_end or tojson(value, indent=4) != prompt[pos:end]:
        raise parse_error_at(prompt, pos, "the tools block is not a JSON list written with indent 4")
    if not prompt.startswith("\n\n", end) or end + 2 > body_end:
        raise parse_error_at(prompt, end, "expected a blank line after the tools block", expected=["\\n\\n"])
    return [decoded_tool(item, prompt, pos) for item in value], end + 2


def _may_follow(before: TurnReading, after: TurnReading) -> bool:
    try:
        check_order([before.as_written, after.as_written])
    except RenderError:
        return False
    return True


def choose_readings(prompt: str, turns: list[Gemma3Turn], options: list[list[TurnReading]]) -> list[TurnReading]:
    """Per turn, its first reading that the template's role order lets the turn before and the turns after follow."""
    for turn, readings in zip(turns, options, strict=True):
        if not readings:
            raise _unreadable(prompt, turn)
    viable = list(options)
    for index in range(len(turns) - 2, -1, -1):
        viable[index] = [r for r in options[index] if any(_may_follow(r, later) for later in viable[index + 1])]
        if not viable[index]:
            turn = turns[index + 1]
            message = f"a {turn.head!r} turn cannot follow the turn before it (the template checks the role order)"
            raise parse_error_at(prompt, turn.start, message)
    chosen = [viable[0][0]]
    for readings in viable[1:]:
        chosen.append(next(r for r in readings if _may_follow(chosen[-1], r)))
    return chosen


def _unreadable(prompt: str, turn: Gemma3Turn) -> ParseError:
    """Why no message renders as ``turn``."""
    if turn.head in ("assistant", "tool"):
        message = f"the template writes no {turn.head!r} turns (assistant turns are 'model', tool results 'user')"
        return parse_error_at(prompt, turn.start + len(TURN_OPEN), message, expected=["model", "user"])
    if turn.head not in ("user", "model"):
        return parse_error_at(prompt, turn.body_start, f"a {turn.head!r} turn holds no text in this format")
    message = "the template trims turn text, and this turn's has whitespace around it"
    return parse_error_at(prompt, turn.body_start, message)


def _arguments(values: dict[str, Any] | list[Any]) -> dict[str, Any] | list[Any] | str:
    """Keyword arguments as they are; positional single characters joined back into the string they came from (G7)."""
    if isinstance(values, list) and all(isinstance(value, str) and len(value) == 1 for value in values):
        return "".join(values)
    return values


def conversation_of(chosen: list[TurnReading], add_generation_prompt: bool, variables: dict[str, Any]) -> Conversation:
    """The conversation the chosen readings spell: call ids ``call_0``, ``call_1``... across it."""
    messages = []
    if chosen[0].system is not None:
        messages.append(Message(role="system", content=chosen[0].system))
    count = 0
    for reading in chosen:
        if reading.calls is None:
            messages.append(Message(role=reading.role, content=reading.content))
            continue
        calls = [decoded_call(name, _arguments(args), count + i) for i, (name, args) in enumerate(reading.calls)]
        count += len(calls)
        messages.append(Message(role="assistant", tool_calls=calls))
    return Conversation(
        messages=messages, tools=chosen[0].tools, add_generation_prompt=add_generation_prompt, variables=variables
    )


def prompt_conversation(prompt: str, *, corrected: bool = False) -> Conversation:
    """The conversation ``prompt`` renders; where the template writes several alike, one fixed reading.

    ``bos_token`` is the text before the first turn (absent when empty). Call ids are ``call_0``,
    ``call_1``... across the conversation; tool results carry no id or name. A ``user`` turn that
    is exactly a ```` ```tool_response ```` fence is a tool result and a ``model`` turn that is
    exactly a ```` ```tool_code ```` fence holds calls, unless the role order (G5) allows only the
    plain reading. The first turn starts with a system message only where it must: a tools
    block, or a turn that reads no other way; the system text then ends at the first blank line
    that leaves a readable turn. Positional values (G7) come back as the string their single
    characters spell, else as a list; a number that may run into the next key (G1) is read as
    long as the rest still reads.
    """
    generation = CORRECTED_GENERATION_PROMPT if corrected else GENERATION_PROMPT
    add_generation_prompt = prompt.endswith(generation)
    end = len(prompt) - len(generation) if add_generation_prompt else len(prompt)
    first = prompt.find(TURN_OPEN, 0, end)
    bos = bos_token(prompt, first if first >= 0 else end, TURN_OPEN)
    variables = {"bos_token": bos} if bos else {}
    if first < 0:  # a lone system message writes nothing: there is no turn to prefix (G4)
        lone = [Message(role="system", content="")]
        return Conversation(messages=lone, add_generation_prompt=add_generation_prompt, variables=variables)
    turns = split_turns(prompt, first, end)
    syntax = call_syntax(corrected=corrected)
    options = [first_turn_readings(prompt, turns[0], syntax)]
    options += [body_readings(turn.head, turn.body, syntax) for turn in turns[1:]]
    return conversation_of(choose_readings(prompt, turns, options), add_generation_prompt, variables)


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "call_list",
    block=(CODE_OPEN, FENCE_CLOSE),
    stop=TURN_CLOSE,
    arguments="python",
    values="json",
    separator=",",
    # G1: the seed writes no separator between keyword arguments (a corrected template ", ").
    argument_separator="",
    recover=("statements",),
)


# ---------------------------------------------------------------------------- format

#: The functions of a corrected template (G1, G3 fixed); the reply syntax and the grammar are the seed's.
CORRECTED = Functions(
    partial(prompt_text, corrected=True),
    partial(prompt_conversation, corrected=True),
    partial(reply_text, corrected=True),
)


class Gemma3ToolCode(Format):
    """Gemma 3 prompt-based calls, ```` ```tool_code\\n[f(a=1),g()]\\n``` ```` (reference: ``gemma3-tool-code.jinja``).

    ``corrected=True`` renders as a corrected template would: keyword arguments separated by
    ``", "`` (the separator the seed means to write, G1) and a real line break after ``model`` in
    the generation prompt (G3). Everything else is the seed's, including the bare ``,`` between
    parallel calls: that one is what the template's text says, not a bug, so a corrected template
    keeps it (``[f(a=1, b=2),g()]``). The registry holds the default (seed) instance.
    """

    name = "gemma3_tool_code"
    aliases = ("gemma3", "gemma-3", "tool_code")
    summary = 'Gemma 3 prompt-based calls: ```tool_code\\n[get_weather(city="Paris")]\\n```'
    stop_token = TURN_CLOSE
    reference_template = "gemma3-tool-code.jinja"
    template_markers = ("<start_of_turn>", "```tool_code")

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE

    def __init__(self, *, corrected: bool = False) -> None:
        """``corrected``: render as the seed with its two bugs (G1, G3) fixed, instead of byte-identical to it."""
        self.corrected = corrected
        if corrected:
            self.functions = CORRECTED
            self.wire = replace(WIRE, argument_separator=", ")

    def __repr__(self) -> str:
        return f"<codec format {self.name!r} (corrected)>" if self.corrected else super().__repr__()
