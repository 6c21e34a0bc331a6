"""Recovery on held-out model replies: how often codec reads back what the model meant.

    python bench/recovery.py [--format NAME ...] [--kind KIND] [--show-failures] [--check]

Reads every vector of ``bench/vectors/<format>.jsonl`` (see ``bench/vectors/README.md``), parses
its text whole with the vector's tools and prompt, then again streamed in 4-character chunks,
and compares the result with the vector's ``expected``: tool calls equal by name and arguments
(JSON values: a boolean is never a number, 42 equals 42.0), content and reasoning equal once
whitespace at both ends is stripped. Per format and kind it prints:

- ``exact``: calls, content and reasoning all as expected;
- ``calls ok``: the calls as expected, content or reasoning not;
- ``wrong``: the calls differ (or the parse raised);
- for prose, ``fp``: false positives, any call or content not equal to the text (``fp call``
  counts the first kind);
- ``stream!=``: replies whose streamed result differs from the whole parse;
- for messy replies, ``issues``: the share whose result reports at least one issue.

A total line per kind follows, then the targets (messy >= 85 % exact, well-formed >= 98 %,
no prose false positive). Per-vector results go to ``bench/results/recovery.json``. With
``--check`` the exit status is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import codec
from codec.models import ParseResult

ROOT = Path(__file__).resolve().parent
VECTORS = ROOT / "vectors"
RESULTS = ROOT / "results" / "recovery.json"
KINDS = ("well-formed", "messy", "prose")
CHUNK = 4
TARGETS = {"messy": 0.85, "well-formed": 0.98}


@dataclass
class Outcome:
    """What one vector gave."""

    id: str
    format: str
    kind: str
    deviation: str | None
    status: str  # exact | calls_ok | wrong | fp_call | fp_text
    stream_equal: bool
    issues: list[str] = field(default_factory=list)
    error: str | None = None
    got: dict[str, Any] = field(default_factory=dict)


def load(formats: Sequence[str] | None, kind: str | None) -> list[dict[str, Any]]:
    """The vectors of the chosen formats and kind, in file order."""
    vectors = []
    for path in sorted(VECTORS.glob("*.jsonl")):
        if formats and path.stem not in formats:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            vector = json.loads(line)
            vector["format"] = path.stem
            vector["line"] = number
            if kind is None or vector["kind"] == kind:
                vectors.append(vector)
    return vectors


def same(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, integers equal floats of the same value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def calls_of(result: ParseResult) -> list[dict[str, Any]]:
    """The result's calls as name and decoded arguments."""
    calls = []
    for call in result.tool_calls:
        arguments: Any = call.function.arguments
        if isinstance(arguments, str):
            with contextlib.suppress(json.JSONDecodeError):
                arguments = json.loads(arguments)
        calls.append({"name": call.function.name, "arguments": arguments})
    return calls


def same_calls(got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> bool:
    return len(got) == len(expected) and all(
        g["name"] == e["name"] and same(g["arguments"], e["arguments"]) for g, e in zip(got, expected, strict=True)
    )


def streamed(fmt: codec.Format, text: str, tools: Any, prompt: str | None) -> ParseResult:
    stream = fmt.stream(tools=tools, prompt=prompt)
    for start in range(0, len(text), CHUNK):
        stream.feed(text[start : start + CHUNK])
    stream.close()
    return stream.result


def run(vector: dict[str, Any]) -> Outcome:
    """Parse one vector whole and streamed and judge the whole parse."""
    fmt = codec.get_format(vector["format"])
    expected = vector["expected"]
    outcome = Outcome(vector["id"], vector["format"], vector["kind"], vector.get("deviation"), "wrong", False)
    try:
        result = fmt.parse(vector["text"], tools=vector["tools"], prompt=vector["prompt"])
    except Exception as exc:  # a crash is a failure to recover, reported with the vector
        outcome.error = f"{type(exc).__name__}: {exc}"
        outcome.status = "fp_text" if vector["kind"] == "prose" else "wrong"
        return outcome
    try:
        outcome.stream_equal = streamed(fmt, vector["text"], vector["tools"], vector["prompt"]) == result
    except Exception as exc:
        outcome.error = f"stream: {type(exc).__name__}: {exc}"
    calls = calls_of(result)
    outcome.issues = [issue.kind for issue in result.issues]
    outcome.got = {"content": result.content, "reasoning": result.reasoning, "tool_calls": calls}
    text_ok = (
        result.content.strip() == expected["content"].strip()
        and result.reasoning.strip() == expected["reasoning"].strip()
    )
    if vector["kind"] == "prose":
        outcome.status = "fp_call" if calls else ("exact" if text_ok else "fp_text")
    elif same_calls(calls, expected["tool_calls"]):
        outcome.status = "exact" if text_ok else "calls_ok"
    return outcome


@dataclass
class Tally:
    vectors: int = 0
    exact: int = 0
    calls_ok: int = 0
    wrong: int = 0
    fp_call: int = 0
    fp_text: int = 0
    stream_differs: int = 0
    with_issue: int = 0

    def add(self, outcome: Outcome) -> None:
        self.vectors += 1
        setattr(self, outcome.status, getattr(self, outcome.status) + 1)
        self.stream_differs += not outcome.stream_equal
        self.with_issue += bool(outcome.issues)


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


HEADER = (
    f"{'format':<18} {'kind':<11} {'n':>4} {'exact':>5} {'':>6} {'calls ok':>8} {'wrong':>5}"
    f" {'fp':>4} {'fp call':>7} {'stream!=':>8} {'issues':>6}"
)


def row(name: str, kind: str, tally: Tally) -> str:
    prose = kind == "prose"
    fp = tally.fp_call + tally.fp_text
    return (
        f"{name:<18} {kind:<11} {tally.vectors:>4} {tally.exact:>5} {percent(tally.exact, tally.vectors):>6}"
        f" {'-' if prose else tally.calls_ok:>8} {'-' if prose else tally.wrong:>5}"
        f" {fp if prose else '-':>4} {tally.fp_call if prose else '-':>7} {tally.stream_differs:>8}"
        f" {percent(tally.with_issue, tally.vectors) if kind == 'messy' else '-':>6}"
    )


def report(outcomes: Iterable[Outcome]) -> tuple[list[str], dict[str, Tally]]:
    by_format: dict[tuple[str, str], Tally] = defaultdict(Tally)
    by_kind: dict[str, Tally] = defaultdict(Tally)
    for outcome in outcomes:
        by_format[outcome.format, outcome.kind].add(outcome)
        by_kind[outcome.kind].add(outcome)
    lines = [HEADER, "-" * len(HEADER)]
    for name in sorted({name for name, _ in by_format}):
        lines += [row(name, kind, by_format[name, kind]) for kind in KINDS if (name, kind) in by_format]
    lines.append("-" * len(HEADER))
    lines += [row("total", kind, by_kind[kind]) for kind in KINDS if kind in by_kind]
    return lines, by_kind


def targets(by_kind: dict[str, Tally]) -> tuple[list[str], bool]:
    lines, met = [], True
    for kind, share in TARGETS.items():
        if kind in by_kind:
            tally = by_kind[kind]
            ok = tally.exact >= share * tally.vectors
            met &= ok
            share_text = percent(tally.exact, tally.vectors).strip()
            lines.append(f"{kind}: {share_text} exact (target {share:.0%}): {'met' if ok else 'MISSED'}")
    if "prose" in by_kind:
        fp = by_kind["prose"].fp_call + by_kind["prose"].fp_text
        met &= fp == 0
        lines.append(f"prose: {fp} false positives (target 0): {'met' if fp == 0 else 'MISSED'}")
    return lines, met


def failures(outcomes: Iterable[Outcome], vectors: dict[str, dict[str, Any]]) -> list[str]:
    """Failed vectors grouped by format and deviation, with what was expected and what came."""
    groups: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        if outcome.status != "exact" or not outcome.stream_equal:
            label = outcome.deviation or f"({outcome.kind})"
            groups[outcome.format, label].append(outcome)
    lines = []
    for (name, label), group in sorted(groups.items(), key=lambda item: (item[0][0], -len(item[1]), item[0][1])):
        lines.append(f"\n{name}: {label} ({len(group)})")
        for outcome in group:
            stream = "" if outcome.stream_equal else " [stream differs]"
            lines.append(f"  {outcome.id}: {outcome.status}{stream} issues={outcome.issues}")
            if outcome.error:
                lines.append(f"    error: {outcome.error}")
            expected = vectors[outcome.id]["expected"]
            lines.append(f"    expected: {json.dumps(_brief(expected), ensure_ascii=False)[:300]}")
            lines.append(f"    got:      {json.dumps(_brief(outcome.got), ensure_ascii=False)[:300]}")
    return lines


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items() if value}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--format", action="append", dest="formats", metavar="NAME", choices=codec.formats())
    parser.add_argument("--kind", choices=KINDS)
    parser.add_argument("--show-failures", action="store_true", help="list failed vectors, grouped by deviation")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    vectors = load(args.formats, args.kind)
    outcomes = [run(vector) for vector in vectors]
    lines, by_kind = report(outcomes)
    print("\n".join(lines))
    goal, met = targets(by_kind)
    print("\n" + "\n".join(goal))
    if args.show_failures:
        print("\n".join(failures(outcomes, {vector["id"]: vector for vector in vectors})))

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    summary = {kind: asdict(tally) for kind, tally in by_kind.items()}
    RESULTS.write_text(
        json.dumps(
            {"summary": summary, "vectors": [asdict(outcome) for outcome in outcomes]}, ensure_ascii=False, indent=1
        )
        + "\n",
        encoding="utf-8",
    )
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
