"""Format-agnostic helpers for parse tests: golden cases, whole / chunked / char-by-char parsing,
rebuilding the OpenAI message from stream events, and the append-only check of stream deltas.

Nothing here names a format. A format's golden cases live in ``tests/golden/<name>/``: each case
is ``<case>.txt`` (the exact reply bytes, UTF-8) beside ``<case>.json``::

    {
      "description": "what the case is about (optional)",
      "tools": [...] or null (optional: without it, the folder's tools.json),
      "prompt": null or "the rendered prompt",
      "expected": {"content": "...", "reasoning": "...",
                   "tool_calls": [{"name": "...", "arguments": {...}}],
                   "issues": ["kind", ...]},
      "xfail": {"<aspect>": "reason", ...}
    }

The folder's ``tools.json`` holds the tools most of its cases are parsed with: a case without
``"tools"`` uses them, a case with its own ``"tools"`` uses those, and a case parsed without tools
says ``"tools": null``.

``xfail`` (optional) names the aspects the parser is known to get wrong on this case, each with
the reason: ``expected`` (the whole parse equals ``expected``), ``streaming`` (every chunking
gives exactly the whole parse's result), ``events`` (the events are append-only and rebuild the
message), ``positions`` (issue positions) and ``strict`` (strict mode raises exactly when issues
are expected). Tests mark those aspects ``xfail(strict=True)``, so a fix shows up as XPASS.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import settings

import codec
from codec.format import link_tool_results
from codec.models import Event, ParseResult, ToolCallDelta
from codec.testing.assertions import (  # the one copy, re-exported for the tests  # noqa: F401
    assert_append_only,
    assert_events_rebuild,
    client_view,
    events_to_message,
    expected_message,
    split,
    summary,
)

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
#: The tools a golden folder's cases are parsed with unless a case gives its own ``"tools"``.
TOOLS_FILE = "tools.json"
#: What a golden case checks; a case's ``xfail`` names some of these.
ASPECTS = ("expected", "streaming", "events", "positions", "strict")


# --------------------------------------------------------------------------- hypothesis


def deep() -> bool:
    """Whether the deep profile runs: for what a test counts itself (chunkings, cuts, input sizes),
    all of it in the deep profile, a sample in the default one."""
    return bool(settings().max_examples >= 100)


def reply_formats() -> list[str]:
    """The formats the reply-side tests run on: every one in the deep profile; in the default one,
    the first of each reply side (formats with the same compiled reply syntax and the same reply
    renderer read and write replies alike, so a reply-side test of one is a test of all)."""
    names = codec.formats()
    if deep():
        return names
    seen: dict[tuple[int, Any], str] = {}
    for name in names:
        fmt = codec.get_format(name)
        seen.setdefault((id(fmt.syntax()), fmt.functions.reply_text), name)
    return sorted(seen.values())


def sample_cuts(text: str, markers: Sequence[str], spread: int = 24) -> list[int]:
    """The lengths to cut ``text`` at: every one in the deep profile; in the default one, each cut
    within a character of where one of ``markers`` starts or ends in it (where a cut meets the
    parser's states), ``spread`` evenly spaced others, and the text's ends."""
    if deep() or len(text) <= spread:
        return list(range(len(text) + 1))
    cuts = {0, len(text)} | {round(k * len(text) / spread) for k in range(spread)}
    for marker in markers:
        at = text.find(marker)
        while at >= 0:
            for edge in (at, at + len(marker)):
                cuts.update(range(max(0, edge - 1), min(len(text), edge + 1) + 1))
            at = text.find(marker, at + 1)
    return sorted(cuts)


def examples(n: int, *, least: int = 3, **options: Any) -> settings:
    """The settings of a property that deserves ``n`` examples at scale 100, scaled by the active profile.

    The profiles (``tests/conftest.py``) set the scale: ``default`` runs about a sixteenth of ``n``
    (never fewer than ``least``, or ``n`` itself when smaller), ``deep`` twice ``n``. ``least`` is lower for
    a property whose every example is costly (a grammar compiled per example). ``options`` are other
    settings of this property (``phases``...); derandomization, the database and the deadline come
    from the profile.
    """
    scale = settings().max_examples
    return settings(max_examples=max(min(n, least), round(n * scale / 100)), **options)


# --------------------------------------------------------------------------- golden cases


@dataclass(frozen=True)
class GoldenCase:
    """One golden reply of one format and what it must parse to."""

    format: str
    name: str
    text: str
    tools: list[dict[str, Any]] | None
    prompt: str | None
    expected: dict[str, Any]
    description: str = ""
    xfail: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.format}/{self.name}"

    @property
    def has_issues(self) -> bool:
        return bool(self.expected.get("issues"))

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``parse``/``stream`` for this case (tools and prompt)."""
        return {"tools": self.tools, "prompt": self.prompt}


def golden_formats() -> list[str]:
    """Registered formats that have a golden folder."""
    return [name for name in codec.formats() if (GOLDEN_DIR / name).is_dir()]


def read_reply(path: Path) -> str:
    """A reply file's exact text: no newline translation, no stripping."""
    return path.read_bytes().decode("utf-8")


def load_golden(format_name: str) -> list[GoldenCase]:
    """Every golden case of ``format_name``, sorted by name, with its tools (its own, or the folder's
    ``tools.json``). A ``.txt`` without its ``.json`` is an error."""
    folder = GOLDEN_DIR / format_name
    tools_path = folder / TOOLS_FILE
    folder_tools = json.loads(tools_path.read_text(encoding="utf-8")) if tools_path.is_file() else None
    cases = []
    for txt in sorted(folder.glob("*.txt")):
        spec_path = txt.with_suffix(".json")
        if not spec_path.is_file():
            raise FileNotFoundError(f"{txt} has no {spec_path.name}")
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        expected = spec["expected"]
        missing = {"content", "reasoning", "tool_calls", "issues"} - set(expected)
        if missing:
            raise ValueError(f"{spec_path}: expected lacks {sorted(missing)}")
        if "tools" not in spec and folder_tools is None:
            raise ValueError(f"{spec_path} gives no tools and {tools_path} does not exist")
        unknown = set(spec.get("xfail") or {}) - set(ASPECTS)
        if unknown:
            raise ValueError(f"{spec_path}: unknown xfail aspects {sorted(unknown)}")
        cases.append(
            GoldenCase(
                format=format_name,
                name=txt.stem,
                text=read_reply(txt),
                tools=spec.get("tools", folder_tools),
                prompt=spec.get("prompt"),
                expected=expected,
                description=spec.get("description", ""),
                xfail=dict(spec.get("xfail") or {}),
            )
        )
    return cases


def write_golden(format_name: str, name: str, text: str, spec: dict[str, Any]) -> None:
    """Write one golden case (exact bytes for the reply; the JSON pretty-printed, non-ASCII kept).

    ``spec["tools"]`` is left out when it is the folder's ``tools.json`` (give ``None`` for no tools).
    """
    folder = GOLDEN_DIR / format_name
    folder.mkdir(parents=True, exist_ok=True)
    tools_path = folder / TOOLS_FILE
    if "tools" in spec and tools_path.is_file() and spec["tools"] == json.loads(tools_path.read_text(encoding="utf-8")):
        spec = {key: value for key, value in spec.items() if key != "tools"}
    (folder / f"{name}.txt").write_bytes(text.encode("utf-8"))
    (folder / f"{name}.json").write_text(json.dumps(spec, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- running a parse


@dataclass
class Run:
    """One parse of a reply through a stream: its result, every event, the chunks fed and the lexer work."""

    result: ParseResult
    events: list[Event]
    chunks: list[str]
    work: int


def run_chunks(fmt: codec.Format, chunks: Iterable[str], **kwargs: Any) -> Run:
    """Feed ``chunks`` to a fresh stream of ``fmt``, then close it."""
    stream = fmt.stream(**kwargs)
    events: list[Event] = []
    fed: list[str] = []
    for chunk in chunks:
        fed.append(chunk)
        events.extend(stream.feed(chunk))
    events.extend(stream.close())
    return Run(stream.result, events, fed, stream.work)


def argument_fragments(fmt: codec.Format, reply: str, size: int, **kwargs: Any) -> tuple[list[str], str, ParseResult]:
    """``reply`` streamed in ``size``-character chunks: every ``ToolCallDelta`` fragment, what the fragments
    had sent once half the chunks were fed, and the result."""
    chunks = split(reply, size)
    stream = fmt.stream(**kwargs)
    fragments: list[str] = []
    sent_at_half = ""
    for n, chunk in enumerate(chunks):
        fragments += [e.arguments for e in stream.feed(chunk) if isinstance(e, ToolCallDelta)]
        if n == len(chunks) // 2:
            sent_at_half = "".join(fragments)
    fragments += [e.arguments for e in stream.close() if isinstance(e, ToolCallDelta)]
    return fragments, sent_at_half, stream.result


def parse_whole(fmt: codec.Format, text: str, **kwargs: Any) -> Run:
    """The reply fed in one piece (what ``fmt.parse`` does), keeping the events."""
    return run_chunks(fmt, [text], **kwargs)


def parse_chunked(fmt: codec.Format, text: str, sizes: int | Sequence[int] | random.Random, **kwargs: Any) -> Run:
    """The reply fed in chunks (see :func:`split` for ``sizes``)."""
    return run_chunks(fmt, split(text, sizes), **kwargs)


def parse_char_by_char(fmt: codec.Format, text: str, **kwargs: Any) -> Run:
    """The reply fed one character at a time."""
    return run_chunks(fmt, list(text), **kwargs)


def chunkings(text: str, seed: int | str, count: int = 5, max_size: int = 12) -> Iterator[list[str]]:
    """``count`` reproducible random chunkings of ``text`` (seeded by ``seed``)."""
    rng = random.Random(f"{seed}")
    for _ in range(count):
        yield split(text, rng, max_size=max_size)


# --------------------------------------------------------------------------- linear work

#: Linear-work budgets: characters the lexer may examine per reply character (plus a constant).
#: Chunked streaming also re-examines the held-back tail (``Syntax.holdback`` characters, for text
#: and for the lookahead) on every feed: see :func:`chunked_budget`.
WHOLE_WORK = 8
CHUNK = 4
WORK_SLACK = 256


def chunked_budget(fmt: codec.Format, length: int) -> int:
    """The work allowed for a reply of ``length`` characters fed in ``CHUNK``-character chunks."""
    return (WHOLE_WORK + 2 * fmt.syntax().holdback // CHUNK) * length + WORK_SLACK


# --------------------------------------------------------------------------- events


def assert_issue_positions(text: str, result: ParseResult) -> None:
    """Every issue's ``pos`` is inside the reply and its ``line``/``column`` agree with it."""
    for issue in result.issues:
        assert 0 <= issue.pos <= len(text), f"{issue.kind}: pos {issue.pos} outside the reply"
        line = text.count("\n", 0, issue.pos) + 1
        column = issue.pos - (text.rfind("\n", 0, issue.pos) + 1) + 1
        assert (issue.line, issue.column) == (line, column), f"{issue.kind}: line/column do not match pos"


def assert_consistent(fmt: codec.Format, text: str, run: Run, **kwargs: Any) -> None:
    """A streamed run agrees exactly with ``fmt.parse`` and its events are sound."""
    assert "".join(run.chunks) == text
    assert_streams_like(run, fmt.parse(text, **kwargs))


def assert_streams_like(run: Run, whole: ParseResult) -> None:
    """A streamed run gives exactly the whole parse ``whole``, with append-only events that rebuild it."""
    assert run.result == whole
    assert_append_only(run.events, run.result)
    assert_events_rebuild(run.events, run.result)


def call_message(arguments: dict[str, Any], content: str | None = None, name: str = "f") -> dict[str, Any]:
    """An assistant message with one call of ``name`` with ``arguments`` (and ``content``)."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"function": {"name": name, "arguments": arguments}}],
    }


# --------------------------------------------------------------------------- decode


def rendered(fmt: codec.Format, case: dict[str, Any]) -> str | None:
    """The prompt ``case`` renders to, or ``None`` where the format refuses the conversation."""
    try:
        return fmt.render(
            case["messages"], case["tools"], add_generation_prompt=case["add_generation_prompt"], **case["variables"]
        )
    except codec.RenderError:
        return None


def decoded_as_json(conversation: codec.Conversation) -> dict[str, Any]:
    """A decoded conversation as plain JSON data, comparable with a test case's inputs."""
    data: dict[str, Any] = conversation.model_dump(mode="json")
    data.setdefault("tools", None)
    return data


def linked_as_json(data: dict[str, Any]) -> dict[str, Any]:
    """A conversation given as JSON data, with its tool results linked to their calls as decode
    links them (:func:`codec.format.link_tool_results`), as comparable JSON data."""
    conversation = codec.Conversation.model_validate(data)
    link_tool_results(conversation.messages)
    return decoded_as_json(conversation)


def assert_renders_back(fmt: codec.Format, text: str) -> codec.Conversation:
    """``fmt.decode(text)`` succeeds and renders back to exactly ``text``; returns the conversation."""
    conversation = fmt.decode(text)
    again = fmt.render(
        conversation.messages,
        conversation.tools,
        add_generation_prompt=conversation.add_generation_prompt,
        **conversation.variables,
    )
    assert again == text
    return conversation


def arguments_back(fmt: codec.Format, arguments: Any) -> Any:
    """The arguments of a call rendered in a prompt after a user's "Hi", as decode gives them back."""
    call = {"id": "x", "type": "function", "function": {"name": "f", "arguments": arguments}}
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "tool_calls": [call]}]
    conversation = assert_renders_back(fmt, fmt.render(messages, None))
    calls = conversation.messages[1].tool_calls
    assert calls is not None
    return calls[0].function.arguments


def decode_error_at(fmt: codec.Format, text: str) -> int:
    """Where ``fmt.decode(text)`` fails (it must raise ``ParseError``, at a position inside the text)."""
    try:
        fmt.decode(text)
    except codec.ParseError as exc:
        assert 0 <= exc.pos <= len(text)
        return exc.pos
    raise AssertionError(f"decode accepted {text!r}")


# --------------------------------------------------------------------------- characters a decoder looks at


class CountedText(str):
    """A text that counts the characters its searches and slices go over, in :attr:`looked`, shared
    with every slice of it (a slice is a counted text too): what a prompt decoder written with plain
    ``str`` methods examines, without timing it."""

    looked: list[int]

    def __new__(cls, text: str, looked: list[int] | None = None) -> CountedText:
        counted = super().__new__(cls, text)
        counted.looked = looked if looked is not None else [0]
        return counted

    def _span(self, start: int | None, end: int | None) -> tuple[int, int]:
        return slice(start, end).indices(len(self))[:2]

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        found = super().find(sub, start, end)
        begin, stop = self._span(start, end)
        self.looked[0] += (found + len(sub) if found >= 0 else stop) - begin
        return found

    def startswith(self, prefix: Any, start: Any = None, end: Any = None) -> bool:  # type: ignore[override]
        self.looked[0] += max(map(len, prefix)) if isinstance(prefix, tuple) else len(prefix)
        return super().startswith(prefix, start, end)

    def endswith(self, suffix: Any, start: Any = None, end: Any = None) -> bool:  # type: ignore[override]
        self.looked[0] += max(map(len, suffix)) if isinstance(suffix, tuple) else len(suffix)
        return super().endswith(suffix, start, end)

    def __getitem__(self, key: Any) -> CountedText:  # type: ignore[override]
        piece = super().__getitem__(key)
        self.looked[0] += len(piece)
        return CountedText(piece, self.looked)

    def strip(self, chars: Any = None) -> str:  # type: ignore[override]
        self.looked[0] += len(self)
        return super().strip(chars)


def looked_per_char(decode: Callable[[str], Any], prompt: str) -> float:
    """The characters ``decode`` looks at per character of ``prompt`` (see :class:`CountedText`)."""
    counted = CountedText(prompt)
    decode(counted)
    return counted.looked[0] / len(prompt)
