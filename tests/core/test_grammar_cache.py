"""The compiled-grammar cache: where it lives, what it refuses, and that a warm one skips lark's analysis."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import lark
import pytest

import codec
from codec._lark import CompiledGrammar, cache_dir


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("CODEC_CACHE_DIR", str(where))
    return where


def _analyses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that grows by one each time lark analyses a grammar (rather than loading one)."""
    seen: list[str] = []
    real = lark.Lark._build_parser

    def counting(self: lark.Lark) -> object:
        seen.append("analysed")
        return real(self)

    monkeypatch.setattr(lark.Lark, "_build_parser", counting)
    return seen


def test_the_folder_is_made_private_to_the_user(folder: Path) -> None:
    assert cache_dir() == folder
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0


def test_an_empty_setting_turns_the_cache_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEC_CACHE_DIR", "")
    assert cache_dir() is None


def test_the_default_folder_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "codec"


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="file modes are POSIX")
def test_a_folder_others_may_write_to_is_not_read(folder: Path) -> None:
    folder.mkdir()
    folder.chmod(0o777)
    assert cache_dir() is None


#: hermes' grammar as its family fills it in, read once, outside any test's cache folder.
HERMES_SOURCE = codec.get_format("hermes").syntax().grammar.source


def _hermes_source() -> str:
    return HERMES_SOURCE


def test_a_warm_cache_loads_the_tables_instead_of_analysing(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _hermes_source()
    analysed = _analyses(monkeypatch)
    cold = CompiledGrammar(source, cache=True)
    assert analysed == ["analysed"]
    assert [p.suffix for p in folder.iterdir()] == [".pickle"]  # no half-written file left behind
    warm = CompiledGrammar(source, cache=True)
    assert analysed == ["analysed"]  # loaded, not analysed again
    assert warm.states.keys() == cold.states.keys()
    assert {s: sorted(row) for s, row in warm.states.items()} == {s: sorted(row) for s, row in cold.states.items()}
    assert warm.terminals.keys() == cold.terminals.keys() and warm.ignored == cold.ignored
    assert warm.rule_names == cold.rule_names


def test_a_changed_grammar_never_reads_the_old_file(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _hermes_source()
    analysed = _analyses(monkeypatch)
    CompiledGrammar(source, cache=True)
    CompiledGrammar(source + "\n// an edit\n", cache=True)
    assert analysed == ["analysed", "analysed"]
    assert len(list(folder.iterdir())) == 2


def test_a_damaged_file_is_analysed_again_and_replaced(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _hermes_source()
    CompiledGrammar(source, cache=True)
    (path,) = folder.iterdir()
    path.write_bytes(b"not a pickle")
    analysed = _analyses(monkeypatch)
    grammar = CompiledGrammar(source, cache=True)
    assert analysed == ["analysed"] and grammar.states
    assert path.read_bytes() != b"not a pickle"
    CompiledGrammar(source, cache=True)
    assert analysed == ["analysed"]


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_folder_still_compiles(folder: Path) -> None:
    folder.mkdir(mode=0o500)
    try:
        assert CompiledGrammar(_hermes_source(), cache=True).states
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_a_folder_that_cannot_be_made_leaves_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("CODEC_CACHE_DIR", str(blocker / "cache"))
    assert cache_dir() is None
    assert CompiledGrammar(_hermes_source(), cache=True).states


def test_formats_parse_the_same_from_a_warm_cache(folder: Path) -> None:
    """Every format's grammar, loaded from the cache in a new process, reads its golden replies
    as the tables analysed in this one do (the suite itself runs on whichever it finds)."""
    import subprocess

    golden = Path(__file__).resolve().parents[1] / "golden"
    script = (
        "import json, sys, codec\n"
        "from pathlib import Path\n"
        "out = {}\n"
        "for name in codec.formats():\n"
        "    fmt = codec.get_format(name)\n"
        "    for case in sorted(Path(sys.argv[1], name).glob('*.txt'))[:12]:\n"
        "        r = fmt.parse(case.read_text(encoding='utf-8'))\n"
        "        out[f'{name}/{case.stem}'] = r.model_dump(mode='json')\n"
        "print(json.dumps(out, sort_keys=True))\n"
    )
    env = {**os.environ, "CODEC_CACHE_DIR": str(folder), "PYTHONPATH": str(Path(codec.__file__).parents[1])}
    runs = [
        subprocess.run([sys.executable, "-c", script, str(golden)], env=env, capture_output=True, text=True, check=True)
        for _ in range(2)  # the first analyses and writes, the second loads
    ]
    assert runs[0].stdout == runs[1].stdout and len(runs[0].stdout) > 1000
    assert len(list(folder.glob("*.pickle"))) >= 5
