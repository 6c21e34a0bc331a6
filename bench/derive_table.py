"""Derive every chat template in a folder and print the outcome table.

    python bench/derive_table.py DIR [--json]

Each ``*.jinja`` file of ``DIR`` (and each ``*.json`` tokenizer config, whose ``chat_template`` is
taken) is given to :func:`codec.derive.derive`. ``DIR/index.json``, where present, maps a file's
name to ``{"source": ..., "variables": {...}, "added_tokens": [...]}``: where the template came
from, and the template variables (``bos_token``, ``eos_token``) and special tokens a tokenizer
would give it.

For a template that derives, the calls of a few conversations the probes do not hold (two calls of
two tools; a string with quotes, a backslash, a line break and markup; an integer and a list holding
a null; a nested object and a boolean) are rendered by the template itself, and its reply (the turn
after the generation prompt, up to the stop token) is parsed back by the derived format, whole and
streamed a character at a time. A row says ``whole`` and ``streamed``: ``ok`` where every call came
back (names, and arguments compared as JSON), else what broke; a conversation the template raises on
(two calls, for a template of one call a turn) is said to be left out.

A refusal prints its reason and message; anything else raised is a crash, printed as such (none is
expected: a template codec cannot fit is refused with a reason).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from codec.derive import BEFORE_LATER, DeriveError, _common_prefix, _snap_cut, config_tokens, derive
from codec.errors import RenderError
from codec.format import Format

_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {
                "type": "object",
                "properties": {"word": {"type": "string"}, "lang": {"type": "string"}},
                "required": ["word"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "store",
            "description": "Store values.",
            "parameters": {
                "type": "object",
                "properties": {
                    "note": {"type": "string"},
                    "n": {"type": "integer"},
                    "values": {"type": "array"},
                    "settings": {"type": "object"},
                    "on": {"type": "boolean"},
                },
            },
        },
    },
]


def _call(index: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"chk{index:06d}", "type": "function", "function": {"name": name, "arguments": arguments}}


#: The replies read back: none of them a probe of codec.derive.
CHECKS: dict[str, list[dict[str, Any]]] = {
    "two tools": [_call(0, "lookup", {"word": "tide", "lang": "en"}), _call(1, "store", {"n": 7})],
    "a hard string": [_call(0, "store", {"note": 'a "quote", a \\ and\nline two <i>x</i> & {y}'})],
    "numbers and null": [_call(0, "store", {"n": -15, "values": [None, 2.5, "z"]})],
    "nested": [_call(0, "store", {"settings": {"mode": "fast", "limits": {"max": 3}}, "on": False})],
}

_USER = {"role": "user", "content": "Please do it."}


def _reply(fmt: Format, calls: list[dict[str, Any]]) -> tuple[str, str]:
    """The template's reply for ``calls`` and the prompt it follows."""
    message = {"role": "assistant", "content": "", "tool_calls": calls}
    generation = fmt.render([_USER], _TOOLS, add_generation_prompt=True)
    if BEFORE_LATER in fmt.derivation.notes:  # (the turn as written before a later user's message)
        later = {"role": "user", "content": "And then?"}
        alone, both = fmt.render([_USER], _TOOLS), fmt.render([_USER, later], _TOOLS)
        opener = both[len(_common_prefix([alone, both])) : both.index(later["content"])]
        history = fmt.render([_USER, message, later], _TOOLS)
        history = history[: history.rindex(opener + later["content"])]
    else:
        history = fmt.render([_USER, message], _TOOLS)
    if history.startswith(generation):
        prompt = generation
    else:  # what both write, cut back to the start of a marker it would end inside (as derive cuts it)
        shared = next((i for i, (a, b) in enumerate(zip(generation, history, strict=False)) if a != b), len(generation))
        spec = fmt.wire
        markers = tuple(m for m in (*spec.block, *spec.call, *(spec.reasoning or ()), spec.stop) if len(m) > 1)
        prompt = _snap_cut(generation, shared, markers)
        prompt = _snap_cut(generation, len(prompt), ())  # (and of a built-in format's marker: <think>)
    reply = history[len(prompt) :]
    stop = fmt.stop_token
    at = reply.rfind(stop) if stop else -1
    reply = reply[: at + len(stop)] if at >= 0 else reply.rstrip() + stop
    return reply, prompt


def _wanted(calls: list[dict[str, Any]]) -> str:
    return json.dumps([(c["function"]["name"], c["function"]["arguments"]) for c in calls], sort_keys=True)


def _got(result: Any) -> str:
    return json.dumps([(c.function.name, c.function.arguments) for c in result.tool_calls], sort_keys=True)


def read_back(fmt: Format) -> tuple[str, str]:
    """``(whole, streamed)``: "ok" where every check's calls read back, else the first that did not."""
    whole_problem = stream_problem = ""
    skipped = []
    for check, calls in CHECKS.items():
        try:
            reply, prompt = _reply(fmt, calls)
        except RenderError as exc:  # (a template of one call a turn refuses two)
            skipped.append(f"{check} not rendered: {exc.reason}")
            continue
        wanted = _wanted(calls)
        whole = fmt.parse(reply, tools=_TOOLS, prompt=prompt)
        if not whole_problem and _got(whole) != wanted:
            whole_problem = f"{check}: {_got(whole)} from {reply!r}"
        stream = fmt.stream(tools=_TOOLS, prompt=prompt)
        for char in reply:
            stream.feed(char)
        stream.close()
        if not stream_problem and _got(stream.result) != wanted:
            stream_problem = f"{check}: {_got(stream.result)} from {reply!r}"
    said = f" ({'; '.join(skipped)})" if skipped else ""
    return (whole_problem or "ok") + said, (stream_problem or "ok") + said


def _summary(fmt: Format) -> str:
    spec = fmt.wire
    shown = {name: getattr(spec, name) for name in spec.differences() if name not in ("special_tokens",)}
    parts = ", ".join(f"{k}={v!r}" for k, v in shown.items())
    whose = f" (spec of {', '.join(fmt.derivation.builtins)})" if fmt.derivation.builtins else ""
    return f"{spec.family}{whose}: {parts}"


def outcome(path: Path, entry: dict[str, Any]) -> dict[str, Any]:
    """One row: the file's name and source, and what deriving it gave."""
    row: dict[str, Any] = {"name": path.stem, "source": entry.get("source", "")}
    text = path.read_text(encoding="utf-8")
    variables = dict(entry.get("variables") or {})
    tokens = list(entry.get("added_tokens") or [])
    if path.suffix == ".json":
        config = json.loads(text)
        text = config["chat_template"]
        text = text if isinstance(text, str) else text[0]["template"]
        found_tokens, found_variables = config_tokens(config)
        tokens, variables = tokens or found_tokens, {**found_variables, **variables}
    try:
        fmt = derive(text, added_tokens=tokens or None, **variables)
    except DeriveError as exc:
        row.update(outcome="refused", reason=exc.reason, detail=str(exc))
        return row
    except Exception as exc:  # a crash is what this table exists to show: report it, do not stop
        row.update(outcome="crash", reason=type(exc).__name__, detail=str(exc))
        return row
    row.update(outcome="derived", detail=_summary(fmt))
    try:
        row["whole"], row["streamed"] = read_back(fmt)
    except Exception as exc:  # as above: a crash while reading back is a row, not the end of the table
        row["whole"] = row["streamed"] = f"crash: {type(exc).__name__}: {exc}"
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    index_path = args.folder / "index.json"
    index = json.loads(index_path.read_text(encoding="utf-8")) if index_path.exists() else {}
    files = sorted(p for p in args.folder.iterdir() if p.suffix in (".jinja", ".json") and p.name != "index.json")
    rows = [outcome(path, index.get(path.name, {})) for path in files]
    if args.json:
        json.dump(rows, sys.stdout, indent=1, ensure_ascii=False)
        print()
        return 0
    print("| template | source | outcome | whole | streamed |")
    print("|---|---|---|---|---|")
    for row in rows:
        if row["outcome"] == "derived":
            said = f"derived: {row['detail']}"
        else:
            said = f"{row['outcome']} ({row['reason']}): {row['detail']}"
        cells = [row["name"], row["source"], said, row.get("whole", ""), row.get("streamed", "")]
        print("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", "\\n") for c in cells) + " |")
    derived = [r for r in rows if r["outcome"] == "derived"]
    read = [r for r in derived if r["whole"].startswith("ok") and r["streamed"].startswith("ok")]
    crashed = [r for r in rows if r["outcome"] == "crash"]
    print(f"\n{len(derived)} of {len(rows)} derive; {len(read)} of them read every check back whole and streamed;")
    print(f"{len(rows) - len(derived) - len(crashed)} refused; {len(crashed)} crashed")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
