"""``mistral_small3_2``: Mistral Small 3.2's prompts; replies ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}`` per call.

Reference template: ``Mistral-Small-3.2-24B-Instruct-2506.jinja`` (``../shared/templates/families/mistral``,
the template of Mistral Small 3.2 24B Instruct 2506, Mistral's tokenizer of version 11). A reply
looks like::

    [TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]{"city": "Paris"}</s>

The reply side is a member of the ``named_json`` wire family (:data:`WIRE`): each call opens with
``[TOOL_CALLS]``, its written id is kept. Ids the format makes are ``mistral_nemo``'s, nine
letters and digits (``S5``), also those ``render_reply`` writes for calls without one. Recovered
and reported (the spec's ``recover``): a lost ``[ARGS]`` (``[TOOL_CALLS]name{...}``, what a
detokenizer that skips special tokens leaves), the older list form (``[TOOL_CALLS][{"name": ...,
"arguments": ...}]``, once or more), and Devstral's ``{"tool_calls": [...]}`` written as text
where it names declared tools.

Quirks of the template, cited by ID below:

- ``S1`` The default system prompt, Mistral Small 3's, holds today's date as
  ``strftime_now("%Y-%m-%d")`` writes it (the variable ``current_date`` stands for the clock:
  records that must not change give it, and decoding gives it back); a first system message replaces it (its content, or
  the ``text`` of its first part). ``[SYSTEM_PROMPT]`` + it + ``[/SYSTEM_PROMPT]`` follows
  ``bos_token``, always.
- ``S2`` The roles must alternate user / assistant, starting with user, counting only the
  messages that are neither ``tool`` results nor messages with calls (``tool_calls`` truthy;
  ``tool_results`` counts): else ``After the optional system message, conversation roles must
  alternate user/assistant/user/assistant/...``.
- ``S3`` A later system message is written in place as ``[SYSTEM_PROMPT]...[/SYSTEM_PROMPT]``.
- ``S4`` The tools (``tools`` not None, also an empty list) are ``[AVAILABLE_TOOLS]`` + ``tools |
  tojson`` + ``[/AVAILABLE_TOOLS]``, before every user message equal to the last one.
- ``S5`` Calls (``tool_calls`` truthy): per call ``[TOOL_CALLS]`` + name + ``[CALL_ID]`` + id +
  ``[ARGS]`` + ``arguments | tojson`` (a string of JSON is written as a JSON string), then
  ``eos_token``; the content is not written. An id that is not a string nine long raises
  ``Tool call IDs should be alphanumeric strings with length 9!``.
- ``S6`` Content: a string, or its parts (``text`` written, ``image`` / ``image_url`` as
  ``[IMG]``, any other raises); an assistant's is followed by ``eos_token``.
- ``S7`` A result (``tool`` or ``tool_results``) is ``[TOOL_RESULTS]`` + id + ``[TOOL_CONTENT]`` +
  content (its ``content`` key where it has one) ``| string`` + ``[/TOOL_RESULTS]``; the id checked
  as in ``S5``.
- ``S8`` Any other role raises ``Only system, user, assistant, and tool roles are supported!``.
- ``S9`` ``eos_token`` is the tokenizer's ``</s>`` where the caller gives none (``mistral_nemo``'s
  ``N8``); there is no generation prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

from codec.errors import RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import bos_token, expect
from codec.formats._render import attr, concat, defined, iterate, string, subscript, tojson
from codec.formats.mistral_nemo import ID_ERROR, ID_LENGTH, ROLES_ERROR, STOP, MistralNemo, _end_token
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation, FunctionCall
from codec.wire import WireSpec

__all__ = ["MistralSmall3_2", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers

SYSTEM_OPEN = "[SYSTEM_PROMPT]"
SYSTEM_CLOSE = "[/SYSTEM_PROMPT]"
INST_OPEN = "[INST]"
INST_CLOSE = "[/INST]"
TOOLS_OPEN = "[AVAILABLE_TOOLS]"
TOOLS_CLOSE = "[/AVAILABLE_TOOLS]"
CALLS_OPEN = "[TOOL_CALLS]"
CALL_ID = "[CALL_ID]"
ARGS = "[ARGS]"
RESULTS_OPEN = "[TOOL_RESULTS]"
RESULTS_CONTENT = "[TOOL_CONTENT]"
RESULTS_CLOSE = "[/TOOL_RESULTS]"
IMAGE = "[IMG]"

ROLE_ERROR = "Only system, user, assistant, and tool roles are supported!"
USER_PART_ERROR = "Only text and image blocks are supported in message content!"
ASSISTANT_PART_ERROR = "Only text and image blocks are supported in assistant content!"

#: How the template writes today's date (S1).
DATE_FORMAT = "%Y-%m-%d"
_SYSTEM_HEAD = (
    "You are Mistral Small 3, a Large Language Model (LLM) created by Mistral AI, a French startup "
    "headquartered in Paris.\nYour knowledge base was last updated on 2023-10-01. The current date is "
)
# The rest of the default system prompt, after the date (S1): Mistral's wording, as the model expects it.
_SYSTEM_TAIL = (
    ".\n"
    "\n"
    "When you're not sure about some information or when the user's request requires up-to-date or "
    "specific data, you must use the available tools to fetch the information. Do not hesitate to "
    "use tools whenever they can provide a more accurate or complete response. If no relevant tools "
    "are available, then clearly state that you don't have the information and avoid making up "
    "anything.\n"
    "\n"
    "If the user's question is not clear, ambiguous, or does not provide enough context for you to "
    "accurately answer the question, you do not try to answer it right away and you rather ask the "
    'user to clarify their request (e.g. "What are some good restaurants around me?" => "Where are '
    'you?" or "When is the next flight to Tokyo" => "Where do you travel from?").\n'
    "You are always very attentive to dates, and when asked about information at specific dates, "
    "you discard information that is at another date.\n"
    "You follow these instructions in all languages, and always respond to the user in the language "
    "they use or request.\n"
    "Next sections describe the capabilities that you have.\n"
    "\n"
    "# WEB BROWSING INSTRUCTIONS\n"
    "\n"
    "You cannot perform any web search or access internet to open URLs, links etc. If it seems like "
    "the user is expecting you to do so, you clarify the situation and ask the user to copy paste "
    "the text directly in the chat.\n"
    "\n"
    "# MULTI-MODAL INSTRUCTIONS\n"
    "\n"
    "You have the ability to read images, but you cannot generate images. You also cannot "
    "transcribe audio files or videos.\n"
    "You cannot read nor transcribe audio files or videos.\n"
    "\n"
    "# TOOL CALLING INSTRUCTIONS\n"
    "\n"
    "You may have access to tools that you can use to fetch information or perform actions. You "
    "must use these tools in the following situations:\n"
    "\n"
    "1. When the request requires up-to-date information.\n"
    "2. When the request requires specific data that you do not have in your knowledge base.\n"
    "3. When the request involves actions that you cannot perform without tools.\n"
    "\n"
    "Always prioritize using tools to provide the most accurate and helpful response. If tools are "
    "not available, inform the user that you cannot perform the requested action at the moment."
)


def default_system_prompt(current_date: str | None = None) -> str:
    """The system prompt written where the conversation has none, with ``current_date`` or else
    today's date (S1)."""
    return _SYSTEM_HEAD + (current_date or datetime.now().strftime(DATE_FORMAT)) + _SYSTEM_TAIL


# ---------------------------------------------------------------------------- render


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (``add_generation_prompt`` writes nothing: ``S9``)."""
    system: Any = default_system_prompt(variables.get("current_date"))
    loop = messages
    if len(messages) > 0 and subscript(messages[0], "role") == "system":  # S1
        system, loop = _system_text(messages[0]), messages[1:]
    users = [message for message in loop if attr(message, "role") == "user"]
    _check_alternation(loop)
    eos = variables.get("eos_token", MistralNemo.tokenizer_variables["eos_token"])
    out = [string(variables.get("bos_token", "")), concat(SYSTEM_OPEN, system, SYSTEM_CLOSE)]
    for message in loop:
        role = subscript(message, "role")
        if role == "system":  # S3
            out.append(concat(SYSTEM_OPEN, _system_text(message), SYSTEM_CLOSE))
        elif role == "user":
            if tools is not None and message == users[-1]:  # S4
                out.append(TOOLS_OPEN + tojson(tools) + TOOLS_CLOSE)
            out.append(INST_OPEN + _parts(subscript(message, "content"), USER_PART_ERROR) + INST_CLOSE)
        elif role == "assistant":
            if message.get("tool_calls"):  # S5
                for call in iterate(message["tool_calls"]):
                    out.append(concat(CALLS_OPEN, attr(attr(call, "function"), "name")))
                    out.append(concat(CALL_ID, _checked_id(attr(call, "id"))))
                    out.append(ARGS + tojson(subscript(subscript(call, "function"), "arguments")))
                out.append(string(eos))
            else:  # S6
                content = subscript(message, "content")
                if isinstance(content, str):
                    out.append(concat(content, eos))
                else:
                    out.append(_parts(content, ASSISTANT_PART_ERROR) + string(eos))
        elif role in ("tool_results", "tool"):  # S7
            content = attr(message, "content")
            if defined(content) and defined(attr(content, "content")):
                content = content["content"]
            call_id = _checked_id(attr(message, "tool_call_id"))
            out.append(RESULTS_OPEN + call_id + RESULTS_CONTENT + string(content) + RESULTS_CLOSE)
        else:
            raise RenderError(ROLE_ERROR)  # S8
    return "".join(out)


def _system_text(message: dict[str, Any]) -> Any:
    """A system message's text: its content, or its first part's ``text`` (S1, S3)."""
    content = subscript(message, "content")
    return content if isinstance(content, str) else subscript(subscript(content, 0), "text")


def _parts(content: Any, error: str) -> str:
    """Content as the template writes it (S6): a string, or its text and image parts."""
    if isinstance(content, str):
        return content
    out = []
    for block in iterate(content):
        kind = subscript(block, "type")
        if kind == "text":
            out.append(string(subscript(block, "text")))
        elif kind in ("image", "image_url"):
            out.append(IMAGE)
        else:
            raise RenderError(error)
    return "".join(out)


def _check_alternation(loop: list[dict[str, Any]]) -> None:
    """``S2``: the messages that are neither ``tool`` results nor calls alternate user / assistant."""
    index = 0
    for message in loop:
        if attr(message, "role") == "tool" or message.get("tool_calls"):
            continue
        if (subscript(message, "role") == "user") != (index % 2 == 0):
            raise RenderError(ROLES_ERROR)
        index += 1


def _checked_id(call_id: Any) -> str:
    """``S5``, ``S7``: an id that is a string nine long."""
    if not isinstance(call_id, str) or len(call_id) != ID_LENGTH:
        raise RenderError(ID_ERROR)
    return call_id


# ---------------------------------------------------------------------------- decode

_TURN_MARKERS = (SYSTEM_OPEN, TOOLS_OPEN, INST_OPEN, CALLS_OPEN, RESULTS_OPEN)


def _next_turn(text: str, pos: int) -> int:
    """Where the next turn marker at or after ``pos`` starts (the end of ``text`` without one)."""
    found = [at for at in (text.find(marker, pos) for marker in _TURN_MARKERS) if at >= 0]
    return min(found, default=len(text))


def _until(prompt: str, pos: int, closer: str) -> int:
    """Where ``closer`` is next found at or after ``pos``; a parse error without one."""
    end = prompt.find(closer, pos)
    if end < 0:
        raise parse_error_at(prompt, pos, f"this turn is never closed by {closer!r}", expected=(closer,))
    return end


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts").

    The first system prompt is given back as a system message unless it is the default one (S1);
    the content beside calls is not written (S5) and parts come back as text. ``eos_token`` is
    ``</s>`` (the tokenizer's, S9) where the assistant turns end with it, else the text that ends
    a turn of calls.
    """
    first = prompt.find(SYSTEM_OPEN)
    if first < 0:
        raise parse_error_at(prompt, 0, f"expected {SYSTEM_OPEN!r}", expected=(SYSTEM_OPEN,))
    variables: dict[str, Any] = {}
    bos = bos_token(prompt, first, SYSTEM_OPEN)
    if bos:
        variables["bos_token"] = bos
    end = _until(prompt, first, SYSTEM_CLOSE)
    system = prompt[first + len(SYSTEM_OPEN) : end]
    messages: list[dict[str, Any]] = []
    date = system[len(_SYSTEM_HEAD) : len(system) - len(_SYSTEM_TAIL)]
    if system == default_system_prompt(date) and len(date) == len("2026-01-15"):
        variables["current_date"] = date  # S1: the default prompt's day, given back so that it renders again
    else:
        messages.append({"role": "system", "content": system})
    tools: list[dict[str, Any]] | None = None
    told: set[int] = set()  # the user messages the tools block comes before (S4)
    pos = end + len(SYSTEM_CLOSE)
    eos: str | None = None
    while pos < len(prompt):
        if prompt.startswith(SYSTEM_OPEN, pos):
            end = _until(prompt, pos, SYSTEM_CLOSE)
            messages.append({"role": "system", "content": prompt[pos + len(SYSTEM_OPEN) : end]})
            pos = end + len(SYSTEM_CLOSE)
        elif prompt.startswith(TOOLS_OPEN, pos):
            try:
                tools, pos = PLAIN_JSON_DECODER.raw_decode(prompt, pos + len(TOOLS_OPEN))
            except (ValueError, RecursionError):
                raise parse_error_at(prompt, pos, "the tools are not JSON as the template writes them") from None
            pos = expect(prompt, pos, TOOLS_CLOSE)
            told.add(len(messages))
        elif prompt.startswith(INST_OPEN, pos):
            end = _until(prompt, pos, INST_CLOSE)
            messages.append({"role": "user", "content": prompt[pos + len(INST_OPEN) : end]})
            pos = end + len(INST_CLOSE)
        elif prompt.startswith(CALLS_OPEN, pos):
            calls = []
            while prompt.startswith(CALLS_OPEN, pos):
                name_end = _until(prompt, pos, CALL_ID)
                name = prompt[pos + len(CALLS_OPEN) : name_end]
                id_at = name_end + len(CALL_ID)
                call_id = prompt[id_at : id_at + ID_LENGTH]
                pos = expect(prompt, id_at + ID_LENGTH, ARGS)
                try:
                    arguments, pos = PLAIN_JSON_DECODER.raw_decode(prompt, pos)
                except (ValueError, RecursionError):
                    raise parse_error_at(prompt, pos, "arguments that are not JSON") from None
                function: Any = {"name": name, "arguments": arguments}
                if isinstance(arguments, str):  # S5: a string written as a JSON string, kept as that text
                    function = FunctionCall.model_construct(name=name, arguments=arguments)
                calls.append({"id": call_id, "type": "function", "function": function})
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            # What follows the calls: eos_token, then maybe an answer and eos_token again (S5, S6).
            found = eos if eos is not None else _end_token(prompt[pos : _next_turn(prompt, pos)])
            if not prompt.startswith(found, pos):
                raise parse_error_at(prompt, pos, "the turns of calls end with different texts")
            eos, pos = found, pos + len(found)
        elif prompt.startswith(RESULTS_OPEN, pos):
            end = _until(prompt, pos, RESULTS_CLOSE)
            body = prompt[pos + len(RESULTS_OPEN) : end]
            if body[ID_LENGTH : ID_LENGTH + len(RESULTS_CONTENT)] != RESULTS_CONTENT:
                raise parse_error_at(prompt, pos, "a tool result not written as the template writes it")
            content = body[ID_LENGTH + len(RESULTS_CONTENT) :]
            messages.append({"role": "tool", "content": content, "tool_call_id": body[:ID_LENGTH]})
            pos = end + len(RESULTS_CLOSE)
        else:
            end = _next_turn(prompt, pos)
            messages.append({"role": "assistant", "content": prompt[pos:end]})
            pos = end
    turns = [m["content"] for m in messages if m["role"] == "assistant" and isinstance(m["content"], str)]
    if eos is None:  # no turn of calls: the turns' common end is the tokenizer's, or nothing
        eos = STOP if all(turn.endswith(STOP) for turn in turns) else ""
    for message in messages:
        if message["role"] == "assistant" and isinstance(message["content"], str):
            if not message["content"].endswith(eos):
                raise parse_error_at(prompt, 0, f"an assistant turn does not end with {eos!r}")
            message["content"] = message["content"][: len(message["content"]) - len(eos)]
    if eos != STOP:
        variables["eos_token"] = eos
    if tools is not None:
        _unequal_to_the_last(messages, told)
    if not messages:
        raise parse_error_at(prompt, 0, "a prompt of the default system prompt alone names no conversation")
    return Conversation.model_validate({"messages": messages, "tools": tools, "variables": variables})


def _unequal_to_the_last(messages: list[dict[str, Any]], told: set[int]) -> None:
    """An earlier user message with the last one's text but no tools block before it was not equal
    to the last one (S4: dict equality), though it wrote the same text: give it back as that text's
    one part, which writes the same and is not equal to a string content."""
    users = [i for i, message in enumerate(messages) if message["role"] == "user"]
    for i in users[:-1]:
        if i not in told and messages[i]["content"] == messages[users[-1]]["content"]:
            messages[i]["content"] = [{"type": "text", "text": messages[i]["content"]}]


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "named_json",
    call=(CALLS_OPEN, ""),
    name=("", ARGS),
    call_id=(CALL_ID, "{id}"),
    stop=STOP,
    recover=("lost_args_opener", "call_lists", "calls_in_text"),
)


# ---------------------------------------------------------------------------- format


class MistralSmall3_2(Format):
    """Mistral Small 3.2 (Mistral's tokenizer of version 11): ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}`` per call."""

    name = "mistral_small3_2"
    aliases = ("mistral-small-3.2",)
    summary = "Mistral Small 3.2: [TOOL_CALLS]NAME[CALL_ID]abc123xyz[ARGS]{...}</s>"
    stop_token = STOP
    reference_template = "../templates/families/mistral/Mistral-Small-3.2-24B-Instruct-2506.jinja"
    template_markers = ("[TOOL_CALLS]", "[CALL_ID]", "[ARGS]", "[SYSTEM_PROMPT]")
    tokenizer_variables: ClassVar[Mapping[str, Any]] = MistralNemo.tokenizer_variables  # S9

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
    default_call_id = MistralNemo.default_call_id
