"""The ``codec`` command: list formats, render a conversation to a prompt, parse a reply.

::

    codec formats
    codec render -f hermes conversation.json            # {"messages": [...], "tools": [...]} or [...]
    codec render -f hermes --tools tools.json --generation-prompt messages.json
    codec parse -f hermes --tools tools.json reply.txt  # the OpenAI assistant message (+ finish_reason) as JSON
    codec parse -f hermes --stream < reply.txt          # chat.completion.chunk JSON lines
    codec parse -f hermes --stream --api responses < reply.txt   # Responses API stream events, one per line
    codec detect tokenizer_config.json                  # the format of a chat template (or --reply: of a reply)
    codec decode -f hermes prompt.txt                   # the conversation a prompt renders, as render's JSON
    codec convert --from hermes --to gemma4 IN.jsonl OUT.jsonl   # a dataset, line by line (see its --help)
    codec check tokenizer_config.json                   # the template, the parser and the grammar agree
    codec derive tokenizer_config.json                  # the reply syntax of a template no format is written for

Files may be ``-`` or left out to read standard input. Replies and prompts are read byte-exact
(UTF-8, no newline translation, no stripping), and ``render`` writes the prompt's bytes with
nothing added. Exit status: 0 success, 1 a strict parse failed (or ``detect`` recognized nothing,
and wrote ``no known format``, or ``convert --strict`` rejected a line), 2 bad input or usage, 130
interrupted (143: ``convert`` stopped by SIGTERM); ``derive`` exits 1 where it refuses a template.
Every error is one ``codec: error: ...`` line on standard error.

The machinery of ``convert`` (chunks, --jobs processes, the rejects file, progress) is
:mod:`codec._cli_convert`; its arguments are declared here, with the other commands'.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import os
import stat
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import IO, Any, NoReturn

import jinja2
from pydantic import ValidationError

from codec.convert import (
    RESERVED_VARIABLES,
    NotJSON,
    RenderInput,
    checked_items,
    checked_json,
    decoded,
    lone_surrogate,
    messages_record,
    read_json,
    record_conversation,
    validation_line,
)
from codec.derive import Derivation, config_tokens
from codec.detect import TemplateDetection, detect_reply, detect_template
from codec.errors import CodecError, ParseError, RenderError, RenderWarning
from codec.format import Format
from codec.formats import formats, get_format
from codec.literals import json_text
from codec.models import Event, Issue, Message, ParseResult, Tool
from codec.openai import DEFAULT_MODEL, REASONING_FIELDS, ChatChunks, ResponsesEvents, finish_reason, reasoning_as

PROG = "codec"
#: What ``codec detect`` writes when it recognizes no format.
NO_FORMAT = "no known format"

_READ_SIZE = 1 << 16


class CLIError(Exception):
    """Bad input or usage: reported as one line, exit status 2."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``codec: error: ...``) instead of usage + message."""

    def error(self, message: str) -> NoReturn:
        hint = f" (see '{self.prog} --help')"
        raise CLIError(message + hint)


# --------------------------------------------------------------------------- input


def _open_binary(path: str | None) -> tuple[IO[bytes], str, bool]:
    """The bytes of ``path`` (``None`` or ``-``: stdin), its display name, and whether to close it.

    Refuses (CLIError) an input that is also standard output (``codec ... f >> f``): what codec
    writes would land in what it reads."""
    if path is None or path == "-":
        stdin: Any = sys.stdin
        buffer = getattr(stdin, "buffer", None)
        if buffer is None:  # a text-only stdin (tests, embedders): encode what it gives
            data = stdin.read()
            return io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data), "<stdin>", True
        _check_not_stdout(buffer, "<stdin>")
        return buffer, "<stdin>", False
    stream = open(path, "rb")  # noqa: SIM115
    try:
        _check_not_stdout(stream, path)
    except CLIError:
        stream.close()
        raise
    return stream, path, True


# --------------------------------------------------------------------------- files that are one file


def _stream_file(stream: Any) -> tuple[int, int] | None:
    """The (device, inode) of the regular file open as ``stream``; None for anything else (a
    terminal, a pipe, /dev/null, a stream with no file) since writing those destroys nothing."""
    try:
        info = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


#: A file as the user named it, and what it is (see _path_file).
_Named = tuple[str, tuple[int, int] | str | None]


def _path_file(path: str) -> tuple[int, int] | str | None:
    """What ``path`` names: the (device, inode) of a regular file (symbolic links followed, so a
    hard or symbolic link is the file it links to), the resolved path of a file still to be created
    (two such paths are one file if they resolve alike), or None for anything else."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None  # opening it will say what is wrong
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def _check_not_stdout(stream: Any, name: str) -> None:
    output = _stream_file(sys.stdout)
    if output is not None and _stream_file(stream) == output:
        raise CLIError(f"{name}: is also standard output; codec does not write over what it reads")


def _iter_text(path: str | None) -> Iterator[str]:
    """The UTF-8 text of ``path`` (or stdin) as it arrives, exactly (no newline translation)."""
    stream, name, owned = _open_binary(path)
    decoder = codecs.getincrementaldecoder("utf-8")()
    read = getattr(stream, "read1", stream.read)
    try:
        while True:
            data = read(_READ_SIZE)
            if not data:
                break
            try:
                text = decoder.decode(data)
            except UnicodeDecodeError as exc:
                raise CLIError(f"{name}: not valid UTF-8 ({exc.reason})") from None
            if text:
                yield text
        try:
            tail = decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise CLIError(f"{name}: not valid UTF-8 ({exc.reason})") from None
        if tail:
            yield tail
    finally:
        if owned:
            stream.close()


def _read_text(path: str | None) -> str:
    return "".join(_iter_text(path))


def _read_json(path: str | None) -> Any:
    """The JSON value of ``path`` (or stdin), checked as ``codec.convert.read_json`` checks every JSON
    the command reads: an error names the file."""
    return read_json(_read_text(path), "<stdin>" if path in (None, "-") else str(path))


def _load_tools(path: str) -> list[dict[str, Any]]:
    data = _read_json(path)
    source = "<stdin>" if path == "-" else path
    if isinstance(data, dict):
        if "tools" not in data:
            raise CLIError(f'{source}: expected a list of tools or an object with a "tools" key')
        data = data["tools"]
    return checked_items(data, Tool, "tools", source)


#: ``--var`` values read as Python spells them, beside JSON's ``true``, ``false`` and ``null``.
PYTHON_CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None}
#: What ``--var`` reads, for the commands' help.
VAR_HELP = (
    "VALUE is JSON if it parses, Python's True, False and None are true, false and null, "
    "anything else is a string (KEY='\"False\"' for the text False)"
)


def _parse_var(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` as the template variable it sets: VALUE as JSON, or as True, False or None
    spelled the Python way (templates are Python's), or else as the text it is."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise CLIError(f"--var expects KEY=VALUE, got {item!r}")
    if not key.isidentifier():
        raise CLIError(f"--var name {key!r} is not a valid identifier")
    if key in RESERVED_VARIABLES:
        hint = " (use --generation-prompt)" if key == "add_generation_prompt" else ""
        raise CLIError(f"--var name {key!r} is reserved{hint}")
    if raw.strip() in PYTHON_CONSTANTS:  # enable_thinking=False is meant as false, not as the string "False"
        return key, PYTHON_CONSTANTS[raw.strip()]
    try:
        value: Any = read_json(raw, f"--var {key}")
    except NotJSON:
        value = checked_json(raw, f"--var {key}")  # a string (an argument the locale could not decode is not one)
    return key, value


# --------------------------------------------------------------------------- output


def _write(text: str, *, is_json: bool = False) -> None:
    """Write ``text`` to stdout as UTF-8 bytes, exactly (no newline translation, no locale encoding).

    A lone surrogate (from a ``\\ud800`` escape in a reply's JSON, say) is no text UTF-8 can write:
    in JSON (``is_json``) it can only be inside a string, and is written as that same escape; in other
    text (a prompt) it is an error, and nothing of ``text`` is written."""
    out: Any = sys.stdout
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(text)
        return
    try:
        data = text.encode("utf-8", "backslashreplace" if is_json else "strict")
    except UnicodeEncodeError as exc:
        raise CLIError(
            f"the output holds {lone_surrogate(exc.object[exc.start])}, which is no text UTF-8 can write"
        ) from None
    out.flush()
    buffer.write(data)
    buffer.flush()


def _warn(issue: Issue) -> None:
    call = f", call {issue.call_index}" if issue.call_index is not None else ""
    print(
        f"warning: {issue.kind} ({issue.severity}{call}) at line {issue.line}, column {issue.column}: {issue.message}",
        file=sys.stderr,
    )


@contextlib.contextmanager
def _warning_lines() -> Iterator[None]:
    """codec's render warnings shown as ``warning: ...`` lines on stderr, as a parse's issues are
    (not as Python shows a warning, with a file and line of codec's code); others as Python shows them."""
    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *where: Any, **more: Any) -> None:
        if issubclass(category, RenderWarning):
            print(f"warning: {message}", file=sys.stderr)
        else:
            shown(message, category, *where, **more)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def _dumps_line(obj: Any) -> str:
    """``obj`` (plain data, made here) as a JSON line: ``json.dumps(obj, ensure_ascii=False)`` at C speed."""
    return json_text(obj) + "\n"


# --------------------------------------------------------------------------- commands


def _cmd_formats(args: argparse.Namespace) -> int:
    names = formats()
    if args.json:
        described = [
            {
                "name": name,
                "aliases": list(get_format(name).aliases),
                "summary": get_format(name).summary,
                "stop_token": get_format(name).stop_token,
                "wire": get_format(name).wire.to_json(),
            }
            for name in names
        ]
        _write(json.dumps(described, ensure_ascii=False, indent=2) + "\n")
        return 0
    width = max((len(name) for name in names), default=0)
    lines = []
    for name in names:
        fmt = get_format(name)
        summary = fmt.summary
        if fmt.aliases:
            summary += f" (aliases: {', '.join(fmt.aliases)})"
        lines.append(f"{name:<{width}}  {summary}".rstrip() + "\n")
    _write("".join(lines))
    return 0


def _cmd_render(args: argparse.Namespace) -> int:
    fmt = get_format(args.format)
    source = "<stdin>" if args.messages in (None, "-") else str(args.messages)
    data = _read_json(args.messages)
    if isinstance(data, dict):
        messages, tools, add_generation_prompt, variables = record_conversation(data, source)
    else:
        messages, tools, add_generation_prompt, variables = RenderInput(
            checked_items(data, Message, "messages", source), None, False, {}
        )
    if args.tools is not None:
        tools = _load_tools(args.tools)
    if args.generation_prompt is not None:
        add_generation_prompt = args.generation_prompt
    variables.update(_parse_var(item) for item in args.var)
    template = _read_text(args.template) if args.template is not None else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", RenderWarning)  # each message the template left out, once
            prompt = fmt.render(
                messages, tools, add_generation_prompt=add_generation_prompt, template=template, **variables
            )
    except RenderError as exc:
        if args.template is None:
            raise
        raise CLIError(f"{args.template}: {exc}") from None  # say which template failed
    _write(prompt)
    return 0


def _cmd_parse(args: argparse.Namespace) -> int:
    fmt = get_format(args.format)
    _check_shape_options(args)
    tools = _load_tools(args.tools) if args.tools is not None else None
    prompt = _read_text(args.prompt) if args.prompt is not None else None
    if args.stream:
        return _stream(fmt, args, tools, prompt)
    text = _read_text(args.reply)
    if args.api == "responses":
        # The response a Responses API server sends for the reply: a stream fed the whole reply
        # (whose result is fmt.parse's), its events' items as response.completed holds them.
        stream = fmt.stream(tools=tools, strict=args.strict, prompt=prompt)
        shapes = _responses(args)
        shapes.feed(stream.feed(text) + stream.close())
        shapes.close(stream.result)
        _report(stream.result, args.drop_damaged)
        _write(json.dumps(shapes.response, ensure_ascii=False, indent=2) + "\n", is_json=True)
        return 0
    result = fmt.parse(text, tools=tools, strict=args.strict, prompt=prompt)
    _report(result, args.drop_damaged)
    message = result.to_message(drop_damaged=args.drop_damaged).model_dump(mode="json")
    # The message as Chat Completions' choice holds it, plus that choice's finish_reason: a
    # client that reads the message keys reads what it read before.
    message = reasoning_as(message, args.reasoning_field or "reasoning_content")
    message["finish_reason"] = finish_reason(bool(message.get("tool_calls")))
    _write(json.dumps(message, ensure_ascii=False, indent=2) + "\n", is_json=True)
    return 0


def _check_shape_options(args: argparse.Namespace) -> None:
    """Refuse the output options that do not go together, before any input is read."""
    if args.api == "responses" and args.reasoning_field is not None:
        raise CLIError("--reasoning-field is for --api chat (the Responses API writes reasoning as items)")
    if args.model is not None and not (args.stream or args.api == "responses"):
        raise CLIError("--model names the model of --stream chunks or of an --api responses response")
    if args.stream and args.drop_damaged and args.api == "chat":
        raise CLIError(
            "--drop-damaged cannot be used with --stream --api chat (what was streamed is not taken back; "
            "--api responses holds the calls back instead)"
        )


def _report(result: ParseResult, drop_damaged: bool) -> None:
    """The result's issues as warnings on stderr, and the damaged calls left out, if they are."""
    for issue in result.issues:
        _warn(issue)
    for index in sorted(result.damaged_indices) if drop_damaged else ():
        name = result.tool_calls[index].function.name
        print(f"warning: damaged call {index} ({name}) left out", file=sys.stderr)


def _responses(args: argparse.Namespace) -> ResponsesEvents:
    return ResponsesEvents(model=args.model or DEFAULT_MODEL, drop_damaged=args.drop_damaged)


def _stream(fmt: Format, args: argparse.Namespace, tools: list[dict[str, Any]] | None, prompt: str | None) -> int:
    size: int = args.chunk_size
    stream = fmt.stream(tools=tools, strict=args.strict, prompt=prompt)
    responses = _responses(args) if args.api == "responses" else None
    chat = ChatChunks(model=args.model or DEFAULT_MODEL, reasoning_field=args.reasoning_field or "reasoning_content")

    def completed() -> Iterator[list[Event]]:
        """The events each read of the input completes, then those the end completes."""
        for text in _iter_text(args.reply):
            yield [event for start in range(0, len(text), size) for event in stream.feed(text[start : start + size])]
        yield stream.close()

    def shaped(events: list[Event]) -> list[dict[str, Any]]:
        return responses.feed(events) if responses is not None else chat.feed(events)

    if responses is not None:  # response.created goes out before the reply is read, as a server sends it
        _write("".join(_dumps_line(event) for event in responses.start()), is_json=True)
    # The input is fed as it arrives, cut into `size` pieces, and what each read completes is written
    # at once: `server | codec parse --stream` stays live, and a file costs a write per read, not per piece.
    for events in completed():
        lines = [_dumps_line(shape) for shape in shaped(events)]
        if lines:
            _write("".join(lines), is_json=True)
    result = stream.result
    _report(result, args.drop_damaged)
    last = responses.close(result) if responses is not None else chat.close()
    _write("".join(_dumps_line(shape) for shape in last), is_json=True)
    return 0


def _cmd_detect(args: argparse.Namespace) -> int:
    name = "<stdin>" if args.file in (None, "-") else str(args.file)
    text = _read_text(args.file)
    # Recognizing no format is an answer, written where the answers go; the exit status 1 says it
    # to a script (as grep's does: `codec detect t.jinja && ...`).
    if args.reply:
        detections = detect_reply(text)
        if args.json:
            _write(
                json_text([{"format": d.format, "confidence": d.confidence} for d in detections]) + "\n", is_json=True
            )
        else:
            _write("".join(f"{d.format} {d.confidence:.2f}\n" for d in detections) or NO_FORMAT + "\n")
        return 0 if detections else 1
    config = _tokenizer_config(text, name)
    found = detect_template(config if config is not None else text)
    # No built-in format renders the template's prompts: derive its replies' syntax, and say so.
    derived = None if found is not None and found.verified else _derivation(text, name)
    if args.json:
        empty: dict[str, Any] = {"format": None, "verified": False, "template": None, "difference": None}
        answer = empty if found is None else found.as_json()
        if found is None or not found.verified:
            answer["derived"] = None if derived is None else derived.as_json()
        _write(json_text(answer) + "\n", is_json=True)
    elif found is None:
        _write(NO_FORMAT + "\n" + _derived_line(derived))
    elif found.verified:
        _write(found.format + "\n")
    else:  # a name on its own would read as an answer: the near miss is said in words, never as a bare name
        _write(_near_miss(found) + _derived_line(derived))
    return 0 if found is not None and found.verified else 1


def _derivation(text: str, name: str) -> Derivation | None:
    """The spec :func:`codec.derive` fits to the template of ``text`` (a template or a tokenizer
    config), or None where it refuses it."""
    from codec.derive import DeriveError, derive_spec

    _, template = _check_templates(text, name)[0]
    tokens, variables = config_tokens(_tokenizer_config(text, name) or {})
    try:
        return derive_spec(template, added_tokens=tokens, **dict[str, Any](variables))
    except DeriveError:
        return None


def _derived_line(derived: Derivation | None) -> str:
    """What ``codec detect`` adds where it derived the template's reply syntax ("" where it did not)."""
    if derived is None:
        return ""
    whose = f", the spec of {', '.join(derived.builtins)}" if derived.builtins else ""
    return f"derived from the template: replies of the {derived.spec.family} family{whose} ('codec derive' prints it)\n"


def _near_miss(found: TemplateDetection) -> str:
    """What ``codec detect`` says of a template whose replies look like a format's but whose prompts differ."""
    difference = found.difference
    assert difference is not None  # an unverified detection says where it parts
    template = "" if found.template_name is None else f" (the template named {found.template_name!r})"
    return (
        f"{NO_FORMAT}{template}: the replies look like {found.format}'s, but {found.format} renders the "
        f"template's prompts differently\n"
        f"first difference for {difference.probe} ({json_text(difference.conversation)}) at {difference.where}:\n"
        f"{difference.excerpt(found.format)}\n"
    )


def _tokenizer_config(text: str, name: str) -> dict[str, Any] | None:
    """``text`` read as a tokenizer config (a JSON object), or None when it is a template's text
    (which may well start with ``{{`` or ``{%``)."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        config = read_json(text, name)
    except NotJSON:
        return None
    return config if isinstance(config, dict) else None


def _cmd_decode(args: argparse.Namespace) -> int:
    fmt = get_format(args.format)
    source = "<stdin>" if args.prompt in (None, "-") else str(args.prompt)
    conversation = decoded(fmt, _read_text(args.prompt), source)
    _write(json.dumps(messages_record(conversation), ensure_ascii=False, indent=2) + "\n", is_json=True)
    return 0


# --------------------------------------------------------------------------- parser and main


def _at_least_one(what: str, invalid: str) -> Callable[[str], int]:
    """An argparse type: an integer of at least 1, ``what`` it counts saying so in the errors
    (``invalid``: how a value that is no integer is named)."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {invalid} {value!r}") from None
        if number < 1:
            raise argparse.ArgumentTypeError(f"{what} must be at least 1, got {number}")
        return number

    return parse


_chunk_size = _at_least_one("chunk size", "chunk size")
_jobs = _at_least_one("jobs", "number of jobs")
_examples = _at_least_one("examples", "number of examples")


def _add_transcoding_commands(sub: Any, fmt_help: str) -> None:
    """The ``detect``, ``decode`` and ``convert`` subcommands."""
    # Imported here, not at the top: codec._cli_convert imports its helpers from this module, which
    # is whole by the time the parser is built.
    from codec._cli_convert import _cmd_convert

    p_detect = sub.add_parser(
        "detect",
        help="tell which format a chat template (or, with --reply, a model reply) is",
        description="Print the format a chat template is written for: a Jinja template file, or a "
        "tokenizer_config.json with a chat_template. With --reply, print the formats a model reply may be in, "
        "with a confidence, most likely first. A template's format is named only when the format renders the "
        "template's prompts exactly (on probe conversations); otherwise it prints 'no known format', with the "
        "format the replies look like and where the prompts first differ, and the exit status is 1.",
    )
    p_detect.add_argument("--reply", action="store_true", help="the file is a model reply, not a chat template")
    p_detect.add_argument(
        "--json",
        action="store_true",
        help="write the answer as JSON: {format, verified, template, difference}; with --reply, [{format, confidence}]",
    )
    p_detect.add_argument("file", nargs="?", metavar="FILE", help="the template, config or reply (default: stdin)")
    p_detect.set_defaults(handler=_cmd_detect)

    p_decode = sub.add_parser(
        "decode",
        help="decode a rendered prompt back into its messages and tools",
        description="Decode a prompt rendered in the format back into JSON: messages, tools, "
        "add_generation_prompt and variables, which 'codec render' turns into the same prompt again.",
    )
    p_decode.add_argument("-f", "--format", required=True, metavar="NAME", help=fmt_help)
    p_decode.add_argument("prompt", nargs="?", metavar="PROMPT_FILE", help="the prompt text (default: stdin)")
    p_decode.set_defaults(handler=_cmd_decode)

    p_convert = sub.add_parser(
        "convert",
        help="convert a JSON-lines dataset from one format to another",
        description='Convert a JSON-lines file line by line. Each line is a rendered conversation {"text": ...} '
        '(decoded with --from) or a messages record {"messages": [...], "tools": [...]}; it is rendered with --to '
        'and written as {"text": ...}, other keys of the record kept. Lines that cannot be converted go to the '
        'rejects file (created only then) as {"line", "error", "input"}, and a summary is printed at the end. '
        'Without --from, an input whose first record is a {"text": ...} record is refused before anything is '
        "written. OUT and the rejects file are written beside where they go and renamed there after the last line: "
        "a run that stops (a full disk, Ctrl-C, SIGTERM) leaves them as they were.",
    )
    p_convert.add_argument("--from", dest="source", metavar="NAME", help="the format of the text records")
    p_convert.add_argument("--to", dest="target", metavar="NAME", help="the format to render into")
    p_convert.add_argument(
        "--output",
        choices=("text", "messages"),
        default="text",
        help="write rendered text (default), or the decoded messages records (no --to)",
    )
    p_convert.add_argument("--jobs", type=_jobs, default=1, metavar="N", help="processes to convert with (default 1)")
    p_convert.add_argument(
        "--rejects",
        metavar="PATH",
        help="where rejected lines go (default: OUT.rejects.jsonl; stderr if OUT is -; - for stdout)",
    )
    p_convert.add_argument("--strict", action="store_true", help="exit 1 if any line was rejected")
    p_convert.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a template variable for every line; {VAR_HELP}",
    )
    p_convert.add_argument("input", metavar="IN", help="the input JSON-lines file (- for stdin)")
    p_convert.add_argument("output_file", metavar="OUT", help="the output JSON-lines file (- for stdout)")
    p_convert.set_defaults(handler=_cmd_convert)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``codec`` command."""
    parser = _ArgumentParser(
        prog=PROG,
        description="Render chat conversations into a model's exact prompt text, and parse model replies "
        "back into content, reasoning and tool calls.",
    )
    from codec import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_ArgumentParser)
    sub.required = True

    p_formats = sub.add_parser(
        "formats",
        help="list the formats",
        description="List the formats. With --json, each format's name, aliases, summary, stop token and "
        "reply syntax (its wire spec: the family and the member's parameters).",
    )
    p_formats.add_argument("--json", action="store_true", help="print JSON: one object per format, with its wire spec")
    p_formats.set_defaults(handler=_cmd_formats)

    fmt_help = "the format (see 'codec formats'; aliases work)"
    tools_help = 'a JSON list of OpenAI tools, or an object with a "tools" key'

    p_render = sub.add_parser(
        "render",
        help="render messages (and tools) into the prompt text",
        description="Render OpenAI-style messages and tools into the format's exact prompt text. "
        'The input is a JSON list of messages, or an object {"messages": [...], "tools": [...]} '
        "(other keys, such as a request's model, are ignored). The prompt is written with nothing added.",
    )
    p_render.add_argument("-f", "--format", required=True, metavar="NAME", help=fmt_help)
    p_render.add_argument("--tools", metavar="FILE", help=tools_help + " (overrides the input's tools)")
    p_render.add_argument(
        "--generation-prompt",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="end with the assistant turn's opening (add_generation_prompt; default: off)",
    )
    p_render.add_argument("--template", metavar="FILE", help="render this Jinja chat template instead")
    p_render.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a template variable (bos_token, enable_thinking...); {VAR_HELP}",
    )
    p_render.add_argument("messages", nargs="?", metavar="MESSAGES_FILE", help="the messages JSON (default: stdin)")
    p_render.set_defaults(handler=_cmd_render)

    p_parse = sub.add_parser(
        "parse",
        help="parse a model reply into an OpenAI assistant message",
        description="Parse the text a model generated into an OpenAI assistant message (JSON) with its "
        "finish_reason. Repairs are reported on stderr as warnings. With --stream, write chat.completion.chunk "
        "JSON lines instead; with --api responses, the Responses API response (or, with --stream, its events).",
    )
    p_parse.add_argument("-f", "--format", required=True, metavar="NAME", help=fmt_help)
    p_parse.add_argument("--tools", metavar="FILE", help=tools_help + " (types and checks the arguments)")
    p_parse.add_argument("--strict", action="store_true", help="fail (exit 1) on the first problem")
    p_parse.add_argument("--stream", action="store_true", help="parse incrementally and write one JSON line per event")
    p_parse.add_argument(
        "--api",
        choices=("chat", "responses"),
        default="chat",
        help="chat: the assistant message and its finish_reason, or chat.completion.chunk lines (default); "
        "responses: the Responses API response, or its stream events",
    )
    p_parse.add_argument(
        "--reasoning-field",
        choices=REASONING_FIELDS,
        help="the key reasoning is written under with --api chat (default: reasoning_content)",
    )
    p_parse.add_argument(
        "--model", metavar="NAME", help=f"the model name the chunks or the response carry (default: {DEFAULT_MODEL})"
    )
    p_parse.add_argument(
        "--drop-damaged",
        action="store_true",
        help="leave out the calls a damaged issue concerns (cut short, guessed): each is still reported "
        "(with --stream, only --api responses, which then holds the calls back to the end)",
    )
    p_parse.add_argument(
        "--chunk-size", type=_chunk_size, default=4, metavar="N", help="characters fed per step with --stream"
    )
    p_parse.add_argument(
        "--prompt",
        metavar="FILE",
        help="the rendered prompt the reply continues (e.g. one ending in <think>)",
    )
    p_parse.add_argument("reply", nargs="?", metavar="REPLY_FILE", help="the reply text (default: stdin)")
    p_parse.set_defaults(handler=_cmd_parse)
    _add_transcoding_commands(sub, fmt_help)
    _add_grammar_command(sub, fmt_help, tools_help)
    _add_check_command(sub, fmt_help)
    _add_derive_command(sub)
    return parser


def _add_grammar_command(sub: Any, fmt_help: str, tools_help: str) -> None:
    from codec.export import DIALECTS, SERVERS

    p_grammar = sub.add_parser(
        "grammar",
        help="write a grammar that only allows valid calls to the tools (constrained decoding)",
        description="Write a grammar of the format's replies that only allows calls to the given tools, with "
        "their parameter names and value types, for a server's constrained decoding (structured outputs). "
        "With --server, write the JSON fields to merge into a request to that server instead. Schema "
        "keywords the grammar leaves out are listed on stderr as a warning.",
    )
    p_grammar.add_argument("-f", "--format", required=True, metavar="NAME", help=fmt_help)
    p_grammar.add_argument("--tools", required=True, metavar="FILE", help=tools_help + " ('-': stdin)")
    p_grammar.add_argument(
        "--dialect", choices=DIALECTS, default="llguidance", help="llguidance (Lark), lark or gbnf (llama.cpp)"
    )
    p_grammar.add_argument(
        "--server",
        choices=SERVERS,
        help="write the request fields for this server (JSON) instead of the grammar; --dialect is not used",
    )
    p_grammar.add_argument(
        "--tool-choice",
        default="auto",
        metavar="CHOICE",
        help="auto: text and maybe calls; required: a call; none: text only; or a tool's name: calls of it alone",
    )
    p_grammar.add_argument("--no-parallel", action="store_true", help="at most one call")
    p_grammar.set_defaults(handler=_cmd_grammar)


def _cmd_grammar(args: argparse.Namespace) -> int:
    import warnings

    from codec.errors import GrammarWarning
    from codec.export import TOOL_CHOICES

    fmt = get_format(args.format)
    tools = _load_tools(args.tools)
    choice: Any = args.tool_choice
    if choice not in TOOL_CHOICES:  # a tool's name: OpenAI's named form
        choice = {"type": "function", "function": {"name": choice}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GrammarWarning)
        try:
            if args.server is None:
                text = fmt.grammar(tools, tool_choice=choice, parallel=not args.no_parallel, dialect=args.dialect)
            else:
                fields = fmt.request_fields(
                    tools, server=args.server, tool_choice=choice, parallel=not args.no_parallel
                )
                text = json.dumps(fields, indent=2, ensure_ascii=False) + "\n"
        except ValueError as exc:  # tool_choice="required" with no tools, a tool declared twice, an unknown name
            raise CLIError(f"{args.tools}: {exc}") from None
    for warning in caught:
        if issubclass(warning.category, GrammarWarning):
            print(f"warning: {warning.message}", file=sys.stderr)
        else:  # not codec's: as Python would show it
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    _write(text, is_json=args.server is not None)
    return 0


def _add_check_command(sub: Any, fmt_help: str) -> None:
    p_check = sub.add_parser(
        "check",
        help="check that a chat template, a format's parser and its grammar agree",
        description="Check a chat template against a format on generated conversations: render parity "
        "(the template as transformers renders it against the format's renderer), the round trip of each "
        "assistant turn with calls as the template writes it, decoding the template's prompts, and the "
        "format's grammar accepting those turns (with llguidance). Exit status 0 when all agree, 1 with "
        "the first counterexample of each check, shrunk to a small conversation, or when a check found "
        "nothing to check (NOT CHECKED, with the reason). Needs hypothesis: "
        "pip install '.[testing]' from a checkout.",
    )
    p_check.add_argument("-f", "--format", metavar="NAME", help=fmt_help + "; default: detected from the template")
    p_check.add_argument(
        "-n", "--examples", type=_examples, default=100, metavar="N", help="conversations per check (default 100)"
    )
    p_check.add_argument("--seed", type=int, default=0, metavar="S", help="the generator's seed (default 0)")
    p_check.add_argument("--json", action="store_true", help="write the report as JSON")
    p_check.add_argument(
        "template", metavar="TEMPLATE", help="a Jinja chat template, or a tokenizer_config.json ('-': stdin)"
    )
    p_check.set_defaults(handler=_cmd_check)


def _add_derive_command(sub: Any) -> None:
    p_derive = sub.add_parser(
        "derive",
        help="derive the reply syntax of a chat template no format is written for",
        description="Render a chat template on probe conversations and fit its tool calls to codec's wire "
        "families: print the wire spec found (and the built-in formats whose spec it is), or the reason "
        "the template is refused (exit status 1). A tokenizer_config.json gives its chat_template, its "
        "special tokens (the markers found are snapped to them) and its bos/eos tokens.",
    )
    p_derive.add_argument("--json", action="store_true", help="write the outcome as JSON")
    p_derive.add_argument(
        "template", metavar="TEMPLATE", help="a Jinja chat template, or a tokenizer_config.json ('-': stdin)"
    )
    p_derive.set_defaults(handler=_cmd_derive)


def _cmd_derive(args: argparse.Namespace) -> int:
    from codec.derive import DeriveError, derive_spec

    name = "<stdin>" if args.template == "-" else str(args.template)
    text = _read_text(args.template)
    label, template = _check_templates(text, name)[0]
    config = _tokenizer_config(text, name) or {}
    tokens, variables = config_tokens(config)
    try:
        found = derive_spec(template, added_tokens=tokens, **dict[str, Any](variables))
    except DeriveError as exc:
        if args.json:
            closest = None if exc.closest is None else exc.closest.to_json()
            refused = {"template": label, "derived": False, "reason": exc.reason, "message": str(exc)}
            _write(json_text({**refused, "closest": closest}) + "\n", is_json=True)
        else:
            _write(f"{label}: not derived ({exc.reason}): {exc}\n")
        return 1
    if args.json:
        _write(json_text({"template": label, "derived": True, **found.as_json()}) + "\n", is_json=True)
        return 0
    whose = f", the spec of {', '.join(found.builtins)}" if found.builtins else ""
    lines = [f"{label}: derived a {found.spec.family} spec{whose} (verified on {len(found.probes)} probes)"]
    lines += [
        f"  {key}: {json_text(value)}"
        for key, value in found.spec.to_json().items()
        if key == "family" or key in found.spec.differences()
    ]
    lines += [f"  note: {note}" for note in found.notes]
    _write("\n".join(lines) + "\n")
    return 0


def _check_templates(text: str, name: str) -> list[tuple[str, str]]:
    """The templates of a check's input, as (label, text): the template itself, or a tokenizer
    config's ``chat_template`` (a string, or named templates, ``default`` first)."""
    config = _tokenizer_config(text, name)
    if config is None:
        return [(name, text)]
    value = config.get("chat_template")
    if isinstance(value, str):
        return [(name, value)]
    if isinstance(value, list) and value and all(isinstance(e, dict) for e in value):
        named = [(e.get("name"), e.get("template")) for e in value]
        if all(isinstance(n, str) and isinstance(t, str) for n, t in named):
            ordered = sorted(named, key=lambda entry: entry[0] != "default")
            return [(f"{name} [{label}]", template) for label, template in ordered]
    if value is None:
        raise CLIError(f'{name}: the tokenizer config has no "chat_template"')
    raise CLIError(f'{name}: "chat_template" must be a string or a list of {{"name": ..., "template": ...}} objects')


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        from codec.testing.check import CHECKS, check_template
    except ModuleNotFoundError as exc:
        if exc.name != "hypothesis":
            raise
        raise CLIError("codec check needs hypothesis: pip install '.[testing]' from a checkout") from None
    name = "<stdin>" if args.template == "-" else str(args.template)
    candidates = _check_templates(_read_text(args.template), name)
    verified: bool | None = None  # whether detection verified the format (None: the format was given)
    derived: Format | None = None
    if args.format is not None:
        fmt, how = get_format(args.format), "given"
        label, template = next((c for c in candidates if _looks_like(c[1], fmt.name)), candidates[0])
    else:
        found = _detected(candidates)
        derived = None
        if found is None:
            # No format's markers: the format derived from the template, if one is, is checked.
            label, template = candidates[0]
            derived = _derived_format(template)
            if derived is None:
                raise CLIError(
                    f"{name}: not a chat template of a known format, nor one codec derives (give --format NAME)"
                )
            fmt, verified = derived, False
            derivation = derived.derivation  # type: ignore[attr-defined]
            whose = f", the spec of {', '.join(derivation.builtins)}" if derivation.builtins else ""
            how = f"a {derivation.spec.family} spec fitted to the template{whose}"
        else:
            label, template, detection = found
            fmt, verified = get_format(detection.format), detection.verified
            how = "detected" if verified else "detected, not verified: its prompts differ from the template's"
    checks = list(CHECKS)
    progress = _CheckProgress() if sys.stderr.isatty() else None
    try:
        report = check_template(template, fmt, examples=args.examples, seed=args.seed, progress=progress, checks=checks)
    finally:
        if progress is not None:
            progress.clear()
    if args.json:
        where: dict[str, Any] = {"template": label, "detected": args.format is None, "verified": verified}
        if derived is not None:
            where["derived"] = derived.derivation.as_json()  # type: ignore[attr-defined]
        _write(json_text({**where, **report.as_json()}) + "\n", is_json=True)
    else:
        head = f"{label}: {fmt.name} ({how}), {args.examples} conversations per check, seed {args.seed}\n"
        _write(head + report.summary())
    return 0 if report.ok else 1


def _derived_format(template: str) -> Format | None:
    """The format :func:`codec.derive` makes of ``template``, or None where it refuses it."""
    from codec.derive import DeriveError, derive

    try:
        return derive(template)
    except DeriveError:
        return None


def _detected(candidates: list[tuple[str, str]]) -> tuple[str, str, TemplateDetection] | None:
    """The first candidate template verified as a format, else the first that looks like one (a
    template that does not compile raises its syntax error: it is bad input, not an unknown format)."""
    first = None
    for label, template in candidates:
        detection = detect_template(template)
        if detection is not None and detection.verified:
            return label, template, detection
        if detection is not None and first is None:
            first = (label, template, detection)
    return first


def _looks_like(template: str, name: str) -> bool:
    """Whether ``template`` is detected as format ``name``, verified or not (one that does not compile
    is not: the template ``check`` falls back to is compiled, and its errors said, by the check)."""
    try:
        detection = detect_template(template)
    except jinja2.TemplateSyntaxError:
        return False
    return detection is not None and detection.format == name


class _CheckProgress:
    """A one-line progress bar on standard error (a terminal) while ``codec check`` runs."""

    def __init__(self) -> None:
        self.shown = 0.0

    def __call__(self, check: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.shown < 0.1 and done < total:
            return
        self.shown = now
        filled = round(20 * done / total)
        sys.stderr.write(f"\r{PROG} check: {check:<10} [{'#' * filled}{'.' * (20 - filled)}] {done}/{total}")
        sys.stderr.flush()

    def clear(self) -> None:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def _error(message: str, status: int) -> int:
    text = " ".join(message.split()) or "unknown error"
    with contextlib.suppress(OSError, ValueError):
        print(f"{PROG}: error: {text}", file=sys.stderr)
    return status


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so that the interpreter's final flush is quiet."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the ``codec`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help / --version
            return exc.code if isinstance(exc.code, int) else 0
        with _warning_lines():
            status: int = args.handler(args)
        return status
    except BrokenPipeError:
        _silence_stdout()
        return 141
    except KeyboardInterrupt:
        return 130
    except ParseError as exc:
        # str(exc) ends with a caret snippet on its own lines: keep the one-line summary.
        return _error(str(exc).splitlines()[0] if str(exc) else exc.message, 1)
    except CLIError as exc:
        return _error(str(exc), 2)
    except CodecError as exc:  # UnknownFormat, RenderError
        return _error(str(exc), 2)
    except jinja2.TemplateError as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, jinja2.TemplateSyntaxError) else ""
        return _error(f"template error{where}: {exc.message or type(exc).__name__}", 2)
    except ValidationError as exc:
        return _error(f"invalid input: {validation_line(exc, 'input')}", 2)
    except OSError as exc:
        name = f"{exc.filename}: " if exc.filename else ""
        return _error(f"{name}{exc.strerror or exc}", 2)
    except (ValueError, TypeError) as exc:
        return _error(f"invalid input: {exc}", 2)
    except Exception as exc:  # a bug in codec: still one line, never a traceback
        return _error(f"internal error: {type(exc).__name__}: {exc} (please report this)", 70)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
