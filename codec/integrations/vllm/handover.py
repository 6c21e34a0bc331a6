"""Where a harmony reply's leading reasoning ends: the handover of the reasoning parser to the tool parser.

A harmony member (gpt-oss) writes its reasoning as messages on the reasoning channel
(``<|channel|>analysis<|message|>...<|end|>``), not as one block between an opener and a closer,
and a reply decoded without its special tokens writes none of those tokens at all
(``analysis...assistantfinal...``). vLLM's reasoning parser reports the reasoning messages a
reply opens with and hands the raw text after them to the tool parser, which reads it as a
reply of its own: :func:`leading_reasoning` says where that text starts. This module needs no
vLLM, so that the split is tested without it.
"""

from __future__ import annotations

from dataclasses import dataclass

from codec.export import Reasoning
from codec.format import Format
from codec.models import ParseResult
from codec.wire.harmony import Harmony, Markers

__all__ = ["Split", "harmony_markers", "harmony_reasoning", "leading_reasoning"]


@dataclass(frozen=True)
class Split:
    """A reply's leading reasoning and the rest: ``text[:end]`` reads as reasoning alone (``reasoning``),
    and ``text[rest:]`` is what the tool parser reads as a reply of its own. ``rest`` is past ``end``
    where the reply lost its tokens: the role's name glued to the next channel's
    (``...assistantfinal...``) is left out, so that the rest opens with a channel's name, as a
    stripped reply does. Where the next message is the final answer (the content channel's), its
    header is left out too: the rest is the answer's text, content as it stands, whether a tool
    parser reads it or vLLM sends it on as it is (a reasoning parser with no tool parser)."""

    end: int
    rest: int
    reasoning: str


def harmony_markers(fmt: Format) -> Markers | None:
    """The markers of ``fmt``'s replies where it is a member of the harmony family, else None."""
    kit = fmt.kit()
    return kit.markers if isinstance(kit, Harmony) else None


def harmony_reasoning(markers: Markers) -> Reasoning:
    """A reasoning message as the opener and closer vLLM knows a reasoning block by: the reasoning
    channel's header (``<|channel|>analysis<|message|>``) and the message closer (``<|end|>``)."""
    return Reasoning(markers.channel + markers.reasoning_channel + markers.message, markers.end)


def _candidates(m: Markers, text: str) -> list[tuple[int, int]]:
    """The places the reasoning may end in ``text`` (where it ends, where the rest starts), in order:
    where a message may start (before a message opener or a channel token, after a message
    closer), and in a stripped reply between the role's name and the channel's it is glued to."""
    found: set[tuple[int, int]] = set()
    for token in (m.start, m.channel, m.end):
        at = text.find(token, 1)
        while at >= 0:
            if token == m.end:
                found.add((at + len(token), at + len(token)))
            elif token == m.start or _after_body(m, text, at):
                found.add((at, at))
            at = text.find(token, at + 1)
    if m.stripped:
        at = text.find(m.role, 1)
        while at >= 0:
            after = at + len(m.role)
            if any(text.startswith(channel, after) for channel in m.channels):
                found.add((at, after))
            at = text.find(m.role, at + 1)
    return sorted(found)


def _after_body(m: Markers, text: str, at: int) -> bool:
    """Whether the token at ``at`` follows a message's body (the last token before it opens one):
    a channel token there starts a message whose opener is missing, not one after ``<|start|>``."""
    last = max(m.tokens, key=lambda token: text.rfind(token, 0, at))
    return text.rfind(last, 0, at) >= 0 and last == m.message


def leading_reasoning(fmt: Format, text: str, *, prompt: str | None = None) -> Split | None:
    """The reasoning messages ``text`` (a reply of harmony member ``fmt``, or what came of it so far)
    opens with, and where the rest starts: the last place in the text up to which it reads as
    reasoning alone (no content, no call), before the first that does not. None where the reply
    opens with no reasoning.

    The rest is read as a reply of its own (no prompt), as the tool parser reads it: it starts with
    a message's header, or with a channel's name in a stripped reply, so that it reads as it does
    in the whole reply. The whitespace between two messages is content, and stays with the rest.
    """
    m = harmony_markers(fmt)
    if m is None:
        raise ValueError(f"{fmt.name} is not a member of the harmony family")
    best: Split | None = None
    for end, rest in _candidates(m, text):
        head = fmt.parse(text[:end], prompt=prompt)
        if _reads_as_reasoning_alone(head):
            if head.reasoning:
                best = Split(end, rest, head.reasoning)
            continue
        break
    if best is None:
        return None
    body = _answer_body(m, text, best)
    if body is not None and _reads_as_reasoning_alone(fmt.parse(text[:body], prompt=prompt)):
        return Split(best.end, body, best.reasoning)
    return best


def _reads_as_reasoning_alone(head: ParseResult) -> bool:
    """Whether a reply's head gives no content and no call (a call's header cut before its body
    reads as no call, but as a truncated one)."""
    return not (head.content or head.tool_calls or any(issue.kind == "truncated_call" for issue in head.issues))


def _answer_body(m: Markers, text: str, split: Split) -> int | None:
    """Where the body of the message after ``split`` starts, where that message is the final
    answer (the content channel's) written with its header as models write it: in full
    (``<|start|>assistant<|channel|>final<|message|>``), without its opener
    (``<|channel|>final<|message|>``), or stripped (``final`` after the role's name). None otherwise."""
    if split.rest > split.end:  # stripped: the rest opens with the channel's name
        return split.rest + len(m.content_channel) if text.startswith(m.content_channel, split.rest) else None
    header = m.channel + m.content_channel + m.message
    for written in (m.start + m.role + header, header):
        if text.startswith(written, split.rest):
            return split.rest + len(written)
    return None
