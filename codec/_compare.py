"""Comparing a chat template's prompts with a format's: what each renders for a conversation, and
where two texts first differ.

What ``codec detect`` verifies a template with and what ``codec check`` and :mod:`codec.testing`
report, in one place that needs no hypothesis (``import codec`` never does).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import jinja2

from codec import jinja
from codec.errors import RenderError, RenderWarning
from codec.format import Format
from codec.models import dump_arguments

__all__ = [
    "CONTEXT",
    "first_difference",
    "format_outcome",
    "offset_at",
    "render_outcomes",
    "template_messages",
    "template_outcome",
    "text_difference",
]

#: Characters of context shown on each side of a first difference.
CONTEXT = 40


# --------------------------------------------------------------------------- differences


def offset_at(text: str, pos: int) -> str:
    """``pos`` in ``text`` as people read it: ``offset 12 (line 2, column 3)``."""
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"offset {pos} (line {line}, column {column})"


def first_difference(a: str, b: str) -> int | None:
    """The first offset where ``a`` and ``b`` differ (the shorter length if one is a prefix of the
    other), or None when they are equal."""
    if a == b:
        return None
    for pos, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return pos
    return min(len(a), len(b))


def text_difference(expected: str, actual: str, *, expected_name: str = "expected", actual_name: str = "actual") -> str:
    """Where two texts first differ, for a failure message: the offset, line and column, and
    :data:`CONTEXT` characters of each text around it; ``""`` when they are equal."""
    pos = first_difference(expected, actual)
    if pos is None:
        return ""
    start = max(0, pos - CONTEXT)
    width = max(len(expected_name), len(actual_name))
    lines = [f"first difference at {offset_at(expected, pos)}:"]
    for name, text in ((expected_name, expected), (actual_name, actual)):
        before, after = text[start:pos], text[pos : pos + CONTEXT]
        shown = "(end of text)" if pos >= len(text) else repr(after)
        lines.append(f"  {name:<{width}} ...{before!r} | {shown}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- render outcomes

_RECURSION = "RenderError: maximum recursion depth exceeded"


def _outcome(render: Callable[[], str]) -> str:
    try:
        return render()
    except RenderError as exc:
        text = f"RenderError: {exc.reason}"  # the template's words (a format's hint is codec's)
        # Python's recursion error, less the tail saying where the stack ran out (it varies with the depth).
        return _RECURSION if text.startswith(_RECURSION) else text


def _arguments(conversation: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    generation = bool(conversation.get("add_generation_prompt"))
    return {"add_generation_prompt": generation, **(defaults or {}), **conversation.get("variables", {})}


def template_messages(messages: list[dict[str, Any]], arguments: str = "object") -> list[dict[str, Any]]:
    """Prepared ``messages`` as a template that takes call arguments as ``arguments`` is given them
    (:attr:`Format.template_arguments`): as they are for ``"object"``; for ``"json_text"``, each
    object of arguments as its JSON text (:func:`~codec.models.dump_arguments`, as OpenAI sends it),
    which is what such a format writes for it."""
    if arguments == "object":
        return messages
    if arguments != "json_text":
        raise ValueError(f"a template takes arguments as an 'object' or as 'json_text', not {arguments!r}")
    return [_arguments_as_text(message) for message in messages]


def _arguments_as_text(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return message
    texts = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("arguments"), dict):
            call = {**call, "function": {**function, "arguments": dump_arguments(function["arguments"])}}
        texts.append(call)
    return {**message, "tool_calls": texts}


def template_outcome(
    template: str,
    conversation: Mapping[str, Any],
    arguments: str = "object",
    defaults: Mapping[str, Any] | None = None,
) -> str:
    """What ``template``, rendered as transformers would (:mod:`codec.jinja`), gives for
    ``conversation``: its prompt text, or ``"RenderError: <message>"`` where rendering raised.
    ``arguments``: how the template takes call arguments (see :func:`template_messages`);
    ``defaults``: the tokenizer's variables it is given where the conversation gives none
    (:attr:`Format.tokenizer_variables`).

    Raises :class:`jinja2.TemplateSyntaxError` for a template that does not compile: it renders
    nothing to compare, and the error says where it is wrong.
    """
    messages = template_messages(jinja.prepare_messages(conversation["messages"]), arguments)
    tools = jinja.prepare_tools(conversation.get("tools"))

    def render() -> str:
        try:
            return jinja.render_template(template, messages, tools, **_arguments(conversation, defaults))
        except RenderError as exc:
            if isinstance(exc.__cause__, jinja2.TemplateSyntaxError):
                raise exc.__cause__ from None
            raise

    return _outcome(render)


def format_outcome(fmt: Format, conversation: Mapping[str, Any]) -> str:
    """What ``fmt`` renders for ``conversation``, as :func:`template_outcome` says it."""
    with warnings.catch_warnings():  # parity is of the bytes: what both leave out is no failure
        warnings.simplefilter("ignore", RenderWarning)
        return _outcome(
            lambda: fmt.render(conversation["messages"], conversation.get("tools"), **_arguments(conversation))
        )


def render_outcomes(template: str, fmt: Format, conversation: Mapping[str, Any]) -> tuple[str, str]:
    """``(template's, format's)``: what ``template`` (rendered as transformers would, by
    :mod:`codec.jinja`, with ``fmt``'s tokenizer variables where the conversation gives none) and
    ``fmt`` render for ``conversation``, each its prompt text or ``"RenderError: <message>"`` where
    rendering raised.

    ``conversation`` is ``{"messages", "tools"?, "add_generation_prompt"?, "variables"?}``, as
    :func:`codec.testing.conversations` draws it and ``codec render`` reads it.
    """
    theirs = template_outcome(template, conversation, fmt.template_arguments, fmt.tokenizer_variables)
    return theirs, format_outcome(fmt, conversation)
