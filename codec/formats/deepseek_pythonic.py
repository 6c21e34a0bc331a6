"""``deepseek_pythonic``: DeepSeek-style role tokens with tool calls as a Python-like list.

Reference template: ``deepseek-pythonic.jinja`` (an unattributed composite: DeepSeek's role tokens
spelled in ASCII, the vLLM / Llama 3.2 "pythonic" tool prompt, Qwen3's reasoning logic). A reply
after the generation prompt ``<|Assistant|>`` looks like::

    <think>
    The user wants the weather.
    </think>

    Let me check.[get_weather(city="Paris", days=3), noop()]<|end_of_sentence|>

Strings are ``"`` + value + ``"`` with **nothing escaped** (a value holding ``"`` or a line break
is written as is); every other value is JSON (``true``, ``null``, ``1e+20``, ``{"k": [1]}``).
Keyword arguments and calls are separated by ``", "``. Tool results come back in a user turn, one
line each: ``<|User|>tool_response\\n{ "output": "Sunny" }\\n``.

Quirks of the reference template, reproduced by the renderer (FORMATS.md §6.3):

* D1/D2. Strings unescaped, other values ``tojson``; ``arguments`` given as a non-empty string fail
  (``Object of type Undefined is not JSON serializable``: the template looks each character up
  as a key), an empty one gives ``f()``.
* D3. ``<|end_of_sentence|>`` is written only after a tool-call list: a plain assistant turn is
  never closed, so ``...A1<|User|>Q2...``. Text is never trimmed.
* D4. Content and calls are glued: ``<|Assistant|>Pre.[f(a="x")]<|end_of_sentence|>``.
* D5. A run of tool messages opens one ``<|User|>tool_response\\n``; each string (or list...)
  result is ``{ "output": JSON }\\n``, a mapping result is its bare JSON with no line break.
* D6. The prompt opens ``<|begin_of_sentence|>``; with tools, ``\\n\\n`` (when there is system
  text), the tools prompt and each tool's JSON + ``\\n\\n`` come first, then the system text. Only
  the LAST system message is used (its content through ``str()``), none is written in place;
  ``developer`` messages are dropped.
* D7. Without ``reasoning_content``, content holding ``</think>`` is cut after the last
  ``</think>`` and the reasoning is then taken from the already-cut content, so the answer is
  written twice: ``<think>\\nIt is sunny.\\n</think>\\n\\nIt is sunny.``.
* D8. The ``<think>\\nREASONING\\n</think>\\n\\n`` block is written only for assistant messages after
  the last real user query (one whose content does not start with ``tool_response`` or
  ``<tool_response>``) that are the last message or have reasoning. Otherwise
  ``enable_thinking=False`` writes ``</think>`` after ``<|Assistant|>``. The generation prompt is
  ``<|Assistant|>``, ``<|Assistant|><think>`` (``enable_thinking=True``) or
  ``<|Assistant|></think>`` (``enable_thinking=False``).
* Images: one ``<image>`` per ``image`` part of any user message, all written BEFORE
  ``<|begin_of_sentence|>``; content lists otherwise give their text parts, joined.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from codec.errors import parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import rendering
from codec.formats._pythonic import (
    CallListSyntax,
    ReadCall,
    decoded_call,
    decoded_tool,
    json_readings,
    raw_string_readings,
    read_call_list,
)
from codec.formats._reading import Readings, find_all
from codec.formats._render import (
    attr,
    call_method,
    concat,
    defined,
    is_iterable,
    is_mapping,
    iterate,
    string,
    subscript,
    tojson,
)
from codec.models import Conversation, Message
from codec.wire import WireSpec, compile_spec

# ---------------------------------------------------------------------------- markers

BOS = "<|begin_of_sentence|>"
USER = "<|User|>"
ASSISTANT = "<|Assistant|>"
EOS = "<|end_of_sentence|>"
IMAGE = "<image>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
TOOL_RESPONSE = USER + "tool_response\n"
TOOLS_PROMPT = (
    "# Tools\n\nYou have access to the following functions. To call functions, please respond with a python list "
    'of the calls. Respond in the format [func_name1(params_name1="string_value", params_name2=123...), '
    "func_name2(params)] String parameters MUST be wrapped in double quotes. Do not use variables.\n\n"
)
#: How a user message that carries tool results starts (it is then not the user's query, D8).
TOOL_RESPONSE_PREFIXES = ("tool_response", "<tool_response>")


# ---------------------------------------------------------------------------- render


def render_value(value: Any) -> str:
    """An argument value: a string between ``"`` with nothing escaped (D1), anything else ``tojson`` (D2)."""
    return concat('"', value, '"') if isinstance(value, str) else tojson(value)


def render_call(call: Any) -> str:
    """``NAME(key=value, ...)`` for an OpenAI tool call (or its bare ``function`` object)."""
    function = attr(call, "function")
    if not defined(function):
        function = call
    out = [concat(attr(function, "name"), "(")]
    arguments = attr(function, "arguments")
    pairs = [concat(key, "=") + render_value(subscript(arguments, key)) for key in iterate(arguments)]
    return "".join(out) + ", ".join(pairs) + ")"


def render_calls(calls: Any) -> str:
    """``[call, call]<|end_of_sentence|>``: the calls joined by ``", "`` (D2, D3)."""
    return "[" + ", ".join(render_call(call) for call in iterate(calls)) + "]" + EOS


def content_text(content: Any) -> str:
    """A message's text: a string as is (never trimmed), else its ``text`` parts joined."""
    if isinstance(content, str):
        return content
    if not is_iterable(content):
        return ""
    return "".join(string(attr(item, "text")) for item in iterate(content) if attr(item, "type") == "text")


def image_tokens(messages: list[dict[str, Any]]) -> str:
    """``<image>`` for each ``image`` part of every user message's content list."""
    out: list[str] = []
    for message in messages:
        content = attr(message, "content")
        if attr(message, "role") == "user" and is_iterable(content) and not isinstance(content, str):
            out.extend(IMAGE for item in iterate(content) if attr(item, "type") == "image")
    return "".join(out)


def render_system(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """What follows ``<|begin_of_sentence|>``: the tools block and the last system message's text (D6)."""
    system: Any = None
    for message in messages:
        if attr(message, "role") == "system":
            system = attr(message, "content")
    out: list[str] = []
    if tools:
        if system:
            out.append("\n\n")
        out.append(TOOLS_PROMPT)
        out.extend(tojson(tool) + "\n\n" for tool in tools)
    if system:
        out.append(string(system))
    return "".join(out)


def last_query_index(messages: list[dict[str, Any]]) -> int:
    """Index of the last user message that is not a tool result (the last index when there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if attr(message, "role") != "user":
            continue
        content = attr(message, "content")
        if not (isinstance(content, str) and content.startswith(TOOL_RESPONSE_PREFIXES)):
            return index
    return len(messages) - 1


def split_reasoning(message: dict[str, Any]) -> tuple[Any, Any]:
    """(content, reasoning) as the template reads them, with its extraction order bug (D7)."""
    content = attr(message, "content")
    reasoning = attr(message, "reasoning_content")
    if defined(reasoning) and reasoning is not None:
        return content, reasoning
    if isinstance(content, str) and THINK_CLOSE in content:
        content = content.split(THINK_CLOSE)[-1].lstrip("\n")
        return content, content.split(THINK_CLOSE)[0].rstrip("\n").split(THINK_OPEN)[-1].lstrip("\n")
    return content, ""


def think_block(reasoning: Any) -> str:
    """``<think>\\nREASONING\\n</think>\\n\\n`` with the reasoning's surrounding line breaks stripped."""
    return concat(THINK_OPEN + "\n", call_method(reasoning, "strip", "\n"), "\n" + THINK_CLOSE + "\n\n")


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (errors raised in the template's order)."""
    thinking_set = "enable_thinking" in variables
    thinking = variables.get("enable_thinking")
    out = [image_tokens(messages), BOS, render_system(messages, tools)]
    query = last_query_index(messages)
    for index, message in enumerate(messages):
        role = attr(message, "role")
        if role == "user":
            out.append(USER + content_text(attr(message, "content")))
        elif role == "assistant":
            content, reasoning = split_reasoning(message)
            out.append(ASSISTANT)
            if index > query and reasoning:  # the template's `(loop.last or reasoning) and reasoning`
                out.append(think_block(reasoning))
            elif thinking_set and not thinking:
                out.append(THINK_CLOSE)
            out.append(content_text(content))
            calls = attr(message, "tool_calls")
            if calls:
                out.append(render_calls(calls))
        elif role == "tool":
            if index == 0 or attr(messages[index - 1], "role") != "tool":
                out.append(TOOL_RESPONSE)
            content = attr(message, "content")
            out.append(tojson(content) if is_mapping(content) else '{ "output": ' + tojson(content) + " }\n")
    if add_generation_prompt:
        out.append(ASSISTANT)
        if thinking_set:
            out.append(THINK_OPEN if thinking else THINK_CLOSE)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """The assistant turn as written after ``<|Assistant|>``.

    In order: ``<think>\\nREASONING\\n</think>\\n\\n`` when the message has reasoning (line breaks
    around it stripped), the content as is (text parts joined; never trimmed), and, only when
    there are calls, ``[call, ...]<|end_of_sentence|>``. A reply without calls has no stop
    token: the template never writes one after a plain answer (D3), the model's end of turn is
    then its tokenizer's EOS, outside the text.

    This is the turn as the template writes the last message of a conversation, after the
    user's query, with one deliberate difference: without ``reasoning_content``, reasoning
    inline in the content (``<think>\\n...\\n</think>\\n\\nanswer``) is split off as the
    template means to (the text before the first ``</think>``, after ``<think>``), not with its
    order bug (D7), which would write the answer as the reasoning.

    The generation prompt depends on ``enable_thinking``: ``<|Assistant|><think>`` when true,
    so the model generates this reply without its leading ``<think>``;
    ``<|Assistant|></think>`` when false, so a reply then has no reasoning block;
    ``<|Assistant|>`` when unset.
    """
    content = attr(message, "content")
    reasoning = attr(message, "reasoning_content")
    if not defined(reasoning):
        reasoning = ""
        if isinstance(content, str) and THINK_CLOSE in content:  # the extraction D7 means to do
            reasoning = content.split(THINK_CLOSE)[0].rstrip("\n").split(THINK_OPEN)[-1].lstrip("\n")
            content = content.split(THINK_CLOSE)[-1].lstrip("\n")
    out = [think_block(reasoning)] if reasoning else []
    out.append(content_text(content))
    calls = attr(message, "tool_calls")
    if calls:
        out.append(render_calls(calls))
    return "".join(out)


# ---------------------------------------------------------------------------- decode
#
# Text runs from one role marker to the next, except where JSON is read (the tools, the tool
# results) and inside a call list. Whether `enable_thinking` was set and whether the prompt ends
# with the generation prompt show only in how the assistant turns start and in the last one:
# each plausible reading is tried, the preferred first, and the first that renders the prompt
# again is the answer.

MARKERS = (USER, ASSISTANT)
CALLS_END = "]" + EOS
OUTPUT_OPEN = '{ "output": '
OUTPUT_CLOSE = " }\n"
#: What the generation prompt adds after ``<|Assistant|>``, by ``enable_thinking`` (``None``: unset).
GENERATION_SUFFIXES: dict[str, bool | None] = {"": None, THINK_OPEN: True, THINK_CLOSE: False}


def _value_readings(text: str, pos: int) -> Readings[Any]:
    """A string as ``"`` + value + ``"`` unescaped (D1), anything else as JSON (D2)."""
    return raw_string_readings(text, pos) if text.startswith('"', pos) else json_readings(text, pos)


CALL_SYNTAX = CallListSyntax(call_separator=", ", argument_separator=", ", read_value=_value_readings)


@dataclass(frozen=True)
class Segment:
    """What follows ``<|User|>`` or ``<|Assistant|>``: a user's text, a run of tool results, an assistant turn."""

    kind: str
    text: str = ""
    results: tuple[Any, ...] = ()


class Marks:
    """Where a prompt's role markers and its call lists' ends are, each found in one pass over it, so
    that reading turn after turn never searches the rest of the prompt again."""

    def __init__(self, prompt: str) -> None:
        self.prompt = prompt
        #: Every ``<|User|>`` and ``<|Assistant|>``, in order.
        self.markers = list(find_all(prompt, 0, MARKERS))
        #: Every ``]<|end_of_sentence|>`` that a role marker (or the end) follows: where calls may end.
        self.closes = [
            close
            for close in find_all(prompt, 0, (CALLS_END,))
            if close + len(CALLS_END) == len(prompt) or prompt.startswith(MARKERS, close + len(CALLS_END))
        ]

    def next_marker(self, pos: int) -> int:
        """The offset of the next ``<|User|>`` or ``<|Assistant|>`` from ``pos`` (the end when there is none)."""
        i = bisect_left(self.markers, pos)
        return self.markers[i] if i < len(self.markers) else len(self.prompt)

    def next_close(self, pos: int) -> int | None:
        """The first end of calls from ``pos`` that a role marker or the end follows."""
        i = bisect_left(self.closes, pos)
        return self.closes[i] if i < len(self.closes) else None


def read_system(marks: Marks, pos: int) -> tuple[str | None, list[dict[str, Any]] | None, int]:
    """The system text and the tools after ``<|begin_of_sentence|>`` (D6), and where the turns start."""
    prompt = marks.prompt
    for lead, with_system in (("\n\n" + TOOLS_PROMPT, True), (TOOLS_PROMPT, False)):
        if prompt.startswith(lead, pos):
            tools, after = read_tools(prompt, pos + len(lead))
            end = marks.next_marker(after)
            if tools and bool(prompt[after:end]) == with_system:
                return prompt[after:end] or None, tools, end
    end = marks.next_marker(pos)  # no tools block: the text up to the first turn is the system text
    return prompt[pos:end] or None, None, end


def read_tools(prompt: str, pos: int) -> tuple[list[dict[str, Any]], int]:
    """The tools written from ``pos`` as JSON and a blank line each; what follows them is the system text."""
    tools: list[dict[str, Any]] = []
    while prompt.startswith("{", pos):
        reading = next(json_readings(prompt, pos), None)
        if reading is None or not prompt.startswith("\n\n", reading[1]):
            if not tools:  # the tools preamble, then no tool: a damaged tools block
                raise parse_error_at(prompt, pos, "the tools block does not hold a tool's JSON and a blank line")
            break
        tools.append(decoded_tool(reading[0], prompt, pos))
        pos = reading[1] + 2
    return tools, pos


def _is_content(value: Any) -> bool:
    """Whether a message's ``content`` can hold ``value``: text or a list of parts."""
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(part, dict) for part in value))


def read_tool_run(prompt: str, pos: int) -> tuple[Segment, int] | None:
    """The tool results of ``<|User|>tool_response\\n{ "output": ... }\\n...`` at ``pos`` (D5), and where they end.

    ``None`` when the text there is not such a run of results that a message can hold, and a role
    marker (or the end) after it; it is then a user's text.
    """
    if not prompt.startswith(TOOL_RESPONSE, pos):
        return None
    pos += len(TOOL_RESPONSE)
    results = []
    while prompt.startswith(OUTPUT_OPEN, pos):
        readings = json_readings(prompt, pos + len(OUTPUT_OPEN))
        reading = next((r for r in readings if prompt.startswith(OUTPUT_CLOSE, r[1])), None)
        if reading is None or not _is_content(reading[0]):
            return None
        results.append(reading[0])
        pos = reading[1] + len(OUTPUT_CLOSE)
    if results and (pos == len(prompt) or prompt.startswith(MARKERS, pos)):
        return Segment("tool", results=tuple(results)), pos
    return None


def split_calls_off(text: str) -> tuple[str, list[ReadCall] | None]:
    """An assistant turn's text as content and the calls glued after it (D4): the leftmost ``[`` that starts them."""
    if not text.endswith(CALLS_END):
        return text, None
    end = len(text) - len(EOS)
    fallback: tuple[str, list[ReadCall] | None] = (text, None)
    name_pattern = compile_spec(WIRE).syntax().grammar.pattern("NAME")  # a tool name as a reply reads one
    for start in find_all(text, 0, ("[",), end):
        calls = read_call_list(text[start:end], CALL_SYNTAX)
        if calls:  # `tool_calls: []` writes nothing, so an empty list is no reading
            # Names as a model writes them first: content "[" before "[f()]" is not a call "[f".
            if all(name_pattern.fullmatch(name) for name, _ in calls):
                return text[:start], calls
            if fallback[1] is None:
                fallback = (text[:start], calls)
    return fallback


#: What opens a call list that a role marker may be inside: ``[``, a tool's name (as a reply reads one) and
#: ``(``, then, past arguments without a string, a keyword whose value is a string, an object or a list
#: (only a string can hold the marker).
_CALLS_OPEN = re.compile(r'\[[A-Za-z_][\w\-.]*\((?:[^"\[\]{}()]*, )?[A-Za-z_][\w\-.]*=["{\[]')


def assistant_end(marks: Marks, pos: int) -> int:
    """Where the assistant turn whose text starts at ``pos`` ends: the next role marker, or, when that marker is
    inside the turn's call list (a string argument may hold it), the end of the calls.
    """
    prompt = marks.prompt
    marker = marks.next_marker(pos)
    if prompt.startswith(CALLS_END, marker - len(CALLS_END)):
        return marker
    close = marks.next_close(marker)
    # Calls that hold the marker open before it (`[name(key="`), and a string at it: only then is the
    # text up to the calls' end read (it may run far, over many turns).
    opening = _CALLS_OPEN.search(prompt, pos, marker)
    if close is None or opening is None or prompt.find('"', opening.end() - 1, marker) < 0:
        return marker
    end = close + len(CALLS_END)
    content, calls = split_calls_off(prompt[pos:end])
    return end if calls is not None and pos + len(content) < marker else marker


def read_segments(marks: Marks, pos: int) -> list[Segment]:
    """The turns from ``pos`` (a role marker) to the end."""
    prompt = marks.prompt
    segments: list[Segment] = []
    while pos < len(prompt):
        if prompt.startswith(ASSISTANT, pos):
            end = assistant_end(marks, pos + len(ASSISTANT))
            segments.append(Segment("assistant", prompt[pos + len(ASSISTANT) : end]))
            pos = end
            continue
        if not prompt.startswith(USER, pos):
            raise parse_error_at(prompt, pos, "expected a turn", expected=list(MARKERS))
        # A second run right after a run is a user's text: consecutive tool results share one run (D5).
        run = read_tool_run(prompt, pos) if not segments or segments[-1].kind != "tool" else None
        if run is not None:
            segments.append(run[0])
            pos = run[1]
            continue
        end = marks.next_marker(pos + len(USER))
        segments.append(Segment("user", prompt[pos + len(USER) : end]))
        pos = end
    return segments


def decode_assistant(text: str, *, after_query: bool, thinking_off: bool, first_call: int) -> Message | None:
    """The assistant message written as ``text`` after ``<|Assistant|>``; ``None`` when ``thinking_off`` (so
    ``</think>`` must open the turn, D8) and it does not. Its calls are ``call_<first_call>`` onwards.

    The reasoning is set (``""`` when there is none) whenever the content holds ``</think>``, so that
    the template takes the content as it is instead of cutting it there (D7).
    """
    reasoning, rest = None, text
    opening = THINK_OPEN + "\n"
    closing = "\n" + THINK_CLOSE + "\n\n"
    if after_query and text.startswith(opening):  # a think block is written only after the last query (D8)
        close = text.find(closing, len(opening))
        shown = text[len(opening) : close]
        if close >= 0 and shown and shown == shown.strip("\n"):
            reasoning, rest = shown, text[close + len(closing) :]
    if reasoning is None and thinking_off:
        if not rest.startswith(THINK_CLOSE):
            return None
        rest = rest[len(THINK_CLOSE) :]
    content, read = split_calls_off(rest)
    if reasoning is None and THINK_CLOSE in content:
        reasoning = ""
    calls = None if read is None else [decoded_call(name, args, first_call + i) for i, (name, args) in enumerate(read)]
    text_content = content or (None if calls else "")
    return Message(role="assistant", content=text_content, reasoning_content=reasoning, tool_calls=calls)


def _build(
    segments: list[Segment],
    system: str | None,
    images: int,
    thinking: bool | None,
) -> list[Message] | None:
    """The messages for a reading of the turns (``None`` if ``enable_thinking=False`` cannot explain them)."""
    messages: list[Message | Segment] = [Message(role="system", content=system)] if system is not None else []
    for segment in segments:
        if segment.kind == "user":
            messages.append(Message(role="user", content=segment.text))
        elif segment.kind == "tool":
            messages.extend(Message(role="tool", content=result) for result in segment.results)
        else:
            messages.append(segment)  # decoded below, once the last query is known
    users = [m for m in messages if isinstance(m, Message) and m.role == "user"]
    if images:
        if not users:
            return None
        text = [{"type": "text", "text": users[0].content}] if users[0].content else []
        parts = [{"type": "image"}] * images + text
        messages[messages.index(users[0])] = Message(role="user", content=parts)
    shaped = [m.model_dump() if isinstance(m, Message) else {"role": "assistant"} for m in messages]
    query = last_query_index(shaped)
    out: list[Message] = []
    count = 0
    for index, item in enumerate(messages):
        if isinstance(item, Message):
            out.append(item)
            continue
        message = decode_assistant(
            item.text, after_query=index > query, thinking_off=thinking is False, first_call=count
        )
        if message is None:
            return None
        count += len(message.tool_calls or ())
        out.append(message)
    return out or [Message(role="system", content="")]  # nothing but tools (or nothing): a blank system message


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` renders; where the template writes several alike, one fixed reading.

    The system message (the last one, D6) comes first; a run of ``{ "output": ... }`` lines is
    tool results (no id or name), their contents as JSON gave them. Text runs to the next
    ``<|User|>`` / ``<|Assistant|>``, except that an assistant turn whose call list holds a
    marker runs to the end of its calls; the calls are the list from the leftmost ``[`` that
    reads as one, each string closing at the nearest quote that lets the rest read (D1). Call ids
    are ``call_0``, ``call_1``... across the conversation. ``<|Assistant|>``, ``<|Assistant|><think>``
    or ``<|Assistant|></think>`` at the end is the generation prompt (``enable_thinking`` unset,
    true, false); ``enable_thinking=False`` is read from ``</think>`` opening every assistant turn
    without a think block. Images all go to the first user message.
    """
    pos = 0
    while prompt.startswith(IMAGE, pos):
        pos += len(IMAGE)
    images = pos // len(IMAGE)
    if not prompt.startswith(BOS, pos):
        raise parse_error_at(prompt, pos, "expected the start of the prompt", expected=[IMAGE, BOS])
    marks = Marks(prompt)
    system, tools, pos = read_system(marks, pos + len(BOS))
    segments = read_segments(marks, pos)
    readings: list[tuple[bool, bool | None]] = []
    if segments and segments[-1].kind == "assistant" and segments[-1].text in GENERATION_SUFFIXES:
        readings.append((True, GENERATION_SUFFIXES[segments[-1].text]))
    if any(segment.kind == "assistant" and segment.text.startswith(THINK_CLOSE) for segment in segments):
        readings.append((False, False))  # only enable_thinking=False writes a bare </think> first
    readings.append((False, None))
    fallback = None
    for add_generation_prompt, thinking in readings:
        messages = _build(segments[:-1] if add_generation_prompt else segments, system, images, thinking)
        if messages is None:
            continue
        variables = {} if thinking is None else {"enable_thinking": thinking}
        conversation = Conversation(
            messages=messages, tools=tools, add_generation_prompt=add_generation_prompt, variables=variables
        )
        if rendering(conversation, prompt_text) == prompt:
            return conversation
        fallback = fallback or conversation
    if fallback is None:
        raise parse_error_at(prompt, 0, "images are written for user messages, and this prompt has none")
    return fallback


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "call_list",
    stop=EOS,
    reasoning=(THINK_OPEN, THINK_CLOSE),
    arguments="python",
    values="json_raw",
    separator=", ",
    argument_separator=", ",
)


# ---------------------------------------------------------------------------- format


class DeepseekPythonic(Format):
    """DeepSeek-style role tokens, Python-list calls (reference: ``deepseek-pythonic.jinja``)."""

    name = "deepseek_pythonic"
    aliases = ()
    summary = 'DeepSeek-style pythonic calls: [get_weather(city="Paris", days=3)]<|end_of_sentence|>'
    stop_token = EOS
    reference_template = "deepseek-pythonic.jinja"
    template_markers = ("<|User|>", "<|Assistant|>", "<|end_of_sentence|>", "tool_calls")

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
