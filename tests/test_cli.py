"""The ``codec`` command: in-process through ``main()``, and once per command as a real subprocess."""

from __future__ import annotations

import io
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import codec
from codec import cli
from codec.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
REPLY = EXAMPLES / "replies" / "hermes.txt"
TOOLS = EXAMPLES / "tools.json"
CONVERSATION = EXAMPLES / "conversation.json"

BAD_REPLY = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": }}\n</tool_call><|im_end|>'


def read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def set_stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8"))


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def run_module(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "codec", *argv],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        env=subprocess_env(),
        timeout=120,
    )


def without_ids(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message dump with the (possibly generated) tool-call ids removed."""
    calls = [{k: v for k, v in call.items() if k != "id"} for call in message.get("tool_calls") or []]
    return {**message, "tool_calls": calls}


@pytest.fixture(scope="module")
def fmt() -> codec.Format:
    return codec.get_format("hermes")


@pytest.fixture()
def bad_reply(tmp_path: Path) -> Path:
    path = tmp_path / "bad.txt"
    path.write_text(BAD_REPLY, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- formats


def test_formats_lists_every_format_with_its_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "formats")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == codec.formats()
    for line, name in zip(lines, codec.formats(), strict=True):
        summary = codec.get_format(name).summary
        assert summary in line


def test_formats_json_gives_each_formats_wire_spec(capsys: pytest.CaptureFixture[str]) -> None:
    from codec.wire import WireSpec

    code, out, err = run(capsys, "formats", "--json")
    assert code == 0 and err == ""
    described = json.loads(out)
    assert [entry["name"] for entry in described] == codec.formats()
    for entry in described:
        fmt = codec.get_format(entry["name"])
        assert WireSpec.from_json(entry["wire"]) == fmt.wire
        assert entry["wire"]["family"] == fmt.kit().name
        assert (entry["aliases"], entry["stop_token"]) == (list(fmt.aliases), fmt.stop_token)


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "render" in out and "parse" in out
    code, out, _ = run(capsys, "parse", "--help")
    assert code == 0 and "--stream" in out
    code, out, _ = run(capsys, "--version")
    assert code == 0 and codec.__version__ in out


# --------------------------------------------------------------------------- render


def test_render_from_file_is_exact(capsys: pytest.CaptureFixture[str], fmt: codec.Format) -> None:
    data = load(CONVERSATION)
    code, out, err = run(capsys, "render", "-f", "hermes", str(CONVERSATION))
    assert code == 0 and err == ""
    assert out == fmt.render(data["messages"], data["tools"])


def test_render_from_stdin_with_options(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, fmt: codec.Format
) -> None:
    messages = load(CONVERSATION)["messages"][:2]
    set_stdin(monkeypatch, json.dumps(messages))
    argv = ["render", "-f", "hermes", "--tools", str(TOOLS), "--generation-prompt", "--var", "flag=true"]
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    assert out == fmt.render(messages, load(TOOLS), add_generation_prompt=True, flag=True)
    assert out.endswith("<|im_start|>assistant\n")


def test_render_stdin_dash_and_list_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, fmt: codec.Format
) -> None:
    messages = [{"role": "user", "content": "Olá!"}]
    set_stdin(monkeypatch, json.dumps(messages))
    code, out, _ = run(capsys, "render", "-f", "hermes", "-")
    assert code == 0
    assert out == fmt.render(messages)


def test_render_var_values(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # The variables reach the template: use a custom template that prints them with their types.
    template = tmp_path / "t.jinja"
    template.write_text(
        "{{ messages[0].content }}|{{ a }}|{{ a is number }}|{{ b }}|{{ b is string }}|{{ c }}|{{ c is sameas true }}"
    )
    messages = tmp_path / "m.json"
    messages.write_text('[{"role": "user", "content": "hi"}]')
    argv = ["render", "-f", "hermes", "--template", str(template), str(messages)]
    code, out, err = run(capsys, *argv, "--var", "a=3", "--var", "b=hello world", "--var", "c=true")
    assert (code, err) == (0, "")
    assert out == "hi|3|True|hello world|True|True|True"


def test_render_subprocess_writes_exact_bytes(tmp_path: Path, fmt: codec.Format) -> None:
    messages = [
        {"role": "system", "content": "Sé breve.\r\nObrigado."},
        {"role": "user", "content": "Previsão para Lisboa?\n"},
    ]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(messages, ensure_ascii=False), encoding="utf-8")
    proc = run_module("render", "-f", "hermes", "--generation-prompt", str(path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == fmt.render(messages, add_generation_prompt=True).encode("utf-8")
    assert b"\r\n" in proc.stdout
    # And from stdin:
    proc = run_module("render", "-f", "hermes", stdin=path.read_bytes())
    assert proc.returncode == 0 and proc.stdout == fmt.render(messages).encode("utf-8")


# --------------------------------------------------------------------------- parse


def test_parse_prints_the_openai_message(capsys: pytest.CaptureFixture[str], fmt: codec.Format) -> None:
    code, out, err = run(capsys, "parse", "-f", "hermes", "--tools", str(TOOLS), str(REPLY))
    assert code == 0 and err == ""
    message = json.loads(out)
    assert message.pop("finish_reason") == "tool_calls"  # the message, and its choice's finish_reason
    expected = fmt.parse(read(REPLY), tools=load(TOOLS)).to_message().model_dump(mode="json")
    assert without_ids(message) == without_ids(expected)
    assert message["role"] == "assistant"
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather", "search"]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"city": "Lisboa", "days": 3}
    assert "música" in out  # ensure_ascii=False


def test_parse_can_leave_damaged_calls_out(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """By default a damaged call is kept and marked (stderr names its severity and index); with
    --drop-damaged it is left out, and said so; with --stream that is refused (exit 2)."""
    reply = tmp_path / "cut.txt"
    reply.write_text(
        '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "f", "arguments": {"x": "ab',
        encoding="utf-8",
    )
    code, out, err = run(capsys, "parse", "-f", "hermes", str(reply))
    assert code == 0 and [c["function"]["name"] for c in json.loads(out)["tool_calls"]] == ["a", "f"]
    assert "truncated_call (damaged, call 1)" in err
    code, out, err = run(capsys, "parse", "-f", "hermes", "--drop-damaged", str(reply))
    assert code == 0 and [c["function"]["name"] for c in json.loads(out)["tool_calls"]] == ["a"]
    assert "damaged call 1 (f) left out" in err
    reply.write_text('<tool_call>\n{"name": "f", "arguments": {"x": "ab', encoding="utf-8")
    code, out, err = run(capsys, "parse", "-f", "hermes", "--drop-damaged", str(reply))
    assert code == 0 and json.loads(out)["finish_reason"] == "stop"  # no call left
    code, out, err = run(capsys, "parse", "-f", "hermes", "--drop-damaged", "--stream", str(reply))
    assert code == 2 and out == "" and "--drop-damaged cannot be used with --stream" in err


def test_parse_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, fmt: codec.Format
) -> None:
    set_stdin(monkeypatch, "Just text.<|im_end|>")
    code, out, _ = run(capsys, "parse", "-f", "hermes")
    assert code == 0
    expected = fmt.parse("Just text.<|im_end|>").to_message().model_dump(mode="json")
    assert json.loads(out) == {**expected, "finish_reason": "stop"}


def test_parse_lenient_reports_issues_as_warnings(capsys: pytest.CaptureFixture[str], bad_reply: Path) -> None:
    code, out, err = run(capsys, "parse", "-f", "hermes", str(bad_reply))
    assert code == 0
    json.loads(out)
    lines = err.splitlines()
    assert lines, "a broken call must be reported"
    for line in lines:
        assert line.startswith("warning: ") and " at line " in line and ", column " in line


def test_parse_strict_failure_is_one_line_exit_1(capsys: pytest.CaptureFixture[str], bad_reply: Path) -> None:
    code, out, err = run(capsys, "parse", "-f", "hermes", "--strict", str(bad_reply))
    assert code == 1
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("codec: error: ") and "line" in err
    assert "Traceback" not in err


def test_parse_strict_success(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "parse", "-f", "hermes", "--strict", "--tools", str(TOOLS), str(REPLY))
    assert (code, err) == (0, "")
    assert len(json.loads(out)["tool_calls"]) == 2


def collect_stream(out: str) -> tuple[str, dict[int, dict[str, str]], str]:
    """Reassemble streamed chunks as an OpenAI client does: content, calls by index, finish reason."""
    lines = out.splitlines()
    assert lines
    chunks = [json.loads(line) for line in lines]
    content = ""
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        assert (chunk["id"], chunk["created"], chunk["model"]) == (chunks[0]["id"], chunks[0]["created"], "codec")
        [choice] = chunk["choices"]
        assert choice["index"] == 0
    for chunk in chunks[:-1]:
        choice = chunk["choices"][0]
        assert choice["finish_reason"] is None
        delta = choice["delta"]
        assert delta
        content += delta.get("content") or ""
        for tc in delta.get("tool_calls", []):
            call = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
            call["id"] += tc.get("id", "")
            call["name"] += tc.get("function", {}).get("name", "")
            call["arguments"] += tc.get("function", {}).get("arguments", "")
    last = chunks[-1]["choices"][0]
    assert last["delta"] == {}
    return content, calls, last["finish_reason"]


@pytest.mark.parametrize("chunk_size", [1, 4, 7, 1000])
def test_parse_stream_fragments_concatenate_to_the_arguments(
    capsys: pytest.CaptureFixture[str], fmt: codec.Format, chunk_size: int
) -> None:
    argv = ["parse", "-f", "hermes", "--tools", str(TOOLS), "--stream", "--chunk-size", str(chunk_size)]
    code, out, err = run(capsys, *argv, str(REPLY))
    assert (code, err) == (0, "")
    content, calls, finish = collect_stream(out)
    assert finish == "tool_calls"
    expected = fmt.parse(read(REPLY), tools=load(TOOLS))
    assert content == expected.content
    dumped = expected.to_message().model_dump(mode="json")["tool_calls"]
    assert sorted(calls) == list(range(len(dumped)))
    for index, call in enumerate(dumped):
        assert calls[index]["name"] == call["function"]["name"]
        assert calls[index]["arguments"] == call["function"]["arguments"]
        assert calls[index]["id"]


def test_parse_stream_text_only_finishes_with_stop(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_stdin(monkeypatch, "Bom dia! Como posso ajudar?<|im_end|>")
    code, out, _ = run(capsys, "parse", "-f", "hermes", "--stream")
    assert code == 0
    content, calls, finish = collect_stream(out)
    assert (content, calls, finish) == ("Bom dia! Como posso ajudar?", {}, "stop")


def test_parse_stream_strict_failure(capsys: pytest.CaptureFixture[str], bad_reply: Path) -> None:
    code, _, err = run(capsys, "parse", "-f", "hermes", "--stream", "--strict", str(bad_reply))
    assert code == 1
    assert len(err.splitlines()) == 1 and err.startswith("codec: error: ")


def test_parse_subprocess_stream_and_strict(bad_reply: Path) -> None:
    proc = run_module("parse", "-f", "hermes", "--stream", "--tools", str(TOOLS), stdin=REPLY.read_bytes())
    assert proc.returncode == 0, proc.stderr
    _, calls, finish = collect_stream(proc.stdout.decode("utf-8"))
    assert finish == "tool_calls" and [c["name"] for c in calls.values()] == ["get_weather", "search"]
    assert json.loads(calls[1]["arguments"])["filters"]["category"] == "música"

    proc = run_module("parse", "-f", "hermes", "--strict", str(bad_reply))
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 1 and len(err.splitlines()) == 1 and "Traceback" not in err


THINKING = (
    "<think>Lisboa first.</think>Checking.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lisboa"}}\n</tool_call>'
)


def openai_types() -> Any:
    return pytest.importorskip("openai.types", reason="the openai package (in the test extra) holds the types checked")


def test_parse_output_is_an_openai_choice(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The message validates as a ChatCompletionMessage, and with its finish_reason as a Choice; with
    --reasoning-field reasoning, the reasoning is under that key."""
    types = openai_types()
    reply = _write(tmp_path, "thinking.txt", THINKING)
    for field in ("reasoning_content", "reasoning"):
        code, out, err = run(capsys, "parse", "-f", "hermes", "--reasoning-field", field, reply)
        assert (code, err) == (0, "")
        message = json.loads(out)
        finish = message.pop("finish_reason")
        assert finish == "tool_calls" and message[field] == "Lisboa first."
        assert {"reasoning", "reasoning_content"} & set(message) == {field}
        types.chat.ChatCompletionMessage.model_validate(message)
        types.chat.chat_completion.Choice.model_validate({"index": 0, "message": message, "finish_reason": finish})


def test_parse_stream_chunks_are_openai_chunks(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    types = openai_types()
    reply = _write(tmp_path, "thinking.txt", THINKING)
    argv = ["parse", "-f", "hermes", "--stream", "--model", "qwen-test", "--reasoning-field", "reasoning", reply]
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    chunks = [types.chat.ChatCompletionChunk.model_validate_json(line) for line in out.splitlines()]
    assert {(chunk.id, chunk.created, chunk.model) for chunk in chunks} == {
        (chunks[0].id, chunks[0].created, "qwen-test")
    }
    assert chunks[0].id.startswith("chatcmpl-") and chunks[0].choices[0].delta.role == "assistant"
    deltas = [json.loads(line)["choices"][0]["delta"] for line in out.splitlines()]
    assert "".join(d.get("reasoning", "") for d in deltas) == "Lisboa first."
    assert not any("reasoning_content" in d for d in deltas)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def responses_lines(out: str) -> list[dict[str, Any]]:
    """The Responses API events of ``out``, each validated as a ResponseStreamEvent, in sequence."""
    types = openai_types()
    from pydantic import TypeAdapter

    adapter = TypeAdapter(types.responses.ResponseStreamEvent)
    events = [json.loads(line) for line in out.splitlines()]
    for event in events:
        assert adapter.validate_python(event).type == event["type"]
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    return events


@pytest.mark.parametrize("chunk_size", [1, 4, 1000])
def test_parse_stream_responses_events(
    capsys: pytest.CaptureFixture[str], fmt: codec.Format, tmp_path: Path, chunk_size: int
) -> None:
    reply = _write(tmp_path, "thinking.txt", THINKING)
    argv = ["parse", "-f", "hermes", "--stream", "--api", "responses", "--chunk-size", str(chunk_size), reply]
    code, out, err = run(capsys, *argv, "--model", "m")
    assert (code, err) == (0, "")
    events = responses_lines(out)
    types = [event["type"] for event in events]
    assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert types[-1] == "response.completed"
    response = events[-1]["response"]
    assert response["model"] == "m" and response["id"].startswith("resp_")
    assert [item["type"] for item in response["output"]] == ["reasoning", "message", "function_call"]
    expected = fmt.parse(read(Path(reply)))
    assert response["output"][0]["content"][0]["text"] == expected.reasoning
    assert response["output"][1]["content"][0]["text"] == expected.content
    call = response["output"][2]
    assert (call["call_id"], call["name"], call["arguments"]) == ("call_0", "get_weather", '{"city": "Lisboa"}')
    fragments = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert fragments == call["arguments"]
    # The whole reply, not streamed: the response that response.completed carries.
    code, whole, _ = run(capsys, "parse", "-f", "hermes", "--api", "responses", "--model", "m", reply)
    assert code == 0
    done = json.loads(whole)
    openai_types().responses.Response.model_validate(done)
    assert {**done, "id": "", "created_at": 0} == {**response, "id": "", "created_at": 0, "output": done["output"]}
    assert [{**i, "id": ""} for i in done["output"]] == [{**i, "id": ""} for i in response["output"]]


def test_parse_responses_damaged_calls(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A damaged call is an item like any other; --drop-damaged leaves it out of the stream too, the
    calls held back to the end (a chat stream refuses it, see above)."""
    reply = _write(
        tmp_path,
        "cut.txt",
        '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "f", "arguments": {"x": "ab',
    )
    names = {}
    for extra in ([], ["--drop-damaged"]):
        for stream in ([], ["--stream"]):
            code, out, err = run(capsys, "parse", "-f", "hermes", "--api", "responses", *stream, *extra, reply)
            assert code == 0 and "truncated_call (damaged, call 1)" in err
            response = responses_lines(out)[-1]["response"] if stream else json.loads(out)
            names[(bool(extra), bool(stream))] = [item["name"] for item in response["output"]]
            assert ("damaged call 1 (f) left out" in err) == bool(extra)
    assert names == {(False, False): ["a", "f"], (False, True): ["a", "f"], (True, False): ["a"], (True, True): ["a"]}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--api", "responses", "--reasoning-field", "reasoning"], "--reasoning-field is for --api chat"),
        (["--model", "m"], "--model names the model of --stream chunks"),
        (["--api", "openai"], "invalid choice: 'openai'"),
        (["--reasoning-field", "thinking"], "invalid choice: 'thinking'"),
    ],
)
def test_parse_shape_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, "parse", "-f", "hermes", *argv, str(REPLY))
    assert (code, out) == (2, "")
    assert err.startswith("codec: error: ") and message in err and err.count("\n") == 1


def test_subprocess_formats() -> None:
    proc = run_module("formats")
    assert proc.returncode == 0 and proc.stderr == b""
    assert "hermes" in proc.stdout.decode("utf-8")


def test_broken_pipe_is_quiet(tmp_path: Path) -> None:
    reply = tmp_path / "long.txt"
    reply.write_text("x" * 200_000 + "<|im_end|>", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "codec", "parse", "-f", "hermes", "--stream", "--chunk-size", "1", str(reply)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=subprocess_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before the output comes (like `codec ... | head -0`)
    err = proc.stderr.read().decode("utf-8", "replace")
    code = proc.wait(timeout=120)
    assert "Traceback" not in err and "Error" not in err, err
    assert code == 141


class _CountingStream:
    """A format's stream that counts what it is fed."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.fed: list[int] = []

    def feed(self, chunk: str) -> Any:
        self.fed.append(len(chunk))
        return self.stream.feed(chunk)

    def close(self) -> Any:
        return self.stream.close()

    @property
    def result(self) -> Any:
        return self.stream.result


def _streamed_work(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, reply: str
) -> tuple[_CountingStream, int, int]:
    """Stream ``reply`` through ``codec parse --stream``: what was fed, how many writes, the bytes written."""
    streams: list[_CountingStream] = []
    real_stream = codec.Format.stream
    real_write = cli._write
    writes = [0]

    def counting_stream(self: codec.Format, *args: Any, **kwargs: Any) -> Any:
        streams.append(_CountingStream(real_stream(self, *args, **kwargs)))
        return streams[-1]

    def counting_write(text: str, **kwargs: Any) -> None:
        writes[0] += 1
        real_write(text, **kwargs)

    path = _write(tmp_path, "reply.txt", reply)
    with monkeypatch.context() as patch:
        patch.setattr(codec.Format, "stream", counting_stream)
        patch.setattr(cli, "_write", counting_write)
        patch.setattr(cli, "_READ_SIZE", 1000)  # many reads, as from a slow pipe
        code, out, err = run(capsys, "parse", "-f", "hermes", "--tools", str(TOOLS), "--stream", path)
    assert (code, err) == (0, "")
    collect_stream(out)
    (stream,) = streams
    return stream, writes[0], len(out.encode("utf-8"))


def test_parse_stream_does_linear_work(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Four times the reply is four times the work, whatever is counted: characters fed (each once,
    in pieces of --chunk-size), writes (one per read of the input, not one per piece), the parser's
    work and the bytes written. A quadratic cost anywhere in the loop breaks one of these; no time
    is measured."""
    unit = read(REPLY).removesuffix("<|im_end|>") + "\n"
    runs = {n: _streamed_work(capsys, monkeypatch, tmp_path, unit * n + "<|im_end|>") for n in (25, 100)}
    for n, (stream, writes, _) in runs.items():
        reply = unit * n + "<|im_end|>"
        reads = -(-len(reply.encode("utf-8")) // 1000)
        assert sum(stream.fed) == len(reply) and max(stream.fed) == 4
        assert len(stream.fed) <= len(reply) // 4 + reads  # a short piece at most at the end of each read
        assert writes <= reads + 2  # each read, the close, the finishing chunk
    (small, _, small_bytes), (big, _, big_bytes) = runs[25], runs[100]
    assert 3.5 < big.stream.work / small.stream.work < 4.5
    assert 3.5 < big_bytes / small_bytes < 4.5


def test_keyboard_interrupt(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(name: str) -> codec.Format:
        raise KeyboardInterrupt

    monkeypatch.setattr("codec.cli.get_format", interrupted)
    code, _, err = run(capsys, "parse", "-f", "hermes", str(REPLY))
    assert code == 130 and "Traceback" not in err


# --------------------------------------------------------------------------- errors


def _write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


#: JSON nested far deeper than codec.convert.MAX_JSON_DEPTH (128): deeper than Python's json reads, too.
DEEP = "[" * 100_000 + "]" * 100_000

ERROR_CASES: dict[str, tuple[list[str], str]] = {
    # name: (argv with {tmp} placeholders resolved below, a word the message must contain)
    "missing messages file": (["render", "-f", "hermes", "{tmp}/nope.json"], "nope.json"),
    "missing reply file": (["parse", "-f", "hermes", "{tmp}/nope.txt"], "nope.txt"),
    "missing tools file": (["parse", "-f", "hermes", "--tools", "{tmp}/nope.json", "{reply}"], "nope.json"),
    "missing template": (["render", "-f", "hermes", "--template", "{tmp}/nope.jinja", "{user}"], "nope"),
    "missing prompt": (["parse", "-f", "hermes", "--prompt", "{tmp}/nope.txt", "{reply}"], "nope"),
    "invalid JSON": (["render", "-f", "hermes", "{badjson}"], "JSON"),
    "invalid tools JSON": (["parse", "-f", "hermes", "--tools", "{badjson}", "{reply}"], "JSON"),
    "unknown format": (["render", "-f", "nosuch", "{user}"], "nosuch"),
    "unknown format parse": (["parse", "-f", "nosuch", "{reply}"], "hermes"),
    "messages not a list": (["render", "-f", "hermes", "{string}"], "list"),
    "object without messages": (["render", "-f", "hermes", "{object}"], "messages"),
    "message not an object": (["render", "-f", "hermes", "{listofnumbers}"], "messages[0]"),
    "message without role": (["render", "-f", "hermes", "{norole}"], "role"),
    "tools without tools key": (["parse", "-f", "hermes", "--tools", "{object}", "{reply}"], "tools"),
    "tool without function": (["parse", "-f", "hermes", "--tools", "{badtool}", "{reply}"], "tools[0]"),
    "tools not a list": (["render", "-f", "hermes", "--tools", "{string}", "{user}"], "list"),
    "render error": (["render", "-f", "hermes", "{listsystem}"], ""),
    "template error": (["render", "-f", "hermes", "--template", "{badtemplate}", "{user}"], "bad.jinja"),
    "var without =": (["render", "-f", "hermes", "--var", "oops", "{user}"], "KEY=VALUE"),
    "reserved var": (["render", "-f", "hermes", "--var", "tools=[]", "{user}"], "reserved"),
    "chunk size 0": (["parse", "-f", "hermes", "--stream", "--chunk-size", "0", "{reply}"], "chunk size"),
    "no command": ([], "required"),
    "unknown command": (["frobnicate"], "frobnicate"),
    "missing -f": (["parse", "{reply}"], "-f"),
    "unknown option": (["parse", "-f", "hermes", "--bogus", "{reply}"], "--bogus"),
    "reply not UTF-8": (["parse", "-f", "hermes", "{latin1}"], "UTF-8"),
    "directory as file": (["parse", "-f", "hermes", "{tmp}"], ""),
    # JSON codec cannot work with, in every JSON input: a file, standard input (below), --var, a config.
    "deep messages": (["render", "-f", "hermes", "{deep}"], "deep.json: JSON nested more than 128 levels deep"),
    "deep tools": (["render", "-f", "hermes", "--tools", "{deep}", "{user}"], "deep.json: JSON nested more"),
    "deep parse tools": (["parse", "-f", "hermes", "--tools", "{deep}", "{reply}"], "deep.json: JSON nested more"),
    "deep grammar tools": (["grammar", "-f", "hermes", "--tools", "{deep}"], "deep.json: JSON nested more"),
    "deep tokenizer config": (["detect", "{deepconfig}"], "config.json: JSON nested more than 128 levels deep"),
    "deep var": (["render", "-f", "hermes", "--var", "x=" + DEEP, "{user}"], "--var x: JSON nested more than 128"),
    "surrogate in messages": (["render", "-f", "hermes", "{surrogate}"], "[0].content holds a lone surrogate"),
    "surrogate in a var": (["render", "-f", "hermes", "--var", 'x="\\udc80"', "{user}"], "--var x: a string holds"),
    "undecodable var": (["render", "-f", "hermes", "--var", "x=\udcff", "{user}"], "a lone surrogate (\\udcff)"),
    "NaN in messages": (["render", "-f", "hermes", "{nan}"], "nan.json: invalid JSON: NaN is not JSON"),
    "huge number in tools": (["parse", "-f", "hermes", "--tools", "{huge}", "{reply}"], "huge.json: invalid JSON"),
}


@pytest.fixture()
def placeholders(tmp_path: Path) -> dict[str, str]:
    return {
        "tmp": str(tmp_path),
        "reply": str(REPLY),
        "user": _write(tmp_path, "user.json", '[{"role": "user", "content": "hi"}]'),
        "badjson": _write(tmp_path, "bad.json", '{"messages": [}'),
        "string": _write(tmp_path, "string.json", '"hello"'),
        "object": _write(tmp_path, "object.json", '{"foo": 1}'),
        "listofnumbers": _write(tmp_path, "numbers.json", "[1, 2]"),
        "norole": _write(tmp_path, "norole.json", '[{"content": "hi"}]'),
        "badtool": _write(tmp_path, "badtool.json", '[{"type": "function"}]'),
        "listsystem": _write(
            tmp_path,
            "listsystem.json",
            json.dumps(
                {
                    "messages": [
                        {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
                        {"role": "user", "content": "hi"},
                    ],
                    "tools": load(TOOLS),
                }
            ),
        ),
        "badtemplate": _write(tmp_path, "bad.jinja", "{% for x in %}"),
        "latin1": _write(tmp_path, "latin1.txt", "previs\u00e3o".encode("latin-1")),
        "deep": _write(tmp_path, "deep.json", DEEP),
        "deepconfig": _write(tmp_path, "config.json", '{"chat_template": "x", "extra": ' + DEEP + "}"),
        "surrogate": _write(tmp_path, "surrogate.json", '[{"role": "user", "content": "\\ud800"}]'),
        "nan": _write(tmp_path, "nan.json", '[{"role": "user", "content": "x", "n": NaN}]'),
        "huge": _write(tmp_path, "huge.json", '[{"type": "function", "function": {"name": "f", "x": 1e999}}]'),
    }


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], placeholders: dict[str, str], case: str
) -> None:
    argv, word = ERROR_CASES[case]
    code, out, err = run(capsys, *[arg.format(**placeholders) for arg in argv])
    assert code == 2, err
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("codec: error: ")
    assert "Traceback" not in err
    assert word in err


def test_deep_json_on_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for argv in (["render", "-f", "hermes"], ["grammar", "-f", "hermes", "--tools", "-"], ["detect"]):
        set_stdin(monkeypatch, '{"messages": ' + DEEP + "}")
        code, out, err = run(capsys, *argv)
        assert (code, out, err) == (2, "", "codec: error: <stdin>: JSON nested more than 128 levels deep\n")


def json_nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize("name", codec.formats())
def test_json_as_deep_as_accepted_renders_and_parses(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    """At the deepest nesting read (128 levels), every command works: the limit keeps the renderers,
    the grammar export and the parsers away from Python's recursion limit."""
    from codec.convert import MAX_JSON_DEPTH

    # {"messages": [{"tool_calls": [{"function": {"arguments": {"a": ...}}}]}]}: 7 levels around the value.
    # (an id of nine characters and eos_token, which Mistral's templates need)
    call = {"id": "c00000000", "type": "function", "function": {"name": "f", "arguments": {"a": json_nested(121)}}}
    assistant = {"role": "assistant", "content": "", "tool_calls": [call]}  # qwen3's template needs a content
    conversation = {"messages": [{"role": "user", "content": "x"}, assistant], "variables": {"eos_token": "</s>"}}
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(61):  # {"tools": [{"function": {"parameters": ...}}]}: 5 levels, then 2 per object
        schema = {"type": "object", "properties": {"a": schema}}
    tools = {"tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": schema}}]}
    for value, levels in ((conversation, MAX_JSON_DEPTH), (tools, MAX_JSON_DEPTH - 1)):
        text = json.dumps(value)
        assert max(itertools.accumulate(1 if c in "[{" else -1 if c in "]}" else 0 for c in text)) == levels
    messages_file = _write(tmp_path, "m.json", json.dumps(conversation))
    tools_file = _write(tmp_path, "t.json", json.dumps(tools))
    code, prompt, err = run(capsys, "render", "-f", name, "--tools", tools_file, messages_file)
    assert (code, err) == (0, "")
    assert prompt == codec.get_format(name).render(conversation["messages"], tools["tools"], eos_token="</s>")
    code, out, err = run(capsys, "grammar", "-f", name, "--tools", tools_file)
    assert (code, err) == (0, "") and out
    reply = _write(tmp_path, "reply.txt", codec.get_format(name).render_reply(conversation["messages"][1]))
    code, out, err = run(capsys, "parse", "-f", name, "--tools", tools_file, reply)
    assert code == 0, err
    conversation["messages"][0]["content"] = json_nested(MAX_JSON_DEPTH - 2)  # one level too deep
    code, _, err = run(capsys, "render", "-f", name, _write(tmp_path, "m.json", json.dumps(conversation)))
    assert (code, err) == (2, f"codec: error: {tmp_path}/m.json: JSON nested more than 128 levels deep\n")


def test_a_lone_surrogate_in_a_hermes_reply_is_written_as_u_fffd_and_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reply = _write(tmp_path, "r.txt", '<tool_call>\n{"name": "f", "arguments": {"a": "\\ud800"}}\n</tool_call>')
    proc = run_module("parse", "-f", "hermes", reply)
    assert proc.returncode == 0, proc.stderr
    (call,) = json.loads(proc.stdout)["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"a": "\ufffd"}
    assert b"warning: lone_surrogate" in proc.stderr
    proc = run_module("parse", "-f", "hermes", "--stream", reply)
    assert proc.returncode == 0, proc.stderr
    assert collect_stream(proc.stdout.decode("utf-8"))[1][0]["arguments"] == '{"a": "\ufffd"}'


def test_a_prompt_that_utf8_cannot_write_is_an_error(tmp_path: Path) -> None:
    template = _write(tmp_path, "t.jinja", '{{ messages[0].content }}{{ "\\ud800" }}')
    messages = _write(tmp_path, "m.json", '[{"role": "user", "content": "hi"}]')
    proc = run_module("render", "-f", "hermes", "--template", template, messages)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert (
        proc.stderr == b"codec: error: the output holds a lone surrogate (\\ud800), which is no text UTF-8 can write\n"
    )


def test_bad_input_subprocess(tmp_path: Path) -> None:
    proc = run_module("render", "-f", "nosuch", str(tmp_path / "missing.json"))
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2 and proc.stdout == b""
    assert len(err.splitlines()) == 1 and err.startswith("codec: error: ") and "Traceback" not in err
    proc = run_module("render", "-f", "hermes", stdin=b"[not json")
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and "JSON" in err


# --------------------------------------------------------------------------- an output onto an input


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["render", "-f", "hermes", "{input}"], "{input}"),
        (["render", "-f", "hermes", "--tools", "{input}", "{messages}"], "{input}"),
        (["render", "-f", "hermes"], "<stdin>"),
        (["parse", "-f", "hermes", "--stream", "{input}"], "{input}"),  # appended to, it would grow for ever
        (["parse", "-f", "hermes", "--prompt", "{input}", "{reply}"], "{input}"),
        (["decode", "-f", "hermes", "{input}"], "{input}"),
        (["detect", "{input}"], "{input}"),
        (["grammar", "-f", "hermes", "--tools", "{input}"], "{input}"),
    ],
)
def test_an_input_that_is_standard_output_is_refused(tmp_path: Path, argv: list[str], name: str) -> None:
    """``codec ... FILE >> FILE`` (or ``1<> FILE``): codec would write into what it reads. A shell's
    ``> FILE`` empties the file before codec starts, which codec cannot undo; it still says why."""
    path = tmp_path / "input.json"
    path.write_bytes(TOOLS.read_bytes())
    names = {"input": str(path), "messages": str(CONVERSATION), "reply": str(REPLY)}
    command = [sys.executable, "-m", "codec", *(arg.format(**names) for arg in argv)]
    with open(path, "ab") as out, open(path, "rb") as stdin:
        proc = subprocess.run(command, stdin=stdin, stdout=out, stderr=subprocess.PIPE, cwd=ROOT, env=subprocess_env())
    assert proc.returncode == 2
    message = (
        f"codec: error: {name.format(**names)}: is also standard output; codec does not write over what it reads\n"
    )
    assert proc.stderr.decode("utf-8") == message
    assert path.read_bytes() == TOOLS.read_bytes()


def test_standard_output_may_be_another_file_or_a_device(tmp_path: Path) -> None:
    path = tmp_path / "prompt.txt"
    for out in (path, Path(os.devnull)):
        with open(out, "ab") as stdout, open(os.devnull, "rb") as stdin:
            command = [sys.executable, "-m", "codec", "render", "-f", "hermes", str(CONVERSATION)]
            proc = subprocess.run(
                command, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT, env=subprocess_env()
            )
        assert (proc.returncode, proc.stderr) == (0, b"")
    assert path.read_text(encoding="utf-8").startswith("<|im_start|>system")


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize("script", ["parse_reply.py", "stream_reply.py"])
def test_example_scripts_run(script: str, tmp_path: Path) -> None:
    # Run from elsewhere: the scripts find their files relative to themselves.
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        cwd=tmp_path,
        env=subprocess_env(),
        timeout=120,
    )
    out = proc.stdout.decode("utf-8")
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert "get_weather" in out and "search" in out and "Lisboa" in out
    assert "MISMATCH" not in out and "NO" not in out.split()
    if script == "stream_reply.py":
        assert out.count("[ok]") == 2 and "same as fmt.parse(whole reply): yes" in out
    else:
        assert "<tool_call>" in out and "identical to the reply: yes" in out  # rendered back


def test_example_docstrings() -> None:
    for script in ["parse_reply.py", "stream_reply.py"]:
        text = (EXAMPLES / script).read_text(encoding="utf-8")
        assert text.startswith('"""'), script
        title = text[3:].splitlines()[0]
        assert title and title.endswith("."), script


@pytest.mark.parametrize(("value", "shown"), [("False", "False|True"), ("True", "True|False"), ("None", "None|False")])
def test_render_var_reads_python_constants(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str, shown: str
) -> None:
    # enable_thinking=False was the string "False", which a template reads as true.
    template = _write(tmp_path, "t.jinja", "{{ messages[0].content }}|{{ x }}|{{ x is sameas false }}")
    messages = _write(tmp_path, "m.json", '[{"role": "user", "content": "hi"}]')
    code, out, err = run(capsys, "render", "-f", "hermes", "--template", template, "--var", f"x={value}", messages)
    assert (code, out, err) == (0, f"hi|{shown}", "")
    code, out, err = run(capsys, "render", "-f", "hermes", "--template", template, "--var", 'x="False"', messages)
    assert (code, out) == (0, "hi|False|False")  # the text, quoted as JSON
    code, out, _ = run(capsys, "render", "--help")
    assert code == 0 and "Python's True, False and None are true, false and null" in " ".join(out.split())


def test_render_prints_a_warning_line_for_a_dropped_message(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    messages = _write(tmp_path, "m.json", '[{"role": "user", "content": [{"type": "text", "text": "hello"}]}]')
    code, out, err = run(capsys, "render", "-f", "hermes", messages)
    assert (code, out) == (0, "<|im_start|>user\n<|im_end|>\n")
    assert err.startswith("warning: messages[0] (user): its text does not appear in the prompt;")
    assert len(err.splitlines()) == 1


def test_parse_writes_content_null_beside_calls(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    reply = _write(tmp_path, "r.txt", '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>')
    code, out, _ = run(capsys, "parse", "-f", "hermes", reply)
    assert code == 0 and list(json.loads(out))[:2] == ["role", "content"] and json.loads(out)["content"] is None
