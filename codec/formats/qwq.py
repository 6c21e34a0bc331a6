"""``qwq``: the prompts of QwQ-32B, around hermes' JSON tool calls, with ``<think>`` reasoning.

Reference template: ``Qwen-QwQ-32B.jinja`` (``../shared/templates/families/qwen2_5``, llama.cpp's
copy of QwQ-32B's template). It is Qwen2.5's (``qwen2_5``, whose pieces render it: the system
turn, the turns, the call blocks) less the default system prompt, with reasoning cut out of the
history and a generation prompt that opens a think block. Replies are ``hermes``' JSON calls
between ``<tool_call>`` tags after an optional ``<think>...</think>``: the reply side is hermes'
spec (``Hermes.wire``), and :func:`reply_text` is qwen3's (the think block a reply with reasoning
opens with, then hermes' reply).

Quirks of the template, cited by ID below:

- ``W1`` No default system prompt. With tools (a non-empty list) the first turn is
  ``<|im_start|>system\\n``, the first message's content when it is a system message (printed),
  else nothing, then Qwen2.5's tools block: ``\\n\\n# Tools...`` (so a system message of ``''``
  writes what none does). Without tools, a first system message is a turn of its own (content
  joined with ``+``) and no turn is written without one.
- ``W2`` Users, later system messages, tool results and call blocks are Qwen2.5's (``qwen2_5``'s
  P2-P4: arguments always ``tojson``, string arguments as a JSON string literal).
- ``W3`` An assistant turn that is not the last message writes its content cut at reasoning:
  ``content.split('</think>')[-1].lstrip('\\n')`` (the text after the last ``</think>``, leading
  newlines removed), so its content must be text, with calls too (a missing content raises
  ``'dict object' has no attribute 'content'``). The last message writes its content as given.
  ``reasoning_content`` is never read.
- ``W4`` With calls, the ``\\n`` + content is written when the content *as given* is truthy: a
  content cut to nothing (``'</think>'``, ``'\\n'``) still writes the ``\\n``, as a lone newline
  before the first call's.
- ``W5`` The generation prompt is ``<|im_start|>assistant\\n<think>\\n``, then ``</think>`` unless
  ``enable_thinking`` is truthy: undefined (the default), false or ``0`` close the think block at
  once; ``enable_thinking=True`` leaves it open for the model's reasoning.
"""

from __future__ import annotations

from typing import Any

from codec.format import Format, Functions
from codec.formats import qwen2_5, qwen3
from codec.formats._chatml import GENERATION_PROMPT, read_turns
from codec.formats._render import attr, call_method
from codec.formats.hermes import Hermes
from codec.models import Conversation

__all__ = ["Qwq", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers

THINK_OPEN = "<think>\n"
THINK_CLOSE = "</think>"
#: The generation prompt's think block: opened (W5), closed at once unless ``enable_thinking``.
OPEN_THINK = GENERATION_PROMPT + THINK_OPEN
CLOSED_THINK = OPEN_THINK + THINK_CLOSE

# ---------------------------------------------------------------------------- render


def _content(message: dict[str, Any], is_last: bool) -> Any:
    """The content an assistant turn writes (W3): after its reasoning, unless it is the last message."""
    content = attr(message, "content")
    if is_last:
        return content
    return call_method(call_method(content, "split", THINK_CLOSE)[-1], "lstrip", "\n")


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (it reads ``enable_thinking`` only: W5)."""
    out = [qwen2_5.system_turn(messages, tools, None)]  # W1
    out += [qwen2_5.turn(messages, i, _content) for i in range(len(messages))]
    if add_generation_prompt:
        out.append(OPEN_THINK if variables.get("enable_thinking") else CLOSED_THINK)
    return "".join(out)


# ---------------------------------------------------------------------------- reply
# A reply is qwen3's: the think block a reply with reasoning opens with, then hermes' reply.

reply_text = qwen3.reply_text

# ---------------------------------------------------------------------------- decode


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of (README, "Decoding prompts").

    The turns read as Qwen2.5's (``qwen2_5.read_messages``), without its default system prompt
    (W1); an assistant turn's empty content is ``''`` (W3: a content is needed before the last),
    and a lone ``\\n`` before its calls is a content the template cut to nothing (W4). The think
    block of the generation prompt gives ``enable_thinking`` (W5).
    """
    variables: dict[str, Any] = {}
    text, generation = prompt, False
    if prompt.endswith(CLOSED_THINK):
        text, generation = prompt[: -len(CLOSED_THINK)], True
    elif prompt.endswith(OPEN_THINK):
        text, generation = prompt[: -len(OPEN_THINK)], True
        variables["enable_thinking"] = True
    turns, _ = read_turns(text, 0, qwen2_5.OPENERS)
    messages, tools = qwen2_5.read_messages(
        text,
        turns,
        None,
        lambda turn, ids: qwen2_5.assistant_turn(text, turn, ids, lone_newline=True, empty=""),
    )
    return Conversation.model_validate(
        {"messages": messages, "tools": tools, "add_generation_prompt": generation, "variables": variables}
    )


# ---------------------------------------------------------------------------- wire
# The reply syntax is hermes' (``Hermes.wire``): parse, stream and export are its family's.

# ---------------------------------------------------------------------------- format


class Qwq(Format):
    """QwQ-32B prompts with hermes' JSON calls and ``<think>`` reasoning (reference: QwQ-32B's template)."""

    name = "qwq"
    aliases = ("qwq_32b",)
    summary = "QwQ-32B: hermes' JSON <tool_call> blocks, <think> reasoning, a generation prompt that opens it"
    stop_token = Hermes.stop_token
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/qwen2_5/Qwen-QwQ-32B.jinja"
    #: hermes' markers, the tools header's English and the generation prompt's think block, as the
    #: template's literal spells it (``\\n`` escapes): more markers than hermes', none of qwen3's own.
    template_markers = (
        *Hermes.template_markers,
        "You may call one or more functions",
        "'<|im_start|>assistant\\n<think>\\n'",
    )

    functions = Functions(prompt_text, prompt_conversation, reply_text)
    wire = Hermes.wire
