"""README.md's examples are executed, in order, in one namespace: what it shows is what runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


def test_python_examples_run() -> None:
    code = blocks("python")
    assert len(code) >= 3
    namespace: dict[str, object] = {"__name__": "readme"}
    for block in code:
        exec(compile(block, "README.md", "exec"), namespace)


def test_two_setup_commands() -> None:
    setup = [b.strip() for b in blocks("sh") if b.strip().startswith("pip install")]
    assert setup == [
        "pip install . && codec parse -f hermes examples/replies/hermes.txt",
        'pip install ".[test]" && pytest',
    ]


def test_the_issue_kinds_table_is_the_closed_set() -> None:
    """README's "Issue kinds" table lists every kind, with its severity, scope and meaning, as
    ``codec.issues.KINDS`` says (and nothing else)."""
    from codec.issues import KINDS

    rows = re.findall(r"^\| `([a-z_]+)` \| (note|repaired|damaged) \| (a call|the text) \| (.+) \|$", README, re.M)
    table = {
        kind: (severity, "call" if scope == "a call" else "text", meaning) for kind, severity, scope, meaning in rows
    }
    assert len(rows) == len(table)
    assert table == {kind: (info.severity, info.scope, info.meaning) for kind, info in KINDS.items()}
