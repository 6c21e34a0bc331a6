"""``gemma4_31b_interleaved``: the prompts of Gemma 4 31B's interleaved-thinking template, around ``gemma4``'s calls.

Reference template: ``google-gemma-4-31B-it-interleaved.jinja`` (``../shared/templates/families/gemma4``,
llama.cpp's interleaved-thinking variant of Gemma 4 31B-it's template). Its system turn is
:mod:`codec.formats.gemma4_31b`'s (G1, G2: :func:`codec.formats.gemma4.render_system_turn` in
:data:`DIALECT`), its values, calls, legacy ``tool_responses`` and contents are gemma4's (Q1, Q2,
Q8, Q10-Q12), and its generation prompt ends with G4's empty thought; its turns are its own
(:func:`prompt_text`). Replies are gemma4's (its spec, ``Gemma4.wire``): the model writes its calls
as gemma4's does, and a thought before them as a reply's thought is written.

Quirks of the template where it departs from the 31B one, cited by ID below:

- ``I1`` Declarations: a property writes its description, ``nullable``, then a string's ``enum``,
  an object's ``,properties:{...}`` and ``,required:[...]`` or an array's ``,items:{...}``, then its
  type; those three carry a literal leading comma, and a comma goes before ``nullable``, ``enum``
  and ``type`` only after a description, ``nullable`` or ``enum``: an object property with neither
  is ``{,properties:{...}type:<|"|>OBJECT<|"|>}`` (an object always lists ``properties``, maybe empty).
- ``I2`` A ``role: tool`` message is a turn of its own, ``<|turn>tool\\nCONTENT<turn|>\\n`` (its
  content trimmed, never a ``<|tool_response>`` block): results come back in that shape, and only
  an assistant message's own ``tool_responses`` list (Gemma's native form) writes response blocks.
- ``I3`` Every message is closed by ``<turn|>\\n`` but one with ``tool_responses`` and no
  ``content``, and no message continues another's turn (gemma4's Q5 and Q7 do not hold): calls
  are not followed by ``<|tool_response>``. The one exception: a message with calls right after
  one whose ``tool_responses`` were the last thing it wrote (no media part after them) opens no turn.
- ``I4`` Reasoning is written back from ``reasoning_content`` only (not ``reasoning``), for a
  message with calls after the last user message, as ``<|channel>thought\\nTEXT<channel|>``: no line
  break before the closer, as a reply writes it.
- ``I5`` The generation prompt ``<|turn>model\\n`` is written unless the last message ended with
  its ``tool_responses`` (I3; unanswered calls do not hold it back, unlike Q5), and the empty
  thought (G4) is written after it unless ``enable_thinking``, also where the turn is not opened.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from codec.format import Format, Functions
from codec.formats import gemma4, gemma4_31b
from codec.formats._render import attr, concat, default, iterate, string
from codec.formats.gemma4 import (
    CHANNEL_CLOSE,
    GENERATION_PROMPT,
    THOUGHT_OPEN,
    TURN_END,
    TURN_OPEN,
    Gemma4,
    content_text,
    render_call,
    render_response,
    render_system_turn,
)
from codec.formats.gemma4_31b import EMPTY_THOUGHT
from codec.models import Conversation

__all__ = ["Gemma4_31bInterleaved", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers

#: What closes a thought written back before calls (I4): the channel's closer alone, as in a reply.
THOUGHT_CLOSE = CHANNEL_CLOSE

# ---------------------------------------------------------------------------- render

#: The 31B template's system turn (G1, G2), with the declaration layout of I1.
DIALECT = dataclasses.replace(gemma4_31b.DIALECT, leading_commas=True)


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (variables: ``bos_token``, ``enable_thinking``)."""
    out, turns, state = render_system_turn(messages, tools, variables, DIALECT)
    roles = [attr(message, "role") for message in turns]
    last_user = max((i for i, role in enumerate(roles) if role == "user"), default=-1)
    for i, message in enumerate(turns):
        role = "model" if roles[i] == "assistant" else roles[i]
        calls = attr(message, "tool_calls")
        if not (state == "tool_response" and calls):  # I3
            out.append(concat(TURN_OPEN, role, "\n"))
        state = None
        if calls:
            thought = attr(message, "reasoning_content")
            if thought and i > last_user:  # I4
                out.append(THOUGHT_OPEN + string(thought) + THOUGHT_CLOSE)
            out.extend(render_call(call) for call in iterate(calls))
            state = "tool_call"
        responses = attr(message, "tool_responses")
        if responses:
            for result in iterate(responses):
                out.append(render_response(default(attr(result, "name"), "unknown"), attr(result, "response")))
            state = "tool_response"
        text, media = content_text(attr(message, "content"), role)
        if media is not None:
            state = media
        out.append(text)
        if not (responses and not attr(message, "content")):  # I3
            out.append(TURN_END)
    if add_generation_prompt:
        if state != "tool_response":  # I5
            out.append(GENERATION_PROMPT)
        if not variables.get("enable_thinking"):
            out.append(EMPTY_THOUGHT)
    return "".join(out)


# ---------------------------------------------------------------------------- decode


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` renders from: gemma4's reading (:mod:`codec.formats.gemma4_decode`)
    with this template's turns (I2-I4) and declarations (I1), rendered back with this template. Results
    read as ``role: tool`` messages where the prompt has tool turns, as ``tool_responses`` where it has
    response blocks; the generation prompt may be the empty thought alone (I5)."""
    from codec.formats import gemma4_decode  # loaded on first use, as gemma4's

    reading = gemma4_decode.PromptDialect(
        "gemma4_31b_interleaved",
        prompt_text,
        generation_prompts=(GENERATION_PROMPT + EMPTY_THOUGHT, GENERATION_PROMPT, EMPTY_THOUGHT),
        thought_end=THOUGHT_CLOSE,
        tool_turns=True,
        leading_commas=True,
    )
    return gemma4_decode.prompt_conversation(prompt, reading)


# ---------------------------------------------------------------------------- wire
# The reply syntax is gemma4's (``Gemma4.wire``): parse, stream and export are its family's.

# ---------------------------------------------------------------------------- format


class Gemma4_31bInterleaved(Format):
    """Gemma 4 31B's interleaved-thinking prompts with gemma4's native calls (reference: llama.cpp's
    interleaved variant of Gemma 4 31B-it's template)."""

    name = "gemma4_31b_interleaved"
    aliases = ("gemma-4-31b-interleaved", "gemma4_31b_it_interleaved", "gemma-4-31b-it-interleaved")
    summary = "Gemma 4 31B, interleaved thinking: gemma4's native calls; tool results as tool turns"
    stop_token = Gemma4.stop_token
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/gemma4/google-gemma-4-31B-it-interleaved.jinja"
    #: gemma4's markers, the generation prompt's empty thought as the template's literal spells it,
    #: and the declarations' literal leading comma (I1), which the other Gemma 4 templates do not write.
    template_markers = (*Gemma4.template_markers, "'<|channel>thought\\n<channel|>'", ",properties:{")

    functions = Functions(prompt_text, prompt_conversation)
    wire = gemma4.WIRE
