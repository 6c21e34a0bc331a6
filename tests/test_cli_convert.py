"""The transcoding commands: ``codec detect``, ``codec decode`` and ``codec convert``.

In-process through ``main()`` (``--jobs 2`` still starts real processes), and once as a real
subprocess. Decoding tests skip a format whose ``decode`` is not implemented, saying so.
"""

from __future__ import annotations

import dataclasses
import errno
import io
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

import codec
from codec import _cli_convert
from codec.cli import main

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT.parent / "shared" / "seeds"
FORMATS = codec.formats()

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


def conversation(i: int) -> dict[str, Any]:
    """A conversation every format renders (system, user, a tool round, an answer), varied by ``i``."""
    city = ["Lisboa", "Paris", "São Paulo", "東京"][i % 4]
    # (ids of nine characters: Mistral's templates take no other)
    call = {"id": f"call{i:05d}", "type": "function", "function": {"name": "get_weather", "arguments": {"city": city}}}
    if i % 3:
        call["function"]["arguments"]["days"] = i % 7
    return {
        "messages": [
            {"role": "system", "content": f"You help with the weather (#{i})."},
            {"role": "user", "content": f"Weather in {city}?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},  # qwen3's template needs a content
            {"role": "tool", "tool_call_id": f"call{i:05d}", "content": f'{{"temp": {i % 30}}}'},
            {"role": "assistant", "content": f"It is {i % 30} degrees in {city}."},
        ],
        "tools": TOOLS,
    }


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    path.write_bytes("".join(line + "\n" for line in lines).encode("utf-8"))
    return path


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rendered(name: str, record: dict[str, Any]) -> str:
    return codec.get_format(name).render(record["messages"], record.get("tools"))


def cut_in_half(name: str) -> str:
    """A prompt of format ``name`` cut in the middle: not a rendering of it (decode raises ParseError)."""
    text = rendered(name, conversation(0))
    return text[: len(text) // 2]


def decodable(name: str) -> codec.Format:
    """Format ``name``, or skip the test when its ``decode`` is not implemented yet."""
    fmt = codec.get_format(name)
    try:
        fmt.decode(rendered(name, conversation(0)))
    except NotImplementedError:
        pytest.skip(f"{name}: decode is not implemented yet")
    return fmt


# --------------------------------------------------------------------------- convert: messages records


@pytest.mark.parametrize("name", FORMATS)
def test_messages_records_render_like_render(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    inputs = [{"id": i, **conversation(i), "meta": {"split": "train"}} for i in range(5)]
    src = write_lines(tmp_path / "in.jsonl", (json.dumps(r, ensure_ascii=False) for r in inputs))
    out = tmp_path / "out.jsonl"
    code, stdout, err = run(capsys, "convert", "--to", name, str(src), str(out))
    assert (code, stdout) == (0, "")
    # What render warns of (a template that leaves a message out: Mistral Nemo writes the system
    # message only into a conversation's last turn when it is the user's), each said once.
    said = []
    for r in inputs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rendered(name, r)
        said += [f"warning: {w.message}\n" for w in caught]
    assert err == "".join(dict.fromkeys(said)) + "converted 5, rejected 0\n"
    # Other keys are kept as they are; the conversation keys become "text".
    assert records(out) == [{"id": r["id"], "meta": r["meta"], "text": rendered(name, r)} for r in inputs]
    assert not (tmp_path / "out.jsonl.rejects.jsonl").exists()  # nothing rejected: no rejects file


def test_record_options_and_var(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    record = {**conversation(1), "add_generation_prompt": True, "variables": {"enable_thinking": False}}
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(record)])
    out = tmp_path / "out.jsonl"
    assert (
        run(capsys, "convert", "--to", "deepseek_pythonic", "--var", "enable_thinking=true", str(src), str(out))[0] == 0
    )
    fmt = codec.get_format("deepseek_pythonic")
    expected = fmt.render(record["messages"], TOOLS, add_generation_prompt=True, enable_thinking=True)
    assert records(out) == [{"text": expected}]


def test_order_is_kept_with_two_jobs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cli_convert, "_CHUNK_LINES", 7)  # many small chunks, finishing out of order
    lines = [json.dumps({"id": i, **conversation(i)}) if i % 50 else "{broken" for i in range(1, 301)]
    src = write_lines(tmp_path / "in.jsonl", lines)
    outputs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}.jsonl"
        code, _, err = run(capsys, "convert", "--to", "qwen3_coder", "--jobs", jobs, str(src), str(out))
        assert code == 0 and err.startswith("converted 294, rejected 6")
        outputs[jobs] = (out.read_bytes(), Path(f"{out}.rejects.jsonl").read_bytes())
    assert outputs["1"] == outputs["2"]
    assert [r["id"] for r in records(tmp_path / "out2.jsonl")] == [i for i in range(1, 301) if i % 50]
    assert [r["line"] for r in records(tmp_path / "out2.jsonl.rejects.jsonl")] == [50, 100, 150, 200, 250, 300]


BAD_LINES = {
    "not json": "invalid JSON",
    "[1, 2]": "must be a JSON object",
    '{"id": 3}': 'a "text" or a "messages" key',
    '{"messages": [{"content": "no role"}]}': "messages[0].role",
    '{"messages": [{"role": "user", "content": "x"}], "tools": {"a": 1}}': "tools must be a JSON list",
    '{"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": "yes"}': "add_generation_prompt",
    '{"text": "<|im_start|>user\\nhi<|im_end|>\\n"}': "needs --from",
    '{"text": 42}': '"text" must be a string',
    '{"text": "x", "messages": []}': "not both",
}


def test_rejects_name_the_line_and_the_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = json.dumps(conversation(0))
    lines = [good, *BAD_LINES, good]
    src = write_lines(tmp_path / "in.jsonl", lines)
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "convert", "--to", "hermes", str(src), str(out))
    assert code == 0
    rejects_path = tmp_path / "out.jsonl.rejects.jsonl"
    assert err == f"converted 2, rejected {len(BAD_LINES)} (see {rejects_path})\n"
    assert len(records(out)) == 2
    rejects = records(rejects_path)
    assert [r["line"] for r in rejects] == list(range(2, 2 + len(BAD_LINES)))
    for reject, (line, reason) in zip(rejects, BAD_LINES.items(), strict=True):
        assert reject["input"] == line
        assert reason in reject["error"]


USER = '[{"role": "user", "content": "x"}]'
#: Records that once stopped a run (exit 2, an empty output) or could, and the reason each is rejected with.
UNWRITABLE_RECORDS: dict[bytes, str] = {
    b'{"messages": [{"role": "user", "content": "\\ud800"}]}': "a string at messages[0].content holds a lone "
    "surrogate (\\ud800), which is no text UTF-8 can write",
    b'{"id": "\\udc00", "messages": %b}' % USER.encode(): "a string at id holds a lone surrogate (\\udc00)",
    b'{"meta": {"\\udbff": 1}, "messages": %b}' % USER.encode(): "a key at meta holds a lone surrogate (\\udbff)",
    b'{"text": "\\ud83d"}': "a string at text holds a lone surrogate (\\ud83d)",
    b'{"id": 1e999, "messages": %b}' % USER.encode(): "invalid JSON: number out of range: 1e999",
    b'{"id": NaN, "messages": %b}' % USER.encode(): "invalid JSON: NaN is not JSON",
    b'{"id": -Infinity, "messages": %b}' % USER.encode(): "invalid JSON: -Infinity is not JSON",
    b'{"id": %b, "messages": %b}' % (b"9" * 5000, USER.encode()): "invalid JSON: Exceeds the limit (4300 digits)",
    b'{"id": %b%b, "messages": %b}' % (b"[" * 100_000, b"]" * 100_000, USER.encode()): "JSON nested more than 128",
    b'{"id": %b%b, "messages": %b}' % (b"[" * 128, b"]" * 128, USER.encode()): "JSON nested more than 128",
    b'{"messages": [{"role": "user", "content": %b%b}]}' % (b"[" * 126, b"]" * 126): "JSON nested more than 128",
    b'["a", "list"]': "a record must be a JSON object",
    b'"a string"': "a record must be a JSON object",
    b"null": "a record must be a JSON object",
    b'{"text": ["x"]}': '"text" must be a string, not a list',
    b'{"text": "\xed\xa0\x80"}': "not valid UTF-8",  # a surrogate encoded as UTF-8: no character either
    b'{"text": "\xc3"}': "not valid UTF-8",
}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_no_record_stops_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path, jobs: str) -> None:
    good = json.dumps({"id": 0, **conversation(0)}).encode()
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(line + b"\n" for line in [good, *UNWRITABLE_RECORDS, good]))
    out = tmp_path / "out.jsonl"
    code, stdout, err = run(capsys, "convert", "--from", "hermes", "--to", "hermes", "--jobs", jobs, str(src), str(out))
    assert (code, stdout) == (0, "")
    assert err == f"converted 2, rejected {len(UNWRITABLE_RECORDS)} (see {out}.rejects.jsonl)\n"
    assert records(out) == [{"id": 0, "text": rendered("hermes", conversation(0))}] * 2
    rejects = records(Path(f"{out}.rejects.jsonl"))
    assert [r["line"] for r in rejects] == list(range(2, 2 + len(UNWRITABLE_RECORDS)))
    for reject, (line, reason) in zip(rejects, UNWRITABLE_RECORDS.items(), strict=True):
        assert reject["error"].startswith(reason), reject["error"]
        assert reject["input"] == line.decode("utf-8", "replace")


def _prompt_text(messages: Any, tools: Any, add_generation_prompt: bool, variables: Any) -> str:
    if messages[0]["content"] == "refuse":
        raise codec.RenderError("refused at \ud800")  # a reason quoting what UTF-8 cannot write
    return "text with \ud800 in it" if messages[0]["content"] == "lone" else "P"


def _prompt_conversation(prompt: str) -> codec.Conversation:
    return codec.Conversation(messages=[codec.Message(role="user", content="x")], variables={"v": float("nan")})


class _Unwritable(codec.Format):
    """A format whose outputs cannot be written: a prompt with a lone surrogate, a conversation with NaN."""

    name = "unwritable"
    functions = dataclasses.replace(
        codec.get_format("hermes").functions, prompt_text=_prompt_text, prompt_conversation=_prompt_conversation
    )
    wire = codec.get_format("hermes").wire


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_output_that_cannot_be_written_is_rejected(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    if jobs != "1" and multiprocessing.get_start_method() != "fork":
        pytest.skip("the --jobs processes see the test's format only when forked")
    monkeypatch.setattr(
        _cli_convert, "get_format", lambda name: _Unwritable() if name == "unwritable" else codec.get_format(name)
    )
    lone = json.dumps({"messages": [{"role": "user", "content": "lone"}]})
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(0)), lone, json.dumps({"text": "P"})])
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys, "convert", "--from", "unwritable", "--to", "unwritable", "--jobs", jobs, str(src), str(out)
    )
    summary = "".join(line for line in err.splitlines(keepends=True) if not line.startswith("warning: "))
    assert code == 0 and summary.startswith("converted 2, rejected 1")  # (after the toy's warning lines)
    assert records(out) == [{"text": "P"}, {"text": "P"}]
    (reject,) = records(Path(f"{out}.rejects.jsonl"))
    assert reject == {
        "line": 2,
        "error": "the output holds a lone surrogate (\\ud800), which is no text UTF-8 can write",
        "input": lone,
    }
    code, _, err = run(
        capsys, "convert", "--from", "unwritable", "--output", "messages", "--jobs", jobs, str(src), str(out)
    )
    summary = "".join(line for line in err.splitlines(keepends=True) if not line.startswith("warning: "))
    assert code == 0 and summary.startswith("converted 2, rejected 1")  # (after the toy's warning lines)
    (reject,) = records(Path(f"{out}.rejects.jsonl"))
    assert reject["line"] == 3 and reject["error"].startswith("the output cannot be written as JSON: ValueError: ")


def test_rejects_keep_what_utf8_cannot_write_as_json_escapes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        _cli_convert, "get_format", lambda name: _Unwritable() if name == "unwritable" else codec.get_format(name)
    )
    src = write_lines(tmp_path / "in.jsonl", [json.dumps({"messages": [{"role": "user", "content": "refuse"}]})])
    out = tmp_path / "out.jsonl"
    assert run(capsys, "convert", "--to", "unwritable", str(src), str(out))[0] == 0
    rejects = Path(f"{out}.rejects.jsonl").read_bytes()
    assert b"refused at \\ud800" in rejects
    assert json.loads(rejects)["error"] == "refused at \ud800"
    code, stdout, err = run(capsys, "convert", "--to", "unwritable", str(src), "-")
    assert (code, stdout) == (0, "")
    reject, summary = err.splitlines()
    assert json.loads(reject)["error"] == "refused at \ud800" and "\\ud800" in reject
    assert summary == "converted 0, rejected 1"


def test_a_line_the_target_refuses_is_rejected(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # Gemma 3's template refuses a user message followed by another user message.
    record = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(record)])
    rejects = tmp_path / "rejects.jsonl"
    code, _, err = run(
        capsys, "convert", "--to", "gemma3", "--rejects", str(rejects), str(src), str(tmp_path / "o.jsonl")
    )
    assert code == 0 and "rejected 1" in err
    (reject,) = records(rejects)
    assert reject["line"] == 1 and "User message must be followed by assistant" in reject["error"]


def test_invalid_utf8_and_blank_lines(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    good = json.dumps(conversation(2)).encode()
    src.write_bytes(good + b"\n\n   \n" + b'{"text": "\xff"}\n' + good + b"\r\n")
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "convert", "--to", "gemma4", str(src), str(out))
    assert code == 0
    assert err.startswith("converted 2, rejected 1, skipped 2 blank lines")
    (reject,) = records(Path(f"{out}.rejects.jsonl"))
    assert reject["line"] == 4 and "not valid UTF-8" in reject["error"]


def test_strict_exit_code(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    clean = write_lines(tmp_path / "clean.jsonl", [json.dumps(conversation(0))])
    dirty = write_lines(tmp_path / "dirty.jsonl", [json.dumps(conversation(0)), "{"])
    out = str(tmp_path / "out.jsonl")
    assert run(capsys, "convert", "--strict", "--to", "hermes", str(clean), out)[0] == 0
    assert run(capsys, "convert", "--strict", "--to", "hermes", str(dirty), out)[0] == 1
    assert run(capsys, "convert", "--to", "hermes", str(dirty), out)[0] == 0
    assert len(records(Path(out))) == 1  # the good line is written even when the run fails


def test_empty_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = tmp_path / "empty.jsonl"
    src.write_bytes(b"")
    out = tmp_path / "out.jsonl"
    assert run(capsys, "convert", "--strict", "--to", "hermes", str(src), str(out)) == (
        0,
        "",
        "converted 0, rejected 0\n",
    )
    assert out.read_bytes() == b""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--to", "nope"], "unknown format 'nope'"),
        (["--from", "nope", "--to", "hermes"], "unknown format 'nope'"),
        ([], "--to is required"),
        (["--output", "messages", "--to", "hermes"], "--to is not used"),
        (["--to", "hermes", "--jobs", "0"], "jobs must be at least 1"),
    ],
)
def test_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str) -> None:
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(0))])
    out = tmp_path / "out.jsonl"
    code, stdout, err = run(capsys, "convert", *argv, str(src), str(out))
    assert (code, stdout) == (2, "")
    assert err.startswith("codec: error: ") and message in err and err.count("\n") == 1
    assert not out.exists()  # nothing is written before the options are known to be good


@pytest.mark.parametrize("output", ["text", "messages"])
def test_text_records_without_from_are_refused_up_front(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str
) -> None:
    """The first record (after blank lines) says the input holds rendered conversations: without
    --from, exit 2 with one line naming it, before the output is created."""
    text = json.dumps({"text": rendered("hermes", conversation(0))})
    src = write_lines(tmp_path / "in.jsonl", ["", "  ", text, json.dumps(conversation(1))])
    out = tmp_path / "out.jsonl"
    argv = ["--to", "hermes"] if output == "text" else ["--output", "messages"]
    code, stdout, err = run(capsys, "convert", *argv, str(src), str(out))
    assert (code, stdout) == (2, "")
    assert (
        err == f'codec: error: {src}: line 3 is a {{"text": ...}} record: give --from, the format to decode it with\n'
    )
    assert not out.exists() and not Path(f"{out}.rejects.jsonl").exists()
    # From standard input too, reading no further than that record.
    data = io.BytesIO(src.read_bytes())
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(data, encoding="utf-8"))
    code, stdout, err = run(capsys, "convert", *argv, "-", "-")
    assert (code, stdout) == (2, "") and err.startswith('codec: error: <stdin>: line 3 is a {"text": ...} record')
    assert data.tell() < len(src.read_bytes())


def test_text_records_after_a_messages_record_are_rejected_one_by_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = json.dumps({"text": rendered("hermes", conversation(0))})
    for first in ["not json", json.dumps(conversation(0))]:
        src = write_lines(tmp_path / "in.jsonl", [first, text])
        out = tmp_path / "out.jsonl"
        code, _, err = run(capsys, "convert", "--to", "hermes", str(src), str(out))
        assert code == 0 and "rejected" in err
        assert records(Path(f"{out}.rejects.jsonl"))[-1]["error"] == _cli_convert._NEEDS_FROM


def test_a_rejects_file_only_when_a_line_is_rejected(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """No empty rejects file; one an earlier run left goes, since what is there must be this run's."""
    out = tmp_path / "out.jsonl"
    rejects = Path(f"{out}.rejects.jsonl")
    dirty = write_lines(tmp_path / "dirty.jsonl", [json.dumps(conversation(0)), "{"])
    clean = write_lines(tmp_path / "clean.jsonl", [json.dumps(conversation(0))])
    assert run(capsys, "convert", "--to", "hermes", str(dirty), str(out)) == (
        0,
        "",
        f"converted 1, rejected 1 (see {rejects})\n",
    )
    assert [r["line"] for r in records(rejects)] == [2]
    assert run(capsys, "convert", "--to", "hermes", str(clean), str(out)) == (0, "", "converted 1, rejected 0\n")
    assert not rejects.exists()
    chosen = tmp_path / "chosen.jsonl"
    assert run(capsys, "convert", "--to", "hermes", "--rejects", str(chosen), str(clean), str(out))[0] == 0
    assert not chosen.exists()


def test_the_input_is_never_overwritten(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(0))])
    before = src.read_bytes()
    code, _, err = run(capsys, "convert", "--to", "hermes", str(src), str(tmp_path / "." / "in.jsonl"))
    assert code == 2 and "must be different files" in err
    assert src.read_bytes() == before


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run ``codec convert --to hermes ARGV``, which must refuse: exit 2, one line, nothing on stdout."""
    code, out, err = run(capsys, "convert", "--to", "hermes", *argv)
    assert (code, out) == (2, ""), err
    assert err.startswith("codec: error: ") and err.count("\n") == 1, err
    assert err.endswith("; the input, output and rejects must be different files\n"), err
    return err


@pytest.mark.parametrize("link", ["hard", "symbolic"])
@pytest.mark.parametrize("linked", ["output", "rejects"])
def test_a_link_to_the_input_is_the_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, link: str, linked: str
) -> None:
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(i)) for i in range(3)])
    before = src.read_bytes()
    alias = tmp_path / "alias.jsonl"
    if link == "hard":
        os.link(src, alias)
    else:
        alias.symlink_to(src)
    other = tmp_path / "other.jsonl"
    argv = [str(src), str(alias)] if linked == "output" else ["--rejects", str(alias), str(src), str(other)]
    err = refused(capsys, *argv)
    assert err == f"codec: error: {alias}: is also {src}; the input, output and rejects must be different files\n"
    assert src.read_bytes() == before
    assert not other.exists()  # refused before anything is opened for writing


def test_the_output_and_the_rejects_are_different_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(0))])
    out = tmp_path / "out.jsonl"
    refused(capsys, "--rejects", str(out), str(src), str(out))  # neither exists yet: the same name
    out.write_bytes(b"kept\n")
    os.link(out, tmp_path / "rejects.jsonl")
    refused(capsys, "--rejects", str(tmp_path / "rejects.jsonl"), str(src), str(out))
    assert out.read_bytes() == b"kept\n"
    # Writing nothing worth keeping twice is fine: /dev/null is no file to overwrite.
    assert run(capsys, "convert", "--to", "hermes", "--rejects", os.devnull, str(src), os.devnull)[0] == 0


def test_stdin_redirected_from_the_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``codec convert --to hermes - out.jsonl < out.jsonl``: standard input is compared as a file."""
    out = write_lines(tmp_path / "out.jsonl", [json.dumps(conversation(i)) for i in range(3)])
    before = out.read_bytes()
    with open(out, encoding="utf-8") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        err = refused(capsys, "-", str(out))
        assert err.startswith(f"codec: error: {out}: is also <stdin>;")
        assert Path(f"{out}.rejects.jsonl").exists() is False
        refused(capsys, "--rejects", str(out), "-", str(tmp_path / "new.jsonl"))
    assert out.read_bytes() == before


def test_stdout_or_stderr_redirected_onto_the_input(tmp_path: Path) -> None:
    """``codec convert IN - >> IN`` would read its own output for ever, and ``2>> IN`` its rejects."""
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(0)), "not json"])
    before = src.read_bytes()
    argv = [sys.executable, "-m", "codec", "convert", "--to", "hermes", str(src), "-"]
    with open(src, "ab") as append:
        proc = subprocess.run(argv, stdout=append, stderr=subprocess.PIPE, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.decode() == f"codec: error: <stdout>: is also {src}; {DIFFERENT}\n"
    assert src.read_bytes() == before
    with open(src, "ab") as append:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=append, cwd=ROOT, timeout=120)
    assert (proc.returncode, proc.stdout) == (2, b"")
    # Standard error is the input: the error line is all that reaches it.
    assert src.read_bytes() == before + f"codec: error: <stderr>: is also {src}; {DIFFERENT}\n".encode()


DIFFERENT = "the input, output and rejects must be different files"


def test_missing_input_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "convert", "--to", "hermes", str(tmp_path / "nope.jsonl"), str(tmp_path / "o.jsonl"))
    assert code == 2 and "No such file" in err


def test_stdin_to_stdout_with_rejects_on_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = json.dumps(conversation(3)) + "\nnope\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode("utf-8")), encoding="utf-8"))
    code, out, err = run(capsys, "convert", "--to", "gemma4", "-", "-")
    assert code == 0
    assert records_of(out) == [{"text": rendered("gemma4", conversation(3))}]
    reject_line, summary = err.splitlines()
    assert json.loads(reject_line) == {"line": 2, "error": json.loads(reject_line)["error"], "input": "nope"}
    assert summary == "converted 1, rejected 1"


def records_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_output_messages_keeps_the_records_conversation(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    record = {"id": 9, **conversation(4)}
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(record)])
    out = tmp_path / "out.jsonl"
    assert run(capsys, "convert", "--output", "messages", str(src), str(out))[0] == 0
    assert records(out) == [{**record, "add_generation_prompt": False, "variables": {}}]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cli_convert, "_CHUNK_LINES", 1)
    monkeypatch.setattr(_cli_convert, "_PROGRESS_INTERVAL", 0.0)
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(i)) for i in range(3)])
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["convert", "--to", "hermes", str(src), str(tmp_path / "out.jsonl")]) == 0
    shown = terminal.getvalue()
    assert "\r" in shown and "100.0%" in shown and "3 lines" in shown
    assert shown.endswith("\r\x1b[Kconverted 3, rejected 0\n")  # the progress line is cleared first
    monkeypatch.undo()
    _, _, err = run(capsys, "convert", "--to", "hermes", str(src), str(tmp_path / "out.jsonl"))
    assert "\r" not in err


def _reads_lazily(tmp_path: Path, jobs: str) -> tuple[int, int]:
    """Convert 20 000 lines with tracemalloc on: the input size and this process's peak allocation."""
    line = json.dumps({"messages": [{"role": "user", "content": "Olá! " * 100}]}, ensure_ascii=False)
    src = write_lines(tmp_path / "big.jsonl", (line for _ in range(20_000)))
    out = tmp_path / "big.out.jsonl"
    warm_up = write_lines(tmp_path / "small.jsonl", [line])  # first-use imports are not the conversion's memory
    assert main(["convert", "--output", "messages", "--jobs", jobs, str(warm_up), str(out)]) == 0
    tracemalloc.start()
    try:
        assert main(["convert", "--output", "messages", "--jobs", jobs, str(src), str(out)]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.stat().st_size > src.stat().st_size
    return src.stat().st_size, peak


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_memory_stays_flat(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """The input is read as it is converted and nothing accumulates: the peak is a few chunks, not the file."""
    monkeypatch.setattr(_cli_convert, "_CHUNK_LINES", 32)  # chunks much smaller than the file, as with a 1 GB input
    size, peak = _reads_lazily(tmp_path, jobs)
    assert size > 10_000_000
    assert peak < size / 10, (size, peak)


def test_convert_as_a_subprocess(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(i)) for i in range(40)] + ["x"])
    out = tmp_path / "out.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "codec", "convert", "--jobs", "2", "--to", "gemma3", str(src), str(out)],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode() == f"converted 40, rejected 1 (see {out}.rejects.jsonl)\n"
    assert [r["text"] for r in records(out)] == [rendered("gemma3", conversation(i)) for i in range(40)]


# --------------------------------------------------------------------------- convert: a run that stops


def leftovers(folder: Path) -> list[str]:
    """The temporary files a run left in ``folder`` (written beside the output, renamed when done)."""
    return sorted(path.name for path in folder.glob(".*.part"))


def earlier_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> tuple[Path, Path, bytes, bytes]:
    """The input of a run that stops, and the output and rejects an earlier, complete run left."""
    out = tmp_path / "out.jsonl"
    first = write_lines(tmp_path / "first.jsonl", [json.dumps(conversation(0)), "{"])
    assert run(capsys, "convert", "--to", "hermes", str(first), str(out))[0] == 0
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(i)) for i in range(6)] + ["{"])
    return src, out, out.read_bytes(), Path(f"{out}.rejects.jsonl").read_bytes()


def stopping_at_the_second_chunk(monkeypatch: pytest.MonkeyPatch, stop: Any) -> None:
    """Chunks of two lines, and ``stop()`` called as the second is converted."""
    monkeypatch.setattr(_cli_convert, "_CHUNK_LINES", 2)
    convert = _cli_convert._Converter.lines

    def lines(self: Any, chunk: Any) -> Any:
        if chunk.start > 2:
            stop()
        return convert(self, chunk)

    monkeypatch.setattr(_cli_convert._Converter, "lines", lines)


def interrupt() -> None:
    raise KeyboardInterrupt


def terminate() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)  # the handler raises at once; never reached


@pytest.mark.parametrize(("stop", "status"), [(interrupt, 130), (terminate, 143)], ids=["ctrl-c", "sigterm"])
def test_a_run_that_stops_leaves_the_earlier_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: Any, status: int
) -> None:
    """Ctrl-C or SIGTERM: the summary so far, and OUT and its rejects as an earlier run left them."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are set in the main thread only")
    src, out, before, rejects_before = earlier_run(capsys, tmp_path)
    stopping_at_the_second_chunk(monkeypatch, stop)
    code, stdout, err = run(capsys, "convert", "--to", "hermes", str(src), str(out))
    assert (code, stdout) == (status, "")
    assert (
        err == f"stopped: converted 2, rejected 0; {out} was not written (the {out} that was there is left as it was)\n"
    )
    assert out.read_bytes() == before and Path(f"{out}.rejects.jsonl").read_bytes() == rejects_before
    assert leftovers(tmp_path) == []
    assert signal.getsignal(signal.SIGTERM) is not _cli_convert._stop  # the handler is the run's only


def test_a_full_disk_leaves_no_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No room for the last lines (the disk says so when they are synced): nothing is put in place."""
    src, out, before, rejects_before = earlier_run(capsys, tmp_path)
    fresh = tmp_path / "fresh.jsonl"

    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_cli_convert.os, "fsync", full)
    code, _, err = run(capsys, "convert", "--to", "hermes", "--rejects", os.devnull, str(src), str(fresh))
    assert code == 2
    assert err == (
        f"stopped: converted 6, rejected 1; {fresh} was not written (nothing was written)\n"
        f"codec: error: {fresh}: No space left on device\n"
    )
    assert not fresh.exists() and leftovers(tmp_path) == []
    code, _, err = run(capsys, "convert", "--to", "hermes", str(src), str(out))
    rejects = f"{out}.rejects.jsonl"
    assert err == (
        f"stopped: converted 6, rejected 1; neither {out} nor {rejects} was written "
        f"(the {out} that was there is left as it was)\n"
        f"codec: error: {rejects}: No space left on device\n"
    )
    assert out.read_bytes() == before and Path(rejects).read_bytes() == rejects_before
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full to write to")
def test_a_device_that_is_full_is_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A device is written in place (there is nothing to rename over): what is there is incomplete."""
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(0))])
    code, _, err = run(capsys, "convert", "--to", "hermes", "--rejects", os.devnull, str(src), "/dev/full")
    assert code == 2
    stopped = "stopped: converted 1, rejected 0; /dev/full is incomplete\n"
    assert err == stopped + "codec: error: /dev/full: No space left on device\n"


@pytest.mark.skipif(
    os.environ.get("CODEC_TESTS") != "deep",
    reason="deep profile only: a SIGTERM to the whole group while workers start still hangs now and then "
    "on a loaded machine (a known race, not yet found)",
)
def test_sigterm_stops_the_jobs_quietly(tmp_path: Path) -> None:
    """SIGTERM to the command and its --jobs processes (as a service manager sends it): no traceback, no output."""
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(i)) for i in range(6_000)])
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "codec", "convert", "--jobs", "2", "--to", "hermes", str(src), str(out)],
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not leftovers(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)  # until the output is being written
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert err.decode().startswith("stopped: converted "), err
    assert err.decode().endswith(f"; {out} was not written (nothing was written)\n"), err
    assert not out.exists() and leftovers(tmp_path) == []


def test_the_output_keeps_its_mode_and_links(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Renamed into place, the output is what writing over it would make: its mode, the file a link names."""
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(0))])
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"old\n")
    out.chmod(0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(out)
    assert run(capsys, "convert", "--to", "hermes", str(src), str(link))[0] == 0
    assert link.is_symlink() and (out.stat().st_mode & 0o777) == 0o640
    assert records(out) == [{"text": rendered("hermes", conversation(0))}]
    new = tmp_path / "new.jsonl"
    assert run(capsys, "convert", "--to", "hermes", str(src), str(new))[0] == 0
    umask = os.umask(0)
    os.umask(umask)
    assert new.stat().st_mode & 0o777 == 0o666 & ~umask


def test_rejects_to_standard_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--rejects -``: the rejected lines on standard output (no file named ``-``); not when OUT is ``-`` too."""
    monkeypatch.chdir(tmp_path)
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(0)), "{"])
    code, stdout, err = run(capsys, "convert", "--to", "hermes", "--rejects", "-", str(src), "out.jsonl")
    assert (code, err) == (0, "converted 1, rejected 1\n")
    assert [record["line"] for record in records_of(stdout)] == [2]
    assert not (tmp_path / "-").exists() and len(records(tmp_path / "out.jsonl")) == 1
    code, stdout, err = run(capsys, "convert", "--to", "hermes", "--rejects", "-", str(src), "-")
    assert (code, stdout) == (2, "")
    assert err == (
        "codec: error: --rejects -: standard output is already the output "
        "(without --rejects, the rejected lines go to standard error)\n"
    )


def test_an_output_that_cannot_be_created_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A missing folder is the output's (or the rejects'), said as such; a folder is no output."""
    src = write_lines(tmp_path / "in.jsonl", [json.dumps(conversation(0))])
    missing = tmp_path / "missing"
    for argv, named in [
        ([str(src), str(missing / "out.jsonl")], missing / "out.jsonl"),
        (["--rejects", str(missing / "r.jsonl"), str(src), str(tmp_path / "out.jsonl")], missing / "r.jsonl"),
    ]:
        code, _, err = run(capsys, "convert", "--to", "hermes", *argv)
        assert (code, err) == (2, f"codec: error: {named}: cannot be written: there is no folder {missing}\n")
    code, _, err = run(capsys, "convert", "--to", "hermes", str(src), str(tmp_path))
    assert (code, err) == (2, f"codec: error: {tmp_path}: is a folder; give the path of a file to write\n")
    assert not (tmp_path / "out.jsonl").exists()


# --------------------------------------------------------------------------- convert: decoding text records


def text_record(name: str, i: int) -> dict[str, Any]:
    return {"id": i, "text": rendered(name, conversation(i))}


@pytest.mark.parametrize("name", FORMATS)
def test_text_to_the_same_format_is_the_identity(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    decodable(name)
    inputs = [text_record(name, i) for i in range(4)]
    src = write_lines(tmp_path / "in.jsonl", (json.dumps(r) for r in inputs))
    out = tmp_path / "out.jsonl"
    assert run(capsys, "convert", "--from", name, "--to", name, str(src), str(out))[0] == 0
    assert records(out) == inputs


@pytest.mark.parametrize("source", FORMATS)
def test_round_trip_through_another_format(capsys: pytest.CaptureFixture[str], tmp_path: Path, source: str) -> None:
    """messages -> A text -> B text is A's decoded conversation rendered with B, for every B; a conversation
    B refuses (what A's prompt does not carry may be what B needs) is rejected with B's reason."""
    fmt = decodable(source)
    messages_file = write_lines(tmp_path / "m.jsonl", (json.dumps({"id": i, **conversation(i)}) for i in range(3)))
    a_text = tmp_path / "a.jsonl"
    assert run(capsys, "convert", "--to", source, str(messages_file), str(a_text))[0] == 0
    for target in FORMATS:
        b_text = tmp_path / f"b_{target}.jsonl"
        assert run(capsys, "convert", "--from", source, "--to", target, str(a_text), str(b_text))[0] == 0
        expected, refused = [], []
        for number, line in enumerate(a_text.read_text(encoding="utf-8").splitlines(), start=1):
            record = json.loads(line)
            c = fmt.decode(record["text"])
            try:
                text = codec.get_format(target).render(
                    c.messages, c.tools, add_generation_prompt=c.add_generation_prompt, **c.variables
                )
            except codec.RenderError as exc:
                refused.append({"line": number, "error": str(exc), "input": line})
            else:
                expected.append({"id": record["id"], "text": text})
        assert records(b_text) == expected
        rejects = Path(f"{b_text}.rejects.jsonl")
        assert (records(rejects) if rejects.exists() else []) == refused
        assert rejects.exists() == bool(refused)


@pytest.mark.parametrize("name", FORMATS)
def test_text_records_decoded_to_messages(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    fmt = decodable(name)
    src = write_lines(
        tmp_path / "in.jsonl", [json.dumps(text_record(name, 5)), json.dumps({"text": cut_in_half(name)})]
    )
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "convert", "--from", name, "--output", "messages", str(src), str(out))
    assert code == 0 and "converted 1, rejected 1" in err
    (record,) = records(out)
    assert record["id"] == 5
    again = fmt.render(record["messages"], record.get("tools"), add_generation_prompt=record["add_generation_prompt"])
    assert again == text_record(name, 5)["text"]
    (reject,) = records(Path(f"{out}.rejects.jsonl"))
    assert reject["line"] == 2 and reject["error"].startswith("text: ") and ", column " in reject["error"]


# --------------------------------------------------------------------------- decode and detect


@pytest.mark.parametrize("name", FORMATS)
def test_decode_renders_back(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    decodable(name)
    prompt = tmp_path / "prompt.txt"
    prompt.write_bytes(rendered(name, conversation(6)).encode("utf-8"))
    code, out, err = run(capsys, "decode", "-f", name, str(prompt))
    assert code == 0 and err == ""
    conversation_file = tmp_path / "conversation.json"
    conversation_file.write_text(out, encoding="utf-8")
    code, again, _ = run(capsys, "render", "-f", name, str(conversation_file))
    assert code == 0
    assert again == prompt.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", FORMATS)
def test_decode_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_bytes(cut_in_half(name).encode("utf-8"))
    code, out, err = run(capsys, "decode", "-f", name, str(prompt))
    assert (code, out) == (2, "")
    assert err.startswith("codec: error: ") and err.count("\n") == 1
    if "cannot decode prompts yet" not in err:
        with pytest.raises(codec.ParseError) as exc:
            codec.get_format(name).decode(prompt.read_text(encoding="utf-8"))
        where = f"line {exc.value.line}, column {exc.value.column} (offset {exc.value.pos})"
        assert err == f"codec: error: {prompt}: {exc.value.message} at {where}\n"


@pytest.mark.parametrize("name", FORMATS)
def test_detect_reference_templates_and_configs(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    path = SEEDS / codec.get_format(name).reference_template
    if not path.is_file():
        path = SEEDS.parent / "templates" / path.name  # a prompt variant's real-world template
    if not path.is_file():
        pytest.skip(f"reference template not found: {path}")
    assert run(capsys, "detect", str(path)) == (0, name + "\n", "")
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"chat_template": path.read_text(encoding="utf-8")}), encoding="utf-8")
    assert run(capsys, "detect", str(config)) == (0, name + "\n", "")


def test_detect_unknown_template_and_bad_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    template = tmp_path / "chatml.jinja"
    template.write_text("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}")
    # No known format is an answer, on standard output, with exit status 1 (as README says).
    assert run(capsys, "detect", str(template)) == (1, "no known format\n", "")
    config = tmp_path / "chatml_config.json"
    config.write_text(json.dumps({"chat_template": template.read_text()}))
    assert run(capsys, "detect", str(config)) == (1, "no known format\n", "")
    config = tmp_path / "tokenizer_config.json"
    config.write_text('{"bos_token": "<s>"}')
    code, out, err = run(capsys, "detect", str(config))
    assert (code, out) == (2, "") and "chat_template" in err


def test_detect_reply(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    reply = tmp_path / "reply.txt"
    reply.write_bytes(codec.get_format("qwen3_coder").render_reply(conversation(1)["messages"][2]).encode("utf-8"))
    code, out, err = run(capsys, "detect", "--reply", str(reply))
    assert code == 0 and err == ""
    lines = [line.split() for line in out.splitlines()]
    assert lines == [[d.format, f"{d.confidence:.2f}"] for d in codec.detect_reply(reply.read_text(encoding="utf-8"))]
    assert lines[0][0] == "qwen3_coder"
    reply.write_text("Just words.")
    assert run(capsys, "detect", "--reply", str(reply)) == (1, "no known format\n", "")
