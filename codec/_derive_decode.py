"""Decoding a derived format's prompts: :func:`decode_prompt`.

A derived format has no prompt reader written for it, only its template and the wire spec fitted
to it. A prompt is read turn by turn with the template itself: for the conversation read so far,
the template is rendered with one more message of each role whose content is a placeholder
character (and, where a template writes what it writes before a turn only before a later user
message, with such a message after it). What the rendering writes before the placeholder is the
turn's opener, which the prompt must go on with; what every rendering writes after it is the
turn's closer, which ends the content. An assistant turn is read as a reply: from its opener up to
the format's stop token, parsed with the derived wire spec (content, reasoning, calls). A message
is kept only if rendering the conversation with it agrees with the prompt past its turn; the role
whose message agrees furthest is taken.

The tools are those the prompt declares as JSON (OpenAI's tool objects, or their ``function``
part), tried before none; ``enable_thinking`` is tried where the template reads it. The whole
conversation read is rendered again and kept only if it gives the prompt exactly; else a
:class:`~codec.errors.ParseError` says where the two first differ.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from codec._compare import first_difference, text_difference
from codec.derive import PROBE_TOOLS, _common_prefix, _snap_cut
from codec.errors import ParseError, RenderError, RenderWarning, parse_error_at
from codec.models import Conversation

if TYPE_CHECKING:
    from codec.format import Format
    from codec.models import ParseResult

#: Placeholder contents (of Unicode's private use area): a turn's content, and a later user's.
_HERE, _LATER = "\ue000", "\ue001"

_ROLES = ("system", "user", "assistant", "tool")

#: What may follow a turn in the renderings that show how it ends: a user's message, an assistant's,
#: and both (for a template that wants roles to alternate, and writes something before the last
#: user's message only: Mistral's tools).
_FOLLOWING: tuple[list[dict[str, Any]], ...] = (
    [{"role": "user", "content": _LATER}],
    [{"role": "assistant", "content": _LATER}],
    [{"role": "assistant", "content": _LATER}, {"role": "user", "content": _LATER}],
)


class _Reading:
    """One attempt at a prompt: the template's format, the tools and variables it is rendered with."""

    def __init__(self, fmt: Format, prompt: str, tools: list[dict[str, Any]] | None, variables: dict[str, Any]):
        self.fmt, self.prompt, self.tools, self.variables = fmt, prompt, tools, variables
        #: How far the furthest rendering agreed with the prompt, and that rendering.
        self.furthest, self.closest = -1, ""
        self.budget = _BUDGET
        #: What opens calls in a reply (a turn of text holding one is no turn of text).
        self.openers = (fmt.wire.block[0], fmt.wire.call[0])

    def render(self, messages: list[dict[str, Any]], generation: bool = False) -> str | None:
        """The template's prompt for ``messages``, or None where it raises on them."""
        try:
            with warnings.catch_warnings():  # (a reading tried: what the template leaves out is no news here)
                warnings.simplefilter("ignore", RenderWarning)
                return self.fmt.render(messages, self.tools, add_generation_prompt=generation, **self.variables)
        except RenderError:
            return None

    def _note(self, opener: str, text: str) -> None:
        """Keep ``text`` as the closest rendering where ``opener`` (its text before a turn's content,
        which the prompt does not go on with) agrees with the prompt further than any so far."""
        at = first_difference(opener, self.prompt)
        if at is not None and at > self.furthest:
            self.furthest, self.closest = at, text

    def agreement(self, messages: list[dict[str, Any]]) -> int:
        """How far a rendering of ``messages`` (alone, or before a later user's message) agrees with the
        prompt: the furthest first difference."""
        best = -1
        for later in ([], *_FOLLOWING):
            text = self.render(messages + later)
            if text is None:
                continue
            at = first_difference(text, self.prompt)
            at = len(text) if at is None else at
            if later and _LATER in text:
                at = min(at, text.index(_LATER))
            best = max(best, at)
            if at > self.furthest:
                self.furthest, self.closest = at, text
        return best

    def writes(self, messages: list[dict[str, Any]], message: dict[str, Any]) -> bool:
        """Whether the template writes anything for ``message`` after ``messages`` (before a later user's
        message, where it renders so: a template may write a last turn elsewhere, or not at all)."""
        later = [{"role": "user", "content": _LATER}]
        for after in (later, []):
            without, with_it = self.render([*messages, *after]), self.render([*messages, message, *after])
            if without is not None and with_it is not None:
                return without != with_it
        return True

    def frame(self, messages: list[dict[str, Any]], message: dict[str, Any]) -> tuple[int, list[str]] | None:
        """Where ``message``'s content starts in the prompt after ``messages`` (its opener matched) and
        the closers that may end it: what every rendering writes after it, then what each writes, to
        the end of the text (a template may write nothing after a last message before what follows
        it), or None where no rendering of it opens as the prompt goes on."""
        texts = [self.render([*messages, message]), self.render([*messages, message], True)]
        texts += [self.render([*messages, message, *later]) for later in _FOLLOWING]
        if message["role"] == "tool":  # (a template may write tool results of one turn together)
            texts.append(
                self.render([*messages, message, {"role": "tool", "content": _LATER, **_link([*messages, message])}])
            )
        afters = []
        start = -1
        for text in texts:
            if text is None or _HERE not in text:
                continue
            at = text.index(_HERE)
            if not self.prompt.startswith(text[:at]):
                self._note(text[:at], text)
                continue
            start = at
            after = text[at + 1 :]
            afters.append(after[: after.index(_LATER)] if _LATER in after else after)
        if start < 0:
            return None
        closers = [_common_prefix(afters), *afters]
        return start, [c for i, c in enumerate(closers) if c not in closers[:i]]

    def next_messages(self, messages: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], int, bool]]:
        """Each message of each role that may come next, with where its turn ends in the prompt and
        whether it is a second choice (an assistant's turn read as text as it stands, not as a reply:
        its calls would be taken for text where the template writes them after the content)."""
        for role in _ROLES:
            if role == "assistant":  # (a reply with calls and reasoning; else a turn of text as it stands)
                for message, end in self._assistant(messages):
                    yield message, end, False
            placeholder = {"role": role, "content": _HERE, **_link(messages)} if role == "tool" else None
            found = self.frame(messages, placeholder or {"role": role, "content": _HERE})
            if found is None:
                continue
            start, closers = found
            for closer in closers:
                end = self.prompt.find(closer, start) if closer else len(self.prompt)
                # (A content that holds what every rendering writes after one is read as ending there.)
                if end < 0 or (closers[0] and closers[0] in self.prompt[start:end]):
                    continue
                content = {"role": role, "content": self.prompt[start:end]}
                variants = [content]
                if role == "tool":
                    linked = _link(messages)
                    unnamed = {k: v for k, v in linked.items() if k != "name"}
                    variants = [{**content, **linked}, {**content, **unnamed}, content]
                if role == "assistant" and any(m and m in content["content"] for m in self.openers):
                    continue  # (calls the wire spec does not read back are not taken for text)
                for variant in [v for i, v in enumerate(variants) if v not in variants[:i]]:
                    yield variant, end, role == "assistant"

    def _assistant(self, messages: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], int]]:
        """The assistant's turn as a reply, parsed with the wire spec: from its opener (what its
        renderings with content, with reasoning and with a call share) to the stop token or to where
        a next turn opens, whichever comes first."""
        shown: dict[str, Any] = {"role": "assistant", "content": _HERE}
        variants: list[dict[str, Any]] = [shown, {"role": "assistant", "content": "", "reasoning_content": _HERE}]
        if self.tools:
            name = self.tools[0].get("function", self.tools[0]).get("name", "")
            call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": {}}}
            variants.append({"role": "assistant", "content": "", "tool_calls": [call]})
        texts = [self.render([*messages, variant]) for variant in variants]
        spec = self.fmt.wire
        markers = tuple(m for m in (*spec.block, *spec.call, *(spec.reasoning or ()), spec.stop) if len(m) > 1)
        # (A template may write its last turn otherwise than one a later user's message follows.)
        later = [{"role": "user", "content": _LATER}]
        starts = set()
        for group in (texts, [self.render([*messages, variant, *later]) for variant in variants]):
            written = [text for text in group if text is not None]
            shared = _common_prefix(written) if written else ""
            start = len(_snap_cut(shared, len(shared), markers))
            if written and self.prompt.startswith(shared[:start]):
                starts.add(start)
        seen: list[dict[str, Any]] = []
        for start in sorted(starts, reverse=True):
            yield from self._replies(messages, start, variants, texts, seen)

    def _replies(
        self,
        messages: list[dict[str, Any]],
        start: int,
        variants: list[dict[str, Any]],
        texts: list[str | None],
        seen: list[dict[str, Any]],
    ) -> Iterator[tuple[dict[str, Any], int]]:
        """The assistant messages of a turn that opens at ``start``, ended by the stop token or by a next
        turn's opener (each not in ``seen`` yet, which they are added to)."""
        fmt, stop = self.fmt, self.fmt.stop_token
        ends = {self.prompt.find(stop, start) + len(stop)} if stop and stop in self.prompt[start:] else set()
        for opener in self._next_openers(messages, variants, texts):
            at = self.prompt.find(opener, start)
            ends.update([at] if at >= 0 else [])
        for end in sorted(e for e in ends if e > start):  # (a turn of nothing read is no turn)
            reply = self.prompt[start:end]
            if stop and stop in reply:  # (the model stops there: a reply is read up to its stop token)
                reply = reply[: reply.index(stop) + len(stop)]
            try:
                result = fmt.parse(reply, tools=self.tools or None, prompt=self.prompt[:start])
            except ParseError:
                continue
            for message in _assistant_messages(result):
                if message not in seen:
                    seen.append(message)
                    yield message, end

    def _next_openers(
        self, messages: list[dict[str, Any]], variants: list[dict[str, Any]], texts: list[str | None]
    ) -> list[str]:
        """What a next turn (a user's after text, a tool's after a call) opens with after an assistant's
        turn: what a rendering with it writes past the rendering without it, before its content."""
        openers = []
        for variant, alone in zip(variants, texts, strict=True):
            following = [{"role": "user", "content": _LATER}]
            if variant.get("tool_calls"):
                call = variant["tool_calls"][0]
                tool = {"role": "tool", "content": _LATER, "tool_call_id": call["id"]}
                following.append({**tool, "name": call["function"]["name"]})
            elif "reasoning_content" in variant:
                continue
            for after in following:
                text = self.render([*messages, variant, after])
                if alone is None or text is None or _LATER not in text:
                    continue
                shared = len(_common_prefix([alone, text]))
                opener = text[shared : text.index(_LATER)].strip()
                if opener and opener not in openers:
                    openers.append(opener)
        return openers

    def read(self) -> Conversation | None:
        """The conversation the prompt renders from with these tools and variables, or None."""
        self.budget = _BUDGET
        return self._read_from([], 0)

    def _read_from(self, messages: list[dict[str, Any]], position: int) -> Conversation | None:
        """The conversation that goes on from ``messages`` (their turns read up to ``position``), each
        next message tried in rank order until one leads to the whole prompt, while the budget lasts."""
        for generation in (True, False):
            if messages and self.render(messages, generation) == self.prompt:
                return Conversation.model_validate(
                    {
                        "messages": messages,
                        "tools": self.tools,
                        "add_generation_prompt": generation,
                        "variables": self.variables,
                    }
                )
        # The messages whose rendering agrees with the prompt past their turn, in rank order: a first
        # choice, the shortest turn (a longer one would take in what later turns write as its text),
        # then the one that agrees furthest; the next is tried where one leads nowhere (a system
        # prompt that reads as the template's default one, say).
        candidates = sorted(
            ((second, end, i, message) for i, (message, end, second) in enumerate(self.next_messages(messages))),
            key=lambda c: c[:3],
        )
        ranked: list[tuple[tuple[bool, int, int], dict[str, Any]]] = []
        for second, end, _, message in candidates:
            if self.budget <= 0:
                break
            if end <= position or not self.writes(messages, message):
                continue
            self.budget -= 1
            agreed = self.agreement([*messages, message])
            if agreed >= end:
                ranked.append(((second, end, -agreed), message))
        tried: list[dict[str, Any]] = []
        for (_, end, _), message in sorted(ranked, key=lambda r: r[0]):
            if message in tried:
                continue
            if len(tried) == _TRIED:
                break
            tried.append(message)
            found = self._read_from([*messages, message], end)
            if found is not None:
                return found
        return None


#: How many messages' renderings a reading tries in all, and how many of each turn's it goes on from.
_BUDGET = 1500
_TRIED = 2


def _assistant_messages(result: ParseResult) -> list[dict[str, Any]]:
    """The assistant messages a parsed reply may be of: its content and reasoning as read, and stripped."""
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in result.tool_calls
    ]
    content = result.content or ""
    out = []
    for text in dict.fromkeys([content, content.strip()]):
        for reasoning in dict.fromkeys([result.reasoning, (result.reasoning or "").strip() or None]):
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if reasoning:
                message["reasoning_content"] = reasoning
            if calls:
                message["tool_calls"] = calls
            out.append(message)
    return out


def _link(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The id and name of the call a tool message after ``messages`` answers (calls answered in order)."""
    answered = 0
    for message in reversed(messages):
        if message["role"] == "tool":
            answered += 1
            continue
        calls = message.get("tool_calls") or []
        if message["role"] == "assistant" and answered < len(calls):
            call = calls[answered]
            return {"tool_call_id": call["id"], "name": call["function"]["name"]}
        break
    return {}


def declared_tools(prompt: str) -> list[dict[str, Any]]:
    """The tools ``prompt`` declares as JSON objects, in order: OpenAI's tool objects as they are,
    a function object (a ``name`` and ``parameters``) as a tool's ``function``; each name once."""
    decoder = json.JSONDecoder()
    found: dict[str, dict[str, Any]] = {}
    at = prompt.find("{")
    while at >= 0:
        try:
            value, end = decoder.raw_decode(prompt, at)
        except ValueError:
            at = prompt.find("{", at + 1)
            continue
        tool = _as_tool(value)
        if tool is None:
            at = prompt.find("{", at + 1)
            continue
        found.setdefault(tool["function"]["name"], tool)
        at = prompt.find("{", end)
    return list(found.values())


def _as_tool(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    function = value.get("function")
    if value.get("type") == "function" and isinstance(function, dict) and isinstance(function.get("name"), str):
        return value
    if isinstance(value.get("name"), str) and isinstance(value.get("parameters"), dict):
        return {"type": "function", "function": value}
    return None


def _tools_opener(fmt: Format) -> str:
    """A line the template writes with any tools and never without them (its longest line of the
    tools' part that holds no probe tool's name or description, else its first, cut to 40
    characters), "" where it writes none."""
    reading = _Reading(fmt, "", None, {})
    messages = [{"role": "user", "content": _HERE}]
    without = reading.render(messages, True)
    reading.tools = PROBE_TOOLS
    with_tools = reading.render(messages, True)
    if without is None or with_tools is None or without == with_tools:
        return ""
    written = set(without.splitlines())
    added = "\n".join(line for line in with_tools.splitlines() if line not in written)
    told: list[str] = []  # (the probe tools' names and descriptions: a line holding one is theirs)
    for tool in PROBE_TOOLS:
        function = tool["function"]
        properties = function["parameters"]["properties"]
        told += [function["name"], function["description"], *(p["description"] for p in properties.values())]
    lines = [line.strip() for line in added.splitlines() if line.strip() and not any(t in line for t in told)]
    first = next((line.strip() for line in added.splitlines() if line.strip()), "")
    return max(lines, key=len, default=first)[:40]


def decode_prompt(fmt: Format, template: str, prompt: str) -> Conversation:
    """The conversation ``prompt`` renders from with ``fmt`` (a derived format of ``template``): read
    turn by turn with the template and verified by rendering it again. Raises
    :class:`~codec.errors.ParseError` where no conversation renders back exactly, at the offset where
    the closest rendering first differs and showing both texts there."""
    declared = declared_tools(prompt)
    tool_sets: list[list[dict[str, Any]] | None] = [declared, None] if declared else [None]
    variable_sets: list[dict[str, Any]] = [{}]
    if "enable_thinking" in template:
        variable_sets += [{"enable_thinking": True}, {"enable_thinking": False}]
    closest: _Reading | None = None
    for tools in tool_sets:
        for variables in variable_sets:
            reading = _Reading(fmt, prompt, tools, variables)
            found = reading.read()
            if found is not None and tools is None and (opener := _tools_opener(fmt)):
                held = next((m for m in found.messages if isinstance(m.content, str) and opener in m.content), None)
                if held is not None and declared:  # (the tools were read: where their reading broke says more)
                    break
                if held is not None:
                    raise parse_error_at(prompt, prompt.find(opener), _unread_tools(fmt, opener, held.role))
            if found is not None:
                return found
            if closest is None or reading.furthest > closest.furthest:
                closest = reading
    assert closest is not None
    if not declared and (opener := _tools_opener(fmt)) and opener in prompt:
        raise parse_error_at(prompt, prompt.find(opener), _unread_tools(fmt, opener, ""))
    at = max(closest.furthest, 0)
    shown = text_difference(prompt, closest.closest, expected_name="prompt", actual_name="rendered")
    message = f"not a prompt of {fmt.name} (no conversation read from it renders it back); " + (
        shown or "the template renders nothing like it"
    )
    raise parse_error_at(prompt, at, message)


def _unread_tools(fmt: Format, opener: str, role: str) -> str:
    taken = f", which would be read as the {role}'s text" if role else ""
    return (
        f"not a prompt {fmt.name} reads back: it declares tools (after {opener!r}) otherwise than as JSON tool "
        f"objects{taken}"
    )
