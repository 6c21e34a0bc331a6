"""README.md's examples are executed, in order, in one namespace: what it shows is what runs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
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


def test_cli_examples_run() -> None:
    """Every `codec ...` line of the CLI section whose input files exist runs and exits 0."""
    (section,) = [b for b in blocks("sh") if b.startswith("codec formats")]
    ran = 0
    for line in section.splitlines():
        command = shlex.split(line.split("#")[0])
        files = [arg for arg in command if arg.endswith((".json", ".jsonl", ".txt"))]
        if not command or not all((ROOT / f).exists() for f in files):
            continue
        proc = subprocess.run(
            [sys.executable, "-m", "codec", *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, (line, proc.stderr)
        assert proc.stdout
        ran += 1
    assert ran >= 4


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


def test_the_check_example_prints_what_the_readme_shows() -> None:
    """The "Checking a template" example: its command, run in the checkout, prints exactly the text
    block after it, and exits 1 (the template lacks a byte)."""
    section = README[README.index("## Checking a template") :]
    command = re.search(r"```sh\n(codec check [^\n]*)\n```", section)
    shown = re.search(r"```text\n(.*?)```", section, flags=re.DOTALL)
    assert command is not None and shown is not None
    proc = subprocess.run(
        [sys.executable, "-m", "codec", *shlex.split(command.group(1))[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (proc.returncode, proc.stderr) == (1, "")
    assert proc.stdout == shown.group(1)
