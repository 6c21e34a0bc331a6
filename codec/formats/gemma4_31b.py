"""``gemma4_31b``: the prompts of Gemma 4 31B (its own template), around ``gemma4``'s native tool calls.

Reference template: ``google-gemma-4-31B-it.jinja`` (``../shared/templates/families/gemma4``,
llama.cpp's copy of Gemma 4 31B-it's template). It is the ``gemma4`` reference template (the E4B
one) but for the four places below, so the prompt is :func:`codec.formats.gemma4.render_prompt`'s
in :data:`DIALECT`, and decoding is gemma4's reader with :data:`READING`. The quirks ``Q1``-``Q13``
of :mod:`codec.formats.gemma4` hold, but where these say otherwise. Replies are gemma4's (its spec,
``Gemma4.wire``): the template writes an assistant turn as gemma4's does.

Quirks of the template where it departs from gemma4's, cited by ID below:

- ``G1`` A parameter whose name is one of the schema keys ``description``, ``type``,
  ``properties``, ``required``, ``nullable`` is left out of a declaration at every level (the
  reference template leaves them out only where an object without ``properties`` lists its own
  keys, Q12): a tool with a parameter called ``type`` does not show it to the model.
- ``G2`` The first system (or developer) message's content is printed and trimmed, whatever it is:
  content parts are written as their Python text (``[{'type': 'text', ...}]``), not joined (Q11).
- ``G3`` An assistant turn whose calls were answered by tool results is closed with ``<turn|>\\n``
  when its ``content`` is truthy, even where what it writes is blank (``' '``, a thought channel
  only); the reference closes it only where the written text is not blank (Q5).
- ``G4`` The generation prompt ``<|turn>model\\n`` is followed by an empty thought channel,
  ``<|channel>thought\\n<channel|>``, unless ``enable_thinking`` is truthy: the model answers
  without thinking by default.
"""

from __future__ import annotations

from typing import Any

from codec.format import Format, Functions
from codec.formats import gemma4
from codec.formats._render import string
from codec.formats.gemma4 import CHANNEL_CLOSE, GENERATION_PROMPT, THOUGHT_OPEN, Dialect, Gemma4, render_prompt
from codec.models import Conversation

__all__ = ["Gemma4_31b", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers

#: The empty thought channel after the generation prompt (G4).
EMPTY_THOUGHT = THOUGHT_OPEN + CHANNEL_CLOSE

# ---------------------------------------------------------------------------- render


def _system_text(content: Any) -> str:
    """``messages[0]['content'] | trim`` (G2)."""
    return string(content).strip()


def _closes_answered(message: dict[str, Any], text: str) -> bool:
    """``not message.get('content')`` decides (G3), not the text written."""
    return bool(message.get("content"))


#: How the template departs from gemma4's (G1-G4).
DIALECT = Dialect(_system_text, _closes_answered, skips_schema_keys=True, thoughtless=EMPTY_THOUGHT)


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (variables: ``bos_token``, ``enable_thinking``)."""
    return render_prompt(messages, tools, add_generation_prompt, variables, DIALECT)


# ---------------------------------------------------------------------------- decode


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` renders from: gemma4's reading (:mod:`codec.formats.gemma4_decode`),
    rendered back with this template; its generation prompt may end with the empty thought (G4). A
    blank answered turn that is closed (G3) reads as gemma4's do: the calls' message, then an empty
    one that goes on in the same model turn and closes it."""
    from codec.formats import gemma4_decode  # loaded on first use, as gemma4's

    reading = gemma4_decode.PromptDialect(
        "gemma4_31b",
        prompt_text,
        generation_prompts=(GENERATION_PROMPT + EMPTY_THOUGHT, GENERATION_PROMPT),
    )
    return gemma4_decode.prompt_conversation(prompt, reading)


# ---------------------------------------------------------------------------- wire
# The reply syntax is gemma4's (``Gemma4.wire``): parse, stream and export are its family's.

# ---------------------------------------------------------------------------- format


class Gemma4_31b(Format):
    """Gemma 4 31B's prompts with gemma4's native calls (reference: Gemma 4 31B-it's template)."""

    name = "gemma4_31b"
    aliases = ("gemma-4-31b", "gemma4_31b_it", "gemma-4-31b-it")
    summary = "Gemma 4 31B: gemma4's native calls; an empty thought channel after the generation prompt"
    stop_token = Gemma4.stop_token
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/gemma4/google-gemma-4-31B-it.jinja"
    #: gemma4's markers, the generation prompt's empty thought as the template's literal spells it,
    #: and the continued model turn, which the interleaved variant does not have.
    template_markers = (*Gemma4.template_markers, "'<|channel>thought\\n<channel|>'", "continue_same_model_turn")

    functions = Functions(prompt_text, prompt_conversation)
    wire = gemma4.WIRE
