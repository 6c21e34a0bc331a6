"""The compiled-grammar cache: where it lives, what it refuses, and that a warm one skips lark's analysis."""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import lark
import pytest
from harness import examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec._grammar_cache import cache_dir
from codec._lark import CompiledGrammar


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
    assert [p.suffix for p in folder.iterdir()] == [".tables"]  # no half-written file left behind
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
    path.write_bytes(b"not a cache file")
    analysed = _analyses(monkeypatch)
    grammar = CompiledGrammar(source, cache=True)
    assert analysed == ["analysed"] and grammar.states
    assert path.read_bytes() != b"not a cache file"
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
    assert len(list(folder.glob("*.tables"))) >= 5


# ----------------------------------------------------------------------------- what is trusted

#: A grammar small enough that analysing it again costs next to nothing.
TINY = 'start: items\nitems: items item | item\nitem: WORD | NUMBER\nWORD: /[a-z]+/\nNUMBER: /[0-9]+/\n%ignore " "\n'
#: A user id no one on the test machine has.
OTHER = 54321
needs_root = pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() != 0, reason="planting another user's files needs root (os.chown)"
)


class _Payload:
    """What a planted pickle would run on loading: it makes the folder ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (self.marker,))


def _cache_file(folder: Path, source: str = TINY) -> Path:
    """The file ``source``'s tables are kept in, written by analysing it once."""
    CompiledGrammar(source, cache=True)
    (path,) = [p for p in folder.iterdir() if p.suffix == ".tables"]
    return path


def _plant(path: Path, marker: Path) -> None:
    import pickle

    path.write_bytes(pickle.dumps(_Payload(marker)))


def _works(analysed: list[str], expected: list[str]) -> None:
    """The tiny grammar compiles and reads a text, with lark's analysis run ``expected`` times."""
    grammar = CompiledGrammar(TINY, cache=True)
    assert grammar.rule_names == {"start", "items", "item"} and {"WORD", "NUMBER"} <= grammar.terminals.keys()
    assert analysed == expected


def test_the_file_is_json_after_a_line_naming_it(folder: Path) -> None:
    import json

    path = _cache_file(folder)
    first, _, body = path.read_bytes().partition(b"\n")
    assert first.startswith(b"codec-grammar-cache 2 ") and len(first.split()) == 4
    assert set(json.loads(body)) == {"data", "memo"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_analysis_loaded_is_the_analysis_made(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lark's data of a grammar loaded from the cache is exactly that of the grammar analysed:
    every key, value and type (a tuple JSON made a list, an integer key it made a string)."""
    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    analysed = _analyses(monkeypatch)
    for source in (TINY, _hermes_source()):
        made = CompiledGrammar(source, cache=True).lark
        loaded = CompiledGrammar(source, cache=True).lark
        assert loaded is not made and made.memo_serialize([TerminalDef, Rule]) == loaded.memo_serialize(
            [TerminalDef, Rule]
        )
        assert loaded.options.options == made.options.options
    assert analysed == ["analysed", "analysed"]


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="links and modes are POSIX")
def test_a_folder_that_is_a_link_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.setenv("CODEC_CACHE_DIR", str(tmp_path / "link"))
    assert cache_dir() is None
    assert CompiledGrammar(TINY, cache=True).states and list((tmp_path / "real").iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="file modes are POSIX")
def test_a_file_others_may_write_to_is_not_read(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _cache_file(folder)
    path.chmod(0o666)
    analysed = _analyses(monkeypatch)
    _works(analysed, ["analysed"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # replaced by a private one
    _works(analysed, ["analysed"])


@needs_root
def test_a_file_another_user_owns_is_not_read(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _cache_file(folder)
    marker = folder.parent / "ran"
    _plant(path, marker)
    os.chown(path, OTHER, OTHER)
    analysed = _analyses(monkeypatch)
    _works(analysed, ["analysed"])
    assert not marker.exists() and path.stat().st_uid == os.getuid()
    _works(analysed, ["analysed"])  # the replacement is read


@needs_root
def test_a_file_that_links_into_another_users_folder_is_not_read(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _cache_file(folder)
    theirs = folder.parent / "theirs"
    theirs.mkdir()
    marker = folder.parent / "ran"
    _plant(theirs / path.name, marker)
    os.chown(theirs / path.name, OTHER, OTHER)
    os.chown(theirs, OTHER, OTHER)
    path.unlink()
    path.symlink_to(theirs / path.name)
    analysed = _analyses(monkeypatch)
    _works(analysed, ["analysed"])
    assert not marker.exists() and not path.is_symlink()  # the link, not its target, was replaced
    assert (theirs / path.name).stat().st_uid == OTHER and len(list(theirs.iterdir())) == 1
    _works(analysed, ["analysed"])


@pytest.fixture
def swap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """A folder under a parent everyone may write to, and what another user does there: moves it
    aside and puts their own in its place, holding a pickle with a payload under the cache file's
    name (``swap()`` does it; the folder moved aside is ``cache.away``)."""
    parent = tmp_path / "shared"
    parent.mkdir()
    parent.chmod(0o777)
    monkeypatch.setenv("CODEC_CACHE_DIR", str(parent / "cache"))
    name = _cache_file(parent / "cache").name
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    _plant(theirs / name, tmp_path / "ran")
    os.chown(theirs / name, OTHER, OTHER)
    os.chown(theirs, OTHER, OTHER)

    def run() -> None:
        os.rename(parent / "cache", parent / "cache.away")
        os.rename(theirs, parent / "cache")

    return run


def _swapped_safely(tmp_path: Path) -> None:
    """The payload never ran, and nothing was written into the other user's folder."""
    theirs = tmp_path / "shared" / "cache"
    assert not (tmp_path / "ran").exists()
    assert [(p.stat().st_uid, p.suffix) for p in theirs.iterdir()] == [(OTHER, ".tables")]


@needs_root
def test_a_folder_swapped_before_it_is_opened_is_not_used(
    tmp_path: Path, swap: Callable[[], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder is checked through the descriptor it is opened by: one swapped in after its
    path was resolved (and made) is the other user's, so the cache is off for this grammar."""
    from codec import _grammar_cache

    resolve = _grammar_cache._folder_path

    def resolve_then_swap() -> Path | None:
        folder = resolve()
        swap()
        return folder

    monkeypatch.setattr(_grammar_cache, "_folder_path", resolve_then_swap)
    analysed = _analyses(monkeypatch)
    _works(analysed, ["analysed"])
    _swapped_safely(tmp_path)


@needs_root
def test_a_folder_swapped_after_it_is_opened_redirects_nothing(
    tmp_path: Path, swap: Callable[[], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once opened, the folder is used by descriptor: a swap before the file is read still reads
    the user's own file (from the folder moved aside), and one during the analysis still writes
    there."""
    from codec import _grammar_cache

    read = _grammar_cache._read

    def swap_then_read(folder_fd: int, name: str) -> bytes:
        swap()
        return read(folder_fd, name)

    monkeypatch.setattr(_grammar_cache, "_read", swap_then_read)
    analysed = _analyses(monkeypatch)
    _works(analysed, [])  # loaded, from the user's file
    _swapped_safely(tmp_path)


@needs_root
def test_a_folder_swapped_during_the_analysis_gets_nothing(
    tmp_path: Path, swap: Callable[[], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    away = tmp_path / "shared" / "cache.away"
    real = lark.Lark._build_parser

    def swapping(self: lark.Lark) -> object:
        swap()
        return real(self)

    monkeypatch.setattr(lark.Lark, "_build_parser", swapping)
    CompiledGrammar(TINY + "// another grammar\n", cache=True)
    _swapped_safely(tmp_path)
    assert len(list(away.glob("*.tables"))) == 2  # the new file went where the folder was opened


def test_a_planted_pickle_in_the_users_own_folder_never_runs(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading reads JSON, nothing else: not even a file in the user's own folder can run code."""
    path = _cache_file(folder)
    marker = folder.parent / "ran"
    _plant(path, marker)
    analysed = _analyses(monkeypatch)
    _works(analysed, ["analysed"])
    assert not marker.exists()
    _works(analysed, ["analysed"])


# ----------------------------------------------------------------------------- damaged files


def _seal(path: Path, body: bytes) -> None:
    """``body`` written to ``path`` after the first line a sound file would have for it."""
    import hashlib

    head = path.read_bytes().partition(b"\n")[0].rsplit(b" ", 1)[0]
    path.write_bytes(head + b" " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def _good_body(path: Path) -> bytes:
    return path.read_bytes().partition(b"\n")[2]


#: Bodies of damaged files, each as a function of a sound one.
DAMAGED: dict[str, Callable[[bytes], bytes]] = {
    "empty": lambda good: b"",
    "truncated": lambda good: good[: len(good) // 2],
    "one byte changed": lambda good: good[:100] + bytes([good[100] ^ 1]) + good[101:],
    "not UTF-8": lambda good: b"\xff\xfe" + good,
    "a list": lambda good: b"[]",
    "a string": lambda good: b'"x"',
    "no memo, no data": lambda good: b'{"memo": {}, "data": {}}',
    "memo of the wrong type": lambda good: b'{"memo": [1], "data": {}}',
    "a memo key not a number": lambda good: good.replace(b'"memo":{"0"', b'"memo":{"zero"', 1),
    "a huge integer": lambda good: b'{"memo": {"0": ' + b"9" * 5000 + b'}, "data": {}}',
    "a huge float": lambda good: b'{"memo": {"0": 1e999999}, "data": {}}',
    "deep nesting": lambda good: b'{"memo": ' + b"[" * 100_000 + b"]" * 100_000 + b', "data": {}}',
    "an unknown class": lambda good: good.replace(b'"__type__":"Rule"', b'"__type__":"os.system"', 1),
    "a rule of the wrong type": lambda good: good.replace(b'"__type__":"NonTerminal"', b'"__type__":"Terminal"', 1),
    "states of the wrong type": lambda good: good.replace(b'"states":{', b'"states":[{', 1).replace(
        b'},"start_states"', b'}],"start_states"', 1
    ),
    "a shift to no state": lambda good: re.sub(rb"\[0,\d+\]", b"[0,9999]", good, count=1),
    "a reduce by no rule": lambda good: re.sub(rb'\[1,\{"@":\d+\}\]', b'[1,{"@":9999}]', good, count=1),
    "a reduce by a terminal": lambda good: re.sub(rb'\[1,\{"@":\d+\}\]', b'[1,{"@":0}]', good, count=1),
}


@pytest.mark.parametrize("sealed", [False, True], ids=["as it is", "with a sound first line"])
@pytest.mark.parametrize("damage", DAMAGED)
def test_a_damaged_file_of_any_kind_is_analysed_again_and_replaced(
    folder: Path, monkeypatch: pytest.MonkeyPatch, damage: str, sealed: bool
) -> None:
    """Whatever a file holds, a grammar compiles: the file is analysed again and replaced, and
    the next compile reads the replacement (sealed, the damage gets past the checksum to lark)."""
    path = _cache_file(folder)
    good = _good_body(path)
    body = DAMAGED[damage](good)
    assert body != good
    if sealed:
        _seal(path, body)
    else:
        path.write_bytes(body)
    damaged = path.read_bytes()
    analysed = _analyses(monkeypatch)
    _works(analysed, ["analysed"])
    assert path.read_bytes() != damaged
    _works(analysed, ["analysed"])  # the replacement is read


def _paths(value: object, at: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every place in a JSON value, as the keys and indexes that lead to it."""
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*at, index))
    return found


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=5,
)


@pytest.fixture
def sound(folder: Path) -> tuple[Path, bytes]:
    """The tiny grammar's cache file and its sound JSON (made once for all of a property's examples)."""
    path = _cache_file(folder)
    return path, _good_body(path)


@examples(60)
@given(where=st.integers(min_value=0), value=JSON_VALUES)
def test_a_file_changed_anywhere_never_breaks_the_compile(sound: tuple[Path, bytes], where: int, value: object) -> None:
    """Any one value of a sound file replaced by any JSON value, behind a sound first line: the
    grammar compiles (loaded, or analysed again with the file replaced) and the file reads back."""
    import json

    path, body = sound
    tree = json.loads(body)
    places = _paths(tree)
    at = places[where % len(places)]
    if at:
        parent = tree
        for key in at[:-1]:
            parent = parent[key]
        parent[at[-1]] = value
    else:
        tree = value
    _seal(path, json.dumps(tree).encode())
    grammar = CompiledGrammar(TINY, cache=True)
    assert grammar.states and grammar.start_state in grammar.states
    assert CompiledGrammar(TINY, cache=True).states


def test_a_damaged_file_leaves_the_next_process_working(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``codec parse`` with each grammar file damaged as issue reports showed (lark's assert on
    empty data, a pickle that asks for an absurd allocation) exits 0, and the files are replaced."""
    import subprocess

    reply = Path(__file__).resolve().parents[2] / "examples" / "replies" / "hermes.txt"
    CompiledGrammar(_hermes_source(), cache=True)
    (path,) = folder.iterdir()
    _seal(path, b'{"memo": {}, "data": {}}')
    damaged = path.read_bytes()
    env = {**os.environ, "CODEC_CACHE_DIR": str(folder), "PYTHONPATH": str(Path(codec.__file__).parents[1])}
    run = subprocess.run(
        [sys.executable, "-m", "codec", "parse", "-f", "hermes", str(reply)], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert path.read_bytes() != damaged
    analysed = _analyses(monkeypatch)
    CompiledGrammar(_hermes_source(), cache=True)
    assert analysed == []  # the replacement is sound
