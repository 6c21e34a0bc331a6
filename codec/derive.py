"""Deriving a working format from a chat template no format module was written for: :func:`derive`.

The template is rendered on probe conversations (:data:`PROBE_REPLIES`: an assistant turn after
one user message, with no call, one, two, calls of two tools with two argument names, a call
without arguments, one argument of every kind of value, content before a call, reasoning). Each
probe's assistant turn is the text its rendering adds to the generation prompt; what every turn
starts and ends with is the turn's frame (its lead and its tail: the stop token, then what the
template writes after it), and what is left is what the model writes.

Those turns are then fitted to the wire families (:data:`codec.wire.FAMILIES`): first each built-in
format's spec as it is, then instantiations a family proposes from the turns themselves. A
family's proposal renders the probes' calls with every marker a placeholder character of its own
and reads the markers off the template's turns where the same placeholder stands (the same marker
at every place it is written); which way values are written, and the other discrete choices, are
tried in turn. An instantiation is kept only if

- rendering every probe's calls with it gives the template's bytes exactly (the content before
  them may differ from the template's by the whitespace that joins it to the calls), and its turn
  end is the template's (the stop token starts the turn's tail);
- parsing every probe's turn (up to its stop token) with it gives the probe's calls back (names,
  arguments of every kind, ids where the syntax writes them), its content and its reasoning.

A template the fit cannot be made for is refused with a :class:`DeriveError` saying why: it renders
no tool calls; it raises on a probe (with the template's message); its history form differs from
the generation prompt; no family fits (the closest candidate and where it broke).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codec import jinja
from codec._compare import template_messages
from codec.errors import CodecError, RenderError
from codec.wire import WireSpec, compile_spec

if TYPE_CHECKING:
    from codec.format import Format
    from codec.models import Conversation, ParseResult

__all__ = [
    "PROBE_REPLIES",
    "PROBE_TOOLS",
    "Derivation",
    "DeriveError",
    "config_tokens",
    "derive",
    "derive_source",
    "derive_spec",
]


class DeriveError(CodecError):
    """A chat template :func:`derive` makes no format of, and why (the message says it in words).

    ``reason`` is one of ``"no_calls"`` (the template renders no tool calls), ``"raises"`` (it
    raises on a probe: ``probe`` names it, the message quotes the template), ``"history"`` (its
    history form of a turn differs from the generation prompt it asks the model to continue),
    ``"content"`` (it does not write an assistant's content), ``"no_fit"`` (no wire family fits:
    ``closest`` is the spec that came nearest and the message says where it broke).
    """

    def __init__(self, reason: str, message: str, *, probe: str = "", closest: WireSpec | None = None) -> None:
        self.reason = reason
        self.probe = probe
        self.closest = closest
        super().__init__(message)


# --------------------------------------------------------------------------- the probes


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


#: The tools every probe conversation declares: two of a call's names and two argument names
#: (``get_weather``: ``city``, ``days``; ``search_notes``: ``query``, ``limit``), and one whose
#: arguments are every kind of JSON value (``record``), typed by its schema. Every parameter is
#: described and the object one says what its values may be (templates that write a parameter's
#: description, or the type of an object's values, raise on one without it: Command R's).
PROBE_TOOLS: list[dict[str, Any]] = [
    _tool(
        "get_weather",
        "Current weather for a city.",
        {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer", "description": "Days ahead"},
        },
        ["city"],
    ),
    _tool(
        "search_notes",
        "Search the user's notes.",
        {
            "query": {"type": "string", "description": "Words to find"},
            "limit": {"type": "integer", "description": "Most notes"},
        },
        [],
    ),
    _tool(
        "record",
        "Store a value.",
        {
            "text": {"type": "string", "description": "A text"},
            "count": {"type": "integer", "description": "A count"},
            "big": {"type": "integer", "description": "A large count"},
            "ratio": {"type": "number", "description": "A ratio"},
            "flag": {"type": "boolean", "description": "A flag"},
            "nothing": {"type": "null", "description": "Nothing"},
            "items": {"type": "array", "description": "Some items"},
            "options": {"type": "object", "description": "Some options", "additionalProperties": True},
        },
        [],
    ),
]

#: :data:`PROBE_TOOLS` without the type of ``record``'s ``nothing`` (the probes are rendered with these
#: where a template raises on a parameter of type ``null``; the null probe is then left out).
UNTYPED_NULL_TOOLS: list[dict[str, Any]] = json.loads(
    json.dumps(PROBE_TOOLS).replace('"nothing": {"type": "null", ', '"nothing": {')
)

#: A string value that shows how strings are written: a quote, a backslash, a line break,
#: non-ASCII letters and markup characters.
PROBE_STRING = 'say "hi" \\ to\nthe café <b>&amp;</b> {x}'

_USER = {"role": "user", "content": "What is the weather in Paris?"}
#: The user's message after a turn, where a template writes a turn's end only before the next one.
_FOLLOW_UP = {"role": "user", "content": "And tomorrow?"}


def _call(index: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"call0000{index + 1}", "type": "function", "function": {"name": name, "arguments": arguments}}


def _calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": [_call(i, n, a) for i, (n, a) in enumerate(calls)]}


#: The assistant turns the template is rendered on (after one user message, with
#: :data:`PROBE_TOOLS`), by what each one shows. Their contents start and end with characters no
#: other probe's does, so that what every turn starts and ends with is the template's frame.
PROBE_REPLIES: dict[str, dict[str, Any]] = {
    "text": {"role": "assistant", "content": "Plain answer."},
    "other text": {"role": "assistant", "content": "Another reply!"},
    "one call": _calls(("get_weather", {"city": "Paris", "days": 3})),
    "two calls": _calls(("get_weather", {"city": "Paris", "days": 3}), ("search_notes", {"query": "umbrella"})),
    "content and a call": {**_calls(("get_weather", {"city": "Lyon"})), "content": "Let me check."},
    "no arguments": _calls(("search_notes", {})),
    "a string": _calls(("record", {"text": PROBE_STRING})),
    "an integer": _calls(("record", {"count": 42})),
    "a large number": _calls(("record", {"big": 12345678901234567890})),
    "a fraction": _calls(("record", {"ratio": 0.25})),
    "a boolean": _calls(("record", {"flag": True})),
    "null": _calls(("record", {"nothing": None})),
    "a list": _calls(("record", {"items": [1, "two", False]})),
    "a nested object": _calls(("record", {"options": {"unit": "C", "nested": {"depth": 2, "on": True}}})),
    "reasoning": {"role": "assistant", "content": "Sunny.", "reasoning_content": "Thinking it over."},
}

_TEXT_PROBES = ("text", "other text")


@dataclass(frozen=True)
class _Turn:
    """One probe's assistant turn as the template writes it after the generation prompt."""

    probe: str
    message: dict[str, Any]
    #: The turn's text, up to the end of the template's rendering.
    text: str
    #: What the model writes for the turn and the prompt it writes it after: the turn's text after the
    #: generation prompt where the history writes that prompt, else after what both write.
    reply: str
    reply_prompt: str


@dataclass(frozen=True)
class _Rendered:
    """The probes as one template renders them."""

    template: str
    arguments: str
    variables: Mapping[str, Any]
    turns: dict[str, _Turn]
    #: What the template writes before every turn, generation prompt included (the prompt the
    #: model's reply is parsed after).
    prompt: str
    #: What the turns of text alone start and end with around their content.
    lead: str
    tail: str
    #: What ends a turn: the tail where it is written, else what the template writes between a turn of
    #: text and the next user's message (its stop token, then the next turn's opener).
    ending: str
    #: The probes' tools (:data:`PROBE_TOOLS` or :data:`UNTYPED_NULL_TOOLS`).
    tools: list[dict[str, Any]]
    #: Where the template writes reasoning: its markers as found, or None where it writes none.
    reasoning: tuple[str, str] | None
    added_tokens: tuple[str, ...]
    #: Probes the template leaves out, with why (a value it does not write, parallel calls it refuses).
    skipped: dict[str, str]
    notes: tuple[str, ...]
    #: The reasoning markers whose opener the generation prompt writes past what the history does
    #: (DeepSeek R1 Distill's ``<think>\n``, which its history never writes), or None.
    opened: tuple[str, str] | None = None

    def calls_text(self, turn: _Turn, stop: str = "") -> str:
        """The text of a turn with calls and no content, without the turn's frame, the stop token and
        the whitespace around them."""
        text = turn.text.removeprefix(self.lead)
        if self.tail and text.endswith(self.tail):
            text = text[: len(text) - len(self.tail)]
        text = text.strip()
        if stop and stop in text:  # (the model stops there: what a template writes after it is no reply's)
            text = text[: text.index(stop)]
        return text.rstrip()


# --------------------------------------------------------------------------- the outcome


@dataclass(frozen=True)
class Derivation:
    """What :func:`derive` found: the spec, whose it is, and how the template was rendered."""

    spec: WireSpec
    #: The built-in formats whose reply spec this is (empty for one fitted to the template alone).
    builtins: tuple[str, ...]
    #: How the template takes call arguments (``"object"`` or ``"json_text"``).
    arguments: str
    #: The probes the spec was verified on.
    probes: tuple[str, ...]
    #: Values the template leaves out of a call (the probes that showed it), not verified.
    dropped: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, Any]:
        """``{"spec", "builtins", "arguments", "probes", "dropped", "notes"}``."""
        return {
            "spec": self.spec.to_json(),
            "builtins": list(self.builtins),
            "arguments": self.arguments,
            "probes": list(self.probes),
            "dropped": list(self.dropped),
            "notes": list(self.notes),
        }


def derive(
    template: str,
    *,
    added_tokens: Iterable[str] | None = None,
    name: str = "derived",
    **variables: Any,
) -> Format:
    """A format of ``template``: its prompts rendered by the template itself (:mod:`codec.jinja`,
    within its limits), its replies by the wire spec fitted to the template's probes.

    ``variables`` are the template variables every render is given (``bos_token``, ``eos_token``...,
    what a tokenizer would pass); ``added_tokens`` the tokenizer's special tokens, to which the
    markers found are snapped. The format's :attr:`derivation` says which spec was fitted and
    whose it is (a built-in format's, preferred where it fits). Raises :class:`DeriveError` with the
    reason where no spec fits, and :class:`jinja2.TemplateSyntaxError` for a template that does
    not compile.
    """
    found = derive_spec(template, added_tokens=added_tokens, **variables)
    return _derived_format(template, found, name, variables)


def derive_spec(
    template: str, *, added_tokens: Iterable[str] | None = None, builtins: bool = True, **variables: Any
) -> Derivation:
    """The :class:`Derivation` :func:`derive` makes its format of (raises as it does).
    ``builtins=False`` fits the families alone, without trying the built-in formats' specs first."""
    tokens = tuple(sorted(set(added_tokens or ()), key=len, reverse=True))
    failures: list[tuple[float, WireSpec, str, bool]] = []
    first_error: DeriveError | None = None
    shown = ""
    for arguments, tools in (("object", PROBE_TOOLS), ("object", UNTYPED_NULL_TOOLS), ("json_text", PROBE_TOOLS)):
        if arguments == "json_text" and shown:
            break  # arguments as JSON text only for a template that cannot take them as an object
        try:
            try:
                rendered = _render_probes(template, arguments, tools, variables, tokens)
            except DeriveError as exc:
                # A last turn written otherwise than the history's (moved, its calls dropped): the
                # turns as written before a later user's message, if those fit.
                if exc.reason not in ("history", "no_calls"):
                    raise
                try:
                    rendered = _render_probes(template, arguments, tools, variables, tokens, before_later=True)
                except DeriveError:
                    raise exc from None
        except DeriveError as exc:
            # (A refusal past the renders, with the tools a template takes, says more than a raise.)
            if first_error is None or (first_error.reason == "raises" and exc.reason != "raises"):
                first_error = exc
            continue
        shown = shown or rendered.calls_text(rendered.turns["one call"])
        found = _fit(rendered, failures, builtins)
        if found is not None:
            return found
    if not failures:
        if first_error is not None and not shown:
            raise first_error
        raise DeriveError("no_fit", f"no wire family writes calls as the template does: one call is {shown!r}")
    _, closest, where, read_off = max(failures, key=lambda entry: entry[0])
    if read_off:
        message = f"no wire family fits the template's tool calls; the closest, {_describe(closest)}, {where}"
    else:
        message = (
            f"no wire family writes calls as the template does (one call is {shown!r}); of the built-in "
            f"formats' specs, the closest, {_describe(closest)}, {where}"
        )
    raise DeriveError("no_fit", message, closest=closest)


def _describe(spec: WireSpec) -> str:
    named = ("call", "block", "name", "parameter", "values")
    shown = {name: getattr(spec, name) for name in named if name in spec.differences()}
    parts = ", ".join(f"{key}={value!r}" for key, value in shown.items())
    return f"a {spec.family} spec ({parts})" if parts else f"a {spec.family} spec"


def derive_source(text: str, *, name: str = "derived") -> Format:
    """The format :func:`derive` makes of ``text``: a chat template's text, or a
    ``tokenizer_config.json``'s, whose ``chat_template`` is derived (of named templates, the one
    :func:`codec.detect_template` tries first) with its special tokens and its ``bos_token`` and
    ``eos_token`` (:func:`config_tokens`). Raises as :func:`derive` does, and ValueError for a
    configuration without a usable ``chat_template``."""
    from codec.detect import _as_config, _templates

    config = _as_config(text)
    ((_, template), *_) = _templates(text)
    tokens, variables = config_tokens(dict(config) if config is not None else {})
    return derive(template, added_tokens=tokens, name=name, **dict[str, Any](variables))


def config_tokens(config: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """A tokenizer config's special tokens (``added_tokens_decoder``'s) and its ``bos_token`` and
    ``eos_token`` as template variables (each a string or ``{"content": ...}``)."""
    decoder = config.get("added_tokens_decoder")
    entries = decoder.values() if isinstance(decoder, Mapping) else ()
    tokens = [e["content"] for e in entries if isinstance(e, Mapping) and isinstance(e.get("content"), str)]
    variables = {}
    for key in ("bos_token", "eos_token"):
        value = config.get(key)
        value = value.get("content") if isinstance(value, Mapping) else value
        if isinstance(value, str):
            variables[key] = value
    return tokens, variables


# --------------------------------------------------------------------------- rendering the probes


def _render(
    template: str,
    messages: list[dict[str, Any]],
    arguments: str,
    tools: list[dict[str, Any]],
    generation: bool,
    variables: Mapping[str, Any],
) -> str:
    prepared = template_messages(jinja.prepare_messages(messages), arguments)
    return jinja.render_template(template, prepared, tools, add_generation_prompt=generation, **variables)


#: The note of a derivation whose probes' turns were read as written before a later user's message.
BEFORE_LATER = "the turns are read as the template writes them before a later user's message"


def _followed(template: str, arguments: str, tools: list[dict[str, Any]], variables: Mapping[str, Any]) -> str | None:
    """What the template writes to open a later user's message right after the first one (the text
    between what both renderings share and the later message's content), or None where that does not
    show."""
    try:
        alone = _render(template, [_USER], arguments, tools, False, variables)
        both = _render(template, [_USER, _FOLLOW_UP], arguments, tools, False, variables)
    except RenderError:
        return None
    at = both.find(_FOLLOW_UP["content"])
    shared = len(_common_prefix([alone, both]))
    return both[shared:at] if 0 <= shared <= at else None


def _before_followed(text: str, opener: str) -> str:
    """``text`` (a rendering with a later user's message) up to where that message's turn opens."""
    at = text.rfind(opener + _FOLLOW_UP["content"]) if opener else -1
    if at < 0:
        raise RenderError("the later user's message is not written after the turn")
    return text[:at]


def _render_probes(
    template: str,
    arguments: str,
    tools: list[dict[str, Any]],
    variables: Mapping[str, Any],
    tokens: tuple[str, ...],
    before_later: bool = False,
) -> _Rendered:
    """Every probe's turn as ``template`` writes it, or the :class:`DeriveError` that stops it.
    ``before_later``: each turn as written before a later user's message (a template that writes a
    last turn otherwise than its history: nemotron_json moves a last assistant turn after the
    generation prompt)."""
    thinking = {"enable_thinking": True, **variables}
    try:
        generation = _render(template, [_USER], arguments, tools, True, thinking)
    except RenderError as exc:
        _reraise_syntax(exc)
        raise DeriveError(
            "raises", f"the template raises on the generation prompt: {exc.reason}", probe="generation"
        ) from exc
    histories: dict[str, str] = {}
    skipped: dict[str, str] = {}
    followed = _followed(template, arguments, tools, thinking) if before_later else None
    for probe, message in PROBE_REPLIES.items():
        try:
            if followed is None:
                histories[probe] = _render(template, [_USER, message], arguments, tools, False, thinking)
            else:  # the turn as written before a later user's message, up to that message's turn
                text = _render(template, [_USER, message, _FOLLOW_UP], arguments, tools, False, thinking)
                histories[probe] = _before_followed(text, followed)
        except RenderError as exc:
            _reraise_syntax(exc)
            if probe == "two calls":  # a template of one call a turn: the rest of the probes still tell
                skipped[probe] = f"the template refuses parallel calls ({exc.reason})"
                continue
            raise DeriveError(
                "raises", f"the template raises on the probe {probe!r}: {exc.reason}", probe=probe
            ) from exc
    prompt = _snap_cut(generation, len(_common_prefix([generation, *histories.values()])), tokens)
    if not any("get_weather" in histories[p][len(prompt) :] for p in ("one call", "content and a call")):
        raise _no_calls()  # (before comparing forms: a template that writes no assistant turn has none)
    notes = [BEFORE_LATER] if before_later else []
    opened = generation[len(prompt) :]
    #: A reasoning opener only the generation prompt writes, the history writing the reasoning right at
    #: the turn's start and a closer after it (Apriel 1.6's "Here are my reasoning steps:"), or "".
    prompt_opener = ""
    if opened:
        # The generation prompt asks for more than the history writes: acceptable only where that is
        # whitespace (as text or as an escape) or the opening of reasoning the history leaves out.
        reasoning_turn = histories["reasoning"][len(prompt) :]
        unescaped = opened.replace("\\n", "\n").replace("\\t", "\t")
        word = opened.strip()
        reasoned = "Thinking it over." in reasoning_turn
        openers = {spec.reasoning[0] for spec, _ in _builtin_specs() if spec.reasoning} | set(tokens)
        opener = reasoning_turn.lstrip().startswith(word) if reasoned else word in openers
        if unescaped.strip() and not opener and reasoned and _reasoning_first(reasoning_turn):
            opener, prompt_opener = True, word
        if unescaped.strip() and not opener:
            probe = next(p for p, h in histories.items() if not h.startswith(generation))
            at = len(prompt)
            raise DeriveError(
                "history",
                f"the template's history form differs from the generation prompt it asks the model to continue: "
                f"on the probe {probe!r}, the generation prompt goes on with {opened[:40]!r} at offset {at} where "
                f"the assistant's turn has {histories[probe][at : at + 40]!r}",
                probe=probe,
            )
        notes.append(f"the generation prompt ends with {opened!r}, which the history does not write")
    turns = {}
    for probe, text in histories.items():
        after_prompt = (text[len(generation) :], generation) if text.startswith(generation) else None
        if prompt_opener and probe == "reasoning":  # (the model reasons after the prompt's opener)
            after_prompt = (text[len(prompt) :], generation)
        reply, reply_prompt = after_prompt or (text[len(prompt) :], prompt)
        turns[probe] = _Turn(probe, PROBE_REPLIES[probe], text[len(prompt) :], reply, reply_prompt)
    texts = [turns[probe].text for probe in _TEXT_PROBES]
    lead = _common_prefix(texts)
    tail = _common_suffix(text[len(lead) :] for text in texts)
    for probe in _TEXT_PROBES:
        written = turns[probe].text[len(lead) : len(turns[probe].text) - len(tail)]
        if written.strip() != PROBE_REPLIES[probe]["content"]:
            raise DeriveError(
                "content",
                f"the template does not write an assistant's content as it is: the probe {probe!r} gives "
                f"{turns[probe].text!r}",
                probe=probe,
            )
    if not any("get_weather" in turns[p].text for p in ("one call", "content and a call")):
        raise _no_calls()
    if "two calls" in turns and turns["two calls"].text == turns["one call"].text:
        skipped["two calls"] = "the template writes only the first of parallel calls"
    if turns["null"].text == turns["no arguments"].text.replace("search_notes", "record"):
        skipped["null"] = "the template leaves out a null value"
    elif tools is UNTYPED_NULL_TOOLS:
        skipped["null"] = "the template raises on a parameter of type null: no null-typed parameter probed"
    reasoning = _reasoning_markers(turns["reasoning"].text, prompt, tokens)
    if reasoning is None and prompt_opener:
        reasoning = (prompt_opener, _reasoning_first(turns["reasoning"].text, tokens))
    ending = tail if tail.strip() else _turn_end(template, arguments, tools, thinking, prompt) or tail
    return _Rendered(
        template,
        arguments,
        dict(variables),
        turns,
        prompt,
        lead,
        tail,
        ending,
        tools,
        reasoning,
        tokens,
        skipped,
        tuple(notes),
        _opened_reasoning(generation[len(prompt) :], tokens),
    )


def _no_calls() -> DeriveError:
    return DeriveError(
        "no_calls", "the template renders no tool calls: an assistant message's calls do not appear in its turn"
    )


def _opened_reasoning(opened: str, tokens: tuple[str, ...]) -> tuple[str, str] | None:
    """The reasoning markers of a built-in format (or, for a given token ``<x>``, ``<x>`` and ``</x>``)
    whose opener is what the generation prompt writes past the history, or None."""
    word = opened.strip()
    if not word:
        return None
    for spec, _ in _builtin_specs():
        if spec.reasoning and spec.reasoning[0] == word:
            return spec.reasoning
    closer = word.replace("<", "</", 1)
    return (word, closer) if word.startswith("<") and closer in tokens else None


def _reasoning_first(turn: str, tokens: tuple[str, ...] = ()) -> str:
    """The closer a turn writes between the reasoning probe's reasoning, which it starts with, and its
    content ("" where it does not start with the reasoning or writes nothing between them)."""
    reasoning, content = "Thinking it over.", "Sunny."
    if not turn.lstrip().startswith(reasoning):
        return ""
    start = turn.index(reasoning) + len(reasoning)
    end = turn.find(content, start)
    return _snap(turn[start:end], tokens) if end > start else ""


def _turn_end(
    template: str, arguments: str, tools: list[dict[str, Any]], variables: Mapping[str, Any], prompt: str
) -> str:
    """What the template writes between a turn of text and the next user's message ("" where that
    does not show): a template that ends a turn only before the next one ends it so."""
    ends = []
    for probe in _TEXT_PROBES:
        message = PROBE_REPLIES[probe]
        try:
            text = _render(template, [_USER, message, _FOLLOW_UP], arguments, tools, False, variables)
        except RenderError:
            return ""
        start, end = text.find(message["content"], len(prompt)), text.find(_FOLLOW_UP["content"], len(prompt))
        if start < 0 or end < start:
            return ""
        ends.append(text[start + len(message["content"]) : end])
    return ends[0] if ends[0] == ends[1] else ""


def _snap_cut(text: str, cut: int, tokens: tuple[str, ...]) -> str:
    """``text`` up to ``cut``, moved back to the start of a special token ``cut`` falls inside (the
    given ``tokens``, else the markers of the built-in formats' specs): a diff at character level
    would otherwise split ``<think>`` from ``</think>`` after their common ``<``."""
    for token in tokens or _known_tokens():
        for start in range(max(0, cut - len(token) + 1), cut):
            if text.startswith(token, start):
                return text[:start]
    return text[:cut]


def _known_tokens() -> tuple[str, ...]:
    """The markers of the built-in formats' specs, longest first."""
    found: set[str] = set()
    for spec, _ in _builtin_specs():
        found.update(m for m in (*spec.call, *spec.block, *(spec.reasoning or ()), spec.stop) if len(m) > 1)
    return tuple(sorted(found, key=len, reverse=True))


def _reraise_syntax(exc: RenderError) -> None:
    import jinja2

    if isinstance(exc.__cause__, jinja2.TemplateSyntaxError):
        raise exc.__cause__ from None


def _common_prefix(texts: Iterable[str]) -> str:
    items = list(texts)
    first = min(items, key=len) if items else ""
    for i, char in enumerate(first):
        if any(text[i] != char for text in items):
            return first[:i]
    return first


def _common_suffix(texts: Iterable[str]) -> str:
    return _common_prefix(text[::-1] for text in texts)[::-1]


def _snap(marker: str, tokens: tuple[str, ...]) -> str:
    """``marker`` without the whitespace around it, or the special token it holds where it holds one."""
    stripped = marker.strip()
    for token in tokens:
        if token in stripped:
            return token if stripped.startswith(token) or stripped.endswith(token) else stripped
    return stripped


def _reasoning_markers(turn: str, prompt: str, tokens: tuple[str, ...]) -> tuple[str, str] | None:
    """The markers around the reasoning probe's reasoning in its turn, or None where the turn has none.

    An opener the generation prompt writes (the turn starting inside reasoning) is the prompt's last
    token: the closer's name without its ``/`` (``<think>`` for ``</think>``), where the prompt ends so."""
    reasoning, content = "Thinking it over.", "Sunny."
    at = turn.find(reasoning)
    end = turn.rfind(content)
    if at < 0 or end < at:
        return None
    opener, closer = _snap(turn[:at], tokens), _snap(turn[at + len(reasoning) : end], tokens)
    if not opener and closer:
        mirrored = closer.replace("</", "<", 1)
        opener = mirrored if mirrored != closer and prompt.rstrip().endswith(mirrored) else ""
    return (opener, closer) if opener and closer else None


# --------------------------------------------------------------------------- fitting


def _fit(rendered: _Rendered, failures: list[tuple[float, WireSpec, str, bool]], builtins: bool) -> Derivation | None:
    """The first spec that fits the rendered probes, built-in ones first; each one that does not is
    added to ``failures`` with how far it got and where it broke."""
    seen: set[WireSpec] = set()
    for spec, owners in _builtin_specs() if builtins else ():
        if spec in seen:
            continue
        seen.add(spec)
        outcome = _verify(spec, rendered)
        if isinstance(outcome, Derivation):
            return dataclasses.replace(outcome, builtins=owners)
        failures.append((outcome[0], spec, outcome[1], False))
    for spec in _proposals(rendered):
        if spec in seen:
            continue
        seen.add(spec)
        outcome = _verify(spec, rendered)
        if isinstance(outcome, Derivation):
            return outcome
        failures.append((outcome[0] + 0.5, spec, outcome[1], True))  # (read off the calls: nearer than a built-in)
    return None


def _builtin_specs() -> list[tuple[WireSpec, tuple[str, ...]]]:
    from codec.formats import builtins

    owners: dict[WireSpec, list[str]] = {}
    for cls in builtins():
        owners.setdefault(cls.wire, []).append(cls.name)
    return [(spec, tuple(names)) for spec, names in owners.items()]


def _verify(spec: WireSpec, rendered: _Rendered) -> Derivation | tuple[int, str]:
    """A :class:`Derivation` of ``spec`` where it fits every probe; else ``(probes passed, where it broke)``."""
    from codec.wire import reply_format

    try:
        kit = compile_spec(spec)
        fmt = reply_format(spec, "derived")
    except ValueError as exc:
        return 0, f"is no spec its family takes ({exc})"
    tail, ending = rendered.tail, rendered.ending
    calls_end = [
        t.text.removesuffix(tail).rstrip().endswith(spec.stop)
        for p, t in rendered.turns.items()
        if t.message.get("tool_calls") and p not in rendered.skipped
    ]
    # (A line break may stand before the stop token: Nemotron Nano v2 writes its turns' end on a line.)
    ends_with_stop = ending.lstrip().startswith(spec.stop)
    if (not ends_with_stop and not (spec.stop and all(calls_end))) or (not spec.stop and ending.strip()):
        return 0, f"ends a turn with {spec.stop!r}, where the template's turns end with {ending!r}"
    after = tail.lstrip()[len(spec.stop) :] if tail.lstrip().startswith(spec.stop) else ""
    passed = 0
    notes: list[str] = []
    for probe, turn in rendered.turns.items():
        if probe in rendered.skipped:
            continue
        message = turn.message
        content = message.get("content") or ""
        if message.get("tool_calls"):
            written = kit.reply_text(_calls_only(message))
            before = _before(turn.text, written, spec, after, content)
            ended = _ended_at_stop(turn.text, written, spec) if before is None else None
            if ended is not None:
                # The model stops at the stop token: what the template writes after it is not the reply's.
                before = _before(ended, written, spec, "", content)
                if before is not None:
                    past = turn.text[len(ended) :]
                    turn = dataclasses.replace(turn, text=ended, reply=turn.reply[: len(turn.reply) - len(past)])
                    note = f"after a turn's calls and its stop token the template writes {past!r} (not the model's)"
                    notes.extend([note] if note not in notes else [])
            if before is None:
                shown = written.removesuffix(spec.stop)
                return passed, f"writes the probe {probe!r} as {shown!r}, where the template writes {turn.text!r}"
            left = _without_empty_reasoning(before.removeprefix(rendered.lead), spec).strip()
            opener = _own_turn(left, content, rendered) if left not in (content, "") else ""
            if left not in (content, "") and not opener:
                return passed, f"has the probe {probe!r} begin with {before!r}, not with its content"
            content = "" if opener else left  # (a template may leave the content of a turn with calls out)
        reply = turn.reply[: len(turn.reply) - len(after)] if after and turn.reply.endswith(after) else turn.reply
        if message.get("tool_calls") and opener:  # the calls' turn alone, after the prompt's opener
            prompt = rendered.prompt
            start = reply.find(opener, reply.find(message["content"]) + len(message["content"]))
            reply = reply[start + len(opener) + len(prompt) - len(prompt.rstrip()) :]
        if spec.stop and not reply.endswith(spec.stop) and not tail:
            reply += spec.stop  # (the template writes the stop token only before a next turn)
        problem = _read_back(fmt, reply, turn.reply_prompt, rendered, message, content)
        if problem:
            return passed, f"reads the probe {probe!r} ({reply!r}) back wrong: {problem}"
        passed += 1
    if rendered.reasoning is not None and spec.reasoning != rendered.reasoning:
        return passed, f"has reasoning markers {spec.reasoning!r}, where the template writes {rendered.reasoning!r}"
    probes = tuple(p for p in rendered.turns if p not in rendered.skipped)
    notes = [*rendered.notes, *notes, *(f"{p}: {why}" for p, why in rendered.skipped.items())]
    return Derivation(spec, (), rendered.arguments, probes, tuple(rendered.skipped), tuple(notes))


def _ended_at_stop(text: str, written: str, spec: WireSpec) -> str | None:
    """``text`` (a turn with calls) up to the stop token after the calls ``written``, where the template
    goes on writing after it (DeepSeek R1 Distill's history adds an empty turn of text after a turn of
    calls: ``<｜end▁of▁sentence｜><｜Assistant｜><｜end▁of▁sentence｜>``); None where it does not."""
    bare = written.removesuffix(spec.stop) if spec.stop else ""
    at = text.find(bare) if bare else -1
    if at < 0:
        return None
    rest = text[at + len(bare) :]
    going_on = rest.lstrip()
    if not going_on.startswith(spec.stop) or not going_on[len(spec.stop) :].strip():
        return None
    return text[: len(text) - len(going_on) + len(spec.stop)]


def _before(text: str, written: str, spec: WireSpec, after: str, content: str) -> str | None:
    """What ``text`` (a turn) has before the calls ``written`` (a reply with them and no content, stop
    token included where the family writes one), where it ends with them and the turn's end; None
    where it does not.

    The turn's end may follow the calls after whitespace; a block closer the family writes where the
    turn ends (Gemma 4's ``<|tool_response>``) may be left to the stop token; a turn may write its
    content after its calls."""
    rest = text.removesuffix(after) if after else text
    rest = (rest.removesuffix(spec.stop) if spec.stop else rest).rstrip()
    bare = written.removesuffix(spec.stop) if spec.stop else written
    shapes = [bare, bare.rstrip()]
    if spec.block[1] and bare.endswith(spec.block[1]):
        shapes.append(bare.removesuffix(spec.block[1]))
    for candidate in (rest, rest.replace(content, "", 1).rstrip() if content else rest):
        for shape in shapes:
            if shape and candidate.endswith(shape):
                return candidate[: len(candidate) - len(shape)] + (content if candidate is not rest else "")
    return None


def _own_turn(left: str, content: str, rendered: _Rendered) -> str:
    """The next assistant turn's opener where ``left`` (what a turn writes before its calls) is the
    content as a turn of text of its own, then that opener (the generation prompt's end): a template
    that writes content and calls as two turns (Nemotron Nano v2), whose calls' turn is then read
    alone; else ""."""
    if not content or not left.startswith(content) or not rendered.tail.strip():
        return ""
    rest = left[len(content) :].lstrip()
    if not rest.startswith(rendered.tail.strip()):
        return ""
    opener = rest[len(rendered.tail.strip()) :].strip()
    return opener if opener and rendered.prompt.rstrip().endswith(opener) else ""


def _without_empty_reasoning(text: str, spec: WireSpec) -> str:
    """``text`` without an empty reasoning block (``<think>\n\n</think>``) where the spec has markers."""
    if spec.reasoning is None:
        return text
    opener, closer = spec.reasoning
    return re.sub(f"(?:{re.escape(opener)})?\\s*{re.escape(closer)}", "", text, count=1)


def _calls_only(message: dict[str, Any]) -> dict[str, Any]:
    """``message``'s calls as an assistant message without content, prepared as a family renders one."""
    (prepared,) = jinja.prepare_messages([{"role": "assistant", "content": "", "tool_calls": message["tool_calls"]}])
    return prepared


def _read_back(fmt: Format, reply: str, prompt: str, rendered: _Rendered, message: dict[str, Any], content: str) -> str:
    """What is wrong with parsing ``reply`` after ``prompt`` (whole and streamed): "" where it gives
    the probe back."""
    tools = rendered.tools
    whole = fmt.parse(reply, tools=tools, prompt=prompt)
    stream = fmt.stream(tools=tools, prompt=prompt)
    for start in range(0, len(reply), 5):
        stream.feed(reply[start : start + 5])
    stream.close()
    if stream.result.model_dump() != whole.model_dump():
        return "the stream reads it otherwise than the whole reply"
    return _compare(whole, message, content, rendered.reasoning is not None)


def _compare(result: ParseResult, message: dict[str, Any], content: str, reasoning: bool) -> str:
    wanted = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    got = [(c.function.name, c.function.arguments) for c in result.tool_calls]
    if json.dumps(got, sort_keys=True) != json.dumps(wanted, sort_keys=True):
        return f"calls {got!r}, not {wanted!r}"
    if [i.kind for i in result.issues if i.severity != "note"]:
        return f"issues {[i.kind for i in result.issues]}"
    if result.content.strip() != content.strip():
        return f"content {result.content!r}, not {content!r}"
    if (
        reasoning
        and message.get("reasoning_content")
        and (result.reasoning or "").strip() != message["reasoning_content"]
    ):
        return f"reasoning {result.reasoning!r}, not {message['reasoning_content']!r}"
    return ""


# --------------------------------------------------------------------------- proposals


#: Placeholder characters (of Unicode's private use area) a proposal writes for each unknown part
#: of a marker.
_HOLE = 0xF0000


class _Holes:
    """The placeholders of one proposal: one character each for a part of a marker not known yet."""

    def __init__(self) -> None:
        self.chars: list[str] = []

    def __call__(self) -> str:
        char = chr(_HOLE + len(self.chars))
        self.chars.append(char)
        return char

    def pair(self) -> tuple[str, str]:
        return self(), self()


def _pattern(text: str, holes: _Holes, named: set[str]) -> str:
    """``text`` as a regular expression in which each placeholder is a group (its later places, here
    or in the patterns made before with the same ``named``, a back-reference to it)."""
    out = []
    for char in text:
        if char in holes.chars:
            group = f"h{ord(char) - _HOLE}"
            out.append(f"(?P={group})" if group in named else f"(?P<{group}>.*?)")
            named.add(group)
        else:
            out.append(re.escape(char))
    return "".join(out)


def _probe_calls(rendered: _Rendered) -> list[_Turn]:
    """The probes with calls and no content, most telling first (two calls: the separator)."""
    order = [
        "two calls",
        "one call",
        "no arguments",
        "a string",
        "an integer",
        "a boolean",
        "a list",
        "a nested object",
    ]
    return [rendered.turns[p] for p in order if p in rendered.turns and p not in rendered.skipped]


def _proposals(rendered: _Rendered) -> Iterator[WireSpec]:
    """Instantiations of the families read off the template's turns, to be verified."""
    tokens = _Tokens(_snapping(rendered))
    # (Arguments as Python's str() of the dict, proposed only where the probe's are written so.)
    python_written = "{'city': 'Paris'" in rendered.turns["one call"].text
    for stop in _stops(rendered, tokens):
        for family, shapes in _SHAPES.items():
            for make in shapes:
                holes = _Holes()
                shape = make(holes)
                if shape.values == "python_repr" and not python_written:
                    continue
                spec = dataclasses.replace(shape, family=family, stop="\uf8ff", reasoning=("\uf8fd", "\uf8fe"))
                found = _solve(spec, holes, rendered, stop, tokens)
                if found is None:
                    continue
                for solved in _readings(found, tokens):
                    yield from _instances(solved, family, rendered, stop)


def _readings(found: WireSpec, tokens: _Tokens) -> list[WireSpec]:
    """The ways to read the markers of a solved named_json spec, most natural first: what its
    separator and section closer both start with is the call's closer (the placeholders are solved
    lazily, which leaves the closer empty: xLAM's ``}`` of ``}, `` and ``}]``), with or without the
    blanks it ends with; the call opener's leading blanks moved to the section opener and the call
    closer; and the spec as solved."""
    out: list[WireSpec] = []
    if found.family == "named_json" and found.separator and found.block[1] and not found.call[1]:
        shared = tokens.decode(_common_prefix([tokens.encode(found.separator), tokens.encode(found.block[1])]))
        for closer in dict.fromkeys([shared, shared.rstrip()]):
            if closer:
                rest = (found.separator[len(closer) :], found.block[1][len(closer) :])
                out.append(
                    dataclasses.replace(
                        found, call=(found.call[0], closer), separator=rest[0], block=(found.block[0], rest[1])
                    )
                )
    out.append(found)
    for spec in list(out):
        moved = _blanks_moved(spec)
        if moved is not None:
            out.insert(out.index(spec), moved)
    return [spec for i, spec in enumerate(out) if spec not in out[:i]]


def _instances(solved: WireSpec, family: str, rendered: _Rendered, stop: str) -> Iterator[WireSpec]:
    """``solved`` with the stop token, the reasoning markers and the special tokens it may take."""
    # The template's reasoning markers; where it writes none, none, or (for a family that needs
    # them) the common ones, which no probe contradicts.
    readers = "reasoning" in _parameters(family)
    # A generation prompt that opens reasoning the history leaves out: those markers first.
    choices = [rendered.reasoning] if rendered.reasoning else [rendered.opened, None, ("<think>", "</think>")]
    choices = [c for i, c in enumerate(choices) if c not in choices[:i]]
    for reasoning in choices if readers else [None]:
        spec = dataclasses.replace(solved, stop=stop, reasoning=reasoning)
        if "special_tokens" in _parameters(family) and rendered.added_tokens:
            markers = [t for t in _markers(spec) if t in rendered.added_tokens]
            spec = dataclasses.replace(spec, special_tokens=tuple(markers))
        yield spec


def _stops(rendered: _Rendered, tokens: _Tokens) -> list[str]:
    """The stop tokens a proposal may take: the first word of what ends a turn of text; where the
    template writes nothing after a last turn of text, also the token every turn with calls ends with."""
    found = [_stop(rendered.ending, tokens.tokens)]
    if not rendered.tail:
        ends = {
            next((t for t in tokens.tokens if turn.text.rstrip().endswith(t)), "")
            for probe, turn in rendered.turns.items()
            if turn.message.get("tool_calls") and probe not in rendered.skipped
        }
        if len(ends) == 1 and "" not in ends:
            found.insert(0, ends.pop())
    return [stop for i, stop in enumerate(found) if stop not in found[:i]]


class _Tokens:
    """Special tokens as single characters (of another private use plane), so that a marker read off
    a turn never starts or ends inside one."""

    def __init__(self, tokens: Iterable[str]) -> None:
        self.tokens = tuple(sorted({t for t in tokens if len(t) > 1}, key=len, reverse=True))
        self.chars = {token: chr(0x100000 + i) for i, token in enumerate(self.tokens)}
        self.back = {char: token for token, char in self.chars.items()}
        self._first = {token[0] for token in self.tokens}

    def encode(self, text: str) -> str:
        out, i = [], 0
        while i < len(text):
            if text[i] in self._first:
                token = next((t for t in self.tokens if text.startswith(t, i)), None)
                if token is not None:
                    out.append(self.chars[token])
                    i += len(token)
                    continue
            out.append(text[i])
            i += 1
        return "".join(out)

    def decode(self, text: str) -> str:
        return "".join(self.back.get(char, char) for char in text)


def _snapping(rendered: _Rendered) -> tuple[str, ...]:
    """The tokens markers are snapped to: the given special tokens, else the built-in formats' markers
    and the text of the template variables given (``eos_token``...)."""
    if rendered.added_tokens:
        return rendered.added_tokens
    given = tuple(v for v in rendered.variables.values() if isinstance(v, str) and len(v) > 1)
    return given + _known_tokens()


def _stop(ending: str, tokens: tuple[str, ...]) -> str:
    """The stop token of a turn that ends with ``ending``: the longest of ``tokens`` it starts with,
    else its first word (what stands before the first whitespace)."""
    text = ending.strip()
    for token in sorted(tokens, key=len, reverse=True):
        if text.startswith(token):
            return token
    return text.split()[0] if text else ""


def _parameters(family: str) -> frozenset[str]:
    from codec.wire import family_class

    return family_class(family).parameters


def _markers(spec: WireSpec) -> list[str]:
    out: list[str] = []
    for value in (*spec.block, *spec.call, *spec.name, spec.stop):
        if value and value not in out:
            out.append(value)
    return out


def _solve(spec: WireSpec, holes: _Holes, rendered: _Rendered, stop: str, tokens: _Tokens) -> WireSpec | None:
    """``spec`` with each placeholder replaced by what stands in its place in the template's turns, or
    None where the turns are not written so."""
    from codec.wire import family_class

    family = family_class(spec.family)
    # A kit that writes placeholders: the family's checks of what markers look like are for specs,
    # which the solved one is (it is verified like any other); this kit only writes replies.
    writer = type(f"Placeholders_{family.name}", (family,), {"check": classmethod(_unchecked)})
    try:
        kit = writer(spec)  # (not compile_spec: a kit of placeholders is not kept)
    except ValueError:
        return None
    patterns: list[str] = []
    texts: list[str] = []
    named: set[str] = set()
    for turn in _probe_calls(rendered)[:4]:
        written = kit.reply_text(_calls_only(turn.message))
        patterns.append(_pattern(tokens.encode(written.removesuffix("\uf8ff")), holes, named))
        texts.append(tokens.encode(rendered.calls_text(turn, stop)))
    joiner = "\x00"
    try:
        found = re.fullmatch(re.escape(joiner).join(patterns), joiner.join(texts), re.DOTALL)
    except re.error:
        return None
    if found is None:
        return None
    solved = {char: tokens.decode(found.groupdict().get(f"h{ord(char) - _HOLE}") or "") for char in holes.chars}

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return "".join(solved.get(char, char) for char in value)
        if isinstance(value, tuple):
            return tuple(fill(item) for item in value)
        return value

    return WireSpec(**{f.name: fill(getattr(spec, f.name)) for f in dataclasses.fields(spec)})


def _unchecked(cls: type, spec: WireSpec) -> None:
    """No check: the placeholders of a proposal are no markers."""


def _json_object(
    keys: tuple[str, ...], listed: bool, id_key: str, closed: bool = False
) -> Callable[[_Holes], WireSpec]:
    def make(h: _Holes) -> WireSpec:
        layout: dict[str, Any] = {"block": (h(), h() if closed else "")} if listed else {"call": h.pair()}
        return WireSpec("json_object", name=('"name"', ""), arguments_keys=keys, id_key=id_key, separator=h(), **layout)

    return make


def _xml_params(values: str, lines: bool) -> Callable[[_Holes], WireSpec]:
    def make(h: _Holes) -> WireSpec:
        function, parameter = h(), h()
        return WireSpec(
            "xml_params",
            call=h.pair(),
            name=(f"<{function}=", ">"),
            arguments="tagged",
            parameter=(f"<{parameter}=", ">", f"</{parameter}>"),
            values=values,
            value_lines=lines,
            separator=h(),
        )

    return make


def _invoke(values: str) -> Callable[[_Holes], WireSpec]:
    def make(h: _Holes) -> WireSpec:
        invoke, parameter, attribute = h(), h(), h()
        return WireSpec(
            "invoke",
            call=h.pair(),
            name=(f'<{invoke} {attribute}="', '">'),
            arguments="tagged",
            parameter=(f'<{parameter} {attribute}="', '">', f"</{parameter}>"),
            values=values,
            separator=h(),
        )

    return make


def _arg_pairs(split: bool) -> Callable[[_Holes], WireSpec]:
    def make(h: _Holes) -> WireSpec:
        key, value = h(), h()
        return WireSpec(
            "arg_pairs",
            call=h.pair(),
            arguments="tagged",
            parameter=(f"<{key}>", f"</{key}>", f"</{value}>"),
            values="text",
            separator=h(),
            argument_separator=h(),
            # (Tried second: one spacing throughout is the spec of the templates that write one.)
            value_separator=h() if split else None,
        )

    return make


def _named_json(
    block: bool, ids: bool, closed: bool, prefixed: bool, separated: bool, values: str = "json"
) -> Callable[[_Holes], WireSpec]:
    def make(h: _Holes) -> WireSpec:
        return WireSpec(
            "named_json",
            values=values,
            block=h.pair() if block else ("", ""),
            call=(h(), h() if closed else ""),
            name=(h() if prefixed else "", h()),
            call_id=(h(), "{id}") if ids else ("", ""),
            separator=h() if separated else "",
        )

    return make


def _blanks_moved(spec: WireSpec) -> WireSpec | None:
    """A named_json spec whose call opener starts with blanks (and, where it has a section, whose
    section closer starts with the same) written instead at the end of the section opener and of the
    call closer: the same bytes, read off the turns the other way (``<tool_calls>\\n`` and ``}\\n``, not
    ``\\n{"name": "`` and ``\\n</tool_calls>``), the way the stream reads, which takes a blank as layout
    as soon as it arrives; None where the call opener starts with no blank or the two differ."""
    if spec.family != "named_json" or not spec.call[1]:
        return None
    opener = spec.call[0]
    blank = opener[: len(opener) - len(opener.lstrip())]
    if not blank or blank == opener or (spec.block[1] and not spec.block[1].startswith(blank)):
        return None
    if spec.block[1] == blank:
        return None
    block = (spec.block[0] + blank, spec.block[1][len(blank) :]) if spec.block[0] else spec.block
    return dataclasses.replace(spec, block=block, call=(opener[len(blank) :], spec.call[1] + blank))


def _call_list(values: str, block: bool, brackets: bool = True) -> Callable[[_Holes], WireSpec]:
    def make(h: _Holes) -> WireSpec:
        return WireSpec(
            "call_list",
            brackets=brackets,
            block=h.pair() if block else ("", ""),
            arguments="python",
            values=values,
            separator=h(),
            argument_separator=h(),
        )

    return make


#: How a call list's values may be written, in the order they are tried.
_CALL_VALUES = ("json", "json_raw", "python", "python_str", "raw_single")

#: The shapes each family proposes, in the order they are tried.
_SHAPES: dict[str, list[Callable[[_Holes], WireSpec]]] = {
    "json_object": [
        _json_object(keys, listed, id_key, closed)
        for listed, closed in ((False, False), (True, False), (True, True))
        for keys in (("arguments", "parameters"), ("parameters", "arguments"))
        for id_key in ("", "id")
    ],
    "xml_params": [_xml_params(v, lines) for lines in (True, False) for v in ("text", "python_str", "python_scalars")],
    "invoke": [_invoke(v) for v in ("text", "flagged")],
    "arg_pairs": [_arg_pairs(split) for split in (False, True)],
    "named_json": [
        _named_json(block, ids, closed, prefixed, separated, values)
        for values in ("json", "python_repr")
        for separated in (False, True)
        for block in (True, False)
        for ids in (False, True)
        for closed in (True, False)
        for prefixed in (False, True)
    ],
    "call_list": [
        *(_call_list(v, block) for block in (True, False) for v in _CALL_VALUES),
        # Calls one after another in the block, without the list's brackets (MiniCPM3's one a line).
        *(_call_list(v, True, brackets=False) for v in _CALL_VALUES),
    ],
}


# --------------------------------------------------------------------------- the derived format


def _derived_format(template: str, found: Derivation, name: str, variables: Mapping[str, Any]) -> Format:
    from types import MappingProxyType

    from codec.format import Format, Functions

    arguments = found.arguments

    def prompt_text(
        messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, generation: bool, given: dict[str, Any]
    ) -> str:
        prepared = template_messages(messages, arguments)
        return jinja.render_template(template, prepared, tools, add_generation_prompt=generation, **given)

    def prompt_conversation(prompt: str) -> Conversation:
        from codec._derive_decode import decode_prompt

        return decode_prompt(made, template, prompt)

    whose = f" (the spec of {', '.join(found.builtins)})" if found.builtins else ""
    attributes = {
        "name": name,
        "summary": f"derived from a chat template: replies of the {found.spec.family} family{whose}",
        "stop_token": found.spec.stop,
        "template_arguments": arguments,
        "tokenizer_variables": MappingProxyType(dict(variables)),
        "functions": Functions(prompt_text, prompt_conversation),
        "wire": found.spec,
        "derivation": found,
        "__doc__": f"A format derived from a chat template: its prompts the template's, its replies {found.spec}.",
    }
    cls = type(f"Derived_{name}", (Format,), attributes)
    made: Format = cls()
    return made
