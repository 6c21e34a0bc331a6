"""Render parity: every format's renderer against its reference template.

Two sources of truth: the reference templates in ``../shared/seeds`` rendered by ``codec.jinja``
(itself checked against transformers in test_jinja.py) on generated conversations, and the
golden renders committed under ``tests/golden_renders/<format>/`` so that parity is also checked
where ``../shared`` is absent.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from harness import examples
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec import testing
from codec.errors import RenderError
from codec.testing import conversations, rich_conversations

SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"
#: Real-world templates of prompt variants (``qwen3``...), beside the seeds.
TEMPLATES = SEEDS.parent / "templates"
GOLDEN = Path(__file__).resolve().parent / "golden_renders"
FORMATS = [codec.get_format(name) for name in codec.formats()]


def render_both(fmt: codec.Format, template: str, case: dict[str, Any]) -> tuple[str, str]:
    """(ours, reference): the prompts, or ``RenderError: <reason>`` where rendering raised.

    Ours must raise nothing but RenderError, and with the reference template's reason
    (:func:`codec.testing.render_outcomes`).
    """
    reference, ours = testing.render_outcomes(template, fmt, case)
    return ours, reference


def _seed(fmt: codec.Format) -> str:
    path = SEEDS / fmt.reference_template
    if not path.is_file():
        path = TEMPLATES / fmt.reference_template
    if not path.is_file():
        pytest.skip(f"reference template {path} is not available (../shared is absent)")
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@examples(300)
@given(case=st.one_of(conversations(), conversations(content_parts=True), rich_conversations()))
def test_render_matches_reference(fmt: codec.Format, case: dict[str, Any]) -> None:
    testing.assert_renders_like(_seed(fmt), fmt, case)


def golden_cases() -> list[tuple[codec.Format, Path]]:
    return [(fmt, path) for fmt in FORMATS for path in sorted((GOLDEN / fmt.name).glob("*.json"))]


@pytest.mark.parametrize(("fmt", "path"), golden_cases(), ids=lambda v: getattr(v, "stem", getattr(v, "name", "")))
def test_golden_render(fmt: codec.Format, path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    expected_path = path.with_suffix(".txt")
    kwargs = {"add_generation_prompt": case["add_generation_prompt"], **case["variables"]}
    if not expected_path.exists():  # the reference template raises on this conversation
        with pytest.raises(RenderError, match=re.escape(case["error"])):
            fmt.render(case["messages"], case["tools"], **kwargs)
        return
    assert fmt.render(case["messages"], case["tools"], **kwargs) == expected_path.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- nothing silent

PARTS = [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


def test_a_template_that_drops_a_message_warns_and_keeps_its_bytes() -> None:
    hermes = codec.get_format("hermes")
    with pytest.warns(codec.RenderWarning, match=r"messages\[0\] \(user\): its text does not appear in the prompt"):
        prompt = hermes.render(PARTS)
    assert prompt == "<|im_start|>user\n<|im_end|>\n"  # the template's bytes, as they were
    chatml = "{% for m in messages %}{{ m.content }}|{% endfor %}"
    with warnings.catch_warnings():
        warnings.simplefilter("error", codec.RenderWarning)
        assert hermes.render([{"role": "user", "content": " hi\n"}]) == "<|im_start|>user\n hi\n<|im_end|>\n"
        assert hermes.render(PARTS, template=chatml) != ""  # parts a template writes (as their repr) are there
        assert hermes.render(PARTS, template="{{ messages | tojson }}")  # JSON-escaped text is written too
    with pytest.warns(codec.RenderWarning, match=r"messages\[1\] .*the template left it out"):
        hermes.render([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], template="{{ 'a' }}")


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@examples(40)
@given(case=st.one_of(conversations(), conversations(content_parts=True)))
def test_no_warning_for_a_message_whose_text_is_in_the_prompt(fmt: codec.Format, case: dict[str, Any]) -> None:
    kwargs = {"add_generation_prompt": bool(case.get("add_generation_prompt")), **case.get("variables", {})}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", codec.RenderWarning)
        try:
            prompt = fmt.render(case["messages"], case.get("tools"), **kwargs)
        except RenderError:
            return
    warned = {int(re.match(r"messages\[(\d+)\]", str(w.message)).group(1)) for w in caught}  # type: ignore[union-attr]
    for index, message in enumerate(case["messages"]):
        content = message.get("content")
        texts = [content] if isinstance(content, str) else [p["text"] for p in content or () if p["type"] == "text"]
        shown = all(
            any(
                form in prompt
                for form in (t.strip(), json.dumps(t.strip())[1:-1], json.dumps(t.strip(), ensure_ascii=False)[1:-1])
            )
            for t in texts
            if isinstance(t, str)
        )
        assert (index in warned) != shown or not any(isinstance(t, str) and t.strip() for t in texts)


def test_errors_caused_by_the_input_say_what_to_do() -> None:
    with pytest.raises(
        RenderError, match=r"no tools were given, and this template iterates over them: pass tools=\[\]"
    ):
        codec.get_format("hermes3").render([{"role": "user", "content": "x"}])
    codec.get_format("hermes3").render([{"role": "user", "content": "x"}], [])
    for name in ("qwen3", "hermes3"):
        with pytest.raises(
            RenderError, match=r'messages\[0\] has no content \(null or missing\).*"content": ""'
        ) as info:
            codec.get_format(name).render([{"role": "user", "content": None}], [])
        assert info.value.reason == "'dict object' has no attribute 'content'"  # the template's own words


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: codec.get_format(None),
            r"get_format\(\) takes a format's name \(str\), such as 'hermes', not NoneType",
        ),  # type: ignore[arg-type]
        (lambda: codec.get_format("hermes").parse(None), r"parse\(\) takes the reply text \(str\), not NoneType"),  # type: ignore[arg-type]
        (
            lambda: codec.get_format("hermes").render(None),
            r"render\(\) takes messages as a list of message objects, not None",
        ),  # type: ignore[arg-type]
        (lambda: codec.get_format("hermes").render_reply(None), r"render_reply\(\) takes an assistant message"),  # type: ignore[arg-type]
    ],
)
def test_none_is_a_type_error_naming_the_function(call: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        call()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize(("arguments", "problem"), [("{not json", "is not JSON text"), ("[1]", "not of an object")])
def test_render_reply_refuses_arguments_that_are_not_a_json_object(
    fmt: codec.Format, arguments: str, problem: str
) -> None:
    call = {"function": {"name": "f", "arguments": arguments}}
    with pytest.raises(RenderError, match=rf"tool_calls\[0\] \('f'\): arguments .*{re.escape(problem)}"):
        fmt.render_reply({"role": "assistant", "tool_calls": [call]})
    assert fmt.render_reply({"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]})
