"""``mistral_nemo``: Mistral Nemo's prompts, and its replies: one JSON list of calls after ``[TOOL_CALLS]``.

Reference template: ``mistralai-Mistral-Nemo-Instruct-2407.jinja``
(``../shared/templates/families/mistral``, the template of Mistral Nemo Instruct 2407 and of the
models of Mistral's tokenizer before version 11). A reply looks like::

    [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123xyz"}]</s>

The reply side is a member of the ``json_object`` wire family whose calls are one JSON list after
a block opener (:data:`WIRE`). The id a call object writes is the call's id; since it comes after
the arguments, the call starts (its name and arguments sent) once its id is read, or where the
object ends without one. A call without an id gets the stream's (``call_id``), where the caller
gives none ``call00000``, ``call00001``... (:meth:`MistralNemo.default_call_id`), since the
template takes only ids of nine characters (``N4``).

Quirks of the template, cited by ID below:

- ``N1`` A first message with the system role is taken out of the loop; its content (when it has
  one) is written only into the **last message, when that message is a user message**:
  ``[INST]`` + system + ``\\n\\n`` + content + ``[/INST]``. Otherwise the system message leaves no
  trace. A system message later in the conversation raises the roles error (``N7``).
- ``N2`` The roles must alternate user / assistant, starting with user, counting only the
  messages that are neither tool results (``tool``, ``tool_results``) nor assistant messages
  with ``tool_calls``: else ``After the optional system message, conversation roles must
  alternate user/assistant/user/assistant/...``, raised before anything is written.
- ``N3`` The tools (``tools`` not None, **also an empty list**) are written before every user
  message **equal** to the last one (dict equality: a repeated identical message gets them
  too): ``[AVAILABLE_TOOLS][`` + per tool ``{"type": "function", "function": {...}}`` joined with
  ``", "``, then ``][/AVAILABLE_TOOLS]`` (an empty list writes ``[AVAILABLE_TOOLS][[/AVAILABLE_TOOLS]``).
  Each of the function's keys but ``return``: a string value raw between quotes (**nothing
  escaped**), any other value ``tojson``.
- ``N4`` An assistant message with ``tool_calls`` (any value, also an empty list) writes
  ``[TOOL_CALLS][``, then per call its ``function | tojson`` less the final ``}``, then
  ``, "id": "ID"}``, joined with ``", "``, then ``]`` and ``eos_token``. Its content is not
  written. An id that is missing or not nine long raises ``Tool call IDs should be alphanumeric
  strings with length 9!`` (only the length is checked). An empty list writes ``[TOOL_CALLS][``
  and nothing after it.
- ``N5`` Another assistant message is its content + ``eos_token``, joined with ``+``.
- ``N6`` A tool result is ``[TOOL_RESULTS]{"content": `` + content (its ``content`` key where the
  content is a mapping that has one; printed, not quoted) + ``, "call_id": "ID"}[/TOOL_RESULTS]``;
  the id checked as in ``N4``.
- ``N7`` Any other role raises ``Only user and assistant roles are supported, with the exception
  of an initial optional system message!``.
- ``N8`` ``bos_token`` is printed first (nothing when undefined); ``eos_token`` is joined with
  ``+``, so an assistant turn without it raises ``'eos_token' is undefined``: transformers always
  gives it (the tokenizer's ``</s>``, :attr:`MistralNemo.tokenizer_variables`, which rendering uses
  where the caller gives none). There is no generation prompt: ``add_generation_prompt`` writes
  nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from codec.errors import RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import bos_token, expect
from codec.formats._render import Undefined, attr, call_method, concat, defined, iterate, string, subscript, tojson
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation, FunctionCall
from codec.wire import WireSpec

__all__ = ["MistralNemo", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers

INST_OPEN = "[INST]"
INST_CLOSE = "[/INST]"
TOOLS_OPEN = "[AVAILABLE_TOOLS]["
TOOLS_CLOSE = "][/AVAILABLE_TOOLS]"
EMPTY_TOOLS = "[AVAILABLE_TOOLS][[/AVAILABLE_TOOLS]"
CALLS_OPEN = "[TOOL_CALLS]"
RESULTS_OPEN = '[TOOL_RESULTS]{"content": '
RESULTS_ID = ', "call_id": "'
RESULTS_CLOSE = '"}[/TOOL_RESULTS]'
STOP = "</s>"
ID_LENGTH = 9

ROLES_ERROR = "After the optional system message, conversation roles must alternate user/assistant/user/assistant/..."
ID_ERROR = "Tool call IDs should be alphanumeric strings with length 9!"
ROLE_ERROR = "Only user and assistant roles are supported, with the exception of an initial optional system message!"
EOS_UNDEFINED = "'eos_token' is undefined"


# ---------------------------------------------------------------------------- render


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (``add_generation_prompt`` writes nothing: ``N8``)."""
    system: Any = Undefined(None, "content")
    loop = messages
    if subscript(messages[0], "role") == "system":  # N1
        system, loop = subscript(messages[0], "content"), messages[1:]
    users = [message for message in loop if attr(message, "role") == "user"]
    _check_alternation(loop)
    eos = variables.get("eos_token", _EOS)
    out = [string(variables["bos_token"]) if "bos_token" in variables else ""]
    for i, message in enumerate(loop):
        role = subscript(message, "role")
        if role == "user":
            if tools is not None and message == users[-1]:  # N3
                out.append(_tools_block(tools))
            if i == len(loop) - 1 and defined(system):
                out.append(concat(INST_OPEN, system, "\n\n", subscript(message, "content"), INST_CLOSE))
            else:
                out.append(concat(INST_OPEN, subscript(message, "content"), INST_CLOSE))
        elif "tool_calls" in message:
            out.append(_calls(message["tool_calls"], eos))
        elif role == "assistant":  # N5
            out.append(concat(subscript(message, "content"), eos))
        elif role in ("tool_results", "tool"):  # N6
            content = attr(message, "content")
            if defined(content) and defined(attr(content, "content")):
                content = content["content"]
            out.append(concat(RESULTS_OPEN, string(content), ", "))
            call_id = _checked_id(attr(message, "tool_call_id"))
            out.append(concat(RESULTS_ID.removeprefix(", "), call_id, RESULTS_CLOSE))
        else:
            raise RenderError(ROLE_ERROR)  # N7
    return "".join(out)


class _Eos(Undefined):
    """The undefined ``eos_token``: joining it raises the template's own error (``N8``)."""

    @property
    def message(self) -> str:
        return EOS_UNDEFINED


_EOS = _Eos(None, "eos_token")


def _check_alternation(loop: list[dict[str, Any]]) -> None:
    """``N2``: the messages that are neither tool results nor calls alternate user / assistant."""
    index = 0
    for message in loop:
        if attr(message, "role") in ("tool", "tool_results") or "tool_calls" in message:
            continue
        if (subscript(message, "role") == "user") != (index % 2 == 0):
            raise RenderError(ROLES_ERROR)
        index += 1


def _tools_block(tools: list[dict[str, Any]]) -> str:
    """``N3``: the tools declared, each function's keys but ``return``."""
    out = ["[AVAILABLE_TOOLS]["]
    for n, tool in enumerate(tools):
        function = attr(tool, "function")
        pairs = [(key, value) for key, value in call_method(function, "items") if key != "return"]
        out.append('{"type": "function", "function": {')
        for k, (key, value) in enumerate(pairs):
            if isinstance(value, str):
                out.append(concat('"', key, '": "', value, '"'))
            else:
                out.append(concat('"', key, '": ', tojson(value)))
            if k < len(pairs) - 1:
                out.append(", ")
        out.append("}}")
        out.append(", " if n < len(tools) - 1 else "]")
    out.append("[/AVAILABLE_TOOLS]")
    return "".join(out)


def _checked_id(call_id: Any) -> Any:
    """``N4``, ``N6``: an id that is defined and nine long (its length as ``| length`` takes it)."""
    if not defined(call_id):
        raise RenderError(ID_ERROR)
    try:
        length = len(call_id)
    except TypeError as exc:
        raise RenderError(str(exc)) from None
    if length != ID_LENGTH:
        raise RenderError(ID_ERROR)
    return call_id


def _calls(calls: Any, eos: Any) -> str:
    """``N4``: the calls of an assistant message, as one JSON list after ``[TOOL_CALLS]``."""
    out = [CALLS_OPEN + "["]
    listed = list(iterate(calls))
    for n, call in enumerate(listed):
        out.append(tojson(attr(call, "function"))[:-1])
        out.append(concat(', "id": "', _checked_id(attr(call, "id")), '"}'))
        out.append(", " if n < len(listed) - 1 else concat("]", eos))
    return "".join(out)


# ---------------------------------------------------------------------------- decode

#: What starts each turn the template writes (an assistant's content turn starts with none of them).
_TURN_MARKERS = ("[AVAILABLE_TOOLS]", INST_OPEN, CALLS_OPEN + "[", RESULTS_OPEN)


def _next_turn(text: str, pos: int) -> int:
    """Where the next turn marker at or after ``pos`` starts (the end of ``text`` without one)."""
    found = [at for at in (text.find(marker, pos) for marker in _TURN_MARKERS) if at >= 0]
    return min(found, default=len(text))


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts").

    The system message is not told apart from the last user message it is written into (``N1``),
    the content beside calls is not written (``N4``), and there is no generation prompt (``N8``):
    the conversation read is the one without them. ``eos_token`` is what ends a turn of calls, or
    ``</s>`` where every content turn ends with it, or else nothing (the turns' text is their content).
    """
    first = _next_turn(prompt, 0)
    variables: dict[str, Any] = {}
    bos = bos_token(prompt, first, INST_OPEN) if first < len(prompt) or prompt else ""
    if bos:
        variables["bos_token"] = bos
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] | None = None
    content_turns: list[str] = []
    told: list[int] = []  # the user messages a tools block comes before (N3)
    eos: str | None = None
    pos = first
    while pos < len(prompt):
        if prompt.startswith(EMPTY_TOOLS, pos):
            tools, pos = [], pos + len(EMPTY_TOOLS)
            told.append(len(messages))
        elif prompt.startswith(TOOLS_OPEN, pos):
            tools, pos = _read_tools(prompt, pos)
            told.append(len(messages))
        elif prompt.startswith(INST_OPEN, pos):
            end = prompt.find(INST_CLOSE, pos)
            if end < 0:
                raise parse_error_at(
                    prompt, pos, f"this turn is never closed by {INST_CLOSE!r}", expected=(INST_CLOSE,)
                )
            messages.append({"role": "user", "content": prompt[pos + len(INST_OPEN) : end]})
            pos = end + len(INST_CLOSE)
        elif prompt.startswith(CALLS_OPEN + "[", pos):
            calls, pos = _read_calls(prompt, pos + len(CALLS_OPEN))
            end = _next_turn(prompt, pos)
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            if not calls:
                continue  # N4: nothing follows an empty list; what does is the next turn
            # What follows the list: eos_token, then maybe an answer and eos_token again (N4, N5).
            found = eos if eos is not None else _end_token(prompt[pos:end])
            if not prompt.startswith(found, pos):
                raise parse_error_at(prompt, pos, "the turns of calls end with different texts")
            eos, pos = found, pos + len(found)
        elif prompt.startswith(RESULTS_OPEN, pos):
            messages.append(_read_result(prompt, pos))
            pos = prompt.index(RESULTS_CLOSE, pos) + len(RESULTS_CLOSE)
        else:
            end = _next_turn(prompt, pos)
            content_turns.append(prompt[pos:end])
            messages.append({"role": "assistant", "content": len(content_turns) - 1})
            pos = end
    if eos is None and content_turns:
        eos = STOP if all(turn.endswith(STOP) for turn in content_turns) else ""
    for message in messages:
        if message["role"] == "assistant" and isinstance(message["content"], int):
            turn = content_turns[message["content"]]
            assert eos is not None
            if not turn.endswith(eos):
                raise parse_error_at(prompt, 0, f"an assistant turn does not end with {eos!r}")
            message["content"] = turn[: len(turn) - len(eos)]
    if eos is not None:
        variables["eos_token"] = eos
    _take_system_out(messages, told)
    if not messages:  # the template wrote nothing but the BOS token: a lone system message
        messages.append({"role": "system", "content": ""})
    return Conversation.model_validate({"messages": messages, "tools": tools, "variables": variables})


def _take_system_out(messages: list[dict[str, Any]], told: list[int]) -> None:
    """Give the system text back where the tools show it (``N1``, ``N3``): a tools block before an
    earlier user message says that message equals the last one, so a last user text that is
    ``system + "\\n\\n" + `` that message's text holds a system message written into it."""
    users = [i for i, message in enumerate(messages) if message["role"] == "user"]
    earlier = [i for i in told if i in users[:-1]]
    if not earlier:
        return
    last, text = messages[users[-1]], messages[earlier[0]]["content"]
    written = last["content"]
    if written != text and written.endswith("\n\n" + text):
        last["content"] = text
        messages.insert(0, {"role": "system", "content": written[: len(written) - len(text) - 2]})


def _end_token(text: str) -> str:
    """The ``eos_token`` that ``text`` (what follows a list of calls, up to the next turn) starts
    with: the shortest start of it that also ends it, if an answer follows (``N4``, ``N5``)."""
    for n in range(1, len(text)):
        if text.endswith(text[:n]) and len(text) >= 2 * n:
            return text[:n]
    return text


_TOOL_OPEN = '{"type": "function", "function": {'
_TOOL_CLOSE = "}}"


def _read_tools(prompt: str, pos: int) -> tuple[list[dict[str, Any]], int]:
    """The tools block at ``pos`` (``N3``) and the offset after it: each function's keys, a string
    value as it is written raw between quotes (up to the first quote that a next key or the
    function's end follows), any other value as JSON."""
    pos += len(TOOLS_OPEN)
    tools: list[dict[str, Any]] = []
    while True:
        pos = expect(prompt, pos, _TOOL_OPEN)
        function: dict[str, Any] = {}
        while not prompt.startswith(_TOOL_CLOSE, pos):
            if function:
                pos = expect(prompt, pos, ", ")
            pos = expect(prompt, pos, '"')
            key_end = prompt.find('": ', pos)
            if key_end < 0:
                raise parse_error_at(prompt, pos, "a key of a tool's function that is never closed")
            key, pos = prompt[pos:key_end], key_end + 3
            function[key], pos = _tool_value(prompt, pos)
        tools.append({"type": "function", "function": function})
        pos += len(_TOOL_CLOSE)
        if prompt.startswith(TOOLS_CLOSE, pos):
            return tools, pos + len(TOOLS_CLOSE)
        pos = expect(prompt, pos, ", ")


def _tool_value(prompt: str, pos: int) -> tuple[Any, int]:
    """A value of a tool's function at ``pos`` (``N3``) and the offset after it."""
    if prompt.startswith('"', pos):  # a string, raw: tojson writes no other value with a quote first
        end = pos + 1
        while True:
            end = prompt.find('"', end)
            if end < 0:
                raise parse_error_at(prompt, pos, "a string value of a tool that is never closed")
            if prompt.startswith(', "', end + 1) or prompt.startswith(_TOOL_CLOSE, end + 1):
                return prompt[pos + 1 : end], end + 1
            end += 1
    try:
        return PLAIN_JSON_DECODER.raw_decode(prompt, pos)
    except (ValueError, RecursionError):
        raise parse_error_at(prompt, pos, "a value of a tool that is not JSON as the template writes it") from None


def _read_calls(prompt: str, pos: int) -> tuple[list[dict[str, Any]], int]:
    """The list of calls at ``pos`` (``N4``) and the offset after it; an empty list is ``[`` alone."""
    try:
        calls, end = json.JSONDecoder(object_pairs_hook=_Pairs).raw_decode(prompt, pos)
    except (ValueError, RecursionError):
        if not prompt.startswith("{", pos + 1):  # [TOOL_CALLS][ with no call in it, then the next turn
            return [], pos + 1
        raise parse_error_at(prompt, pos, "the calls are not a JSON list as the template writes them") from None
    if not isinstance(calls, list) or not calls:
        raise parse_error_at(prompt, pos, "expected a JSON list of calls")
    found = []
    for pairs in calls:
        if not isinstance(pairs, _Pairs) or not pairs or pairs[-1][0] != "id" or not isinstance(pairs[-1][1], str):
            raise parse_error_at(prompt, pos, 'expected calls written as {..., "id": "ID"}')
        function = _plain(_Pairs(pairs[:-1]))
        arguments = function.get("arguments")
        if list(function) == ["name", "arguments"] and isinstance(arguments, str):
            function = FunctionCall.model_construct(name=function["name"], arguments=arguments)  # N4: kept as text
        found.append({"id": pairs[-1][1], "type": "function", "function": function})
    return found, end


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as the decoder read it: its members in order, the last ``id`` among them."""


def _plain(value: Any) -> Any:
    """A value the pairs hook read: objects as dicts again."""
    if isinstance(value, _Pairs):
        return {key: _plain(item) for key, item in value}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _read_result(prompt: str, pos: int) -> dict[str, Any]:
    """The tool result at ``pos`` (``N6``): its printed content and its call's id."""
    end = prompt.find(RESULTS_CLOSE, pos)
    id_at = end - ID_LENGTH - len(RESULTS_ID)
    if end < 0 or id_at < pos + len(RESULTS_OPEN) or not prompt.startswith(RESULTS_ID, id_at):
        raise parse_error_at(prompt, pos, "a tool result not written as the template writes it")
    content = prompt[pos + len(RESULTS_OPEN) : id_at]
    call_id = prompt[id_at + len(RESULTS_ID) : end]
    expect(prompt, end, RESULTS_CLOSE)
    return {"role": "tool", "content": content, "tool_call_id": call_id}


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "json_object",
    block=(CALLS_OPEN, ""),
    stop=STOP,
    name=('"name"', ""),
    arguments_keys=("arguments", "parameters"),
    id_key="id",
    separator=", ",
)


# ---------------------------------------------------------------------------- format


class MistralNemo(Format):
    """Mistral Nemo (Mistral's tokenizer before version 11): a JSON list of calls after ``[TOOL_CALLS]``."""

    name = "mistral_nemo"
    summary = 'Mistral Nemo: [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": "abc123xyz"}]</s>'
    stop_token = STOP
    reference_template = "../templates/families/mistral/mistralai-Mistral-Nemo-Instruct-2407.jinja"
    template_markers = ("[AVAILABLE_TOOLS]", "[TOOL_CALLS]", "[TOOL_RESULTS]")
    tokenizer_variables: ClassVar[Mapping[str, Any]] = MappingProxyType({"eos_token": STOP})  # N8

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE

    def default_call_id(self, index: int) -> str:
        """``call00000``, ``call00001``...: nine letters and digits, the only ids the template takes
        (``N4``; past 99,999 calls in one reply, longer)."""
        return f"call{index:05d}"
