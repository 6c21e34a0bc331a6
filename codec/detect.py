"""Which format a chat template or a model reply is: :func:`detect` and :func:`detect_reply`.

Every format declares its own evidence in its module (``Format.template_markers``,
``Format.reply_markers``, ``Format.stop_token``); this module only weighs it, so a new format is
detected as soon as its module declares its markers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from codec.format import Format
from codec.formats import formats, get_format, reply_owner

__all__ = ["Detection", "detect", "detect_reply"]

#: What each kind of evidence adds to a reply's confidence (they sum to 1).
_MARKER_WEIGHT = 0.5  # a call written in the format's own syntax
_CALLS_WEIGHT = 0.3  # the format's parser reads tool calls out of the reply (half if it had to repair)
_STOP_WEIGHT = 0.2  # the format's stop token


@dataclass(frozen=True)
class Detection:
    """One guess of :func:`detect_reply`: a format name and a confidence in ``[0, 1]``."""

    format: str
    confidence: float


# --------------------------------------------------------------------------- chat templates


def detect(chat_template: str | Mapping[str, Any]) -> str | None:
    """The name of the format whose chat template ``chat_template`` is, or ``None`` if it is none of them.

    ``chat_template`` is the template's text, or a ``tokenizer_config.json`` (its text or the
    parsed dict) whose ``chat_template`` is read. That value may be a string or, as transformers
    allows, a list of ``{"name", "template"}`` entries: the one named ``"default"`` is tried
    first, then the others in order, and the first that is recognized wins (a model may keep its
    tool-calling template under another name, such as ``"tool_use"``).

    A format is recognized when every one of its ``template_markers`` occurs in the template (in a
    Jinja string literal, ``\\"`` counts as ``"``). When several formats are, the one with the most
    markers wins, since its markers say more (a template with ``<function=`` and ``<parameter=``
    besides ``<tool_call>`` is ``qwen3_coder``, not ``hermes``); a tie is ambiguous and gives
    ``None``. A template that shows no tool-call syntax of ours gives ``None``.

    Raises :class:`ValueError` for a configuration without a usable ``chat_template`` and
    :class:`TypeError` for anything but text or a mapping.
    """
    for template in _templates(chat_template):
        found = _match_template(template)
        if found is not None:
            return found
    return None


def _templates(source: str | Mapping[str, Any]) -> list[str]:
    """The template texts to try, best first."""
    if isinstance(source, str):
        config = _as_config(source)
        if config is None:
            return [source]
        source = config
    if not isinstance(source, Mapping):
        raise TypeError(
            f"detect() takes a chat template (str) or a tokenizer config (dict), not {type(source).__name__}"
        )
    if "chat_template" not in source:
        raise ValueError('the tokenizer config has no "chat_template"')
    value = source["chat_template"]
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(_is_named_template(entry) for entry in value):
        named = sorted(value, key=lambda entry: entry["name"] != "default")  # stable: "default" first
        return [entry["template"] for entry in named]
    raise ValueError('"chat_template" must be a string or a list of {"name": ..., "template": ...} objects')


def _as_config(text: str) -> Mapping[str, Any] | None:
    """``text`` as a JSON object (a tokenizer config), or ``None`` when it is a template's text."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None  # a template may start with "{{" or "{%"
    except RecursionError:  # JSON, but far deeper than any tokenizer config
        raise ValueError("the tokenizer config is JSON nested too deeply to read") from None
    return data if isinstance(data, dict) else None


def _is_named_template(entry: Any) -> bool:
    return isinstance(entry, Mapping) and isinstance(entry.get("name"), str) and isinstance(entry.get("template"), str)


def _match_template(template: str) -> str | None:
    text = template.replace('\\"', '"').replace("\\'", "'")
    matches = [fmt for fmt in _formats() if fmt.template_markers and all(m in text for m in fmt.template_markers)]
    if not matches:
        return None
    most = max(len(fmt.template_markers) for fmt in matches)
    best = [fmt.name for fmt in matches if len(fmt.template_markers) == most]
    return best[0] if len(best) == 1 else None


# --------------------------------------------------------------------------- replies


def detect_reply(text: str) -> list[Detection]:
    """Best-effort guesses of the format a model reply is written in, most confident first.

    Each format is weighed on three kinds of evidence, whose weights sum to 1: one of its
    ``reply_markers`` occurs (a tool call in its own syntax, 0.5); its parser reads at least one
    tool call out of the reply (0.3, or 0.15 if the parse reported repairs); the reply contains
    its stop token (0.2). Formats with no evidence at all are left out, so plain text without a
    stop token gives an empty list, and plain text ending in a stop token gives at most 0.2.
    Equal confidences are ordered by how much of the reply the format leaves as plain content
    (less first), then by name. Only a reply that writes a tool call can be told apart reliably:
    formats that share a stop token (``<|im_end|>``) tie on plain text. Prompt variants that reply
    as another format does are left out: the reply is that format's.
    """
    if not isinstance(text, str):
        raise TypeError(f"detect_reply() takes the reply text (str), not {type(text).__name__}")
    scored = [_weigh(fmt, text) for fmt in _reply_formats()]
    scored = [entry for entry in scored if entry[0] > 0]
    scored.sort(key=lambda entry: (-entry[0], entry[1], entry[2].format))
    return [detection for _, _, detection in scored]


def _weigh(fmt: Format, text: str) -> tuple[float, int, Detection]:
    """``fmt``'s confidence for ``text``, the length of what its parser leaves as content, and the guess."""
    result = fmt.parse(text)
    confidence = 0.0
    if any(pattern.search(text) for pattern in _reply_patterns(fmt.name)):
        confidence += _MARKER_WEIGHT
    if result.tool_calls:
        confidence += _CALLS_WEIGHT / 2 if result.issues else _CALLS_WEIGHT
    if fmt.stop_token and fmt.stop_token in text:
        confidence += _STOP_WEIGHT
    confidence = round(min(confidence, 1.0), 6)
    return confidence, len(result.content), Detection(fmt.name, confidence)


def _formats() -> list[Format]:
    return [get_format(name) for name in formats()]


def _reply_formats() -> list[Format]:
    """The formats that write replies of their own: a variant of another format's prompts, which reuses
    that format's reply syntax (``hermes3``: hermes' replies), is never told apart from it by a reply."""
    return [fmt for fmt in _formats() if reply_owner(fmt.name) == fmt.name]


@cache
def _reply_patterns(name: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in get_format(name).reply_markers)
