"""The machinery of ``codec convert``: a JSON-lines dataset converted line by line.

The input is read in chunks of whole lines (:class:`_Chunk`), converted in this process or by
``--jobs`` processes (:class:`_Converter`, a few chunks read ahead of what is written), and written
in input order; rejected lines go to the rejects file (:class:`_Rejects`), progress to a terminal
(:class:`_Progress`). Before anything is written, the files are checked to be distinct and
writable and the first record to be one the options can convert. The output and the rejects file
are written beside where they go and renamed there after the last line (:class:`_Destination`):
a run that stops (a full disk, Ctrl-C, SIGTERM) leaves what was there before, and says so.

The command's arguments are declared with the others in :mod:`codec.cli`, whose input helpers and
:class:`~codec.cli.CLIError` this module uses; the parser imports :func:`_cmd_convert` from here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import multiprocessing
import os
import signal
import stat
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Generator, Iterable, Iterator
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
    """Set up a --jobs process: it keeps the converter, leaves Ctrl-C to the main process, and ends
    quietly on SIGTERM (the main process's handler, which a forked process inherits, is not its own)."""
    global _worker_converter
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):  # blocked by the main process while it forked (see _pool)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    _worker_converter = converter


def _pool(jobs: int, converter: _Converter) -> Any:
    """The --jobs processes. SIGTERM is blocked while they are forked: the main process's handler
    raises, and raised inside fork's own hooks (in either process) it is only printed, ignored, and
    the run hangs. A signal that arrives meanwhile is delivered once the forks are done (in each
    worker, once its initializer has made SIGTERM end it)."""
    masking = hasattr(signal, "pthread_sigmask")
    if masking:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        return multiprocessing.Pool(jobs, initializer=_init_worker, initargs=(converter,))
    finally:
        if masking:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


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


def _converted(
    chunks: Iterator[_Chunk], converter: _Converter, jobs: int
) -> Generator[tuple[_Chunk, list[_Outcome]], None, None]:
    """Each chunk with its outcomes, in input order. With several jobs, at most
    ``_IN_FLIGHT_PER_JOB * jobs`` chunks are read ahead (``Pool.imap`` would read the whole input)."""
    if jobs == 1:
        for chunk in chunks:
            yield chunk, converter.lines(chunk)
        return
    with _pool(jobs, converter) as pool:
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


class _Destination:
    """A file the run writes: a temporary file beside it, renamed over it by :meth:`commit` after the
    last line, so that a run that stops leaves the file as it was (or absent). What is not a regular
    file (``/dev/null``, a pipe) is written in place. A symbolic link's file is the one written."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.target = os.path.realpath(path)
        self.temporary: str | None = None
        self.existed = os.path.exists(self.target)
        self.file: IO[bytes] | None = None
        self.committed = False

    def open(self) -> None:
        try:
            info: os.stat_result | None = os.stat(self.target)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            self.file = open(self.path, "wb")  # noqa: SIM115
            return
        folder, name = os.path.split(self.target)
        descriptor, self.temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
        self.file = os.fdopen(descriptor, "wb")
        # The mode a file opened for writing would have: the one it has, or the umask's.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.temporary, stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~umask)

    def write(self, data: bytes) -> None:
        assert self.file is not None
        try:
            self.file.write(data)
        except OSError as exc:
            raise self._named(exc) from None

    def flush(self) -> None:
        """Nothing to do: :meth:`commit` flushes."""

    def commit(self) -> None:
        """Put what was written in place: flushed, synced to the disk, renamed over the file."""
        assert self.file is not None
        try:
            self.file.flush()
            if self.temporary is not None:
                os.fsync(self.file.fileno())
            self.file.close()
            if self.temporary is not None:
                os.replace(self.temporary, self.target)
        except OSError as exc:
            raise self._named(exc) from None
        self.temporary = None
        self.committed = True

    def discard(self) -> None:
        """Drop what was written: the temporary file goes (a file written in place is only closed)."""
        if self.file is not None:
            with contextlib.suppress(OSError):  # closing flushes: the disk may still be full
                self.file.close()
        if self.temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.temporary)
            self.temporary = None

    def _named(self, exc: OSError) -> OSError:
        """``exc`` naming the file as the user named it (a write's error names none)."""
        return OSError(exc.errno, exc.strerror or str(exc), self.path)


class _Rejects:
    """Where rejected lines go: a JSON-lines file, created when the first line is rejected and put in
    place when the run completes (a run that rejects nothing leaves no file), or a standard stream:
    standard error when the output is standard output, standard output with ``--rejects -``."""

    def __init__(self, path: str | None, progress: _Progress) -> None:
        self.path = path
        self.progress = progress
        self.destination: _Destination | None = None
        self.count = 0

    def add(self, number: int, raw: bytes, error: str) -> None:
        self.count += 1
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        # The reason may quote the record: a lone surrogate in it is written as its JSON escape.
        line = _dumps_line({"line": number, "error": error, "input": text}).encode("utf-8", "backslashreplace")
        if self.path is None or self.path == "-":
            self.progress.clear()
            stream = sys.stderr if self.path is None else sys.stdout
            stream.write(line.decode("utf-8"))
            return
        if self.destination is None:
            self.destination = _Destination(self.path)
            self.destination.open()
        self.destination.write(line)

    @property
    def pending(self) -> bool:
        """Whether rejected lines wait to be put in their file."""
        return self.destination is not None and not self.destination.committed

    def commit(self) -> None:
        if self.destination is not None:
            self.destination.commit()
        elif self.path not in (None, "-") and isinstance(_path_file(self.path), tuple):
            # A rejects file an earlier run left (a regular file): what is there must be this run's
            # rejects, and it has none; a run that rejects a line writes over it all the same.
            os.unlink(self.path)

    def discard(self) -> None:
        if self.destination is not None:
            self.destination.discard()


def _check_writable(path: str) -> None:
    """Refuse, before any line is converted, a file that could not be written: in a folder that does
    not exist, a folder itself, or where the run may not create the file it renames into place."""
    target = os.path.realpath(path)
    folder = os.path.dirname(path) or "."
    if os.path.isdir(target):
        raise CLIError(f"{path}: is a folder; give the path of a file to write")
    if not os.path.isdir(os.path.dirname(target)):
        raise CLIError(f"{path}: cannot be written: there is no folder {folder}")
    in_place = os.path.exists(target) and not os.path.isfile(target)  # a device, a pipe
    if in_place and not os.access(target, os.W_OK):
        raise CLIError(f"{path}: cannot be written (permission denied)")
    if not in_place and not os.access(os.path.dirname(target), os.W_OK | os.X_OK):
        raise CLIError(f"{path}: cannot be written: the folder {folder} is not writable (permission denied)")


class _Stopped(BaseException):
    """SIGTERM, raised in the main process so that a run stops the way Ctrl-C stops it (a BaseException,
    like KeyboardInterrupt, so that nothing that rejects a line takes it for the line's error)."""


#: The process whose run :func:`_stopping_on_sigterm` stops (a --jobs process forked from it
#: inherits the handler until its initializer replaces it).
_stopping_pid: int | None = None


def _stop(signum: int, frame: Any) -> None:
    if os.getpid() != _stopping_pid:
        # A --jobs process the signal reached between its fork and its initializer: raising there
        # would print "Exception ignored" from the fork's own hooks. It ends as SIGTERM would end it.
        os._exit(128 + signum)
    raise _Stopped


@contextlib.contextmanager
def _stopping_on_sigterm() -> Iterator[None]:
    """SIGTERM raises :class:`_Stopped` while the run converts (where a handler can be set: the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _stopping_pid
    _stopping_pid = os.getpid()
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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


class _Tally:
    """What the run has done so far: lines converted, blank lines skipped (in a list, for :func:`_chunks`)."""

    def __init__(self) -> None:
        self.converted = 0
        self.blank = [0]

    def summary(self, rejected: int) -> str:
        text = f"converted {self.converted}, rejected {rejected}"
        if self.blank[0]:
            text += f", skipped {self.blank[0]} blank line{'s' if self.blank[0] != 1 else ''}"
        return text


def _cmd_convert(args: argparse.Namespace) -> int:
    converter = _converter(args)
    to_stdout = args.output_file == "-"
    rejects_path: str | None = args.rejects
    if rejects_path == "-" and to_stdout:
        raise CLIError(
            "--rejects -: standard output is already the output (without --rejects, the rejected lines go to "
            "standard error)"
        )
    if rejects_path is None and not to_stdout:
        rejects_path = args.output_file + ".rejects.jsonl"
    _check_distinct(args.input, args.output_file, rejects_path)
    if not to_stdout:
        _check_writable(args.output_file)
    if rejects_path is not None and rejects_path != "-":
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
        rejects = _Rejects(rejects_path, progress)
        out = None if to_stdout else _Destination(args.output_file)
        tally = _Tally()
        with _stopping_on_sigterm():
            try:
                if out is not None:
                    out.open()
                lines = itertools.chain(head, stream)
                _write_converted(lines, out or _stdout_binary(), rejects, converter, args.jobs, progress, tally)
                rejects.commit()  # the rejects first: once the output is in place, the run is complete
                if out is not None:
                    out.commit()
            except BaseException as exc:
                stopped = _stopped(out, rejects)
                rejects.discard()
                if out is not None:
                    out.discard()
                progress.clear()
                print(f"stopped: {tally.summary(rejects.count)}; {stopped}", file=sys.stderr)
                if isinstance(exc, _Stopped):
                    return 128 + signal.SIGTERM
                raise
    finally:
        if owned:
            stream.close()
    progress.clear()
    summary = tally.summary(rejects.count)
    if rejects.count and rejects_path is not None and rejects_path != "-":
        summary += f" (see {rejects_path})"
    print(summary, file=sys.stderr)
    return 1 if args.strict and rejects.count else 0


def _stopped(out: _Destination | None, rejects: _Rejects) -> str:
    """What a run that stops leaves, in words."""
    if out is None:
        return "the output written is incomplete"
    if out.committed:
        return f"{out.path} was written"
    if out.temporary is None and out.file is not None:  # written in place
        return f"{out.path} is incomplete"
    kept = f"the {out.path} that was there is left as it was" if out.existed else "nothing was written"
    if rejects.pending:
        return f"neither {out.path} nor {rejects.path} was written ({kept})"
    return f"{out.path} was not written ({kept})"


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
        rejected: _Named = ("<stdout>", _stream_file(sys.stdout)) if rejects == "-" else (rejects, _path_file(rejects))
        pairs += [(read, rejected), (out, rejected)]
    for (first, file), (second, other) in pairs:
        if file is not None and file == other:
            raise CLIError(f"{second}: is also {first}; the input, output and rejects must be different files")


def _stdout_binary() -> Any:
    out: Any = sys.stdout
    return getattr(out, "buffer", None) or out


def _write_converted(
    stream: Iterable[bytes],
    out: Any,
    rejects: _Rejects,
    converter: _Converter,
    jobs: int,
    progress: _Progress,
    tally: _Tally,
) -> None:
    """Convert every line of ``stream`` to ``out`` (bytes, or text for a text-only stdout), in order,
    counting in ``tally``. However it ends, the --jobs processes are gone when it returns or raises."""
    binary = not isinstance(out, io.TextIOBase)
    done_bytes = 0
    with contextlib.closing(_converted(_chunks(stream, tally.blank), converter, jobs)) as converted:
        for chunk, outcomes in converted:
            lines = [outcome.output for outcome in outcomes if outcome.output is not None]
            data = b"".join(lines)
            out.write(data if binary else data.decode("utf-8"))
            tally.converted += len(lines)
            for outcome in outcomes:
                if outcome.error is not None:
                    rejects.add(outcome.number, chunk.lines[outcome.number - chunk.start], outcome.error)
            done_bytes += chunk.size
            progress.update(tally.converted + rejects.count, rejects.count, done_bytes)
    out.flush()
