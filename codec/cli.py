"""The ``codec`` command: list formats, render a conversation to a prompt, parse a reply.

::

    codec formats
    codec render -f hermes conversation.json            # {"messages": [...], "tools": [...]} or [...]
    codec render -f hermes --tools tools.json --generation-prompt messages.json
    codec parse -f hermes --tools tools.json reply.txt  # the OpenAI assistant message as JSON
    codec parse -f hermes --stream < reply.txt          # chat.completion.chunk JSON lines

Files may be ``-`` or left out to read standard input. Replies and prompts are read byte-exact
(UTF-8, no newline translation, no stripping), and ``render`` writes the prompt's bytes with
nothing added. Exit status: 0 success, 1 a strict parse failed, 2 bad input or usage, 130
interrupted. Every error is one ``codec: error: ...`` line on standard error.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import IO, Any, NoReturn

import jinja2
from pydantic import BaseModel, ValidationError

from codec.errors import CodecError, ParseError, RenderError
from codec.format import Format
from codec.formats import formats, get_format
from codec.models import Issue, Message, Tool

PROG = "codec"

#: Parameters of ``Format.render`` that a ``--var`` must not shadow.
_RESERVED_VARS = frozenset({"self", "messages", "tools", "add_generation_prompt", "template"})

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
    """The bytes of ``path`` (``None`` or ``-``: stdin), its display name, and whether to close it."""
    if path is None or path == "-":
        stdin: Any = sys.stdin
        buffer = getattr(stdin, "buffer", None)
        if buffer is None:  # a text-only stdin (tests, embedders): encode what it gives
            data = stdin.read()
            return io.BytesIO(data.encode("utf-8") if isinstance(data, str) else data), "<stdin>", True
        return buffer, "<stdin>", False
    return open(path, "rb"), path, True


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
    name = "<stdin>" if path in (None, "-") else str(path)
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIError(f"{name}: invalid JSON: {exc}") from None


def _where(prefix: str, loc: Sequence[int | str]) -> str:
    return prefix + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)


def _validation_line(exc: ValidationError, prefix: str) -> str:
    """A pydantic error as one line: the first problem, with its location, and how many more there are."""
    errors = exc.errors()
    if not errors:
        return f"{prefix}: invalid"
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{_where(prefix, first['loc'])}: {first['msg']}{more}"


def _check_items(items: Any, model: type[BaseModel], what: str, source: str) -> list[dict[str, Any]]:
    """Check that ``items`` is a list of objects that ``model`` accepts; return them unchanged.

    The original dicts are passed on (not the models' dumps) so that key order and extra keys
    reach the renderer exactly as written.
    """
    if not isinstance(items, list):
        raise CLIError(f"{source}: {what} must be a JSON list, not {_json_type(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise CLIError(f"{source}: {what}[{i}] must be a JSON object, not {_json_type(item)}")
        try:
            model.model_validate(item)
        except ValidationError as exc:
            raise CLIError(f"{source}: {_validation_line(exc, f'{what}[{i}]')}") from None
    return items


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _load_tools(path: str) -> list[dict[str, Any]]:
    data = _read_json(path)
    source = "<stdin>" if path == "-" else path
    if isinstance(data, dict):
        if "tools" not in data:
            raise CLIError(f'{source}: expected a list of tools or an object with a "tools" key')
        data = data["tools"]
    return _check_items(data, Tool, "tools", source)


def _parse_var(item: str) -> tuple[str, Any]:
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise CLIError(f"--var expects KEY=VALUE, got {item!r}")
    if not key.isidentifier():
        raise CLIError(f"--var name {key!r} is not a valid identifier")
    if key in _RESERVED_VARS:
        hint = " (use --generation-prompt)" if key == "add_generation_prompt" else ""
        raise CLIError(f"--var name {key!r} is reserved{hint}")
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key, value


# --------------------------------------------------------------------------- output


def _write(text: str) -> None:
    """Write ``text`` to stdout as UTF-8 bytes, exactly (no newline translation, no locale encoding)."""
    out: Any = sys.stdout
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(text)
        return
    out.flush()
    buffer.write(text.encode("utf-8"))
    buffer.flush()


def _warn(issue: Issue) -> None:
    print(f"warning: {issue.kind} at line {issue.line}, column {issue.column}: {issue.message}", file=sys.stderr)


def _dumps_line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def _chunk(delta: dict[str, Any] | None, finish_reason: str | None) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}],
    }


# --------------------------------------------------------------------------- commands


def _cmd_formats(args: argparse.Namespace) -> int:
    names = formats()
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
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt = False
    variables: dict[str, Any] = {}
    if isinstance(data, dict):
        # An object: {"messages": [...], "tools": [...]}; optional "add_generation_prompt" and "variables"
        # (the shape of a decoded conversation). Other keys (model, temperature...) are ignored, so a
        # chat-completions request body works as is.
        if "messages" not in data:
            raise CLIError(f'{source}: expected a list of messages or an object with a "messages" key')
        messages = _check_items(data["messages"], Message, "messages", source)
        if data.get("tools") is not None:
            tools = _check_items(data["tools"], Tool, "tools", source)
        agp = data.get("add_generation_prompt", False)
        if not isinstance(agp, bool):
            raise CLIError(f"{source}: add_generation_prompt must be true or false, not {_json_type(agp)}")
        add_generation_prompt = agp
        extra = data.get("variables") or {}
        if not isinstance(extra, dict):
            raise CLIError(f"{source}: variables must be a JSON object, not {_json_type(extra)}")
        for key in extra:
            if key in _RESERVED_VARS:
                raise CLIError(f"{source}: variable name {key!r} is reserved")
        variables.update(extra)
    else:
        messages = _check_items(data, Message, "messages", source)
    if args.tools is not None:
        tools = _load_tools(args.tools)
    if args.generation_prompt is not None:
        add_generation_prompt = args.generation_prompt
    variables.update(_parse_var(item) for item in args.var)
    template = _read_text(args.template) if args.template is not None else None
    try:
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
    tools = _load_tools(args.tools) if args.tools is not None else None
    prompt = _read_text(args.prompt) if args.prompt is not None else None
    if args.stream:
        return _stream(fmt, args, tools, prompt)
    text = _read_text(args.reply)
    result = fmt.parse(text, tools=tools, strict=args.strict, prompt=prompt)
    for issue in result.issues:
        _warn(issue)
    message = result.to_message().model_dump(mode="json")
    _write(json.dumps(message, ensure_ascii=False, indent=2) + "\n")
    return 0


def _stream(fmt: Format, args: argparse.Namespace, tools: list[dict[str, Any]] | None, prompt: str | None) -> int:
    size: int = args.chunk_size
    stream = fmt.stream(tools=tools, strict=args.strict, prompt=prompt)

    def emit(events: Any) -> None:
        lines = []
        for event in events:
            delta = event.to_openai()
            if delta is not None:
                lines.append(_dumps_line(_chunk(delta, None)))
        if lines:
            _write("".join(lines))

    # The input is fed as it arrives (so `server | codec parse --stream` is live), cut into `size` pieces.
    for text in _iter_text(args.reply):
        for start in range(0, len(text), size):
            emit(stream.feed(text[start : start + size]))
    emit(stream.close())
    result = stream.result
    for issue in result.issues:
        _warn(issue)
    _write(_dumps_line(_chunk({}, "tool_calls" if result.tool_calls else "stop")))
    return 0


# --------------------------------------------------------------------------- parser and main


def _chunk_size(value: str) -> int:
    try:
        size = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid chunk size {value!r}") from None
    if size < 1:
        raise argparse.ArgumentTypeError(f"chunk size must be at least 1, got {size}")
    return size


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

    p_formats = sub.add_parser("formats", help="list the formats", description="List the formats.")
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
        help="a template variable (bos_token, enable_thinking...); VALUE is JSON if it parses, else a string",
    )
    p_render.add_argument("messages", nargs="?", metavar="MESSAGES_FILE", help="the messages JSON (default: stdin)")
    p_render.set_defaults(handler=_cmd_render)

    p_parse = sub.add_parser(
        "parse",
        help="parse a model reply into an OpenAI assistant message",
        description="Parse the text a model generated into an OpenAI assistant message (JSON). Repairs are "
        "reported on stderr as warnings. With --stream, write chat.completion.chunk JSON lines instead.",
    )
    p_parse.add_argument("-f", "--format", required=True, metavar="NAME", help=fmt_help)
    p_parse.add_argument("--tools", metavar="FILE", help=tools_help + " (types and checks the arguments)")
    p_parse.add_argument("--strict", action="store_true", help="fail (exit 1) on the first problem")
    p_parse.add_argument("--stream", action="store_true", help="parse incrementally and write one chunk per delta")
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
    return parser


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
        return _error(f"invalid input: {_validation_line(exc, 'input')}", 2)
    except OSError as exc:
        name = f"{exc.filename}: " if exc.filename else ""
        return _error(f"{name}{exc.strerror or exc}", 2)
    except (ValueError, TypeError) as exc:
        return _error(f"invalid input: {exc}", 2)
    except Exception as exc:  # a bug in codec: still one line, never a traceback
        return _error(f"internal error: {type(exc).__name__}: {exc} (please report this)", 70)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
