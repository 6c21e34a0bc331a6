"""``granite4``: the prompts of IBM Granite 4.0, around hermes' JSON tool calls.

Reference template: ``ibm-granite-granite-4.0.jinja`` (``../shared/templates/families/granite``,
the Granite 4.0 template with its tool-call role mapping). A reply looks like::

    Some text
    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call><|end_of_text|>

The reply side is the ``json_object`` wire family's, as hermes' spec with Granite's stop token
and no reasoning (:data:`WIRE`): the same tolerances (``parameters`` for ``arguments``, arguments
given as a JSON string, a missing ``</tool_call>``, other models' shapes). Only the prompt is this
module's, reproduced by :func:`prompt_text` and read back by :func:`prompt_conversation`.

Quirks of the template, cited by ID below:

- ``G1`` A system turn always comes first, ``<|start_of_role|>system<|end_of_role|>`` + its text +
  ``<|end_of_text|>\\n``. The text is the first message's content when that message is a system
  message (a string; a list of parts: the ``text`` of each part of type ``text``, one line apart),
  then, with tools, ``\\n\\n`` and the tools block (:data:`TOOLS_HEADER`, one ``tojson`` line per
  tool, :data:`TOOLS_FOOTER`), then, with documents, ``\\n\\n`` and the documents block likewise.
  Without a system message the blocks alone (``\\n\\n`` between them). An empty text is replaced
  by :data:`DEFAULT_SYSTEM`, so a first system message whose content is that prompt, or empty,
  writes what no system message does.
- ``G2`` The variable ``available_tools``, where given and not empty, stands for ``tools``; the
  variable ``documents`` adds the documents block (transformers takes only a list of mappings:
  anything else is its ``TypeError``).
- ``G3`` A message's content is its string, or the ``text`` of its parts of type ``text`` joined
  by ``\\n`` (a part's text is joined with ``+``: a missing one or one that is no string raises),
  else nothing.
- ``G4`` A user message, and a system message that is not the first, is ``<|start_of_role|>ROLE
  <|end_of_role|>`` + content + ``<|end_of_text|>\\n``; roles other than system, user, assistant
  and tool write nothing.
- ``G5`` An assistant message is ``<|start_of_role|>assistant<|end_of_role|>`` + content, then each
  of its ``tool_calls`` (its ``function`` where that is truthy), a line break before every call but
  a first one that no content precedes: ``<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n
  </tool_call>``, then ``<|end_of_text|>\\n``. The name is printed (``None``, missing ``''``); ARGS
  is a string argument as it is, else ``tojson`` (missing arguments raise). Reasoning is never
  written.
- ``G6`` Consecutive tool results share one ``<|start_of_role|>user<|end_of_role|>`` turn, each
  ``\\n<tool_response>\\nRESULT\\n</tool_response>``, the group closed by ``<|end_of_text|>\\n``.
- ``G7`` The generation prompt is ``<|start_of_role|>assistant<|end_of_role|>``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator
from typing import Any

from codec import jinja
from codec.errors import parse_error_at
from codec.format import Format, Functions
from codec.formats import hermes
from codec.formats._chatml import RESPONSE_CLOSE, RESPONSE_OPEN, tool_responses, turn_end
from codec.formats._decode import assistant_message, expected_error, trailing_blocks
from codec.formats._render import attr, concat, is_iterable, iterate, string, tojson
from codec.formats.hermes import UNSHOWN_MESSAGE, Hermes
from codec.literals import PLAIN_JSON_DECODER
from codec.models import Conversation

__all__ = ["Granite4", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers

ROLE_OPEN = "<|start_of_role|>"
ROLE_CLOSE = "<|end_of_role|>"
STOP = "<|end_of_text|>"
TURN_END = STOP + "\n"
GENERATION_PROMPT = ROLE_OPEN + "assistant" + ROLE_CLOSE
SYSTEM_OPEN = ROLE_OPEN + "system" + ROLE_CLOSE
#: The system prompt written where the system text would be empty (G1).
DEFAULT_SYSTEM = "You are a helpful assistant. Please ensure responses are professional, accurate, and safe."
TOOLS_HEADER = (
    "You are a helpful assistant with access to the following tools. You may call one or more tools to "
    "assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML "
    "tags:\n<tools>"
)
TOOLS_FOOTER = (
    "\n</tools>\n\nFor each tool call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call>. If a tool does not exist in the provided list of tools, notify the "
    "user that you do not have the ability to fulfill the request."
)
DOCUMENTS_HEADER = (
    "You are a helpful assistant with access to the following documents. You may use one or more documents "
    "to assist with the user query.\n\nYou are given a list of documents within <documents></documents> XML "
    "tags:\n<documents>"
)
DOCUMENTS_FOOTER = (
    "\n</documents>\n\nWrite the response to the user's input by strictly aligning with the facts in the "
    "provided documents. If the information needed to answer the question is not available in the "
    "documents, inform the user that the question cannot be answered based on the available data."
)
CALL_HEAD = hermes.CALL_OPEN + '\n{"name": "'
CALL_ARGUMENTS = '", "arguments": '
CALL_TAIL = "}\n" + hermes.CALL_CLOSE

# ---------------------------------------------------------------------------- render


def content_text(content: Any) -> str:
    """A message's content as the template reads it (G3)."""
    if isinstance(content, str):
        return content
    out = ""
    if is_iterable(content):
        for entry in iterate(content):
            if attr(entry, "type") == "text":
                if out != "":
                    out += "\n"
                out = concat(out, attr(entry, "text"))
    return out


def block(header: str, entries: Any, footer: str) -> str:
    """A tools or documents block: ``header``, one ``tojson`` line per entry, ``footer`` (G1)."""
    return header + "".join("\n" + tojson(entry) for entry in iterate(entries)) + footer


def system_text(messages: list[dict[str, Any]], tools: Any, documents: Any) -> str:
    """The first turn's text (G1, G2), the default prompt where it would be empty."""
    blocks = [block(TOOLS_HEADER, tools, TOOLS_FOOTER)] if tools else []
    if documents:
        blocks.append(block(DOCUMENTS_HEADER, documents, DOCUMENTS_FOOTER))
    first = messages[0]
    if attr(first, "role") == "system":
        text = "\n\n".join([content_text(attr(first, "content")), *blocks])
    else:
        text = "\n\n".join(blocks)
    return text or DEFAULT_SYSTEM


def call_block(call: Any) -> str:
    """One call of an assistant's ``tool_calls`` (G5): a string argument as it is, else ``tojson``."""
    function = attr(call, "function")
    if function:
        call = function
    arguments = attr(call, "arguments")
    args = arguments if isinstance(arguments, str) else tojson(arguments)
    return CALL_HEAD + string(attr(call, "name")) + CALL_ARGUMENTS + args + CALL_TAIL


def turn(messages: list[dict[str, Any]], i: int) -> str:
    """What message ``i`` writes (G4-G6)."""
    message, last = messages[i], len(messages) - 1
    role = attr(message, "role")
    if role == "user" or (role == "system" and i):
        return ROLE_OPEN + str(role) + ROLE_CLOSE + content_text(attr(message, "content")) + TURN_END
    if role == "assistant":
        content = content_text(attr(message, "content"))
        out = GENERATION_PROMPT + content
        calls = attr(message, "tool_calls")
        if calls:
            for n, call in enumerate(iterate(calls)):
                if n or content:
                    out += "\n"
                out += call_block(call)
        return out + TURN_END
    if role == "tool":
        out = ""
        if i == 0 or attr(messages[i - 1], "role") != "tool":
            out += ROLE_OPEN + "user" + ROLE_CLOSE
        out += RESPONSE_OPEN + content_text(attr(message, "content")) + RESPONSE_CLOSE
        if i == last or attr(messages[i + 1], "role") != "tool":
            out += TURN_END
        return out
    return ""


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (variables ``available_tools`` and ``documents``: G2)."""
    available = variables.get("available_tools")
    if available:
        tools = available
    documents = variables.get("documents")
    if documents is not None and not all(isinstance(document, dict) for document in documents):
        raise TypeError("documents must be a list of mappings with 'title' and 'text' keys")  # transformers' check
    out = [SYSTEM_OPEN + system_text(messages, tools, documents) + TURN_END]
    out += [turn(messages, i) for i in range(len(messages))]
    if add_generation_prompt:
        out.append(GENERATION_PROMPT)  # G7
    return "".join(out)


# ---------------------------------------------------------------------------- decode

#: The roles a turn the template writes may have.
_OPENERS = tuple(ROLE_OPEN + role + ROLE_CLOSE for role in ("system", "user", "assistant"))


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (README, "Decoding prompts").

    The first turn's text reads as the system message, tools and documents (G1); the default
    prompt reads as no system message. Tool results are the user turns that are only results (G6).
    """
    pos = 0
    turns: list[tuple[str, int, int]] = []  # (role, start of text, end of text)
    generation_prompt = False
    while pos < len(prompt):
        if len(prompt) - pos == len(GENERATION_PROMPT) and prompt.startswith(GENERATION_PROMPT, pos):
            generation_prompt = True
            break
        opener = next((o for o in _OPENERS if prompt.startswith(o, pos)), None)
        if opener is None or (not turns and opener != SYSTEM_OPEN):
            expected = (SYSTEM_OPEN,) if not turns else _OPENERS
            raise expected_error(prompt, pos, expected, "a turn: " + " or ".join(map(repr, expected)))
        body = pos + len(opener)
        end = turn_end(prompt, body, (ROLE_OPEN,), TURN_END)
        turns.append((opener[len(ROLE_OPEN) : -len(ROLE_CLOSE)], body, end))
        pos = end + len(TURN_END)
    if not turns:
        raise expected_error(prompt, 0, (SYSTEM_OPEN,))
    _, body, end = turns[0]
    system, tools, documents = _first_turn(prompt, body, end)
    messages: list[dict[str, Any]] = [] if system is None else [{"role": "system", "content": system}]
    ids = itertools.count()
    for role, start, stop in turns[1:]:
        results = tool_responses(prompt, start, stop) if role == "user" else None
        if results is not None:
            if messages and messages[-1]["role"] == "tool":  # else the two groups would render as one
                messages.append(dict(UNSHOWN_MESSAGE))
            messages += [{"role": "tool", "content": result} for result in results]
        elif role == "assistant":
            messages.append(_assistant(prompt, start, stop, ids))
        else:
            if role == "system" and not messages:  # else it would be the first turn's text
                messages.append(dict(UNSHOWN_MESSAGE))
            messages.append({"role": role, "content": prompt[start:stop]})
    variables = {} if documents is None else {"documents": documents}
    return Conversation.model_validate(
        {
            "messages": messages or [dict(UNSHOWN_MESSAGE)],
            "tools": tools,
            "add_generation_prompt": generation_prompt,
            "variables": variables,
        }
    )


def _first_turn(text: str, start: int, end: int) -> tuple[str | None, list[Any] | None, list[Any] | None]:
    """The system text (None: no system message), tools and documents of the first turn (G1)."""
    documents = tools = None
    if text.endswith(DOCUMENTS_FOOTER, start, end):
        end, documents = _block(text, start, end - len(DOCUMENTS_FOOTER), DOCUMENTS_HEADER)
        if not all(isinstance(document, dict) for document in documents):
            raise parse_error_at(text, end, "a document is no mapping (transformers takes no other)")
        if text.endswith(TOOLS_FOOTER, start, end - 2) and text.startswith("\n\n", end - 2):
            end, tools = _block(text, start, end - 2 - len(TOOLS_FOOTER), TOOLS_HEADER)
    elif text.endswith(TOOLS_FOOTER, start, end):
        end, tools = _block(text, start, end - len(TOOLS_FOOTER), TOOLS_HEADER)
    if tools is None and documents is None:
        system = text[start:end]
        return (None if system == DEFAULT_SYSTEM else system), None, None
    if end == start:
        return None, tools, documents
    if end - start < 2 or not text.startswith("\n\n", end - 2):
        raise parse_error_at(text, end, "expected a blank line between the system message and the tools")
    return text[start : end - 2], tools, documents


def _block(text: str, start: int, footer: int, header: str) -> tuple[int, list[Any]]:
    """Where the block that ends at ``footer`` starts, and its entries: one ``tojson`` line each
    (a line holds no line break, so the last header before the footer is the block's)."""
    found = text.rfind(header, start, footer)
    if found < 0:
        raise parse_error_at(text, footer, "the block's instructions are not preceded by their header")
    return found, hermes.declaration_lines(text, found + len(header), footer, _json_line)


def _json_line(text: str, start: int, end: int) -> Any:
    """The JSON value ``tojson`` writes as exactly ``text[start:end]``."""
    line = text[start:end]
    try:
        value = PLAIN_JSON_DECODER.decode(line)
    except json.JSONDecodeError as exc:
        raise parse_error_at(text, start + exc.pos, f"a declaration is not JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise parse_error_at(text, start, f"a declaration is not plain JSON: {exc}") from None
    if jinja.tojson(value) != line:
        raise parse_error_at(text, start, "a declaration is not written as tojson writes it")
    return value


def _assistant(text: str, start: int, end: int, ids: Iterator[int]) -> dict[str, Any]:
    """An assistant turn: its content, then the calls that end it (each block that reads back exactly: G5)."""
    cut, calls = trailing_blocks(
        text,
        start,
        end,
        CALL_HEAD,
        hermes._read_call,
        lambda pos: pos == start or (pos - start >= 2 and text[pos - 1] == "\n"),
    )
    content = text[start:end] if not calls else text[start : max(start, cut - 1)]
    return assistant_message(content, calls, ids)


# ---------------------------------------------------------------------------- wire

#: Hermes' reply syntax, ended by Granite's stop token, without reasoning.
WIRE = dataclasses.replace(Hermes.wire, stop=STOP, reasoning=None)

# ---------------------------------------------------------------------------- format


class Granite4(Format):
    """IBM Granite 4.0 prompts with hermes' JSON calls (reference: llama.cpp's copy of Granite 4.0's template)."""

    name = "granite4"
    aliases = ("granite-4", "granite_4", "granite-4.0", "granite4.0")
    summary = "IBM Granite 4.0: hermes' JSON <tool_call> blocks, <|start_of_role|> turns, <|end_of_text|>"
    stop_token = STOP
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/granite/ibm-granite-granite-4.0.jinja"
    template_markers = (ROLE_OPEN, ROLE_CLOSE, hermes.CALL_OPEN, '"arguments"')

    functions = Functions(prompt_text, prompt_conversation)
    wire = WIRE
