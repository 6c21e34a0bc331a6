"""The compiled-grammar cache: lark's analysis of a grammar (its LALR parse table, terminals and
rules) kept as data in a folder private to the user, so that a new process loads it in a few
milliseconds instead of analysing the grammar again.

What is read back is JSON and nothing else: lark's own plain-data form of its analysis
(``Lark.memo_serialize``, read back by ``Lark.load`` from a dict), never a pickle, so no file in
the folder, whoever wrote it, can make loading run code. A file is read only when everything
about it says this process's own cache wrote it for this grammar:

- the folder is opened once, by descriptor, without following a link at its last component, and
  used only if it is a directory the user owns that nobody else may write to; every file is then
  opened, written and renamed relative to that descriptor, so a folder swapped for another after
  the check (through a parent others may write to) redirects nothing;
- a file is opened without following a link, and read only if it is a regular file the user owns,
  that nobody else may write to and of a bounded size;
- its first line names the cache's format, the grammar's identity (its text, options, lark's and
  Python's versions) and a SHA-256 of the JSON that follows, so a truncated, damaged or foreign
  file is never handed to lark;
- whatever still goes wrong reading one (lark refusing the data, a table that does not hold
  together) means the file is stale: the grammar is analysed again and the file replaced.

A new file is written beside its final name and renamed into place, so that processes starting
together (a test run on every core, ``convert --jobs``) never read half a file. Writing is best
effort: a read-only folder or a full disk leaves the grammar working, uncached.

This and :mod:`codec._lark` are the only modules that touch lark internals; this one reads and
writes the form ``Lark.save`` would pickle.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

import lark
from lark import Lark
from lark.exceptions import LarkError
from lark.grammar import NonTerminal, Rule, Terminal
from lark.lexer import PatternRE, PatternStr, TerminalDef
from lark.parsers.lalr_analysis import Reduce, Shift

__all__ = ["cache_dir", "cached_lark"]

#: Part of every file's first line and of its name: bump it when what a cache file holds changes.
_FORMAT = b"codec-grammar-cache 2"
#: Files larger than this are not read (nor written): a grammar's tables take some tens of KB.
_MAX_BYTES = 32 << 20
#: What reading a cache file raises when it is damaged, foreign, or written by another lark: any
#: of them means the file is stale. lark reads its data with asserts, lookups and attribute
#: accesses, so these cover what pure-Python code raises on data of the wrong shape; a
#: MemoryError is among them because what fails to allocate is this one file's data, freed as the
#: error unwinds (and the size bound keeps it small). KeyboardInterrupt and SystemExit are not.
_STALE = (
    OSError,
    ValueError,  # json.JSONDecodeError, UnicodeDecodeError, an over-long integer literal
    TypeError,
    LookupError,  # KeyError, IndexError
    AttributeError,
    AssertionError,
    ArithmeticError,  # OverflowError
    RecursionError,  # nesting deeper than the decoder's stack
    MemoryError,
    LarkError,
    re.error,
)
#: Where the cached data holds the lexer class the caller passes in options (not JSON).
_LEXER = "<the lexer option>"
#: Open flags the cache needs; a platform without them (or without ``dir_fd``) has no cache.
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_SUPPORTED = bool(_DIRECTORY and _NOFOLLOW) and {os.open, os.rename, os.unlink} <= os.supports_dir_fd


def _folder_path() -> Path | None:
    """The configured folder, made if missing (None: the cache is off or the folder can't be made)."""
    configured = os.environ.get("CODEC_CACHE_DIR")
    if configured is not None:
        if not configured:
            return None
        folder = Path(configured)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = Path(base) / "codec"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return folder


def _private(info: os.stat_result) -> bool:
    """Whether what ``info`` describes is the user's own and nobody else may write to it."""
    return info.st_uid == os.getuid() and not info.st_mode & 0o022


def _open_folder(folder: Path) -> int | None:
    """A descriptor of ``folder`` where it is a private directory of the user's, else None."""
    if not _SUPPORTED:
        return None
    try:
        fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        info = None
    if info is None or not stat.S_ISDIR(info.st_mode) or not _private(info):
        os.close(fd)
        return None
    return fd


def cache_dir() -> Path | None:
    """The folder compiled grammars are kept in, or None where there is none to use.

    ``CODEC_CACHE_DIR`` names it (empty: no cache); otherwise ``$XDG_CACHE_HOME/codec`` or
    ``~/.cache/codec``. It is made private to the user (mode 0700); a folder that is a symbolic
    link, that another user owns or that others may write to is not used."""
    folder = _folder_path()
    fd = None if folder is None else _open_folder(folder)
    if fd is None:
        return None
    os.close(fd)
    return folder


def cached_lark(source: str, options: dict[str, Any]) -> Lark:
    """``Lark(source, **options)`` for an LALR grammar, its analysis loaded from the cache folder
    where an earlier process left it (see the module's docstring for what is trusted)."""
    folder = _folder_path()
    folder_fd = None if folder is None else _open_folder(folder)
    if folder_fd is None:
        return Lark(source, **options)
    try:
        identity = repr(
            (_FORMAT, source, sorted(map(str, options.items())), lark.__version__, sys.version_info[:3])
        ).encode()
        key = hashlib.sha256(identity).hexdigest()
        name = f"grammar-{key[:32]}.tables"
        head = _FORMAT + b" " + key.encode() + b" "
        try:
            return _load(_read(folder_fd, name), head, options)
        except _STALE:  # missing or stale (FileNotFoundError is an OSError): analysed and written
            pass
        parser = Lark(source, **options)
        _write(folder_fd, name, head, parser, options)
        return parser
    finally:
        os.close(folder_fd)


def _read(folder_fd: int, name: str) -> bytes:
    """The bytes of ``name`` in the folder, where it is a private regular file of bounded size."""
    fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, dir_fd=folder_fd)
    with open(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not _private(info) or info.st_size > _MAX_BYTES:
            raise PermissionError(f"{name}: not a private regular file of at most {_MAX_BYTES} bytes")
        return file.read(info.st_size + 1)  # a file that changed since fails its checksum


def _load(blob: bytes, head: bytes, options: dict[str, Any]) -> Lark:
    """The Lark a cache file holds, checked against its first line; raises one of ``_STALE``."""
    first, _, body = blob.partition(b"\n")
    if first != head + hashlib.sha256(body).hexdigest().encode():
        raise ValueError("not this grammar's cache file, or damaged")
    loaded: Lark = Lark.load(_decode(json.loads(body), options["lexer"]))
    _check(loaded, options["start"])
    return loaded


def _write(folder_fd: int, name: str, head: bytes, parser: Lark, options: dict[str, Any]) -> None:
    """``parser``'s analysis written to ``name`` in the folder, where what a reader would load
    from the file is the same analysis."""
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    try:
        plain = {"data": _with_lexer(data, options["lexer"], _LEXER), "memo": memo}
        body = json.dumps(plain, separators=(",", ":"), allow_nan=False).encode()
        blob = head + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
        # JSON turns integer keys into strings and tuples into lists: _decode restores those this
        # lark writes. Where another would write some other shape, the file would load as
        # something else than what was analysed, so none is written.
        if len(blob) > _MAX_BYTES or _load(blob, head, options).memo_serialize([TerminalDef, Rule]) != (data, memo):
            return
    except _STALE:  # a value JSON cannot hold, or data lark does not read back: uncached
        return
    partial = f".{name}.{os.getpid()}.{threading.get_ident()}"
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=folder_fd)
        with open(fd, "wb") as file:
            file.write(blob)
        os.replace(partial, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except OSError:  # a full disk or a read-only folder: the grammar still works, uncached
        with suppress(OSError):
            os.unlink(partial, dir_fd=folder_fd)


def _with_lexer(data: dict[str, Any], old: Any, new: Any) -> dict[str, Any]:
    """lark's serialised data with the lexer option ``old`` (where it names one) put as ``new``;
    the dicts changed are copies (lark serialises its live options dict as it is)."""
    frontend = data["parser"]
    conf = frontend["lexer_conf"]
    if data["options"]["lexer"] != old or conf["lexer_type"] != old:
        raise ValueError("the lexer option is not the caller's")
    return {
        **data,
        "options": {**data["options"], "lexer": new},
        "parser": {**frontend, "lexer_conf": {**conf, "lexer_type": new}},
    }


def _decode(plain: Any, lexer: Any) -> dict[str, Any]:
    """What ``Lark.load`` reads, from what JSON made of ``Lark.memo_serialize``'s data: the
    integer keys lark looks up restored (memo entries, parse states; the parse table's token
    numbers stay strings on both sides of their lookup), rule options' ``empty_indices`` a tuple
    again, and the lexer option put back."""
    memo = {int(key): entry for key, entry in plain["memo"].items()}
    for entry in memo.values():
        rule_options = entry.get("options")
        if isinstance(rule_options, dict) and isinstance(rule_options.get("empty_indices"), list):
            rule_options["empty_indices"] = tuple(rule_options["empty_indices"])
    data = _with_lexer(plain["data"], _LEXER, lexer)
    table = data["parser"]["parser"]
    table["states"] = {int(state): row for state, row in table["states"].items()}
    return {"data": data, "memo": memo}


def _check(loaded: Lark, start: list[str] | str) -> None:
    """Raises ValueError unless ``loaded``'s rules, terminals and parse table are of the types
    and hold together as an analysis does (what :class:`codec._lark.CompiledGrammar` reads)."""
    rules = {id(rule) for rule in loaded.rules}
    for rule in loaded.rules:
        if not (
            isinstance(rule, Rule)
            and isinstance(rule.origin, NonTerminal)
            and type(rule.origin.name) is str
            and type(rule.expansion) is list
            and all(isinstance(s, (Terminal, NonTerminal)) and type(s.name) is str for s in rule.expansion)
            and (rule.alias is None or type(rule.alias) is str)
        ):
            raise ValueError(f"a malformed rule: {rule!r}")
    for terminal in loaded.terminals:
        if not (
            isinstance(terminal, TerminalDef)
            and type(terminal.name) is str
            and isinstance(terminal.pattern, (PatternStr, PatternRE))
            and type(terminal.pattern.value) is str
        ):
            raise ValueError(f"a malformed terminal: {terminal!r}")
    if not all(type(name) is str for name in loaded.lexer_conf.ignore):
        raise ValueError("a malformed %ignore")
    table = loaded.parser.parser._parse_table
    states = table.states
    for row in states.values():
        for symbol, (action, arg) in row.items():
            if type(symbol) is not str or not (
                (action is Shift and arg in states) or (action is Reduce and id(arg) in rules)
            ):
                raise ValueError(f"a malformed parse table entry: {symbol!r}")
    for starts in (table.start_states, table.end_states):
        if not all(starts.get(name) in states for name in ([start] if isinstance(start, str) else start)):
            raise ValueError("a start symbol without its state")
