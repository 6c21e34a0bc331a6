"""Dataset conversion speed: ``codec convert`` with 1 and 2 jobs, in conversions per second.

    python bench/convert.py [--count 100000] [--to hermes] [--from NAME]

Generates ``--count`` conversations (deterministic: system prompt, tools, a user question, one or
two tool rounds with parallel calls, an answer) into a temporary JSON-lines file, then times two
conversions, each with ``--jobs 1`` and ``--jobs 2``:

* messages records -> ``--to`` text;
* text -> text: the ``--to`` texts decoded with ``--to`` and rendered with ``--from`` (default:
  another format whose ``decode`` works; skipped when none does).

It prints conversions per second and the 2-job / 1-job ratio, and writes the numbers to
``bench/results/convert.json``. The default 100 000 conversations (130 MB) take about four minutes
on a 2-core machine (``--count 10000`` for a quick look); the ratio depends on how many cores are
free. Rendering dominates: a text -> text conversion decodes (which renders once to check the
decoding) and renders again.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import codec
from codec.cli import main

RESULTS = Path(__file__).resolve().parent / "results" / "convert.json"

CITIES = ("Lisboa", "Paris", "São Paulo", "東京", "Nairobi", "Reykjavík", "Buenos Aires")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather and forecast for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "days": {"type": "integer", "description": "Days to forecast"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
            },
        },
    },
]


def conversation(i: int) -> dict[str, Any]:
    """Conversation number ``i``: every format renders it, and no two consecutive ones are alike."""
    city = CITIES[i % len(CITIES)]
    calls = [
        {
            "id": f"call_{i}_0",
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": city, "days": 1 + i % 5, "unit": "celsius"}},
        }
    ]
    if i % 2:
        calls.append(
            {
                "id": f"call_{i}_1",
                "type": "function",
                "function": {"name": "search", "arguments": {"query": f"events in {city} this week", "limit": 3}},
            }
        )
    results = [
        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"ok": True, "n": i % 97 + k})}
        for k, call in enumerate(calls)
    ]
    return {
        "id": i,
        "messages": [
            {"role": "system", "content": f"You are a travel assistant. Session {i}."},
            {"role": "user", "content": f"What is the weather in {city}, and is anything on? (request {i})"},
            {"role": "assistant", "content": None, "tool_calls": calls},
            *results,
            {"role": "assistant", "content": f"Expect {10 + i % 20} degrees in {city}. " * (1 + i % 3)},
        ],
        "tools": TOOLS,
    }


def records(count: int) -> Iterator[str]:
    for i in range(count):
        yield json.dumps(conversation(i), ensure_ascii=False) + "\n"


def timed_convert(argv: list[str]) -> float:
    """Seconds that ``codec convert ARGV`` takes (its summary line is kept off the report)."""
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()) as err:
        status = main(["convert", *argv])
    seconds = time.perf_counter() - start
    summary = err.getvalue().strip().splitlines()[-1]
    if status != 0 or "rejected 0" not in summary:
        raise SystemExit(f"codec convert {' '.join(argv)}: exit {status}: {summary}")
    return seconds


def decoded_sample(name: str) -> codec.Conversation | None:
    """A generated conversation rendered with ``name`` and decoded back (None if it cannot decode yet)."""
    fmt = codec.get_format(name)
    sample = conversation(1)
    try:
        return fmt.decode(fmt.render(sample["messages"], sample["tools"]))
    except NotImplementedError:
        return None


def renders(name: str, c: codec.Conversation) -> bool:
    try:
        codec.get_format(name).render(c.messages, c.tools, add_generation_prompt=c.add_generation_prompt, **c.variables)
    except codec.RenderError:
        return False  # what the source prompt does not carry (a tool result's name...) may be what it needs
    return True


def measure(label: str, argv: list[str], count: int, output: Path) -> dict[str, float]:
    rates = {}
    for jobs in (1, 2):
        seconds = timed_convert(["--jobs", str(jobs), *argv, str(output)])
        rates[f"jobs_{jobs}"] = count / seconds
        print(f"{label:<40} jobs={jobs}  {count / seconds:>9,.0f} conversions/s  ({seconds:.1f} s)")
    rates["ratio_2_to_1"] = rates["jobs_2"] / rates["jobs_1"]
    print(f"{label:<40} 2 jobs / 1 job = {rates['ratio_2_to_1']:.2f}")
    return rates


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000, help="conversations to generate (default 100000)")
    parser.add_argument("--to", default="hermes", help="the format rendered into (default hermes)")
    parser.add_argument("--from", dest="source", help="the format the text -> text run renders into")
    args = parser.parse_args()
    target = codec.get_format(args.to).name
    print(f"{args.count:,} conversations, {os.cpu_count()} CPUs, codec {codec.__version__}")
    report: dict[str, Any] = {"count": args.count, "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="codec-bench-") as tmp:
        folder = Path(tmp)
        messages = folder / "messages.jsonl"
        with open(messages, "w", encoding="utf-8") as f:
            f.writelines(records(args.count))
        print(f"input: {messages.stat().st_size / 1e6:.0f} MB of messages records")
        texts = folder / "texts.jsonl"
        report[f"messages_to_{target}"] = measure(
            f"messages -> {target}", ["--to", target, str(messages)], args.count, texts
        )
        sample = decoded_sample(target)
        if sample is None:
            print(f"text -> text skipped: {target} cannot decode prompts yet")
        else:
            others = [name for name in codec.formats() if name != target and renders(name, sample)]
            second = codec.get_format(args.source).name if args.source else (others or [target])[0]
            label = f"{target} text -> {second} text"
            argv = ["--from", target, "--to", second, str(texts)]
            report[f"{target}_to_{second}"] = measure(label, argv, args.count, folder / "again.jsonl")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main_bench()
