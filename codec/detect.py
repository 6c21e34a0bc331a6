"""Which format a chat template or a model reply is: :func:`detect`, :func:`detect_template` and
:func:`detect_reply`.

Every format declares its own evidence in its module (``Format.template_markers``,
``Format.reply_markers``, ``Format.stop_token``), and a template is verified against every
registered format's renderer on the probe conversations below; this module only weighs the
evidence, so a new format is detected and verified as soon as it is registered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from codec._compare import CONTEXT, first_difference, format_outcome, offset_at, template_outcome
from codec.format import Format
from codec.formats import builtins, formats, get_format, reply_owner

__all__ = ["PROBES", "Detection", "PromptDifference", "TemplateDetection", "detect", "detect_reply", "detect_template"]

#: What each kind of evidence adds to a reply's confidence (they sum to 1).
_MARKER_WEIGHT = 0.5  # a call written in the format's own syntax
_CALLS_WEIGHT = 0.3  # the format's parser reads tool calls out of the reply (less if it had to repair)
_STOP_WEIGHT = 0.2  # the format's stop token


@dataclass(frozen=True)
class Detection:
    """One guess of :func:`detect_reply`: a format name and a confidence in ``[0, 1]``."""

    format: str
    confidence: float


# --------------------------------------------------------------------------- probe conversations

_WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
_SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
_USER = {"role": "user", "content": "What is the weather in Paris?"}
#: The probes' call id: nine letters and digits, as Mistral's templates require (any other takes it).
_CALL_ID = "call00000"
_CALL = {
    "id": _CALL_ID,
    "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}},
}
_CALLS = {"role": "assistant", "content": "Let me check.", "tool_calls": [_CALL]}
_RESULT = {"role": "tool", "tool_call_id": _CALL_ID, "name": "get_weather", "content": "Sunny, 22 C"}
_ANSWER = {"role": "assistant", "content": "It is sunny in Paris."}
_REASONED = {
    "role": "assistant",
    "reasoning_content": "The user wants the weather.",
    "content": "",
    "tool_calls": [_CALL],
}

#: The conversations a template is verified on, by what each one shows: the ones every format's
#: golden renders cover (plain turns, a system prompt, tools, a call and its result, reasoning),
#: each as ``codec render`` reads a conversation.
PROBES: dict[str, dict[str, Any]] = {
    "a user's message": {"messages": [_USER], "tools": None, "add_generation_prompt": True},
    "a system prompt and an answer": {"messages": [_SYSTEM, _USER, _ANSWER], "tools": None},
    "a second question": {"messages": [_USER, _ANSWER, _USER], "tools": None, "add_generation_prompt": True},
    "tools": {"messages": [_USER], "tools": [_WEATHER], "add_generation_prompt": True},
    "tools and a system prompt": {"messages": [_SYSTEM, _USER], "tools": [_WEATHER], "add_generation_prompt": True},
    "a call and its result": {"messages": [_SYSTEM, _USER, _CALLS, _RESULT], "tools": [_WEATHER]},
    "a whole tool round": {"messages": [_USER, _CALLS, _RESULT, _ANSWER], "tools": [_WEATHER]},
    "reasoning before a call": {
        "messages": [_USER, _REASONED, _RESULT],
        "tools": [_WEATHER],
        "add_generation_prompt": True,
        "variables": {"enable_thinking": True},
    },
}


# --------------------------------------------------------------------------- chat templates


@dataclass(frozen=True)
class PromptDifference:
    """Where a format's prompt first differs from a template's, on one of the :data:`PROBES`.

    ``template`` and ``format`` are what each renders for the probe's ``conversation`` (the prompt,
    or ``"RenderError: <message>"`` where it raises); ``offset`` is where they first differ.
    """

    probe: str
    conversation: dict[str, Any]
    offset: int
    template: str
    format: str

    @property
    def where(self) -> str:
        """The offset with its line and column in the template's prompt: ``offset 12 (line 1, column 13)``."""
        return offset_at(self.template, self.offset)

    def excerpt(self, format_name: str) -> str:
        """Both texts around the difference, one line each, as ``codec detect`` prints them."""
        start, width = max(0, self.offset - CONTEXT), max(len("template"), len(format_name))
        lines = []
        for name, text in (("template", self.template), (format_name, self.format)):
            after = "(end of text)" if self.offset >= len(text) else repr(text[self.offset : self.offset + CONTEXT])
            lines.append(f"  {name:<{width}} ...{text[start : self.offset]!r} | {after}")
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        """``{"probe", "conversation", "offset", "line", "column", "template", "format"}``."""
        line = self.template.count("\n", 0, self.offset) + 1
        column = self.offset - (self.template.rfind("\n", 0, self.offset) + 1) + 1
        return {
            "probe": self.probe,
            "conversation": self.conversation,
            "offset": self.offset,
            "line": line,
            "column": column,
            "template": self.template,
            "format": self.format,
        }


@dataclass(frozen=True)
class TemplateDetection:
    """What :func:`detect_template` found: the format, and whether its renderer was verified.

    ``verified``: ``format`` renders every one of the :data:`PROBES` exactly as the template does
    (the same text, or the same error), so its prompts are the template's. Otherwise ``format`` is
    the format whose markers the template shows, whose replies the model's look like, and
    ``difference`` says where its prompts first part from the template's. ``template_name`` is
    the name of the tokenizer config's named template it was found in (None for a lone template).
    """

    format: str
    verified: bool
    difference: PromptDifference | None = None
    template_name: str | None = None

    def as_json(self) -> dict[str, Any]:
        """``{"format", "verified", "template", "difference"}`` (``difference``: see :class:`PromptDifference`)."""
        difference = None if self.difference is None else self.difference.as_json()
        return {
            "format": self.format,
            "verified": self.verified,
            "template": self.template_name,
            "difference": difference,
        }


def detect(chat_template: str | Mapping[str, Any]) -> str | None:
    """The name of the format whose chat template ``chat_template`` is, or ``None`` if it is none of them.

    A format is named only when it renders the template's prompts exactly (it is
    :func:`detect_template`'s format when verified): a template whose replies look like a
    format's but whose prompts differ gives ``None``, so that the name is safe to render with.
    Takes and raises what :func:`detect_template` does.

    It does not fall back to derivation as ``codec detect`` does: its answer is a registered name,
    which a derived format is not (it renders with the template itself, and holds it), and deriving
    renders fifteen probe conversations, some twice, where detection is a lookup. Where it gives ``None``,
    :func:`codec.derive` makes a format of the template, or says why it cannot.
    """
    found = detect_template(chat_template)
    return found.format if found is not None and found.verified else None


def detect_template(chat_template: str | Mapping[str, Any]) -> TemplateDetection | None:
    """The format ``chat_template`` is written for, verified or not, or ``None`` if it shows none.

    ``chat_template`` is the template's text, or a ``tokenizer_config.json`` (its text or the
    parsed dict) whose ``chat_template`` is read. That value may be a string or, as transformers
    allows, a list of ``{"name", "template"}`` entries: the one named ``"default"`` is tried
    first, then the others in order (a model may keep its tool-calling template under another
    name, such as ``"tool_use"``). The first template a format is verified on wins; failing that,
    the first that shows a format's markers gives that format, not verified.

    A template is verified as a format when the format renders each of the :data:`PROBES` exactly
    as the template does (rendered as transformers would, without template variables beyond the
    probe's and the format's tokenizer variables, :attr:`~codec.format.Format.tokenizer_variables`).
    Every registered format is tried, those whose markers the template shows first. A format's
    markers show when every one of its ``template_markers`` occurs in the template (in a Jinja
    string literal, ``\\"`` counts as ``"``); when none verifies, the format named is the one with
    the most markers (they say more: ``<function=`` and ``<parameter=`` besides
    ``<tool_call>`` is ``qwen3_coder``, not ``hermes``), of those the one whose prompts agree the
    longest, with the :class:`PromptDifference` where they stop. A template that shows no
    tool-call syntax of ours and renders no format's prompts gives ``None``.

    Raises :class:`ValueError` for a configuration without a usable ``chat_template``,
    :class:`TypeError` for anything but text or a mapping, and :class:`jinja2.TemplateSyntaxError`
    for a template that does not compile.
    """
    unverified = None
    for name, template in _templates(chat_template):
        found = _detect_one(template, name)
        if found is not None and found.verified:
            return found
        unverified = unverified or found
    return unverified


def _detect_one(template: str, name: str | None) -> TemplateDetection | None:
    text = template.replace('\\"', '"').replace("\\'", "'")
    shown = [fmt for fmt in _formats() if fmt.template_markers and all(m in text for m in fmt.template_markers)]
    shown.sort(key=lambda fmt: -len(fmt.template_markers))  # stable: registry order among equals
    # By how the formats' templates take arguments and the tokenizer variables they are given, as needed.
    theirs: dict[str, list[str]] = {}
    differences: dict[str, tuple[int, PromptDifference]] = {}
    for fmt in [*shown, *(fmt for fmt in _formats() if fmt not in shown)]:
        key = json.dumps([fmt.template_arguments, dict(fmt.tokenizer_variables)], sort_keys=True)
        if key not in theirs:
            theirs[key] = _template_outcomes(template, fmt.template_arguments, fmt.tokenizer_variables)
        found = _difference(theirs[key], fmt)
        if found is None:
            return TemplateDetection(fmt.name, True, None, name)
        differences[fmt.name] = found
    if not shown:
        return None
    most = len(shown[0].template_markers)
    closest = max(
        (fmt for fmt in shown if len(fmt.template_markers) == most),
        key=lambda fmt: (differences[fmt.name][0], differences[fmt.name][1].offset),
    )
    return TemplateDetection(closest.name, False, differences[closest.name][1], name)


def _template_outcomes(template: str, arguments: str, defaults: Mapping[str, Any]) -> list[str]:
    """What the template renders for each probe, given call arguments as ``arguments`` says and the
    tokenizer variables ``defaults`` (raises the syntax error of one that does not compile)."""
    return [template_outcome(template, conversation, arguments, defaults) for conversation in PROBES.values()]


def _difference(theirs: list[str], fmt: Format) -> tuple[int, PromptDifference] | None:
    """The first probe ``fmt`` renders otherwise than the template, with its index; None when it
    renders every one alike (every format renders every probe without an error: the test suite
    holds them to it, so that a verified template is one whose prompts were compared)."""
    for index, (probe, conversation) in enumerate(PROBES.items()):
        ours = format_outcome(fmt, conversation)
        offset = first_difference(theirs[index], ours)
        if offset is not None:
            return index, PromptDifference(probe, conversation, offset, theirs[index], ours)
    return None


def _templates(source: str | Mapping[str, Any]) -> Iterator[tuple[str | None, str]]:
    """The template texts to try, best first, with their names in a config (None for a lone template)."""
    if isinstance(source, str):
        config = _as_config(source)
        if config is None:
            return iter([(None, source)])
        source = config
    if not isinstance(source, Mapping):
        raise TypeError(
            f"detect() takes a chat template (str) or a tokenizer config (dict), not {type(source).__name__}"
        )
    if "chat_template" not in source:
        raise ValueError('the tokenizer config has no "chat_template"')
    value = source["chat_template"]
    if isinstance(value, str):
        return iter([(None, value)])
    if isinstance(value, list) and value and all(_is_named_template(entry) for entry in value):
        named = sorted(value, key=lambda entry: entry["name"] != "default")  # stable: "default" first
        return iter([(entry["name"], entry["template"]) for entry in named])
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


# --------------------------------------------------------------------------- replies


def detect_reply(text: str) -> list[Detection]:
    """Best-effort guesses of the format a model reply is written in, most confident first.

    Each format is weighed on three kinds of evidence, whose weights sum to 1: one of its
    ``reply_markers`` occurs (a tool call in its own syntax, 0.5); its parser reads at least one
    tool call out of the reply (0.3, or, if the parse reported issues, 0.15 divided by the number
    of their kinds: a format that reads the reply with fewer kinds of repair is the likelier); the
    reply contains its stop token (0.2). Formats with no evidence at all are left out, so plain text without a
    stop token gives an empty list, and plain text ending in a stop token gives at most 0.2.
    Equal confidences are ordered by how much of the reply the format leaves as plain content
    (less first), then by how many issues its parse reports (fewer first: Mistral Nemo's list is
    Nemo's, though Mistral Small 3.2 reads it too, reporting the older form), then by the
    registry's order (``codec.formats.builtins()``: a format registered later, whose
    replies only its stop token tells from an older one's, as ``granite4``'s from ``hermes``', does
    not take that format's replies without it). Only a reply that writes a tool call can be told
    apart reliably: formats that share a stop token (``<|im_end|>``) tie on plain text. Prompt
    variants that reply as another format does are left out: the reply is that format's.
    """
    if not isinstance(text, str):
        raise TypeError(f"detect_reply() takes the reply text (str), not {type(text).__name__}")
    scored = [_weigh(fmt, text) for fmt in _reply_formats()]
    scored = [entry for entry in scored if entry[0] > 0]
    rank = _registry_rank()
    scored.sort(key=lambda entry: (-entry[0], entry[1], entry[2], rank[entry[3].format]))
    return [detection for _, _, _, detection in scored]


@cache
def _registry_rank() -> dict[str, int]:
    """Each format's place in the registry."""
    return {cls.name: i for i, cls in enumerate(builtins())}


def _weigh(fmt: Format, text: str) -> tuple[float, int, int, Detection]:
    """``fmt``'s confidence for ``text``, the length of what its parser leaves as content, how many
    issues it reports, and the guess."""
    result = fmt.parse(text)
    confidence = 0.0
    if any(pattern.search(text) for pattern in _reply_patterns(fmt.name)):
        confidence += _MARKER_WEIGHT
    if result.tool_calls:
        # Each kind of repair the reading took counts against it: of two formats that read a reply
        # stripped of its call tokens (Gemma 4's and FunctionGemma's `call:f{...}`), the one whose
        # string quote the reply writes reads it with one repair fewer.
        repairs = len({issue.kind for issue in result.issues})
        confidence += _CALLS_WEIGHT / (2 * repairs) if repairs else _CALLS_WEIGHT
    if fmt.stop_token and fmt.stop_token in text:
        confidence += _STOP_WEIGHT
    confidence = round(min(confidence, 1.0), 6)
    return confidence, len(result.content), len(result.issues), Detection(fmt.name, confidence)


def _formats() -> list[Format]:
    return [get_format(name) for name in formats()]


def _reply_formats() -> list[Format]:
    """The formats that write replies of their own: a variant of another format's prompts, which reuses
    that format's reply syntax (``hermes3``: hermes' replies), is never told apart from it by a reply."""
    return [fmt for fmt in _formats() if reply_owner(fmt.name) == fmt.name]


@cache
def _reply_patterns(name: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in get_format(name).reply_markers)
