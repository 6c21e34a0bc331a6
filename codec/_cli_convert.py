"""The machinery of ``codec convert``: a JSON-lines dataset converted line by line.

The input is read in chunks of whole lines (:class:`_Chunk`), converted in this process or by
``--jobs`` processes (:class:`_Converter`, a few chunks read ahead of what is written), and written
in input order; rejected lines go to the rejects file (:class:`_Rejects`), progress to a terminal
(:class:`_Progress`). Before anything is written, the files are checked to be distinct and the
first record to be one the options can convert.

The command's arguments are declared with the others in :mod:`codec.cli`, whose input helpers and
:class:`~codec.cli.CLIError` this module uses; the parser imports :func:`_cmd_convert` from here.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import multiprocessing
import os
import signal
import stat
import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import IO, Any, NamedTuple

from codec.cli import CLIError, _dumps_line, _Named, _open_binary, _parse_var, _path_file, _stream_file
from codec.convert import (
    Converted,
    MissingSource,
    Output,
    Rejected,
    convert_lines,
    is_blank,
    lone_surrogate,
    read_json,
)
from codec.errors import CodecError
from codec.formats import get_format

#: A chunk (the unit of work of a --jobs process) ends at this many records or bytes, whichever comes first.
_CHUNK_LINES = 256
_CHUNK_BYTES = 1 << 20
#: Chunks handed to the processes and not yet written, per process: what bounds the memory in use.
_IN_FLIGHT_PER_JOB = 3
_PROGRESS_INTERVAL = 0.2  # seconds
#: The reason of a {"text": ...} record when there is no --from (codec.convert says "a source format").
_NEEDS_FROM = 'a "text" record needs --from, the format to decode it with'


class _Converter(NamedTuple):
    """How ``codec convert`` converts its lines (format names, so that it goes to --jobs processes as is)."""

    source: str | None  # the format that decodes {"text": ...} records
    target: str | None  # the format that renders (None with --output messages)
    output: Output  # "text" or "messages"
    variables: dict[str, Any]  # --var: template variables that override the record's

    def lines(self, chunk: _Chunk) -> list[_Outcome]:
        """The outcome of each record of ``chunk``, in order (blank lines have none)."""
        results = convert_lines(
            chunk.lines,
            to=get_format(self.target) if self.target is not None else None,
            source=get_format(self.source) if self.source is not None else None,
            output=self.output,
            variables=self.variables,
            start=chunk.start,
        )
        return [_outcome(result) for result in results]


class _Chunk(NamedTuple):
    start: int  # the 1-based number of its first line
    lines: list[bytes]  # with their line breaks, blank lines included
    size: int  # bytes of its records (blank lines not counted)


class _Outcome(NamedTuple):
    number: int
    output: bytes | None  # the output line (UTF-8, with its line break), or None when the line was rejected
    error: str | None


def _outcome(result: Converted | Rejected) -> _Outcome:
    """A line's outcome as the main process writes it: the JSON line is made here, in the --jobs process,
    and a record that cannot be written as a line of UTF-8 JSON is rejected like one that cannot be converted."""
    if isinstance(result, Rejected):
        return _Outcome(result.line, None, _NEEDS_FROM if isinstance(result.error, MissingSource) else result.reason)
    try:
        line = json.dumps(result.record, ensure_ascii=False, allow_nan=False) + "\n"
        return _Outcome(result.line, line.encode("utf-8"), None)
    except UnicodeEncodeError as exc:
        error = f"the output holds {lone_surrogate(exc.object[exc.start])}, which is no text UTF-8 can write"
    except Exception as exc:  # NaN or Infinity, nesting too deep to write, a bug: still only this line
        error = f"the output cannot be written as JSON: {type(exc).__name__}: {exc}"
    return _Outcome(result.line, None, error)


_worker_converter: _Converter | None = None


def _init_worker(converter: _Converter) -> None:
    """Set up a --jobs process: it keeps the converter, and leaves Ctrl-C to the main process."""
    global _worker_converter
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_converter = converter


def _convert_chunk_in_worker(chunk: _Chunk) -> list[_Outcome]:
    assert _worker_converter is not None
    return _worker_converter.lines(chunk)


def _chunks(stream: Iterable[bytes], blank: list[int]) -> Iterator[_Chunk]:
    """The lines of ``stream``, cut into chunks of whole lines, read as they are needed.
    Blank lines (no record) are counted in ``blank[0]``."""
    lines: list[bytes] = []
    start = records = size = 0
    for number, raw in enumerate(stream, start=1):
        if not lines:
            start = number
        lines.append(raw)
        if is_blank(raw):
            blank[0] += 1
            continue
        records += 1
        size += len(raw)
        if records >= _CHUNK_LINES or size >= _CHUNK_BYTES:
            yield _Chunk(start, lines, size)
            lines, records, size = [], 0, 0
    if records:
        yield _Chunk(start, lines, size)


def _converted(chunks: Iterator[_Chunk], converter: _Converter, jobs: int) -> Iterator[tuple[_Chunk, list[_Outcome]]]:
    """Each chunk with its outcomes, in input order. With several jobs, at most
    ``_IN_FLIGHT_PER_JOB * jobs`` chunks are read ahead (``Pool.imap`` would read the whole input)."""
    if jobs == 1:
        for chunk in chunks:
            yield chunk, converter.lines(chunk)
        return
    with multiprocessing.Pool(jobs, initializer=_init_worker, initargs=(converter,)) as pool:
        pending: deque[tuple[_Chunk, Any]] = deque()
        for chunk in chunks:
            pending.append((chunk, pool.apply_async(_convert_chunk_in_worker, (chunk,))))
            if len(pending) >= _IN_FLIGHT_PER_JOB * jobs:
                done, result = pending.popleft()
                yield done, result.get()
        while pending:
            done, result = pending.popleft()
            yield done, result.get()


class _Progress:
    """A one-line progress report on standard error, rewritten in place; only when it is a terminal."""

    def __init__(self, total_bytes: int | None) -> None:
        self.enabled = sys.stderr.isatty()
        self.total = total_bytes
        self.start = self.last = time.monotonic()
        self.shown = False

    def update(self, lines: int, rejected: int, done_bytes: int) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < _PROGRESS_INTERVAL:
            return
        self.last = now
        rate = lines / max(now - self.start, 1e-9)
        share = f" {100 * done_bytes / self.total:5.1f}%" if self.total else ""
        sys.stderr.write(f"\r{share} {lines:,} lines, {rejected:,} rejected, {rate:,.0f} lines/s ")
        sys.stderr.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.shown = False


class _Rejects:
    """Where rejected lines go: a JSON-lines file, created when the first line is rejected (a run that
    rejects nothing leaves no file), or standard error when the output is standard output."""

    def __init__(self, path: str | None, progress: _Progress) -> None:
        self.path = path
        self.progress = progress
        self.file: IO[bytes] | None = None
        self.count = 0

    def add(self, number: int, raw: bytes, error: str) -> None:
        self.count += 1
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        # The reason may quote the record: a lone surrogate in it is written as its JSON escape.
        line = _dumps_line({"line": number, "error": error, "input": text}).encode("utf-8", "backslashreplace")
        if self.path is None:
            self.progress.clear()
            sys.stderr.write(line.decode("utf-8"))
            return
        if self.file is None:
            self.file = open(self.path, "wb")  # noqa: SIM115
        self.file.write(line)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        elif self.path is not None and isinstance(_path_file(self.path), tuple):
            # A rejects file an earlier run left (a regular file): what is there must be this run's
            # rejects, and it has none; a run that rejects a line writes over it all the same.
            os.unlink(self.path)


def _check_writable(path: str) -> None:
    """Refuse, before any line is converted, a rejects file that could not be created when a line is rejected."""
    target = path if os.path.exists(path) else (os.path.dirname(path) or ".")
    if not os.access(target, os.W_OK):
        raise CLIError(f"{path}: cannot be written (permission denied)")


def _first_record(stream: IO[bytes]) -> tuple[list[bytes], Any]:
    """The lines of ``stream`` up to its first record (the blank lines before it, then it), and that
    record's JSON value (None when it is no JSON value: the conversion rejects it as usual)."""
    lines = []
    for raw in stream:
        lines.append(raw)
        if is_blank(raw):
            continue
        try:
            return lines, read_json(raw.decode("utf-8"))
        except (CodecError, UnicodeDecodeError):
            return lines, None
    return lines, None


def _needs_source(record: Any) -> bool:
    """Whether ``record`` is a rendered conversation (``{"text": ...}``), which only --from can decode."""
    return isinstance(record, dict) and "text" in record and "messages" not in record


def _input_size(stream: IO[bytes]) -> int | None:
    """The size of a regular input file (for the progress percentage), else None."""
    try:
        info = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _cmd_convert(args: argparse.Namespace) -> int:
    converter = _converter(args)
    to_stdout = args.output_file == "-"
    rejects_path: str | None = args.rejects
    if rejects_path is None and not to_stdout:
        rejects_path = args.output_file + ".rejects.jsonl"
    _check_distinct(args.input, args.output_file, rejects_path)
    if rejects_path is not None:
        _check_writable(rejects_path)
    stream, name, owned = _open_binary(args.input)
    try:
        # Text records without --from would all be rejected: the first record says what the input
        # holds, so that mistake is refused before anything is written (a dataset mixing both kinds
        # still converts, its text records rejected one by one).
        head, first = _first_record(stream)
        if converter.source is None and _needs_source(first):
            raise CLIError(
                f'{name}: line {len(head)} is a {{"text": ...}} record: give --from, the format to decode it with'
            )
        progress = _Progress(_input_size(stream))
        out: Any = _stdout_binary() if to_stdout else open(args.output_file, "wb")  # noqa: SIM115
        rejects = _Rejects(rejects_path, progress)
        try:
            lines = itertools.chain(head, stream)
            converted, blank = _write_converted(lines, out, rejects, converter, args.jobs, progress)
        finally:
            rejects.close()
            if not to_stdout:
                out.close()
    finally:
        if owned:
            stream.close()
    progress.clear()
    summary = f"converted {converted}, rejected {rejects.count}"
    if blank[0]:
        summary += f", skipped {blank[0]} blank line{'s' if blank[0] != 1 else ''}"
    if rejects.count and rejects_path is not None:
        summary += f" (see {rejects_path})"
    print(summary, file=sys.stderr)
    return 1 if args.strict and rejects.count else 0


def _converter(args: argparse.Namespace) -> _Converter:
    """The converter for the command line, with the format names checked before any line is read."""
    source = get_format(args.source).name if args.source is not None else None
    if args.output == "text" and args.target is None:
        raise CLIError("--to is required (or --output messages to write the decoded messages)")
    if args.output == "messages" and args.target is not None:
        raise CLIError("--to is not used with --output messages, which writes the decoded messages")
    target = get_format(args.target).name if args.target is not None else None
    return _Converter(source, target, args.output, dict(_parse_var(item) for item in args.var))


def _check_distinct(source: str, output: str, rejects: str | None) -> None:
    """Refuse, before anything is opened for writing, to write over the input or to write the output
    and the rejects to one file. Files are compared, not names: a hard or symbolic link to the input
    is the input, and so are standard input, output and error when they are redirected to it."""
    if source == "-":
        read: _Named = ("<stdin>", _stream_file(sys.stdin))
    else:
        file = _path_file(source)
        read = (source, None if isinstance(file, str) else file)  # a missing input: opening it says so
    out: _Named = ("<stdout>", _stream_file(sys.stdout)) if output == "-" else (output, _path_file(output))
    pairs = [(read, out)]
    if rejects is None:  # standard error: it may share the output's terminal or log, not be the input
        pairs.append((read, ("<stderr>", _stream_file(sys.stderr))))
    else:
        rejected: _Named = (rejects, _path_file(rejects))
        pairs += [(read, rejected), (out, rejected)]
    for (first, file), (second, other) in pairs:
        if file is not None and file == other:
            raise CLIError(f"{second}: is also {first}; the input, output and rejects must be different files")


def _stdout_binary() -> Any:
    out: Any = sys.stdout
    return getattr(out, "buffer", None) or out


def _write_converted(
    stream: Iterable[bytes], out: Any, rejects: _Rejects, converter: _Converter, jobs: int, progress: _Progress
) -> tuple[int, list[int]]:
    """Convert every line of ``stream`` to ``out`` (bytes, or text for a text-only stdout), in order."""
    binary = not isinstance(out, io.TextIOBase)
    blank = [0]
    converted = done_bytes = 0
    for chunk, outcomes in _converted(_chunks(stream, blank), converter, jobs):
        lines = [outcome.output for outcome in outcomes if outcome.output is not None]
        data = b"".join(lines)
        out.write(data if binary else data.decode("utf-8"))
        converted += len(lines)
        for outcome in outcomes:
            if outcome.error is not None:
                rejects.add(outcome.number, chunk.lines[outcome.number - chunk.start], outcome.error)
        done_bytes += chunk.size
        progress.update(converted + rejects.count, rejects.count, done_bytes)
    out.flush()
    return converted, blank
