"""``ministral3``: Ministral 3's prompts; replies ``[THINK]...[/THINK]`` then ``[TOOL_CALLS]NAME[ARGS]{...}`` per call.

Reference template: ``mistralai-Ministral-3-14B-Reasoning-2512.jinja``
(``../shared/templates/families/mistral``, the template of Ministral 3 14B Reasoning 2512, Mistral's
tokenizer of version 13, whose ``[THINK]`` and ``[/THINK]`` are special tokens). A reply looks like::

    [THINK]The user wants the weather.[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}</s>

The reply side is a member of the ``named_json`` wire family (:data:`WIRE`): each call opens with
``[TOOL_CALLS]``, writes no id (``mistral_small3_2``'s ``[CALL_ID]`` is gone), and reasoning is a
leading ``[THINK]`` block. A reply's reasoning (``reasoning_content``) is written there by
:func:`reply_text`; in a prompt the template writes only the ``thinking`` parts of a message's
content, where they stand (``T6``), and decoding gives them back as such parts.

Quirks of the template, cited by ID below:

- ``T1`` ``bos_token`` first (nothing when undefined). A first system message is written as
  ``[SYSTEM_PROMPT]`` + its content + ``[/SYSTEM_PROMPT]``: a string, or its parts (``text``
  written, ``thinking`` as ``[THINK]`` + it + ``[/THINK]``, any other raises ``Only text and
  thinking chunks are supported in system message contents.``). Without one, the default system
  prompt (Mistral's reasoning instructions) stands there.
- ``T2`` The tools (defined, not None, **not empty**) are ``[AVAILABLE_TOOLS]`` + ``tools |
  tojson`` + ``[/AVAILABLE_TOOLS]``, once, right after the system prompt.
- ``T3`` The roles must alternate user / assistant, starting with user, counting the user messages
  and the assistant messages without calls (``tool_calls`` missing, None or empty), checked
  before anything else: else ``After the optional system message, conversation roles must
  alternate user and assistant roles except for tool calls and results.``.
- ``T4`` A user message is ``[INST]`` + its content + ``[/INST]``: a string, or its parts (a
  list of two sorted by ``type``, so an image before its text; ``text`` written, ``image`` /
  ``image_url`` as ``[IMG]``, any other raises ``Only text, image and image_url chunks are
  supported in user message content.``); no content, or an empty list, raises ``User message must
  have a string or a list of chunks in content``.
- ``T5`` An assistant message without content (none, ``""``, an empty list) and without calls
  raises ``Assistant message must have a string or a list of chunks in content or a list of tool
  calls.``.
- ``T6`` An assistant message's content is written (a string, or its parts: ``text`` written,
  ``thinking`` as ``[THINK]`` + it + ``[/THINK]``, any other raises ``Only text and thinking
  chunks are supported in assistant message contents.``), **then** its calls: per call
  ``[TOOL_CALLS]`` + name + ``[ARGS]`` + arguments (an object ``| tojson``, a string as it is,
  ``""`` as ``{}``), no id; then ``eos_token``, after every assistant message.
- ``T7`` A tool result is ``[TOOL_RESULTS]`` + content ``| string`` + ``[/TOOL_RESULTS]``: no id,
  no name.
- ``T8`` Any other role (a later system message too) raises ``Only user, assistant and tool
  roles are supported, got ROLE.``.
- ``T9`` ``eos_token`` is the tokenizer's ``</s>`` where the caller gives none (``mistral_nemo``'s
  ``N8``); there is no generation prompt: ``add_generation_prompt`` writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from codec import jinja
from codec.errors import RenderError, parse_error_at
from codec.format import Format, Functions
from codec.formats._decode import bos_token, expect
from codec.formats._render import attr, concat, defined, iterate, length, string, subscript, tojson
from codec.formats.mistral_nemo import STOP, MistralNemo, _end_token
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation, FunctionCall
from codec.wire import WireSpec, compile_spec

__all__ = ["Ministral3", "prompt_conversation", "prompt_text", "reply_text"]

# ---------------------------------------------------------------------------- markers

SYSTEM_OPEN = "[SYSTEM_PROMPT]"
SYSTEM_CLOSE = "[/SYSTEM_PROMPT]"
INST_OPEN = "[INST]"
INST_CLOSE = "[/INST]"
TOOLS_OPEN = "[AVAILABLE_TOOLS]"
TOOLS_CLOSE = "[/AVAILABLE_TOOLS]"
CALLS_OPEN = "[TOOL_CALLS]"
ARGS = "[ARGS]"
RESULTS_OPEN = "[TOOL_RESULTS]"
RESULTS_CLOSE = "[/TOOL_RESULTS]"
THINK_OPEN = "[THINK]"
THINK_CLOSE = "[/THINK]"
IMAGE = "[IMG]"

ROLES_ERROR = (
    "After the optional system message, conversation roles must alternate user and assistant roles "
    "except for tool calls and results."
)
SYSTEM_PART_ERROR = "Only text and thinking chunks are supported in system message contents."
USER_PART_ERROR = "Only text, image and image_url chunks are supported in user message content."
USER_CONTENT_ERROR = "User message must have a string or a list of chunks in content"
ASSISTANT_EMPTY_ERROR = "Assistant message must have a string or a list of chunks in content or a list of tool calls."
ASSISTANT_PART_ERROR = "Only text and thinking chunks are supported in assistant message contents."
ROLE_ERROR = "Only user, assistant and tool roles are supported, got "

# The default system prompt (T1): Mistral's instructions for its reasoning models, as the model expects them.
DEFAULT_SYSTEM = (
    "# HOW YOU SHOULD THINK AND ANSWER\n\n"
    "First draft your thinking process (inner monologue) until you arrive at a response. Format your "
    "response using Markdown, and use LaTeX for any mathematical equations. Write both your thoughts and "
    "the response in the same language as the input.\n\n"
    "Your thinking process must follow the template below:[THINK]Your thoughts or/and draft, like working "
    "through an exercise on scratch paper. Be as casual and as long as you want until you are confident to "
    "generate the response to the user.[/THINK]Here, provide a self-contained response."
)


# ---------------------------------------------------------------------------- render


def _no_calls(message: Any) -> bool:
    """``tool_calls is not defined or tool_calls is none or tool_calls | length == 0`` (T3, T5)."""
    calls = subscript(message, "tool_calls")
    return not defined(calls) or calls is None or length(calls) == 0


def _blocks(content: Any, thinking: bool, error: str) -> str:
    """Content parts as the template writes them: ``text``, then ``thinking`` (T1, T6) or images (T4)."""
    out = []
    for block in iterate(content):
        kind = subscript(block, "type")
        if kind == "text":
            out.append(string(subscript(block, "text")))
        elif thinking and kind == "thinking":
            out.append(concat(THINK_OPEN, subscript(block, "thinking"), THINK_CLOSE))
        elif not thinking and kind in ("image", "image_url"):
            out.append(IMAGE)
        else:
            raise RenderError(error)
    return "".join(out)


def _sorted_by_type(blocks: Any) -> list[Any]:
    """``blocks | sort(attribute='type')``: stable, strings compared case-insensitively (T4)."""
    try:
        return sorted(iterate(blocks), key=lambda b: _lower(subscript(b, "type")))
    except TypeError as exc:
        raise RenderError(str(exc)) from None


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _check_alternation(loop: list[dict[str, Any]]) -> None:
    """``T3``: the user messages and the assistant messages without calls alternate, user first."""
    index = 0
    for message in loop:
        role = attr(message, "role")
        if role == "user" or (role == "assistant" and _no_calls(message)):
            if (subscript(message, "role") == "user") != (index % 2 == 0):
                raise RenderError(ROLES_ERROR)
            index += 1


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (``add_generation_prompt`` writes nothing: ``T9``)."""
    out = [string(variables.get("bos_token", ""))]
    first = subscript(messages, 0)
    if subscript(first, "role") == "system":  # T1
        content = subscript(first, "content")
        text = content if isinstance(content, str) else _blocks(content, True, SYSTEM_PART_ERROR)
        out.append(SYSTEM_OPEN + string(text) + SYSTEM_CLOSE)
        loop = messages[1:]
    else:
        out.append(SYSTEM_OPEN + DEFAULT_SYSTEM + SYSTEM_CLOSE)
        loop = messages
    if tools is not None and length(tools) > 0:  # T2
        out.append(TOOLS_OPEN + tojson(tools) + TOOLS_CLOSE)
    _check_alternation(loop)
    eos = variables.get("eos_token", MistralNemo.tokenizer_variables["eos_token"])
    for message in loop:
        role = subscript(message, "role")
        if role == "user":  # T4
            content = subscript(message, "content")
            if isinstance(content, str):
                out.append(INST_OPEN + content + INST_CLOSE)
            elif length(content) > 0:
                blocks = _sorted_by_type(content) if length(content) == 2 else content
                out.append(INST_OPEN + _blocks(blocks, False, USER_PART_ERROR) + INST_CLOSE)
            else:
                raise RenderError(USER_CONTENT_ERROR)
        elif role == "assistant":
            content = subscript(message, "content")
            empty = content is None or content == "" or length(content) == 0
            if empty and _no_calls(message):  # T5
                raise RenderError(ASSISTANT_EMPTY_ERROR)
            if isinstance(content, str) and content != "":  # T6
                out.append(content)
            elif length(content) > 0:
                out.append(_blocks(content, True, ASSISTANT_PART_ERROR))
            if not _no_calls(message):
                for call in iterate(subscript(message, "tool_calls")):
                    out.append(CALLS_OPEN)
                    function = subscript(call, "function")
                    name, arguments = subscript(function, "name"), subscript(function, "arguments")
                    if not isinstance(arguments, str):
                        arguments = tojson(arguments)
                    elif arguments == "":
                        arguments = "{}"
                    out.append(concat(name, ARGS, arguments))
            out.append(string(eos))
        elif role == "tool":  # T7
            out.append(RESULTS_OPEN + string(subscript(message, "content")) + RESULTS_CLOSE)
        else:
            raise RenderError(concat(ROLE_ERROR, role, "."))  # T8 (or concat's error, for a role that is no text)
    return "".join(out)


# ---------------------------------------------------------------------------- reply


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes for an assistant message: its reasoning (``reasoning_content``) in a
    leading ``[THINK]`` block, its content (parts as the template writes them, ``T6``), its calls,
    ``</s>``."""
    reasoning = attr(message, "reasoning_content")
    head = concat(THINK_OPEN, reasoning, THINK_CLOSE) if isinstance(reasoning, str) and reasoning else ""
    content = message.get("content")
    if isinstance(content, list):
        content = _blocks(content, True, ASSISTANT_PART_ERROR)
    return head + compile_spec(WIRE).reply_text({**message, "content": content})


# ---------------------------------------------------------------------------- decode

_TURNS = (INST_OPEN, RESULTS_OPEN)
#: The format whose ids decoded calls get (the prompt writes none): Mistral's nine letters and digits.
_IDS = MistralNemo()


def _until(prompt: str, pos: int, closer: str) -> int:
    """Where ``closer`` is next found at or after ``pos``; a parse error without one."""
    end = prompt.find(closer, pos)
    if end < 0:
        raise parse_error_at(prompt, pos, f"this turn is never closed by {closer!r}", expected=(closer,))
    return end


def _next_turn(prompt: str, pos: int) -> int:
    found = [at for at in (prompt.find(marker, pos) for marker in _TURNS) if at >= 0]
    return min(found, default=len(prompt))


def _content(text: str) -> str | list[dict[str, Any]] | None:
    """An assistant's written content as a message holds it: ``thinking`` parts where it writes
    ``[THINK]...[/THINK]`` (T6), else the text; None for none."""
    if not text:
        return None
    if THINK_OPEN not in text:
        return text
    parts: list[dict[str, Any]] = []
    pos = 0
    while True:
        start = text.find(THINK_OPEN, pos)
        end = text.find(THINK_CLOSE, start + len(THINK_OPEN)) if start >= 0 else -1
        if end < 0:
            break
        if start > pos:
            parts.append({"type": "text", "text": text[pos:start]})
        parts.append({"type": "thinking", "thinking": text[start + len(THINK_OPEN) : end]})
        pos = end + len(THINK_CLOSE)
    if pos < len(text):
        parts.append({"type": "text", "text": text[pos:]})
    return parts


def _calls(prompt: str, pos: int, end: int, ids: list[int]) -> tuple[list[dict[str, Any]], int]:
    """The calls written from ``pos`` (``[TOOL_CALLS]NAME[ARGS]...`` each, T6) and where they end."""
    calls = []
    while prompt.startswith(CALLS_OPEN, pos):
        sep = prompt.find(ARGS, pos, end)
        if sep < 0:
            raise parse_error_at(prompt, pos, f"a call without {ARGS!r}", expected=(ARGS,))
        name = prompt[pos + len(CALLS_OPEN) : sep]
        start = sep + len(ARGS)
        try:
            value, pos = PLAIN_JSON_DECODER.raw_decode(prompt, start)
        except (ValueError, RecursionError):
            raise parse_error_at(prompt, start, "arguments that are not JSON") from None
        text = prompt[start:pos]
        function: Any = {"name": name, "arguments": value}
        if not isinstance(value, dict) or jinja.tojson(value) != text:  # written as a string: kept as that text
            function = FunctionCall.model_construct(name=name, arguments=text)
        calls.append({"id": _IDS.default_call_id(len(ids)), "type": "function", "function": function})
        ids.append(len(ids))
    return calls, pos


def _assistants(prompt: str, pos: int, end: int, eos: str, ids: list[int]) -> list[dict[str, Any]]:
    """The assistant messages of the text from ``pos`` to ``end``: each its content, its calls and
    ``eos`` (T6); the text before calls is that message's content (:func:`_split_for_alternation`
    may make it a message of its own)."""
    out: list[dict[str, Any]] = []
    while pos < end:
        opener = prompt.find(CALLS_OPEN, pos, end)
        if opener < 0:
            if end - len(eos) < pos or not prompt.endswith(eos, pos, end):
                raise parse_error_at(prompt, pos, f"an assistant turn that does not end with {eos!r}")
            # An answer that writes nothing is an empty text part: the template refuses empty content (T5).
            content = _content(prompt[pos : end - len(eos)]) or [{"type": "text", "text": ""}]
            out.append({"role": "assistant", "content": content})
            break
        content = prompt[pos:opener]
        calls, pos = _calls(prompt, opener, end, ids)
        out.append({"role": "assistant", "content": _content(content), "tool_calls": calls})
        if not prompt.startswith(eos, pos):
            raise parse_error_at(prompt, pos, f"a turn of calls that does not end with {eos!r}")
        pos += len(eos)
    return out


def _counted(message: dict[str, Any]) -> bool:
    """Whether the alternation counts ``message`` (T3)."""
    return message["role"] == "user" or (message["role"] == "assistant" and not message.get("tool_calls"))


def _split_for_alternation(messages: list[dict[str, Any]], eos: str) -> None:
    """Where a user message follows a user message with only turns of calls between them, the
    first of those turns whose content ends with ``eos`` was an answer, then the calls: made two
    messages, so that the roles alternate as the template requires (T3)."""
    if not eos:
        return
    index = 0
    last = -1  # where the last counted message stands
    at = 0
    while at < len(messages):
        message = messages[at]
        if _counted(message):
            if message["role"] == "user" and index % 2 == 1:
                for k in range(last + 1, at):
                    content = messages[k].get("content")
                    if isinstance(content, str) and content.endswith(eos) and messages[k].get("tool_calls"):
                        text = _content(content[: len(content) - len(eos)]) or [{"type": "text", "text": ""}]
                        answer = {"role": "assistant", "content": text}
                        messages[k]["content"] = None
                        messages.insert(k, answer)
                        at += 1
                        index += 1
                        break
            index += 1
            last = at
        at += 1


def _eos(prompt: str, regions: list[tuple[int, int]]) -> str:
    """The ``eos_token`` the assistant turns end with: what follows the first turn of calls (the
    shortest start of it that also ends it, where an answer follows), else ``</s>`` where every
    turn ends with it, else nothing (T9)."""
    for start, end in regions:
        opener = prompt.find(CALLS_OPEN, start, end)
        if opener >= 0:
            _, after = _calls(prompt, opener, end, [])
            tail = prompt[after:end]
            following = tail.find(CALLS_OPEN)
            return _end_token(tail if following < 0 else tail[:following])
    return STOP if all(prompt.endswith(STOP, start, end) for start, end in regions) else ""


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (what comes back: README, "Decoding prompts").

    The first system prompt is given back as a system message unless it is the default one (T1),
    user parts as their text (T4), an assistant's ``[THINK]...[/THINK]`` as ``thinking`` parts of
    its content (T6), calls with the ids ``call00000``, ``call00001``... (the prompt writes none;
    Mistral's ids of nine letters and digits, which its other templates require) and tool results
    linked to them in order. ``eos_token`` is ``</s>`` (the tokenizer's, T9) where the
    assistant turns end with it.
    """
    first = prompt.find(SYSTEM_OPEN)
    if first < 0:
        raise parse_error_at(prompt, 0, f"expected {SYSTEM_OPEN!r}", expected=(SYSTEM_OPEN,))
    variables: dict[str, Any] = {}
    bos = bos_token(prompt, first, SYSTEM_OPEN)
    if bos:
        variables["bos_token"] = bos
    pos = first + len(SYSTEM_OPEN)
    end = _until(prompt, pos, SYSTEM_CLOSE)
    # A system prompt holding [THINK] is the default's or text: its own [/SYSTEM_PROMPT] is the first one.
    system = prompt[pos:end]
    messages: list[dict[str, Any]] = [] if system == DEFAULT_SYSTEM else [{"role": "system", "content": system}]
    pos = end + len(SYSTEM_CLOSE)
    tools: list[dict[str, Any]] | None = None
    if prompt.startswith(TOOLS_OPEN, pos):
        start = pos + len(TOOLS_OPEN)
        try:
            tools, pos = PLAIN_JSON_DECODER.raw_decode(prompt, start)
        except (ValueError, RecursionError):
            raise parse_error_at(prompt, start, "the tools are not JSON as the template writes them") from None
        if not isinstance(tools, list) or not tools:
            raise parse_error_at(prompt, start, "the tools are not a list of tools as the template writes them")
        pos = expect(prompt, pos, TOOLS_CLOSE)
    turns: list[tuple[str, int, int]] = []  # (role, start, end) of each turn's text
    while pos < len(prompt):
        if prompt.startswith(INST_OPEN, pos):
            end = _until(prompt, pos, INST_CLOSE)
            turns.append(("user", pos + len(INST_OPEN), end))
            pos = end + len(INST_CLOSE)
        elif prompt.startswith(RESULTS_OPEN, pos):
            end = _until(prompt, pos, RESULTS_CLOSE)
            turns.append(("tool", pos + len(RESULTS_OPEN), end))
            pos = end + len(RESULTS_CLOSE)
        else:
            end = _next_turn(prompt, pos)
            turns.append(("assistant", pos, end))
            pos = end
    eos = _eos(prompt, [(start, end) for role, start, end in turns if role == "assistant"])
    ids: list[int] = []
    for role, start, end in turns:
        if role == "assistant":
            messages.extend(_assistants(prompt, start, end, eos, ids))
        else:
            messages.append({"role": role, "content": prompt[start:end]})
    _split_for_alternation(messages, eos)
    if any(m["role"] == "assistant" for m in messages) and eos != STOP:
        variables["eos_token"] = eos
    if not messages:
        raise parse_error_at(prompt, 0, "a prompt of the default system prompt alone names no conversation")
    return Conversation.model_validate({"messages": messages, "tools": tools, "variables": variables})


# ---------------------------------------------------------------------------- wire

WIRE = WireSpec(
    "named_json",
    call=(CALLS_OPEN, ""),
    name=("", ARGS),
    stop=STOP,
    reasoning=(THINK_OPEN, THINK_CLOSE),
    recover=("lost_args_opener", "call_lists", "calls_in_text"),
)


# ---------------------------------------------------------------------------- format


class Ministral3(Format):
    """Ministral 3 (Mistral's tokenizer of version 13): ``[THINK]...[/THINK]``, then
    ``[TOOL_CALLS]NAME[ARGS]{...}`` per call."""

    name = "ministral3"
    aliases = ("ministral-3", "ministral_3")
    summary = "Ministral 3: [THINK]...[/THINK][TOOL_CALLS]NAME[ARGS]{...}</s>"
    stop_token = STOP
    reference_template = "../templates/families/mistral/mistralai-Ministral-3-14B-Reasoning-2512.jinja"
    template_markers = ("[TOOL_CALLS]", "[ARGS]", "[THINK]", "[SYSTEM_PROMPT]")
    tokenizer_variables: ClassVar[Mapping[str, Any]] = MistralNemo.tokenizer_variables  # T9

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = WIRE
    default_call_id = MistralNemo.default_call_id
