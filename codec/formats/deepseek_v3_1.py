"""``deepseek_v3_1``: DeepSeek V3.1, a call's name then its JSON arguments between DeepSeek's tokens.

Reference template: DeepSeek V3.1's (``families/deepseek/deepseek-ai-DeepSeek-V3.1.jinja``). A
reply after the generation prompt looks like::

    Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}
    <｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>

(one line: the break is only for this page).

With ``thinking`` the generation prompt opens ``<think>`` and the reply's reasoning runs to
``</think>``. The template's quirks, by the IDs the renderer cites:

* ``D1``: every system message is gathered at the top, after ``bos_token``, the texts joined by a
  blank line (``+``: a non-string content raises), wherever the messages stand; no role marker.
* ``D2``: the template renders no tools (the model is told of them elsewhere).
* ``D3``: a user turn is ``<｜User｜>`` and its content (``+``: content that is no string raises).
* ``D4``: an assistant turn right after a user turn opens with ``<｜Assistant｜>`` and, with calls,
  ``</think>``; without calls ``</think>`` too (``<think>`` for a message with ``prefix`` when
  ``thinking``); an assistant turn after anything else has no opener at all.
* ``D5``: with calls (``tool_calls`` present, even an empty list) the content is written before the
  first call only (an absent content raises; an empty list of calls writes no content), then
  ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGUMENTS<｜tool▁call▁end｜>`` per call and
  ``<｜tool▁calls▁end｜><｜end▁of▁sentence｜>``.
* ``D6``: the name and the arguments are joined as text: the template takes arguments as JSON
  text (OpenAI's wire form). codec writes object arguments as their JSON text
  (:func:`codec.models.dump_arguments`) and a string as it is; render parity gives the
  template the same text (:attr:`Format.template_arguments`).
* ``D7``: without calls, the content before its first ``</think>`` is dropped (``</think>`` too),
  except right after tool results, where it is written whole; then ``<｜end▁of▁sentence｜>``.
* ``D8``: a tool result is ``<｜tool▁output▁begin｜>``, its content, ``<｜tool▁output▁end｜>``;
  results in a row are side by side. Reasoning (``reasoning_content``) is never written.
* ``D9``: the generation prompt, ``<｜Assistant｜></think>`` (``<｜Assistant｜><think>`` with
  ``thinking``), is written only right after a user turn: after tool results it is nothing.
* ``D10``: roles other than system, user, assistant and tool leave no trace.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from codec.errors import parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import call_id, expected_error
from codec.formats._render import Undefined, attr, concat, contains, iterate, string, subscript
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation, FunctionCall, dump_arguments
from codec.wire import WireSpec
from codec.wire.named_json import arguments_json

# ---------------------------------------------------------------------------- markers

USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
EOS = "<｜end▁of▁sentence｜>"
BOS = "<｜begin▁of▁sentence｜>"
CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
OUTPUT_BEGIN = "<｜tool▁output▁begin｜>"
OUTPUT_END = "<｜tool▁output▁end｜>"


# ---------------------------------------------------------------------------- render


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads ``bos_token`` and ``thinking``)."""
    thinking = variables.get("thinking", False)
    system: Any = ""
    first_system = True
    for message in messages:  # D1
        if attr(message, "role") == "system":
            system = (
                concat(system, attr(message, "content"))
                if first_system
                else concat(system, "\n\n", attr(message, "content"))
            )
            first_system = False
    out = [string(variables.get("bos_token", "")), string(system)]
    last_user = is_tool = False
    for message in messages:
        role = attr(message, "role")
        if role == "user":  # D3
            is_tool, last_user = False, True
            out.append(concat(USER, attr(message, "content")))
        calls = attr(message, "tool_calls")
        if role == "assistant" and not isinstance(calls, Undefined):
            if last_user:  # D4
                out.append(ASSISTANT + THINK_CLOSE)
            last_user = is_tool = False
            out.append(_calls(message, calls))
        if role == "assistant" and isinstance(calls, Undefined):
            if last_user:  # D4
                prefix = attr(message, "prefix")
                out.append(
                    ASSISTANT
                    + (THINK_OPEN if not isinstance(prefix, Undefined) and prefix and thinking else THINK_CLOSE)
                )
            last_user = False
            content = attr(message, "content")
            if is_tool:  # D7
                out.append(concat(content, EOS))
                is_tool = False
            else:
                if contains(content, THINK_CLOSE):
                    content = content.split(THINK_CLOSE, 1)[1]
                out.append(concat(content, EOS))
        if role == "tool":  # D8
            last_user, is_tool = False, True
            out.append(concat(OUTPUT_BEGIN, attr(message, "content"), OUTPUT_END))
    if add_generation_prompt and last_user and not is_tool:  # D9
        out.append(ASSISTANT + (THINK_OPEN if thinking else THINK_CLOSE))
    return "".join(out)


def _calls(message: dict[str, Any], calls: Any) -> str:
    """An assistant turn's calls (D5), each's name and arguments joined as text (D6)."""
    out = []
    for i, call in enumerate(iterate(calls)):
        function = subscript(call, "function")
        name, arguments = subscript(function, "name"), subscript(function, "arguments")
        body = concat(CALL_BEGIN, name, SEP, _arguments_text(arguments), CALL_END)
        if i == 0:
            content = attr(message, "content")
            body = concat(CALLS_BEGIN, body) if content is None else concat(content, CALLS_BEGIN, body)
        out.append(body)
    out.append(CALLS_END + EOS)
    return "".join(out)


def _arguments_text(arguments: Any) -> Any:
    """What the template is given for a call's arguments (D6): an object's JSON text, else the value."""
    return arguments_json(arguments) if isinstance(arguments, dict) else arguments


# ---------------------------------------------------------------------------- decode

#: What may end a user turn's text, a tool result's or an assistant's content.
_USER_ENDS = (USER, ASSISTANT, OUTPUT_BEGIN)
_ASSISTANT_ENDS = (EOS, CALLS_BEGIN)
#: Stands for messages the template does not render where the prompt holds none it does.
UNSHOWN_MESSAGE: dict[str, Any] = {"role": "developer", "content": ""}


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of: the system text at the top as one system
    message, the turns in order, ids ``call_0``... (the prompt holds none); ``bos_token`` where the
    prompt starts with DeepSeek's, ``thinking`` where the generation prompt opens reasoning."""
    variables: dict[str, Any] = {}
    pos = 0
    if prompt.startswith(BOS):
        variables["bos_token"] = BOS
        pos = len(BOS)
    messages: list[dict[str, Any]] = []
    ids = itertools.count()
    first = _first(prompt, pos, (USER, OUTPUT_BEGIN, EOS, CALLS_BEGIN, CALLS_END, ASSISTANT))
    if first is None or prompt.startswith((USER, OUTPUT_BEGIN), first):
        end = len(prompt) if first is None else first
        if end > pos:
            messages.append({"role": "system", "content": prompt[pos:end]})
        pos = end
    generation = False
    last_user = after_tool = False
    while pos < len(prompt):
        if prompt.startswith(USER, pos):
            end = _first(prompt, pos + len(USER), _USER_ENDS) or len(prompt)
            messages.append({"role": "user", "content": prompt[pos + len(USER) : end]})
            pos, last_user, after_tool = end, True, False
            continue
        if prompt.startswith(OUTPUT_BEGIN, pos):
            start = pos + len(OUTPUT_BEGIN)
            end = prompt.find(OUTPUT_END, start)
            if end < 0:
                raise parse_error_at(prompt, pos, "a tool result is never closed", expected=(OUTPUT_END,))
            messages.append({"role": "tool", "content": prompt[start:end]})
            pos, last_user, after_tool = end + len(OUTPUT_END), False, True
            continue
        if last_user:
            if not prompt.startswith(ASSISTANT, pos):
                raise expected_error(prompt, pos, (ASSISTANT, USER, OUTPUT_BEGIN))
            pos += len(ASSISTANT)
            prefix = prompt.startswith(THINK_OPEN, pos)  # D4, D9: thinking (a prefix message, or the generation prompt)
            if not prefix and not prompt.startswith(THINK_CLOSE, pos):
                raise expected_error(prompt, pos, (THINK_CLOSE, THINK_OPEN))
            pos += len(THINK_OPEN if prefix else THINK_CLOSE)
            if prefix:
                variables["thinking"] = True
            if pos == len(prompt):
                generation = True
                break
            message, pos = _assistant(prompt, pos, ids, after_tool)
            if prefix:
                if "tool_calls" in message:
                    raise parse_error_at(prompt, pos, "an assistant turn opened with <think> holds calls")
                message["prefix"] = True
        else:
            message, pos = _assistant(prompt, pos, ids, after_tool)
        messages.append(message)
        last_user = after_tool = False
    if not messages:
        messages.append(dict(UNSHOWN_MESSAGE))
    return Conversation.model_validate(
        {"messages": messages, "tools": None, "add_generation_prompt": generation, "variables": variables}
    )


def _first(text: str, pos: int, markers: tuple[str, ...]) -> int | None:
    found = [at for at in (text.find(marker, pos) for marker in markers) if at >= 0]
    return min(found) if found else None


def _assistant(prompt: str, pos: int, ids: Iterator[int], after_tool: bool) -> tuple[dict[str, Any], int]:
    """The assistant turn at ``pos``: content then ``<｜end▁of▁sentence｜>``, or content and calls (D5, D7)."""
    if prompt.startswith(CALLS_END + EOS, pos):  # an empty list of calls: no content is written
        return {"role": "assistant", "tool_calls": []}, pos + len(CALLS_END + EOS)
    end = _first(prompt, pos, _ASSISTANT_ENDS)
    if end is None:
        raise parse_error_at(prompt, pos, "an assistant turn is never ended", expected=_ASSISTANT_ENDS)
    content = prompt[pos:end]
    if prompt.startswith(EOS, end):
        if not after_tool and THINK_CLOSE in content:  # the template would drop what comes before it
            content = THINK_CLOSE + content
        return {"role": "assistant", "content": content}, end + len(EOS)
    calls = []
    at = end + len(CALLS_BEGIN)
    while not prompt.startswith(CALLS_END + EOS, at):
        if not prompt.startswith(CALL_BEGIN, at):
            raise expected_error(prompt, at, (CALL_BEGIN, CALLS_END + EOS))
        sep = prompt.find(SEP, at)
        close = prompt.find(CALL_END, sep + 1) if sep >= 0 else -1
        if close < 0:
            raise parse_error_at(prompt, at, "a tool call is never closed", expected=(CALL_END,))
        name, text = prompt[at + len(CALL_BEGIN) : sep], prompt[sep + len(SEP) : close]
        calls.append({"id": call_id(next(ids)), "type": "function", "function": _function(name, text)})
        at = close + len(CALL_END)
    return {"role": "assistant", "content": content, "tool_calls": calls}, at + len(CALLS_END + EOS)


def _function(name: str, text: str) -> FunctionCall | dict[str, Any]:
    """A call's function: arguments that are an object's JSON text as codec writes it read as the
    object; any other text stays that text (D6), unvalidated, so that it renders back."""
    try:
        value = PLAIN_JSON_DECODER.decode(text)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict) and dump_arguments(value) == text:
        return {"name": name, "arguments": value}
    return FunctionCall.model_construct(name=name, arguments=text)


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "named_json",
    block=(CALLS_BEGIN, CALLS_END),
    call=(CALL_BEGIN, CALL_END),
    name=("", SEP),
    stop=EOS,
    reasoning=(THINK_OPEN, THINK_CLOSE),
    special_tokens=(CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP, EOS),
    recover=("dsml_calls",),
)


# ---------------------------------------------------------------------------- format


class DeepSeekV31(Format):
    """DeepSeek V3.1: ``NAME<｜tool▁sep｜>{...}`` calls between DeepSeek's tool tokens."""

    name = "deepseek_v3_1"
    aliases = ("deepseek_v3.1", "deepseek-v3.1")
    summary = "DeepSeek V3.1: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜> in <｜tool▁calls▁begin｜>"
    stop_token = EOS
    reference_template = "../templates/families/deepseek/deepseek-ai-DeepSeek-V3.1.jinja"
    template_markers = (CALLS_BEGIN, CALL_BEGIN, SEP)
    template_arguments = "json_text"

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
