"""Memory: what a parsed reply holds, against the plain OpenAI data it stands for, measured in one run.

    python bench/memory.py [--calls N]

For a reply of N parallel calls (``f(a=I)`` in one deepseek_pythonic list, and the same calls as
hermes blocks), the bytes per call the result keeps (``tracemalloc``, after the parse, the reply
text excluded) and the peak while parsing, whole and streamed in 4-character chunks; the baseline
of the same run is the plain dicts of the same calls (``{"id", "type", "function": {"name",
"arguments"}}``, what ``json.loads`` of OpenAI's message gives). Target (issue "Reliability II",
per-call objects): a parsed call keeps at most 1.5x its plain dicts. The table goes to
``bench/results/memory.md``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import codec

TARGET = 1.5
CHUNK = 4


def replies(count: int) -> dict[str, str]:
    """The reply of ``count`` calls in each format measured."""
    return {
        "deepseek_pythonic": "[" + ", ".join(f"f(a={i})" for i in range(count)) + "]",
        "hermes": "".join(
            f'<tool_call>\n{{"name": "f", "arguments": {{"a": {i}}}}}\n</tool_call>\n' for i in range(count)
        ),
    }


def plain_calls(count: int) -> list[dict[str, Any]]:
    """The calls as plain OpenAI data, their arguments decoded."""
    return [
        {"id": f"call_{i}", "type": "function", "function": {"name": "f", "arguments": {"a": i}}} for i in range(count)
    ]


def measure(make: Callable[[], Any]) -> tuple[int, int]:
    """Bytes kept by what ``make`` returns, and the peak while making it."""
    gc.collect()
    tracemalloc.start()
    kept = make()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return current, peak


def streamed(fmt: codec.Format, text: str) -> codec.ParseResult:
    stream = fmt.stream()
    for at in range(0, len(text), CHUNK):
        stream.feed(text[at : at + CHUNK])
    stream.close()
    return stream.result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000, help="calls per reply (default 100,000)")
    count = parser.parse_args().calls
    baseline, _ = measure(lambda: plain_calls(count))
    rows = [f"plain dicts: {baseline / count:.0f} B per call ({count:,} calls)", ""]
    rows += ["| format | how | kept B/call | ratio to plain | target | peak MB |", "|---|---|---|---|---|---|"]
    worst = 0.0
    for name, text in replies(count).items():
        fmt = codec.get_format(name)
        streamed(fmt, replies(10)[name])  # what a first parse builds once (grammar, memos) is not per call
        runs: tuple[tuple[str, Callable[[], Any]], ...] = (
            ("whole", functools.partial(fmt.parse, text)),
            ("4-char stream", functools.partial(streamed, fmt, text)),
        )
        for how, run in runs:
            kept, peak = measure(run)
            ratio = kept / baseline
            worst = max(worst, ratio)
            mark = "ok" if ratio <= TARGET else "MISSED"
            rows.append(f"| {name} | {how} | {kept / count:.0f} | {ratio:.2f} | {TARGET} ({mark}) | {peak / 1e6:.1f} |")
    table = "\n".join(rows)
    print(table)
    out = Path(__file__).parent / "results" / "memory.md"
    out.write_text(f"# Memory per parsed call ({sys.version.split()[0]})\n\n{table}\n", encoding="utf-8")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
