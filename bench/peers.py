"""codec against the servers' own tool-call parsers (vLLM's and SGLang's), measured in one process.

    python bench/peers.py [--format NAME ...] [--quick] [--rounds N]

Needs an environment with vLLM and SGLang importable beside codec: both wheels install with
``--no-deps`` and run on the CPU (``bash bench/peers-env.sh`` builds one; it is never part of the
default install or CI). A peer that is not importable is left out and said so.

Each peer is driven as its server drives it: vLLM's ``ToolParser.extract_tool_calls`` on the whole
reply and ``extract_tool_calls_streaming`` with the previous and current texts and token ids of
every delta (its parsers look for their markers' token ids, so the stand-in tokenizer gives each
special token one id and every other character its code point); SGLang's
``FunctionCallParser.parse_non_stream`` and ``parse_stream_chunk`` per delta then
``parse_stream_end``. codec is driven as a server drives it too: ``Format.parse`` and
``Format.stream(...).feed`` per delta then ``close``, argument deltas on.

Correctness comes first: a peer counts for a reply only where it gives the same calls as codec
(names and arguments, whole and reassembled from its stream) within ``PEER_LIMIT`` seconds; one
that does not is shown as ``differs``. Timing is interleaved: each round times codec, then every
peer, once each, and the best of the rounds is kept, so that a change of the machine's load hits
all alike.

Reply shapes (speed II): no call, a typical reply (about 500 B, one call), parallel calls (1 KB,
20 KB, 200 KB), one big argument (20 KB, 200 KB), values spanning lines, markup characters in
prose. Deltas: 4 characters, and one token (1 to 7 characters, drawn with a fixed seed), special
tokens never split (a server's deltas are whole tokens). The ratio is codec / the fastest peer
that agrees: below 1 codec is faster.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from parse import PROSE, TOOLS, TYPICAL_CALL, WITH_TOOLS, make_reply, typical_reply

import codec

#: The peers' parsers for each codec format: (server, the parser's registered name).
PEERS: dict[str, list[tuple[str, str]]] = {
    "hermes": [("vllm", "hermes"), ("sglang", "hermes")],
    "qwen3": [("vllm", "hermes"), ("sglang", "qwen25")],
    "qwen3_coder": [("vllm", "qwen3_coder"), ("sglang", "qwen3_coder")],
    "qwen3_5": [("vllm", "qwen3_coder"), ("sglang", "qwen3_coder")],
    "gemma4": [("vllm", "gemma4"), ("sglang", "gemma4")],
    "llama4_pythonic": [("vllm", "llama4_pythonic"), ("sglang", "pythonic")],
    "llama3_1": [("vllm", "llama3_json"), ("sglang", "llama3")],
    "deepseek_v3_1": [("vllm", "deepseek_v31"), ("sglang", "deepseekv31")],
    "deepseek_v3_2": [("vllm", "deepseek_v32"), ("sglang", "deepseekv32")],
    "kimi_k2": [("vllm", "kimi_k2"), ("sglang", "kimi_k2")],
    "minimax_m2": [("vllm", "minimax_m2"), ("sglang", "minimax-m2")],
    "glm4_6": [("vllm", "glm45"), ("sglang", "glm45")],
    "glm4_7": [("vllm", "glm47"), ("sglang", "glm47")],
    "gpt_oss": [("vllm", "openai"), ("sglang", "gpt-oss")],
    "lfm2": [("vllm", "lfm2"), ("sglang", "lfm2")],
    "seed_oss": [("vllm", "seed_oss")],
    "granite4": [("vllm", "granite4")],
    "functiongemma": [("vllm", "functiongemma")],
}

#: A call as compared: its name and its arguments as data.
Call = tuple[str, Any]


# ---------------------------------------------------------------------------- replies


def big_argument(fmt: codec.Format, size: int) -> str:
    """One call whose string argument is about ``size`` characters of prose (lines of it)."""
    line = "The quick brown fox jumps over the lazy dog, then writes a report about it. "
    text = (line * (size // len(line) + 1))[:size]
    call = {"id": "call_0", "type": "function", "function": {"name": "search", "arguments": {"query": text}}}
    return fmt.render_reply({"role": "assistant", "content": "Searching.", "tool_calls": [call]})


def spanning_lines(fmt: codec.Format) -> str:
    """A typical call whose string values span lines."""
    args = {"city": "Paris\nFrance\n(the capital)", "days": 3, "options": {"unit": "c"}}
    call = {**TYPICAL_CALL, "function": {"name": "get_weather", "arguments": args}}
    return fmt.render_reply({"role": "assistant", "content": PROSE, "tool_calls": [call]})


def markup_prose(fmt: codec.Format) -> str:
    """Prose with markup characters (tags, brackets, braces, quotes) and one call."""
    prose = 'Use <b>bold</b> or [links](x) and {"json": [1, 2]} in a <div class="a">; 3 < 4 > 2. ' * 6
    return fmt.render_reply({"role": "assistant", "content": prose.strip(), "tool_calls": [TYPICAL_CALL]})


def shapes(fmt: codec.Format, quick: bool) -> list[tuple[str, str]]:
    """The reply shapes of speed II, by name, as ``fmt`` writes them."""
    out = [
        ("no call", "Hello! Paris is sunny today, about 21 degrees. Anything else?"),
        ("typical", typical_reply(fmt)),
        ("parallel 1 KB", make_reply(fmt, 1_000)),
        ("parallel 20 KB", make_reply(fmt, 20_000)),
        ("big argument 20 KB", big_argument(fmt, 20_000)),
        ("values spanning lines", spanning_lines(fmt)),
        ("markup in prose", markup_prose(fmt)),
    ]
    if not quick:
        out[4:4] = [("parallel 200 KB", make_reply(fmt, 200_000))]
        out.append(("big argument 200 KB", big_argument(fmt, 200_000)))
    return out


# ---------------------------------------------------------------------------- deltas


def special_tokens(fmt: codec.Format) -> list[str]:
    """The format's special tokens: each arrives whole in a delta and has one token id."""
    return sorted(set(fmt.grammar_special_tokens), key=len, reverse=True)


def pieces(text: str, specials: list[str]) -> list[str]:
    """``text`` as tokens: its special tokens whole, every other character alone."""
    if not specials:
        return list(text)
    pattern = re.compile("|".join(re.escape(s) for s in specials) + r"|[\s\S]")
    return pattern.findall(text)


def deltas(text: str, specials: list[str], *, size: int | None) -> list[str]:
    """Deltas of ``size`` characters (one token, 1 to 7 characters, where None), never splitting a
    special token: a token that would cross a delta's end ends that delta."""
    tokens = pieces(text, specials)
    rng = random.Random(7)
    out: list[str] = []
    current = ""
    want = size or rng.randint(1, 7)
    for token in tokens:
        current += token
        if len(current) >= want:
            out.append(current)
            current = ""
            want = size or rng.randint(1, 7)
    if current:
        out.append(current)
    return out


# ---------------------------------------------------------------------------- drivers


class Tokenizer:
    """A stand-in tokenizer for vLLM's parsers: one id per special token, else the code point."""

    def __init__(self, specials: list[str]) -> None:
        self.specials = specials
        self.added = {token: 1_000_000 + i for i, token in enumerate(specials)}
        self.back = {i: t for t, i in self.added.items()}
        self.vocab = dict(self.added)

    def get_vocab(self) -> dict[str, int]:
        return self.vocab

    def get_added_vocab(self) -> dict[str, int]:
        return self.added

    def encode(self, text: str, **_: Any) -> list[int]:
        return [self.added.get(p, ord(p[0])) for p in pieces(text, self.specials)]

    def decode(self, ids: Any, skip_special_tokens: bool = False) -> str:
        return "".join(
            self.back.get(i, chr(i) if i < 0x110000 else "") for i in ([ids] if isinstance(ids, int) else ids)
        )

    def convert_ids_to_tokens(self, ids: Any) -> Any:
        return self.decode(ids) if isinstance(ids, int) else [self.decode([i]) for i in ids]

    def convert_tokens_to_ids(self, tokens: Any) -> Any:
        if isinstance(tokens, str):
            return self.added.get(tokens, ord(tokens[0]) if len(tokens) == 1 else None)
        return [self.convert_tokens_to_ids(t) for t in tokens]


def _arguments(text: str | None) -> Any:
    try:
        return json.loads(text) if text else {}
    except json.JSONDecodeError:
        return ("not JSON", text)


@dataclass
class Peer:
    """One server's parser for one format: a whole-reply parse and a stream, both giving calls."""

    server: str
    name: str
    parse: Callable[[str], list[Call]]
    stream: Callable[[list[str]], list[Call]]
    label: str = field(init=False)

    def __post_init__(self) -> None:
        self.label = f"{self.server}:{self.name}"


def vllm_peer(name: str, fmt: codec.Format, tools: list[dict[str, Any]]) -> Peer:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.tool_parsers import ToolParserManager

    cls = ToolParserManager.get_tool_parser(name)
    specials = special_tokens(fmt)
    tokenizer = Tokenizer(specials)
    request = ChatCompletionRequest(messages=[{"role": "user", "content": "hi"}], model="m", tools=tools)

    def make() -> Any:
        try:
            return cls(tokenizer, request.tools)
        except TypeError:
            return cls(tokenizer)

    def parse(text: str) -> list[Call]:
        info = make().extract_tool_calls(text, request)
        if not info.tools_called:
            return []
        return [(c.function.name, _arguments(c.function.arguments)) for c in info.tool_calls]

    def stream(chunks: list[str]) -> list[Call]:
        parser = make()
        previous, previous_ids = "", []
        calls: dict[int, list[Any]] = {}
        for delta in chunks:
            delta_ids = tokenizer.encode(delta)
            current, current_ids = previous + delta, previous_ids + delta_ids
            message = parser.extract_tool_calls_streaming(
                previous, current, delta, previous_ids, current_ids, delta_ids, request
            )
            for call in (message.tool_calls if message is not None else None) or ():
                entry = calls.setdefault(call.index, ["", ""])
                if call.function is not None:
                    entry[0] += call.function.name or ""
                    entry[1] += call.function.arguments or ""
            previous, previous_ids = current, current_ids
        return [(n, _arguments(a)) for _, (n, a) in sorted(calls.items())]

    return Peer("vllm", name, parse, stream)


def sglang_peer(name: str, fmt: codec.Format, tools: list[dict[str, Any]]) -> Peer:
    from sglang.srt.entrypoints.openai.protocol import Tool
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    typed = [Tool.model_validate(t) for t in tools]

    def parse(text: str) -> list[Call]:
        _, calls = FunctionCallParser(typed, name).parse_non_stream(text)
        return [(c.name or "", _arguments(c.parameters)) for c in calls]

    def stream(chunks: list[str]) -> list[Call]:
        parser = FunctionCallParser(typed, name)
        calls: dict[int, list[Any]] = {}
        items = [item for delta in chunks for item in parser.parse_stream_chunk(delta)[1]]
        items += parser.parse_stream_end()[1]
        for item in items:
            entry = calls.setdefault(item.tool_index, ["", ""])
            entry[0] += item.name or ""
            entry[1] += item.parameters or ""
        return [(n, _arguments(a)) for _, (n, a) in sorted(calls.items())]

    return Peer("sglang", name, parse, stream)


DRIVERS = {"vllm": vllm_peer, "sglang": sglang_peer}


def peers_of(name: str, fmt: codec.Format, tools: list[dict[str, Any]]) -> tuple[list[Peer], list[str]]:
    """The peers of format ``name`` that import here, and why the others are left out."""
    found, missing = [], []
    for server, parser in PEERS.get(name, []):
        try:
            found.append(DRIVERS[server](parser, fmt, tools))
        except Exception as error:  # a peer that does not import or build here is reported, not run
            missing.append(f"{server}:{parser}: {type(error).__name__}: {error}")
    return found, missing


def codec_calls(fmt: codec.Format, text: str, tools: Any) -> list[Call]:
    return [(c.function.name, c.function.arguments) for c in fmt.parse(text, tools=tools).tool_calls]


def codec_stream_calls(fmt: codec.Format, chunks: Iterable[str], tools: Any) -> list[Call]:
    stream = fmt.stream(tools=tools)
    for chunk in chunks:
        stream.feed(chunk)
    stream.close()
    return [(c.function.name, c.function.arguments) for c in stream.result.tool_calls]


# ---------------------------------------------------------------------------- timing


def interleaved(fns: dict[str, Callable[[], object]], rounds: int, budget: float) -> dict[str, float]:
    """The best time of each function over ``rounds`` rounds that run each once, in turn (fewer
    rounds where the budget of seconds runs out)."""
    best = dict.fromkeys(fns, float("inf"))
    start = time.perf_counter()
    for done in range(rounds):
        for key, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[key] = min(best[key], time.perf_counter() - t0)
        if done >= 2 and time.perf_counter() - start > budget:
            break
    return best


#: Seconds a peer may take to give its calls for one reply before it counts as not giving them
#: (SGLang's pythonic detector backtracks for minutes on a 1 KB list of calls).
PEER_LIMIT = 10.0


class _TimedOut(Exception):
    """A peer ran past :data:`PEER_LIMIT` on one reply."""


def _alarm(signum: int, frame: Any) -> None:
    raise _TimedOut


def _agrees(fn: Callable[[], list[Call]], expected: list[Call]) -> bool:
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, PEER_LIMIT)
    try:
        return fn() == expected
    except _TimedOut:
        print(f"  a peer ran past {PEER_LIMIT:g} s on one reply: it does not count", flush=True)
        return False
    except Exception:  # a peer that raises on a reply does not give the same calls
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def measure(name: str, kind: str, text: str, rounds: int) -> dict[str, Any]:
    """One row: codec's and every agreeing peer's complete parse and streams of ``text``."""
    fmt = codec.get_format(name)
    tools = TOOLS if name in WITH_TOOLS else None
    peers, missing = peers_of(name, fmt, TOOLS)
    expected = codec_calls(fmt, text, tools)
    specials = special_tokens(fmt)
    by4, by_token = deltas(text, specials, size=4), deltas(text, specials, size=None)
    assert codec_stream_calls(fmt, by4, tools) == expected, "codec's stream differs from its parse"
    row: dict[str, Any] = {"format": name, "reply": kind, "bytes": len(text.encode()), "calls": len(expected)}
    row["missing"] = missing
    budget = 2.0 if len(text) < 100_000 else 6.0
    modes: dict[str, tuple[Callable[[], object], dict[str, Callable[[], object]]]] = {
        "parse": (lambda: fmt.parse(text, tools=tools), {}),
        "stream4": (lambda: codec_stream_calls(fmt, by4, tools), {}),
        "stream_token": (lambda: codec_stream_calls(fmt, by_token, tools), {}),
    }
    differs: dict[str, list[str]] = {mode: [] for mode in modes}
    for peer in peers:
        jobs = {
            "parse": lambda p=peer: p.parse(text),
            "stream4": lambda p=peer: p.stream(by4),
            "stream_token": lambda p=peer: p.stream(by_token),
        }
        for mode, job in jobs.items():
            if _agrees(job, expected):
                modes[mode][1][peer.label] = job
            else:
                differs[mode].append(peer.label)
    for mode, (ours, theirs) in modes.items():
        times = interleaved({"codec": ours, **theirs}, rounds, budget)
        row[mode] = {key: value * 1e6 for key, value in times.items()}
        row[mode + "_differs"] = differs[mode]
    return row


def ratio(cell: dict[str, float]) -> tuple[float | None, str | None]:
    """codec / the fastest agreeing peer, and that peer (None where no peer agrees)."""
    others = {k: v for k, v in cell.items() if k != "codec"}
    if not others:
        return None, None
    fastest = min(others, key=others.__getitem__)
    return cell["codec"] / others[fastest], fastest


def _us(value: float) -> str:
    return f"{value:.1f} µs" if value < 1000 else f"{value / 1000:.2f} ms"


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| format | reply | bytes | calls | mode | codec | fastest agreeing peer | codec/peer | differ |",
        "|---|---|---:|---:|---|---:|---|---:|---|",
    ]
    for r in rows:
        for mode in ("parse", "stream4", "stream_token"):
            cell = r[mode]
            value, fastest = ratio(cell)
            peer = f"{fastest} {_us(cell[fastest])}" if fastest else "-"
            shown = "-" if value is None else f"{value:.2f}× {'ok' if value <= 1 else 'over'}"
            cells = [r["format"], r["reply"], str(r["bytes"]), str(r["calls"]), mode, _us(cell["codec"]), peer]
            cells += [shown, ", ".join(r[mode + "_differs"]) or "-"]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", action="append", choices=sorted(PEERS), help="default: all")
    parser.add_argument("--quick", action="store_true", help="no 200 KB replies")
    parser.add_argument("--rounds", type=int, default=30, help="interleaved rounds per measure (default 30)")
    args = parser.parse_args()
    rows = []
    for name in args.format or sorted(PEERS):
        fmt = codec.get_format(name)
        fmt.parse(make_reply(fmt, 500))  # build the grammar before timing
        for kind, text in shapes(fmt, args.quick):
            row = measure(name, kind, text, args.rounds)
            rows.append(row)
            for line in table([row])[2:]:
                print(line, flush=True)
            for reason in row["missing"]:
                print(f"  left out: {reason}", flush=True)
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "peers.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    (out / "peers.md").write_text("\n".join(table(rows)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
