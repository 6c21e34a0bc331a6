"""``llama3_2``: the prompts of Meta Llama 3.2 (Instruct), around ``llama3_1``'s bare JSON calls.

Reference template: ``meta-llama-Llama-3.2-3B-Instruct.jinja`` (``../shared/templates/families/llama3``,
the template of the Llama 3.2 1B and 3B Instruct models). Replies are ``llama3_1``'s (its spec,
``Llama3_1.wire``, as the ``json_object`` wire family compiles it); the prompt is Llama 3.1's
(:func:`codec.formats.llama3_1.render`, quirks ``L1``-``L7``) but for two quirks:

- ``T1`` The date: ``date_string``, where it is not given, is today's, as ``strftime_now("%d %b
  %Y")`` writes it (the local time of the render). A prompt is thus the day's: tests and records
  that must not change give ``date_string``, and decoding always gives it back.
- ``T2`` There are no built-in tools: ``builtin_tools`` is not read, ``Environment: ipython`` is
  written where ``tools`` is not None, and every call is the JSON object ended by ``<|eot_id|>``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from codec.format import Format, Functions
from codec.formats import llama3_1
from codec.formats.llama3_1 import Llama3_1
from codec.models import Conversation

__all__ = ["Llama3_2", "prompt_conversation", "prompt_text"]

# ---------------------------------------------------------------------------- markers
# Llama 3.1's (``codec.formats.llama3_1``).

#: How the template writes today's date (T1).
DATE_FORMAT = "%d %b %Y"

# ---------------------------------------------------------------------------- render


def today() -> str:
    """Today's date as the template writes it where ``date_string`` is not given (T1)."""
    return datetime.now().strftime(DATE_FORMAT)


def prompt_text(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (T1, T2; Llama 3.1's ``L1``-``L7`` otherwise)."""
    return llama3_1.render(messages, tools, add_generation_prompt, variables, default_date=today, reads_builtin=False)


# ---------------------------------------------------------------------------- decode


def prompt_conversation(prompt: str) -> Conversation:
    """The conversation ``prompt`` is a rendering of, its date always as ``date_string`` (T1)."""
    return llama3_1.read_prompt(prompt, None, reads_builtin=False)


# ---------------------------------------------------------------------------- wire
# The reply syntax is Llama 3.1's (``Llama3_1.wire``): parse, stream and export are its family's.

# ---------------------------------------------------------------------------- format


class Llama3_2(Format):
    """Meta Llama 3.2 prompts with Llama 3.1's bare JSON calls (reference: Llama 3.2 3B Instruct's template)."""

    name = "llama3_2"
    aliases = ("llama-3.2", "llama3.2", "llama32")
    summary = "Llama 3.2: as llama3_1 (bare JSON calls), today's date, no built-in tools"
    stop_token = Llama3_1.stop_token
    #: Relative to ``../shared/seeds``: the template is one of ``../shared/templates/families``.
    reference_template = "../templates/families/llama3/meta-llama-Llama-3.2-3B-Instruct.jinja"
    #: llama3_1's markers, and the date the template asks for.
    template_markers = (*Llama3_1.template_markers[:-1], "strftime_now")

    functions = Functions(prompt_text, prompt_conversation)
    wire = Llama3_1.wire
