"""README's "Command line" block: every ``codec ...`` line in it runs as written, on the files in
``examples/``, and exits 0.

Each line runs in bash from a temporary copy of the repository's ``examples/`` (so that outputs
such as ``converted.jsonl`` land there), with ``codec`` standing for ``python -m codec`` of this
checkout: redirections and pipes a line may hold work as the shell reads them, and ``$TMPDIR``
is that copy's folder. Lines added to the
block later are picked up by themselves.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def command_block() -> list[str]:
    """The ``codec`` lines of the sh block of README's "Command line" section, comments and all."""
    section = README.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None, 'README\'s "Command line" section has no sh block'
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert all(line.startswith("codec ") for line in lines), "every line of the block is a codec command"
    return lines


LINES = command_block()


def test_the_block_shows_every_command() -> None:
    from codec.cli import build_parser

    commands = {shlex.split(line, comments=True)[1] for line in LINES}
    subparsers = build_parser()._subparsers
    assert subparsers is not None
    (action,) = [a for a in subparsers._group_actions if getattr(a, "choices", None)]
    assert commands == set(action.choices)


@pytest.mark.parametrize("line", LINES, ids=[f"{n}: {line.split('#')[0].strip()}" for n, line in enumerate(LINES)])
def test_the_line_runs(line: str, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    words = shlex.split(line, comments=True)
    named = [word for word in words if "/" in word or word.endswith((".json", ".jsonl", ".txt", ".jinja"))]
    missing = [word for word in named if word.startswith("examples/") and not (tmp_path / word).exists()]
    assert not missing, f"{line!r} names files that examples/ lacks: {missing}"
    before = set(tmp_path.rglob("*"))
    # (TMPDIR: a line that writes under "${TMPDIR:-/tmp}", out of the checkout, writes here.)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "TMPDIR": str(tmp_path),
    }
    script = f'codec() {{ {shlex.quote(sys.executable)} -m codec "$@"; }}\n{line}\n'
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (line, proc.stderr)
    assert "codec: error" not in proc.stderr, (line, proc.stderr)
    made = set(tmp_path.rglob("*")) - before
    assert proc.stdout or made, f"{line!r} wrote nothing"
