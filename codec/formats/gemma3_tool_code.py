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

import re
from itertools import pairwise
from typing import Any

from codec._lark import compile_grammar
from codec.errors import RenderError
from codec.format import Format
from codec.formats._pythonic import CallListReader, PythonicBuilder, followed_by, pythonic_syntax, quoted
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
from codec.stream import CONTENT, BuildError, Syntax
from codec.watch import Delimiter

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


def render_conversation(
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


def reply_text(message: dict[str, Any], *, corrected: bool = False) -> str:
    """What the model writes for ``message`` (see :meth:`Gemma3ToolCode.render_reply`)."""
    calls = attr(message, "tool_calls")
    body = tool_code(calls, corrected=corrected) if calls else content_text(attr(message, "content"))
    return body + TURN_CLOSE


#: The fence opener as the grammar reads it (FENCE_OPEN).
_FENCE_OPEN = re.compile(r"```tool_code[ \t]*\n?")


class Gemma3ToolCodeBuilder(PythonicBuilder):
    """String arguments are JSON (the template writes values with tojson); Python escapes are read too."""

    def frame(self, raw: str) -> tuple[int, int]:
        """The calls of a rejected fence lie between its opener and its closing backticks."""
        opener = _FENCE_OPEN.match(raw)
        if opener is None:
            return 0, len(raw)
        stop = len(raw)
        if raw.endswith("```") and stop - 3 >= opener.end():
            stop -= 4 if raw.endswith("\n```") and stop - 4 >= opener.end() else 3
        return opener.end(), stop

    def arg_string(self, c: list[Any]) -> str:
        try:
            return quoted(str(c[0]))
        except ValueError as exc:
            raise BuildError(f"invalid string: {exc}", c[0].start_pos) from None


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

    def __init__(self, *, corrected: bool = False) -> None:
        """``corrected``: render as the seed with its two bugs (G1, G3) fixed, instead of byte-identical to it."""
        self.corrected = corrected

    def _render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        add_generation_prompt: bool,
        **variables: Any,
    ) -> str:
        return render_conversation(messages, tools, add_generation_prompt, variables, corrected=self.corrected)

    def _render_reply(self, message: dict[str, Any]) -> str:
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
        return reply_text(message, corrected=self.corrected)

    def _syntax(self) -> Syntax:
        grammar = compile_grammar("gemma3_tool_code")
        reader = CallListReader(grammar, quoted)
        return pythonic_syntax(
            grammar,
            Gemma3ToolCodeBuilder,
            text_terminals={"TEXT": CONTENT},
            blocks={"FENCE_OPEN": "FENCE_CLOSE", "LBRACK": None},
            stop="<end_of_turn>",
            string=Delimiter('"', '"', "\\"),
            resync_after=("```",),
            extra_closed=frozenset({"ARG_STRING"}),
            fast_terminals={"CALL_LIST": reader.lexer(), "FENCED_LIST": reader.lexer(followed_by("```"))},
        )

    def __repr__(self) -> str:
        return f"<codec format {self.name!r} (corrected)>" if self.corrected else super().__repr__()
