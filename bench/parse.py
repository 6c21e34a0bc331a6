"""Parse speed: codec against the way popular servers parse each format, measured in one run.

    python bench/parse.py [--format NAME ...] [--quick]

For replies of about 1 KB, 20 KB and 200 KB (several tool calls with nested arguments, as
``render_reply`` writes them), it prints the best-of-N time of one complete parse, the total
time to parse the same reply streamed in 4-character chunks, and the same two numbers for the
baseline (a regex + ``json.loads``; streamed, the baseline re-runs on the whole buffer at each
chunk, as those servers do). Ratios are against the baseline of the same run. Results also go
to ``bench/results/parse.json``. The streamed baseline is quadratic, so at 200 KB it is
estimated from 2 000 evenly spaced chunks instead of run in full.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import codec
from codec.formats.gemma3_tool_code import Gemma3ToolCode

SIZES = (1_000, 20_000, 200_000)
CHUNK = 4


def sample_calls(count: int, plain: bool = False) -> list[dict[str, Any]]:
    """Tool calls with the kinds of values real replies carry (no marker text inside values: the
    regex baseline would cut the call there, which codec does not). ``plain`` leaves quotes,
    backslashes and newlines out of strings, for formats whose baseline cannot read them back
    (the DeepSeek template writes strings unescaped)."""
    calls = []
    for i in range(count):
        if i % 2:
            city = f"São Paulo #{i} line two" if plain else f'São "Paulo" #{i}\nline two \\ end'
            args: dict[str, Any] = {
                "city": city,
                "days": i,
                "options": {"unit": "c", "hourly": [1, 2.5, True, None], "lang": "pt-BR"},
            }
            name = "get_weather"
        else:
            args = {"query": f"tool call parsers <b>{i}</b>", "filters": {"site": "example.org"}, "limit": 10}
            name = "search"
        calls.append({"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}})
    return calls


def make_reply(fmt: codec.Format, size: int) -> str:
    """A reply of about ``size`` characters: a sentence of content, then calls."""
    count = 1
    while True:
        calls = sample_calls(count, plain=fmt.name in PLAIN_STRINGS)
        message = {"role": "assistant", "content": "Let me look that up.", "tool_calls": calls}
        text = fmt.render_reply(message)
        if len(text) >= size:
            return text
        count = max(count + 1, int(count * size / len(text)))


_HERMES_RX = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)


def hermes_baseline(text: str) -> list[Any]:
    """vLLM's hermes approach: a lazy regex for the blocks, json.loads for each body."""
    calls = []
    for m in _HERMES_RX.finditer(text):
        with contextlib.suppress(json.JSONDecodeError):  # a partial block while streaming
            calls.append(json.loads(m.group(1) or m.group(2)))
    return calls


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "options": {"type": "object"},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "filters": {"type": "object"},
                    "limit": {"type": "integer"},
                },
            },
        },
    },
]
_TYPES = {
    tool["function"]["name"]: {
        key: schema["type"] for key, schema in tool["function"]["parameters"]["properties"].items()
    }
    for tool in TOOLS
}
_QWEN_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_QWEN_FUNCTION = re.compile(r"<function=(.*?)>(.*?)</function>", re.DOTALL)
_QWEN_PARAMETER = re.compile(r"<parameter=(.*?)>(.*?)</parameter>", re.DOTALL)


def qwen3_coder_baseline(text: str) -> list[Any]:
    """The regex approach of the popular Qwen3-Coder parsers: blocks, functions and parameters by
    lazy regexes, one newline trimmed on each side, values converted by the declared type."""
    calls = []
    for block in _QWEN_CALL.findall(text):
        for name, body in _QWEN_FUNCTION.findall(block):
            types = _TYPES.get(name, {})
            args: dict[str, Any] = {}
            for key, raw in _QWEN_PARAMETER.findall(body):
                value = raw[1:] if raw.startswith("\n") else raw
                value = value[:-1] if value.endswith("\n") else value
                kind = types.get(key, "string")
                if kind == "integer":
                    args[key] = int(value)
                elif kind in ("object", "array"):
                    args[key] = json.loads(value)
                else:
                    args[key] = value
            calls.append({"name": name, "arguments": args})
    return calls


_GEMMA_CALL = re.compile(r"<\|tool_call>call:([\w\-.]+)(\{.*?\})<tool_call\|>", re.DOTALL)
_GEMMA_STRING = re.compile(r'<\|"\|>(.*?)<\|"\|>', re.DOTALL)
_GEMMA_KEY = re.compile(r"([{,])([A-Za-z_][\w\-.]*):")
_GEMMA_SLOT = re.compile("\x00([0-9]+)\x00")


def gemma4_baseline(text: str) -> list[Any]:
    """The regex-rewrite approach: find each call, set its <|"|> strings aside, quote the bare
    keys, spell None as null, put the strings back JSON-encoded and json.loads the result."""
    calls = []
    for name, body in _GEMMA_CALL.findall(text):
        strings: list[str] = []

        def set_aside(m: re.Match[str], strings: list[str] = strings) -> str:
            strings.append(m.group(1))
            return f"\x00{len(strings) - 1}\x00"

        body = _GEMMA_KEY.sub(r'\1"\2":', _GEMMA_STRING.sub(set_aside, body)).replace("None", "null")
        body = _GEMMA_SLOT.sub(lambda m, strings=strings: json.dumps(strings[int(m.group(1))]), body)
        calls.append({"name": name, "arguments": json.loads(body)})
    return calls


_PYTHON_LIST = re.compile(r"\[[A-Za-z_][\w.\-]*\(.*\)\]", re.DOTALL)


def pythonic_baseline(text: str) -> list[Any]:
    """vLLM's pythonic approach: find the list, ast.parse it, literal_eval each keyword (JSON
    spellings true/false/null bound as names, as the DeepSeek template writes them)."""
    found = _PYTHON_LIST.search(text)
    if found is None:
        return []
    tree = ast.parse(found.group(), mode="eval").body
    assert isinstance(tree, ast.List)
    calls = []
    for call in tree.elts:
        assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
        args = {kw.arg: _literal(kw.value) for kw in call.keywords}
        calls.append({"name": call.func.id, "arguments": args})
    return calls


_JSON_NAMES = {"true": True, "false": False, "null": None}


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, ast.List):
        return [_literal(v) for v in node.elts]
    return ast.literal_eval(node)


#: The Python-list formats' strings are written plain here (see sample_calls).
PLAIN_STRINGS = {"deepseek_pythonic"}

BASELINES: dict[str, Callable[[str], list[Any]]] = {
    "deepseek_pythonic": pythonic_baseline,
    "gemma3_tool_code": pythonic_baseline,
    "gemma4": gemma4_baseline,
    "hermes": hermes_baseline,
    "qwen3_coder": qwen3_coder_baseline,
}
#: Formats whose values need the tools to be typed are parsed with them (codec and baseline alike).
WITH_TOOLS = {"qwen3_coder"}


def best_of(fn: Callable[[], object], budget: float = 1.0, runs: int = 200) -> float:
    best = float("inf")
    start = time.perf_counter()
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if time.perf_counter() - start > budget:
            break
    return best


def chunks(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


def codec_stream(fmt: codec.Format, pieces: list[str], tools: Any) -> None:
    stream = fmt.stream(tools=tools)
    for piece in pieces:
        stream.feed(piece)
    stream.close()


def baseline_stream(parse: Callable[[str], object], text: str, pieces: list[str], limit: int | None) -> float:
    """Re-parse the growing buffer at every chunk; with ``limit``, time that many evenly spaced chunks."""
    ends = list(range(CHUNK, len(text) + CHUNK, CHUNK))
    if limit is not None and len(ends) > limit:
        step = len(ends) / limit
        sample = [ends[int(k * step)] for k in range(limit)]
        t0 = time.perf_counter()
        for end in sample:
            parse(text[:end])
        return (time.perf_counter() - t0) * len(ends) / limit
    t0 = time.perf_counter()
    for end in ends:
        parse(text[:end])
    return time.perf_counter() - t0


def run(name: str, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    # Gemma 3 replies are written with the corrected template (", " between arguments): the
    # reference writes none, which ast.parse, the baseline, cannot read.
    fmt = Gemma3ToolCode(corrected=True) if name == "gemma3_tool_code" else codec.get_format(name)
    baseline = BASELINES[name]
    tools = TOOLS if name in WITH_TOOLS else None
    fmt.parse(make_reply(fmt, 500), tools=tools)  # build the grammar before timing
    rows = []
    for size in sizes:
        text = make_reply(fmt, size)
        result = fmt.parse(text, tools=tools)
        expected = len(result.tool_calls)
        assert not result.issues, result.issues[:3]
        assert [c.function.arguments for c in result.tool_calls] == [c["arguments"] for c in baseline(text)], (
            "baseline and codec disagree on the calls"
        )
        pieces = chunks(text)
        parse = best_of(lambda text=text: fmt.parse(text, tools=tools))
        stream = best_of(lambda pieces=pieces: codec_stream(fmt, pieces, tools), budget=2.0)
        base = best_of(lambda text=text: baseline(text))
        base_stream = baseline_stream(baseline, text, pieces, limit=2000 if size > 50_000 else None)
        rows.append(
            {
                "format": name,
                "bytes": len(text.encode()),
                "calls": expected,
                "parse_us": parse * 1e6,
                "stream4_us": stream * 1e6,
                "baseline_parse_us": base * 1e6,
                "baseline_stream4_us": base_stream * 1e6,
                "parse_vs_baseline": parse / base,
                "stream_vs_parse": stream / parse,
                "stream_vs_baseline_stream": stream / base_stream,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", action="append", choices=sorted(BASELINES), help="default: all")
    parser.add_argument("--quick", action="store_true", help="1 KB and 20 KB only")
    args = parser.parse_args()
    sizes = SIZES[:2] if args.quick else SIZES
    rows = [row for name in args.format or sorted(BASELINES) for row in run(name, sizes)]
    head = f"{'format':<10}{'bytes':>8}{'calls':>6}{'parse':>11}{'stream4':>11}{'base':>10}{'base s4':>11}"
    head += f"{'parse/base':>11}{'s4/parse':>9}{'s4/base s4':>11}"
    print(head)
    for r in rows:
        print(
            f"{r['format']:<10}{r['bytes']:>8}{r['calls']:>6}"
            f"{r['parse_us'] / 1e3:>9.3f}ms{r['stream4_us'] / 1e3:>9.2f}ms"
            f"{r['baseline_parse_us'] / 1e3:>8.3f}ms{r['baseline_stream4_us'] / 1e3:>9.1f}ms"
            f"{r['parse_vs_baseline']:>10.1f}x{r['stream_vs_parse']:>8.2f}x{r['stream_vs_baseline_stream']:>10.3f}x"
        )
    by_size = {(r["format"], r["bytes"]): r for r in rows}
    for name in {r["format"] for r in rows}:
        sized = sorted((b, r) for (f, b), r in by_size.items() if f == name)
        if len(sized) >= 3:
            (b20, r20), (b200, r200) = sized[-2], sized[-1]
            growth = (r200["parse_us"] / b200) / (r20["parse_us"] / b20)
            print(f"{name}: per-byte parse cost at {b200} B is {growth:.2f}x that at {b20} B")
    out = Path(__file__).resolve().parent / "results" / "parse.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
