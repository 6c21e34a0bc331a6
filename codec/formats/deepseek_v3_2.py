"""``deepseek_v3_2``: DeepSeek V3.2's DSML calls, ``<｜DSML｜invoke name="NAME">`` in a ``function_calls`` block.

Reference template: ``deepseek-ai-DeepSeek-V3.2.jinja`` (``../shared/templates/families/deepseek``,
llama.cpp's re-creation of DeepSeek's reference encoder). A reply, after the generation prompt's
``<｜Assistant｜><think>`` (thinking on; ``<think></think>`` with it off), looks like::

    The user wants the weather.</think>Let me check.

    <｜DSML｜function_calls>
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls><｜end▁of▁sentence｜>

Each parameter's head says whether its value is a string (written raw) or not (written as JSON).
Replies are the ``invoke`` family's (:mod:`codec.wire.invoke`, this module's ``WIRE``), which also
reads what real models write instead: a closer drifted or corrupted, all arguments in one
``arguments`` parameter, invokes without the ``function_calls`` wrapper (V4 models), self-closed
invokes, a JSON object for an invoke's body (V4 models), a reply that starts with ``</think>``
after a prompt that closed the think block already.

Quirks of the reference template, reproduced by the renderer and cited by ID:

* D1. Every system message, wherever it is, goes into one text before the first turn: the first
  one's content, then ``\\n\\n`` and each later one's (absent content is empty; non-text content
  raises Python's ``can only concatenate str`` error). With tools, ``\\n\\n`` (only after a
  non-empty text), the tools header, each ``function`` tool's ``function`` as JSON on a line of its
  own inside ``<functions>``. ``bos_token`` comes first.
* D2. A user turn is ``<｜User｜>`` + content; ``developer`` messages count as users for the
  thinking rule but write nothing, as do system messages and other roles in the loop.
* D3. An assistant message after a user writes ``<｜Assistant｜>``, after tool results ``\\n\\n``,
  after another assistant message nothing; then, only after the last user message and with
  ``thinking`` (or ``enable_thinking``) on, ``<think>`` + its ``reasoning_content`` + ``</think>``,
  else ``</think>`` alone; then its content (when truthy), its calls and ``<｜end▁of▁sentence｜>``.
* D4. Calls: ``\\n\\n<｜DSML｜function_calls>\\n``, per call an invoke whose parameters say
  ``string="true"`` (the value raw) or ``string="false"`` (``tojson``); string ``arguments`` go
  through a ``from_json`` filter that transformers does not have (``No filter named 'from_json' found.``);
  the block closes ``</｜DSML｜function_calls>``.
* D5. Tool messages are counted against the calls of the last assistant message with calls
  before them (any messages between count): the first opens ``\\n\\n<function_results>``, each is
  ``\\n<result>R</result>``, and the one whose position equals the number of calls closes the
  block ``\\n</function_results>``; without an assistant call before, the count is the last
  message's calls (none: the block never closes).
* D6. The generation prompt: after a user ``<｜Assistant｜>``, after closed tool results ``\\n\\n``,
  then ``<think>`` with thinking on, ``<think></think>`` with it off; after an assistant message, nothing.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from codec.errors import ParseError, RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import assistant_message, expect, expected_error
from codec.formats._render import attr, call_method, concat, defined, iterate, lookup, string, tojson
from codec.models import Conversation
from codec.wire import WireSpec, compile_spec
from codec.wire.invoke import Invoke

__all__ = ["DeepseekV32", "prompt_conversation", "prompt_text", "reply_text"]

# ---------------------------------------------------------------------------- markers

DSML = "｜DSML｜"
USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
EOS = "<｜end▁of▁sentence｜>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
CALL_OPEN = f"<{DSML}function_calls>"
CALL_CLOSE = f"</{DSML}function_calls>"
RESULTS_OPEN = "\n\n<function_results>"
RESULTS_CLOSE = "\n</function_results>"

TOOLS_HEADER = (
    "## Tools\n\nYou have access to a set of tools you can use to answer the user's question.\n"
    f'You can invoke functions by writing a "<{DSML}function_calls>" block like the following as part of your '
    f'reply to the user:\n<{DSML}function_calls>\n<{DSML}invoke name="$FUNCTION_NAME">\n<{DSML}parameter '
    f'name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{DSML}parameter>\n...\n</{DSML}invoke>\n'
    f'<{DSML}invoke name="$FUNCTION_NAME2">\n...\n</{DSML}invoke>\n</{DSML}function_calls>\n\n'
    "String and scalar parameters should be specified as is without any escaping or quotes, while lists and "
    'objects should use JSON format. The "string" attribute should be set to "true" for string type parameters '
    'and "false" for other types (numbers, booleans, arrays, objects).\n\n'
    "If the thinking_mode is enabled, then after function results you should strongly consider outputting a "
    f"thinking block. Here is an example:\n\n<{DSML}function_calls>\n...\n</{DSML}function_calls>\n\n"
    "<function_results>\n...\n</function_results>\n\n<think>...thinking about results</think>\n\n"
    "Here are the functions available in JSONSchema format:\n<functions>\n"
)
TOOLS_FOOTER = "</functions>\n"
#: How the tools header starts: a system text holding it without the functions is a cut prompt.
_TOOLS_START = TOOLS_HEADER[:64]

# ---------------------------------------------------------------------------- render


@functools.cache
def _replies() -> Invoke:
    """The family's renderer of this format's calls, which the prompt's assistant turns hold."""
    kit = compile_spec(WIRE)
    assert isinstance(kit, Invoke)
    return kit


def _text(value: Any) -> Any:
    """``message['content'] or ''``: the value where it is truthy, else empty."""
    return value if value else ""


def _system(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """The text before the first turn (D1), ``bos_token`` excluded."""
    system: Any = ""
    first = True
    for message in messages:
        if attr(message, "role") == "system":
            content = _text(attr(message, "content"))
            system = concat(system, content) if first else concat(system, "\n\n", content)
            first = False
    if tools:
        schemas = "".join(tojson(attr(tool, "function")) + "\n" for tool in tools if attr(tool, "type") == "function")
        block = TOOLS_HEADER + schemas + TOOLS_FOOTER
        system = concat(system, "\n\n", block) if system else block
    return string(system)


def _calls(calls: Any) -> str:
    """An assistant turn's calls (D4)."""
    tags = _replies().tags
    out = [f"\n\n{tags.call_open}\n"]
    for call in iterate(calls):
        function = attr(call, "function")
        out.append(concat(tags.invoke, lookup(function, "name"), f"{tags.name_end}\n"))
        arguments = lookup(function, "arguments")
        if isinstance(arguments, str):  # the template's from_json is no filter transformers has (D4)
            raise RenderError("No filter named 'from_json' found.")
        for key, value in call_method(arguments, "items"):
            if isinstance(value, str):
                out.append(concat(tags.parameter, key, '" string="true">', value, tags.parameter_close, "\n"))
            else:
                text = tojson(value)
                out.append(concat(tags.parameter, key, '" string="false">', text, tags.parameter_close, "\n"))
        out.append(tags.invoke_close + "\n")
    out.append(tags.call_close)
    return "".join(out)


def _call_count(messages: list[dict[str, Any]], index: int) -> tuple[int, int]:
    """(the tool message's position after the last assistant message with calls before it, how many
    calls that message has) (D5)."""
    owner = -1
    for i in range(index):
        if attr(messages[i], "role") == "assistant" and attr(messages[i], "tool_calls"):
            owner = i
    calls = attr(messages[owner], "tool_calls")
    return index - owner, len(calls) if defined(calls) and calls is not None else 0


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads ``bos_token``, ``thinking`` and
    ``enable_thinking``)."""
    thinking = variables.get("thinking", variables.get("enable_thinking", False))
    out = [string(variables.get("bos_token", "")), _system(messages, tools)]
    last_user = max((i for i, m in enumerate(messages) if attr(m, "role") in ("user", "developer")), default=-1)
    pending_assistant = pending_tool = False
    for i, message in enumerate(messages):
        role = attr(message, "role")
        if role == "user":
            out.append(concat(USER, _text(attr(message, "content"))))
            pending_assistant, pending_tool = True, False
        elif role == "assistant":
            thinks = i > last_user and thinking
            reasoning = attr(message, "reasoning_content")
            think = f"{THINK_OPEN}{string(_text(reasoning))}{THINK_CLOSE}" if thinks else THINK_CLOSE
            if pending_assistant:
                out.append(ASSISTANT + think)
            elif pending_tool:
                out.append("\n\n" + think)
            pending_assistant = pending_tool = False
            content = attr(message, "content")
            if content:
                out.append(string(content))
            calls = attr(message, "tool_calls")
            if calls:
                out.append(_calls(calls))
            out.append(EOS)
        elif role == "tool":
            order, count = _call_count(messages, i)
            if order == 1:
                out.append(RESULTS_OPEN)
            out.append(concat("\n<result>", _text(attr(message, "content")), "</result>"))
            if order == count:
                out.append(RESULTS_CLOSE)
                pending_assistant, pending_tool = False, True
    if add_generation_prompt:
        opened = THINK_OPEN if thinking else THINK_OPEN + THINK_CLOSE
        if pending_assistant:
            out.append(ASSISTANT + opened)
        elif pending_tool:
            out.append("\n\n" + opened)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes for ``message``: its reasoning and ``</think>`` (where it has reasoning,
    as the template shows the turns it thinks in: the reply goes on after the prompt's ``<think>``),
    then the content and the calls, then ``<｜end▁of▁sentence｜>``."""
    reasoning = message.get("reasoning_content")
    think = f"{THINK_OPEN}{reasoning}{THINK_CLOSE}" if isinstance(reasoning, str) and reasoning else ""
    return think + _replies().reply_text(message)


# ---------------------------------------------------------------------------- decode

#: The markers a prompt's turns open with.
_MARKS = (USER, ASSISTANT, RESULTS_OPEN)
_CALLS_START = f"\n\n{CALL_OPEN}\n"
_INVOKE = f'<{DSML}invoke name="'
_PARAMETER = f'<{DSML}parameter name="'
_PARAMETER_END = f"</{DSML}parameter>\n"
_INVOKE_END = f"</{DSML}invoke>\n"
#: A ``bos_token`` as tokenizers spell one (``<｜begin▁of▁sentence｜>``, ``<s>``): a leading tag is read as one.
_BOS_TOKEN = re.compile(r"<[^<>\s]{1,30}>")
_FIRST_TURN = re.compile("|".join(re.escape(mark) for mark in _MARKS))


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (README, "Decoding prompts").

    The text before the first turn is the system messages' (one message: the template joins them)
    and the tools (D1); the turns read as the template writes them (D2-D5), each think block of an
    assistant turn its reasoning (and ``thinking`` on); the generation prompt's think block says
    ``thinking`` too (D6)."""
    variables: dict[str, Any] = {}
    pos = 0
    bos = _BOS_TOKEN.match(prompt)
    if (
        bos is not None
        and bos.group() not in (USER, ASSISTANT, EOS)
        and not bos.group().startswith("</")
        and not prompt.startswith("\n\n" + TOOLS_HEADER, bos.end())  # then it is the system text
    ):
        variables["bos_token"] = bos.group()
        pos = bos.end()
    first = _FIRST_TURN.search(prompt, pos)
    head_end = first.start() if first is not None else len(prompt)
    header = prompt.find(TOOLS_HEADER, pos)
    footer = prompt.find("}\n" + TOOLS_FOOTER, header) if header >= 0 else -1
    if footer >= 0 and prompt.find(EOS, pos, header) < 0 and _FIRST_TURN.search(prompt, pos, header) is None:
        head_end = footer + 2 + len(TOOLS_FOOTER)  # (the tools header holds markers of its own)
    elif prompt.find(EOS, pos, head_end) >= 0:
        head_end = pos  # an assistant message before any user: no opener (D3), after no system text
    system, tools = _read_system(prompt, pos, head_end)
    messages: list[dict[str, Any]] = []
    reader = _Reader(prompt, tools, variables)
    reader.read(head_end, messages)
    if system:
        # First, unless tool results come before any call: those count from the first message (D5).
        first_call = next((i for i, m in enumerate(messages) if m.get("tool_calls")), len(messages))
        early = any(m["role"] == "tool" for m in messages[:first_call])
        messages.insert(len(messages) if early else 0, {"role": "system", "content": system})
    if not messages:  # a system text of nothing (D1): what a lone empty system message writes
        messages.append({"role": "system", "content": ""})
    return Conversation.model_validate(
        {
            "messages": messages,
            "tools": tools,
            "add_generation_prompt": reader.generation,
            "variables": variables,
        }
    )


def _read_system(text: str, pos: int, end: int) -> tuple[str, list[dict[str, Any]] | None]:
    """The system text and the tools (None without) of the text before the first turn."""
    if not text.endswith(TOOLS_FOOTER, pos, end):
        cut = text.find(_TOOLS_START, pos, end)
        if cut >= 0:  # the template's own header without its functions: a prompt cut short
            raise parse_error_at(text, end, "the tools block is cut short", expected=(TOOLS_FOOTER,))
        return text[pos:end], None
    head = text.find(TOOLS_HEADER, pos, end)
    if head < 0:
        raise parse_error_at(text, pos, "the functions are not preceded by the tools header")
    system = ""
    if head > pos:
        if not text.startswith("\n\n", head - 2) or head - 2 <= pos:
            raise expected_error(text, head, ("\n\n",), "a blank line between the system text and the tools")
        system = text[pos : head - 2]
    tools = []
    at = head + len(TOOLS_HEADER)
    footer = end - len(TOOLS_FOOTER)
    while at < footer:
        line_end = text.find("\n", at, footer + 1)
        function = _json_object(text[at:line_end]) if line_end >= 0 else None
        if function is None or tojson(function) != text[at:line_end]:
            raise expected_error(text, at, ("{",), "a function declaration as JSON on a line of its own")
        tools.append({"type": "function", "function": function})
        at = line_end + 1
    if not tools:
        raise parse_error_at(text, at, "the functions block declares no function")
    return system, tools


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class _Reader:
    """The turns of a prompt, read in order."""

    def __init__(self, text: str, tools: list[dict[str, Any]] | None, variables: dict[str, Any]) -> None:
        self.text = text
        self.schemas = {tool["function"]["name"]: tool["function"].get("parameters") for tool in tools or ()}
        self.variables = variables
        self.ids: Iterator[int] = itertools.count()
        self.generation = False

    def read(self, pos: int, messages: list[dict[str, Any]]) -> None:
        text, end = self.text, len(self.text)
        pending_tool = False  # the template's state: tool results closed their block (D3, D5)
        while pos < end:
            last = messages[-1]["role"] if messages else "system"
            if text.startswith(USER, pos):
                start = pos + len(USER)
                found = _FIRST_TURN.search(text, start)
                stop = found.start() if found is not None else end
                messages.append({"role": "user", "content": text[start:stop]})
                pos, pending_tool = stop, False
            elif text.startswith(ASSISTANT, pos):
                pos, pending_tool = self._assistant(pos + len(ASSISTANT), messages), False
            elif text.startswith(RESULTS_OPEN, pos):
                pos, closed = self._results(pos + len(RESULTS_OPEN), messages, True)
                pending_tool = pending_tool or closed
            elif text.startswith("\n<result>", pos) and last in ("tool", "assistant", "system"):
                pos, closed = self._results(pos, messages, False)  # results apart from their calls (D5)
                pending_tool = pending_tool or closed
            elif pending_tool and text.startswith("\n\n", pos):
                pos, pending_tool = self._assistant(pos + 2, messages), False
            elif last in ("system", "assistant", "tool"):
                pos = self._body(pos, messages, None)  # an assistant message with no opener (D3)
            else:
                raise expected_error(text, pos, _MARKS, "a user turn, an assistant turn or tool results")

    def _assistant(self, pos: int, messages: list[dict[str, Any]]) -> int:
        """An assistant turn after its opener (D3), or the generation prompt (D6)."""
        text = self.text
        if text.startswith(THINK_CLOSE, pos):
            return self._body(pos + len(THINK_CLOSE), messages, None)
        pos = expect(text, pos, THINK_OPEN)
        if pos == len(text):
            self.generation = True
            self.variables["thinking"] = True
            return pos
        close = text.find(THINK_CLOSE, pos)
        if close < 0:
            raise parse_error_at(text, pos, "this think block is never closed", expected=(THINK_CLOSE,))
        if close == pos and close + len(THINK_CLOSE) == len(text):
            self.generation = True
            return len(text)
        self.variables["thinking"] = True
        return self._body(close + len(THINK_CLOSE), messages, text[pos:close])

    def _body(self, pos: int, messages: list[dict[str, Any]], reasoning: str | None) -> int:
        """An assistant message's content and calls, to its ``<｜end▁of▁sentence｜>``."""
        text = self.text
        end = text.find(EOS, pos)
        if end < 0:
            raise parse_error_at(text, pos, "this assistant turn never ends", expected=(EOS,))
        calls: list[tuple[str, dict[str, Any]]] = []
        content_end = end
        if text.endswith(CALL_CLOSE, pos, end):
            start = text.find(_CALLS_START, pos, end)
            while start >= 0:
                try:
                    calls = _read_calls(text, start + len(_CALLS_START), end - len(CALL_CLOSE), self.schemas)
                except ParseError:
                    start = text.find(_CALLS_START, start + 1, end)
                    continue
                content_end = start
                break
        message = assistant_message(text[pos:content_end], calls, self.ids)
        if reasoning:
            message["reasoning_content"] = reasoning
        messages.append(message)
        return end + len(EOS)

    def _results(self, pos: int, messages: list[dict[str, Any]], opened: bool) -> tuple[int, bool]:
        """The tool messages of a run of results (``opened``: after ``<function_results>``), and
        whether the block closed after them (D5)."""
        text = self.text
        results = []
        while text.startswith("\n<result>", pos):
            start = pos + len("\n<result>")
            close = text.find("</result>", start)  # (a result holding the closer reads as two parts)
            if close < 0:
                raise parse_error_at(text, start, "this result is never closed", expected=("</result>",))
            results.append(text[start:close])
            pos = close + len("</result>")
        closed = text.startswith(RESULTS_CLOSE, pos)
        for i, result in enumerate(results):
            _place_result(messages, opened and i == 0, closed and i == len(results) - 1)
            messages.append({"role": "tool", "content": result})
        return (pos + len(RESULTS_CLOSE), True) if closed else (pos, False)


#: A message the template writes nothing for, which the results' count still counts (D2, D5).
_UNWRITTEN = {"role": "developer", "content": ""}


def _place_result(messages: list[dict[str, Any]], opens: bool, closes: bool) -> None:
    """Make the next tool message's position after its calls what the template shows (D5): the
    first after the calls where it opened the block, the count of the calls where it closed it,
    neither where it did neither; messages the template writes nothing for make up the difference."""
    owner = max((i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("tool_calls")), default=-1)
    count = len(messages[owner].get("tool_calls") or ()) if owner >= 0 else 0
    order = len(messages) - owner
    if not opens and order == 1:
        messages.append(dict(_UNWRITTEN))
        order += 1
    if closes and order < count:
        messages += [dict(_UNWRITTEN) for _ in range(count - order)]
    elif not closes and order == count:
        messages.append(dict(_UNWRITTEN))


def _read_calls(text: str, pos: int, end: int, schemas: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The invokes from ``pos`` to ``end`` exactly: (name, arguments) each, values as their heads say."""
    calls = []
    while pos < end:
        start = expect(text, pos, _INVOKE)
        name_end = text.find('">\n', start, end)
        if name_end < 0:
            raise parse_error_at(text, pos, "this invoke head is never closed", expected=('">',))
        arguments: dict[str, Any] = {}
        pos = name_end + 3
        while not text.startswith(_INVOKE_END, pos):
            key_start = expect(text, pos, _PARAMETER)
            key_end = text.find('" string="', key_start, end)
            if key_end < 0:
                raise parse_error_at(text, pos, "this parameter head is never closed", expected=('" string="',))
            key = text[key_start:key_end]
            flag = text[key_end + 10 : key_end + 16]
            if flag not in ('true">', 'false"'):
                raise expected_error(text, key_end + 10, ('true">', 'false">'))
            value_start = key_end + 10 + (6 if flag == 'true">' else 7)
            value_end = text.find(_PARAMETER_END, value_start, end)
            while value_end >= 0 and not text.startswith((_PARAMETER, _INVOKE_END), value_end + len(_PARAMETER_END)):
                value_end = text.find(_PARAMETER_END, value_end + 1, end)
            if value_end < 0 or key in arguments:
                raise parse_error_at(text, pos, "a parameter read no way", expected=(_PARAMETER_END,))
            raw = text[value_start:value_end]
            if flag == 'true">':
                arguments[key] = raw
            else:
                value = _json_value(raw)
                if value is _NOT_JSON:
                    raise parse_error_at(text, value_start, 'a string="false" value that is no JSON')
                arguments[key] = value
            pos = value_end + len(_PARAMETER_END)
        pos += len(_INVOKE_END)
        calls.append((text[start:name_end], arguments))
    if pos != end:
        raise parse_error_at(text, pos, "expected the function_calls block's end", expected=(CALL_CLOSE,))
    return calls


_NOT_JSON = object()


def _json_value(raw: str) -> Any:
    """The value ``tojson`` writes as exactly ``raw``, else :data:`_NOT_JSON`."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return _NOT_JSON
    return value if tojson(value) == raw else _NOT_JSON


# ---------------------------------------------------------------------------- wire
# The invoke family (codec/wire/invoke.py) reads, renders and exports these replies.

WIRE = WireSpec(
    "invoke",
    call=(CALL_OPEN, CALL_CLOSE),
    stop=EOS,
    reasoning=(THINK_OPEN, THINK_CLOSE),
    name=(f'<{DSML}invoke name="', '">'),
    arguments="tagged",
    parameter=(f'<{DSML}parameter name="', '">', f"</{DSML}parameter>"),
    values="flagged",
    separator="\n\n",
    recover=("bare_invoke",),
)


# ---------------------------------------------------------------------------- format


class DeepseekV32(Format):
    """DeepSeek V3.2 prompts and DSML calls (reference: llama.cpp's DeepSeek V3.2 template)."""

    name = "deepseek_v3_2"
    aliases = ("deepseek-v3.2", "deepseek_v3.2", "deepseek_dsml", "dsml")
    summary = 'DeepSeek V3.2 DSML: <｜DSML｜function_calls>\\n<｜DSML｜invoke name="NAME">\\n<｜DSML｜parameter ...'
    stop_token = EOS
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/deepseek/deepseek-ai-DeepSeek-V3.2.jinja"
    template_markers = (DSML, "function_calls>", "<｜Assistant｜>", "<function_results>")

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
