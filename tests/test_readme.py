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
        exec(compile(block, "<README.md>", "exec"), namespace)


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


DOCS = sorted((ROOT / "docs").glob("*.md"))


def _anchor(title: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def test_docs_examples_run() -> None:
    """Each page of ``docs/`` runs its examples in order, after README's, with README's names."""
    namespace: dict[str, object] = {"__name__": "readme"}
    for block in blocks("python"):
        exec(compile(block, "<README.md>", "exec"), namespace)
    ran = 0
    for page in DOCS:
        text = page.read_text(encoding="utf-8")
        scope = dict(namespace)
        for block in re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL):
            exec(compile(block, f"<{page.relative_to(ROOT)}>", "exec"), scope)
            ran += 1
    assert ran >= 5


def test_contents_lists_every_section() -> None:
    """README's Contents links every section after it, in order, and every link leads somewhere."""
    contents = README.split("\n## Contents\n", 1)[1].split("\n## ", 1)[0]
    linked = re.findall(r"^ *- \[[^\]]+\]\(#([\w-]+)\)$", contents, flags=re.M)
    after = README.split("\n## Contents\n", 1)[1].split("\n## ", 1)[1]
    headings = [_anchor(title.replace("`", "")) for title in re.findall(r"^##+ (.+)$", "## " + after, flags=re.M)]
    assert linked == headings


def test_links_to_docs_lead_to_pages() -> None:
    pages = set(re.findall(r"\]\((docs/[\w.-]+\.md)\)", README))
    assert pages == {f"docs/{page.name}" for page in DOCS}
    for page in DOCS:
        for target in re.findall(r"\]\(((?!https?:|#)[^)]+)\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target.split("#")[0]).exists(), (page.name, target)


def test_the_check_example_prints_what_the_readme_shows() -> None:
    """The "Checking a template" example: its command, run in the checkout, prints the text block
    after it, exactly, and exits 1 (the template lacks a byte). An installed codec prints the
    same: a check draws no constant from the source files hypothesis deems local, which a
    checkout's are and an installed copy's are not."""
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
