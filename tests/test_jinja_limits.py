"""codec.jinja's limits: every way found for a template to exhaust the process stops at a limit that names itself.

Never timed: a loop or macro bomb stops at its limit's count plus one (the render's own counters),
a memory bomb is refused before it allocates (tracemalloc's peak stays far below what it asked
for), and a render that would run for hours within those stops at a tiny ``Limits.seconds``,
which names itself (how long it took is not looked at). The reference templates render unchanged
within the default limits.
"""

from __future__ import annotations

import math
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import strategies
from harness import examples
from hypothesis import given
from hypothesis import strategies as hst

from codec import _jinja_limits, jinja
from codec.errors import RenderError
from codec.jinja import Limits, render_template

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TEMPLATES = sorted([*SHARED.glob("seeds/*.jinja"), *SHARED.glob("templates/*.jinja")])
CHAT = [{"role": "user", "content": "hi"}]
#: Limits no template reaches: what the template renders without them.
UNBOUNDED = Limits(
    **dict.fromkeys(("output", "built", "iterations", "calls", "integer_bits", "range_size"), sys.maxsize),
    seconds=math.inf,
)
#: Small limits, so that each bomb below reaches its limit within a few thousand steps and kilobytes.
SMALL = Limits(output=10_000, built=100_000, iterations=1_000, calls=100, integer_bits=256, range_size=1_000)
#: What a refused bomb may have allocated, at most; each of them asks for far more.
PEAK = 4_000_000


@pytest.fixture
def budgets(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The budget of every render from here on, to read its counters."""
    seen: list[Any] = []

    class Recorded(jinja._Budget):
        def __init__(self, limits: Limits) -> None:
            super().__init__(limits)
            seen.append(self)

    monkeypatch.setattr(jinja, "_Budget", Recorded)
    return seen


def refused(template: str, limits: Limits | None = None) -> tuple[str, int]:
    """The limit that stopped ``template`` and the peak of what its render allocated (compiled beforehand)."""
    with pytest.raises(RenderError):
        render_template(template, CHAT, limits=limits)  # compiles the template
    tracemalloc.start()
    try:
        with pytest.raises(RenderError) as info:
            render_template(template, CHAT, limits=limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    limit = getattr(info.value, "limit", None)
    assert limit is not None, f"not a limit: {info.value}"
    assert f"Limits.{limit}" in str(info.value)
    return limit, peak


# --------------------------------------------------------------------------- the blow-ups, at the defaults

#: (id, template, the limit that stops it): each asks for at least a gigabyte.
DEFAULT_BOMBS = [
    ("repeat_string", "{{ 'a' * 10**9 }}", "built"),
    ("repeat_list", "{{ ([0] * 10**9) | length }}", "built"),
    ("power", "{{ 9 ** (9 ** 9) }}", "integer_bits"),
    ("tojson_indent", "{{ messages | tojson(indent=10**9) }}", "built"),
    ("center_method", "{{ 'a'.center(10**9) }}", "built"),
    ("center_filter", "{{ 'a' | center(10**9) }}", "built"),
    ("percent_width", "{{ '%1000000000s' % 'a' }}", "built"),
    ("percent_precision", "{{ '%.1000000000f' % 1.0 }}", "built"),
    ("format_filter", "{{ '%1000000000s' | format('a') }}", "built"),
    ("str_format", "{{ '{:>1000000000}'.format('a') }}", "built"),
    ("join_of_a_range", "{{ ('x' * 10**4).join(range(10**5) | map('string')) }}", "built"),
    ("range", "{% for i in range(10**9) %}{% endfor %}", "range_size"),
    # lists of a text's pieces (words, lines, characters) made on the way to a filter's or method's result
    ("title_words", "{{ ('a ' * 2 * 10**6) | title | length }}", "built"),
    ("wordcount_words", "{{ ('ab ' * 2 * 10**6) | wordcount }}", "built"),
    ("split_words", "{{ ('a ' * 2 * 10**6).split() | length }}", "built"),
    ("splitlines", "{{ ('a\\n' * 2 * 10**6).splitlines() | length }}", "built"),
    ("list_of_a_text", "{{ ('ab ' * 10**6) | list | length }}", "built"),
    ("sort_of_a_text", "{{ ('ab ' * 10**6) | sort | length }}", "built"),
    ("join_of_a_text", "{{ ('a' * 4 * 10**6) | join('-') | length }}", "built"),
    ("join_method_of_a_text", "{{ '-'.join('a' * 4 * 10**6) | length }}", "built"),
]


@pytest.mark.parametrize(("template", "limit"), [bomb[1:] for bomb in DEFAULT_BOMBS], ids=[b[0] for b in DEFAULT_BOMBS])
def test_blow_ups_are_refused_before_they_allocate(template: str, limit: str) -> None:
    assert refused(template) == (limit, pytest.approx(0, abs=PEAK * 4))


def test_nested_loops_stop_at_the_iteration_limit(budgets: list[Any]) -> None:
    loops = "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor %}"
    with pytest.raises(RenderError, match=r"Limits\.iterations"):
        render_template(loops + "{% endfor %}", CHAT)
    assert budgets[-1].iterations == Limits().iterations + 1


def test_exponential_macros_stop_at_the_call_limit(budgets: list[Any]) -> None:
    macro = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}"
    with pytest.raises(RenderError, match=r"Limits\.calls"):
        render_template(macro, CHAT)
    assert budgets[-1].calls == Limits().calls + 1


def test_output_stops_at_its_limit(budgets: list[Any]) -> None:
    with pytest.raises(RenderError, match=r"Limits\.output"):
        render_template("{% set s = 'x' * 10**6 %}{% for i in range(100) %}{{ s }}{% endfor %}", CHAT)
    assert budgets[-1].written == Limits().output + 10**6  # the piece that went past, not one more


# --------------------------------------------------------------------------- every way found, at small limits

#: (id, template, the limit that stops it within SMALL), each asking for far more than SMALL allows.
SMALL_BOMBS = [
    # output
    ("output", "{% for i in range(500) %}{{ 'x' * 50 }}{% endfor %}", "output"),
    # repetition, concatenation and integers
    ("repeat_list", "{{ ([0] * 10**6) | length }}", "built"),
    (
        "concat_doubling",
        "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "built",
    ),
    (
        "plus_doubling",
        "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "built",
    ),
    (
        "list_doubling",
        "{% set ns = namespace(s=[1]) %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "built",
    ),
    (
        "multiply_squaring",
        "{% set ns = namespace(x=3) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}{% endfor %}",
        "integer_bits",
    ),
    (
        "add_doubling",
        "{% set ns = namespace(x=3) %}{% for i in range(900) %}{% set ns.x = ns.x + ns.x %}{% endfor %}",
        "integer_bits",
    ),
    (
        "subtract_doubling",
        "{% set ns = namespace(x=3) %}{% for i in range(900) %}{% set ns.x = ns.x - -ns.x %}{% endfor %}",
        "integer_bits",
    ),
    ("power", "{{ 2 ** (10**6) }}", "integer_bits"),  # ** is left-associative in Jinja
    # formatting
    ("percent_star", "{{ '%*d' % (10**9, 1) }}", "built"),
    ("percent_many", "{% set s = 'x' * 10**4 %}{{ ('%s' * 100) % ((s,) * 100) }}", "built"),
    ("percent_mapping", "{% set s = 'x' * 10**4 %}{{ ('%(a)s' * 100) % {'a': s} }}", "built"),
    ("percent_repr", "{% set s = 'x' * 10**4 %}{{ '%r' % ((s,)) }}", "built"),
    ("str_format_many", "{% set s = 'x' * 10**4 %}{{ ('{0}' * 100).format(s) }}", "built"),
    ("str_format_precision", "{{ '{:.1000000f}'.format(1.0) }}", "built"),
    ("format_map", "{{ '{a:>1000000}'.format_map({'a': 1}) }}", "built"),
    ("markup_format", "{{ ('{:>1000000}' | safe).format(1) }}", "built"),
    ("format_filter_many", "{% set s = 'x' * 10**4 %}{{ ('%s' * 100) | format(*((s,) * 100)) }}", "built"),
    # string methods
    ("ljust", "{{ 'a'.ljust(10**6) }}", "built"),
    ("rjust", "{{ 'a'.rjust(10**6) }}", "built"),
    ("zfill", "{{ 'a'.zfill(10**6) }}", "built"),
    ("expandtabs", "{{ '\\t'.expandtabs(10**6) }}", "built"),
    (
        "replace_method",
        "{% set ns = namespace(s='a' * 10) %}{% for i in range(9) %}"
        "{% set ns.s = ns.s.replace('a', ns.s) %}{% endfor %}",
        "built",
    ),
    ("translate", "{{ ('a' * 1000).translate({97: 'b' * 1000}) }}", "built"),
    ("join_method", "{% set s = 'x' * 10**4 %}{{ ''.join([s] * 100) }}", "built"),
    ("bytes_center", "{{ 'a'.encode().center(10**6) }}", "built"),
    ("to_bytes", "{{ (1).to_bytes(10**6, 'big') | length }}", "built"),
    (
        "upper_accumulated",
        "{% set ns = namespace(l=[]) %}{% set s = 'x' * 10**4 %}{% for i in range(100) %}"
        "{% set ns.l = ns.l + [s.upper()] %}{% endfor %}",
        "built",
    ),
    # filters
    (
        "replace_filter",
        "{% set ns = namespace(s='a' * 10) %}{% for i in range(9) %}"
        "{% set ns.s = ns.s | replace('a', ns.s) %}{% endfor %}",
        "built",
    ),
    ("indent", "{{ ('\\n' * 1000) | indent(1000) }}", "built"),
    ("wordwrap", "{{ ('a ' * 1000) | wordwrap(1, wrapstring='x' * 1000) }}", "built"),
    ("urlize", "{{ ('a.com ' * 1000) | urlize(target='x' * 1000) }}", "built"),
    ("join_filter", "{% set s = 'x' * 10**4 %}{{ ([s] * 100) | join }}", "built"),
    ("title_words", "{{ ('ab ' * 30000) | title | length }}", "built"),
    ("wordcount_words", "{{ ('ab ' * 30000) | wordcount }}", "built"),
    ("wordwrap_chunks", "{{ ('ab ' * 10000) | wordwrap(10**6) | length }}", "built"),
    ("striptags_words", "{{ ('ab ' * 15000) | striptags | length }}", "built"),
    ("indent_lines", "{{ ('ab\\n' * 15000) | indent(0) | length }}", "built"),
    ("batch_fill", "{{ [1] | batch(10**6, 0) | list | length }}", "built"),
    ("slice_filter", "{{ [1] | slice(10**6) | list | length }}", "iterations"),
    ("sum_of_lists", "{{ ([[0] * 100] * 100) | sum(start=[]) | length }}", "built"),
    ("tojson_separators", "{{ range(100) | list | tojson(separators=(',' * 10**4, ':')) }}", "built"),
    ("tojson_aliases", "{% set s = 'x' * 10**4 %}{{ ([s] * 100) | tojson }}", "built"),
    ("pprint_aliases", "{% set s = 'x' * 10**4 %}{{ ([s] * 100) | pprint }}", "built"),
    ("string_aliases", "{% set s = 'x' * 10**4 %}{{ ([s] * 100) | string }}", "built"),
    ("escape_aliases", "{% set s = 'x' * 10**4 %}{{ ([s] * 100) | e }}", "built"),
    ("lipsum", "{{ lipsum(10**6) }}", "built"),
    ("strftime", "{{ strftime_now('%c' * 10**4) }}", "built"),
    ("dict_fromkeys", "{% for i in range(100) %}{% set d = dict.fromkeys(range(1000)) %}{% endfor %}", "built"),
    # values written whole: a list that holds one string many times
    ("write_aliases", "{% set s = 'x' * 10**4 %}{{ [s] * 100 }}", "built"),
    ("concat_aliases", "{% set s = 'x' * 10**4 %}{{ 'a' ~ [s] * 100 }}", "built"),
    ("nested_aliases", "{% set a = [1] * 500 %}{% set b = [a] * 500 %}{{ b }}", "built"),
    ("namespace_aliases", "{% set s = 'x' * 10**4 %}{% set ns = namespace(l=[s] * 100) %}{{ ns }}", "built"),
    # blocks and slices
    (
        "set_block",
        "{% set s = 'x' * 10**3 %}{% set b %}{% for i in range(200) %}{{ s }}{% endfor %}{% endset %}",
        "built",
    ),
    (
        "macro_body",
        "{% set s = 'x' * 10**3 %}{% macro m() %}{% for i in range(200) %}"
        "{{ s }}{% endfor %}{% endmacro %}{{ m() | length }}",
        "built",
    ),
    (
        "filter_block",
        "{% set s = 'x' * 10**3 %}{% filter upper %}{% for i in range(200) %}{{ s }}{% endfor %}{% endfilter %}",
        "built",
    ),
    (
        "slices_accumulated",
        "{% set ns = namespace(l=[]) %}{% set s = 'x' * 10**4 %}{% for i in range(100) %}"
        "{% set ns.l = ns.l + [s[i:]] %}{% endfor %}",
        "built",
    ),
    # loops, calls, ranges
    ("nested_loops", "{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "iterations"),
    (
        "filtered_loop",
        "{% for i in range(100) if false %}{% for j in range(100) %}{% endfor %}"
        "{% endfor %}{% for i in range(1000) %}{% endfor %}",
        "iterations",
    ),
    ("string_loop", "{% for c in 'x' * 5000 %}{% endfor %}", "iterations"),
    (
        "loop_length",
        "{% for i in range(900) %}{% for j in range(900) %}{{ loop.length if false }}{% endfor %}{% endfor %}",
        "iterations",
    ),
    (
        "macro_exponential",
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
        "calls",
    ),
    (
        "caller_exponential",
        "{% macro twice() %}{{ caller() }}{{ caller() }}{% endmacro %}"
        + "{% call twice() %}" * 20
        + "x"
        + "{% endcall %}" * 20,
        "calls",
    ),
    ("recursive_loop", "{% for x in range(5) recursive %}{{ loop(range(5)) if loop.depth < 20 }}{% endfor %}", "calls"),
    (
        "block_recursion",
        "{% set ns = namespace(n=0) %}{% block b %}{% set ns.n = ns.n + 1 %}"
        "{% if ns.n < 10**6 %}{{ self.b() }}{% endif %}{% endblock %}",
        "calls",
    ),
    ("range_length", "{{ range(10**30) | length }}", "range_size"),
    ("range_loop", "{% for i in range(2000) %}{% endfor %}", "range_size"),
]


@pytest.mark.parametrize(("template", "limit"), [bomb[1:] for bomb in SMALL_BOMBS], ids=[b[0] for b in SMALL_BOMBS])
def test_every_way_found_stops_at_its_limit(template: str, limit: str) -> None:
    assert refused(template, SMALL) == (limit, pytest.approx(0, abs=PEAK))


@pytest.mark.parametrize("template", [bomb[1] for bomb in SMALL_BOMBS], ids=[b[0] for b in SMALL_BOMBS])
def test_the_counters_stop_one_past_their_limit(budgets: list[Any], template: str) -> None:
    with pytest.raises(RenderError):
        render_template(template, CHAT, limits=SMALL)
    budget = budgets[-1]
    assert budget.iterations <= SMALL.iterations + 1
    assert budget.calls <= SMALL.calls + 1
    assert budget.built <= SMALL.built


# --------------------------------------------------------------------------- the reference templates


@pytest.mark.skipif(not TEMPLATES, reason=f"reference templates not found in {SHARED}")
@pytest.mark.parametrize("path", TEMPLATES, ids=lambda path: path.stem)
@examples(150)
@given(conversation=strategies.conversations(content_parts=True))
def test_reference_templates_render_unchanged_within_the_default_limits(
    path: Path, conversation: dict[str, Any]
) -> None:
    template = path.read_text(encoding="utf-8")
    messages, tools = conversation["messages"], conversation["tools"]
    options = {"add_generation_prompt": conversation["add_generation_prompt"], **conversation["variables"]}
    assert outcome(template, messages, tools, Limits(), **options) == outcome(
        template, messages, tools, UNBOUNDED, **options
    )


def long_conversation(exchanges: int) -> Iterator[dict[str, Any]]:
    """A system message, then per exchange a question, a call, its result and an answer."""
    yield {"role": "system", "content": "Be brief."}
    for index in range(exchanges):
        call = {"id": f"c{index}", "type": "function", "function": {"name": "f", "arguments": {"a": "x", "n": index}}}
        yield {"role": "user", "content": f"question {index}"}
        yield {"role": "assistant", "content": "", "tool_calls": [call]}
        yield {"role": "tool", "tool_call_id": f"c{index}", "content": f"result {index}"}
        yield {"role": "assistant", "content": f"answer {index}"}


@pytest.mark.skipif(not TEMPLATES, reason=f"reference templates not found in {SHARED}")
@pytest.mark.parametrize("path", TEMPLATES, ids=lambda path: path.stem)
def test_reference_templates_use_under_half_of_each_limit_for_800_messages(budgets: list[Any], path: Path) -> None:
    """The defaults leave room: gemma4's template, whose iterations grow with the square of the messages, the least."""
    parameters = {"type": "object", "properties": {"a": {"type": "string", "description": "a text"}}}
    tool = {"type": "function", "function": {"name": "f", "description": "does f", "parameters": parameters}}
    render_template(path.read_text(encoding="utf-8"), list(long_conversation(200)), [tool], add_generation_prompt=True)
    budget, limits = budgets[-1], Limits()
    used = {"output": budget.written, "built": budget.built, "iterations": budget.iterations, "calls": budget.calls}
    assert {name: count for name, count in used.items() if count > getattr(limits, name) / 2} == {}


def outcome(template: str, messages: Any, tools: Any, limits: Limits, **options: Any) -> tuple[str, str]:
    try:
        return "ok", render_template(template, messages, tools, limits=limits, **options)
    except RenderError as exc:
        return "error", str(exc)


# --------------------------------------------------------------------------- the limits themselves


def test_limits_are_set_per_render() -> None:
    big = "{{ 'x' * 20_000_000 }}"
    with pytest.raises(RenderError, match=r"Limits\.output"):
        render_template(big, CHAT)
    assert len(render_template(big, CHAT, limits=Limits(output=20_000_000))) == 20_000_000
    with pytest.raises(RenderError, match=r"Limits\.iterations"):
        render_template("{% for m in messages %}{% endfor %}", CHAT * 3, limits=Limits(iterations=2))


def test_limits_reach_format_render(budgets: list[Any]) -> None:
    import codec

    fmt = codec.get_format("hermes")
    with pytest.raises(RenderError, match=r"Limits\.output"):
        fmt.render(CHAT, template="{{ messages[0].content * 10 }}", limits=Limits(output=5))
    assert fmt.render(CHAT, template="{{ messages[0].content }}", limits=Limits(output=5)) == "hi"


@pytest.mark.parametrize("value", [-1, 1.5, "10", None])
def test_limits_are_non_negative_ints(value: Any) -> None:
    with pytest.raises(ValueError, match=r"Limits\.output"):
        Limits(output=value)


@pytest.mark.parametrize("value", [-1, -0.5, math.nan, "10", None, True])
def test_the_time_limit_is_a_non_negative_number(value: Any) -> None:
    with pytest.raises(ValueError, match=r"Limits\.seconds must be a non-negative number"):
        Limits(seconds=value)
    assert Limits(seconds=2).seconds == 2 and Limits(seconds=math.inf).seconds == math.inf


@examples(200)
@given(text=hst.text(alphabet=hst.sampled_from("ab -(\n\r\x1c\x85\u2028\u3000\t")))
def test_the_pieces_reckoned_are_at_least_those_made(text: str) -> None:
    """What a text's splits are charged before they run: never fewer pieces than they make."""
    assert _jinja_limits._pieces(text, "split") >= len(text.split())
    assert _jinja_limits._pieces(text, "splitlines") >= len(text.splitlines())
    assert _jinja_limits._pieces(text, "split", " ", 2) == len(text.split(" ", 2))
    assert _jinja_limits._pieces(text.encode(), "split") >= len(text.encode().split())


def test_the_blanks_and_line_breaks_are_pythons() -> None:
    every = "".join(map(chr, range(sys.maxunicode + 1)))  # no "\r\n" in it: each line ends at one break
    assert set(_jinja_limits._BLANKS) == set(filter(str.isspace, every))
    assert set(_jinja_limits._LINE_BREAKS) == {line[-1] for line in every.splitlines(keepends=True)[:-1]}


# --------------------------------------------------------------------------- the time limit

#: Under every count limit, each of these runs for hours: each iteration (or call) goes through a
#: list of 100,000 items that was built once.
SLOW = [
    (
        "filter_in_loops",
        "{% set x = range(100000)|list %}{% for i in range(1000) %}{% for j in range(1000) %}"
        "{% if x|max %}{% endif %}{% endfor %}{% endfor %}",
        "the max filter",
    ),
    (
        "method_in_loops",
        "{% set x = range(100000)|list %}{% for i in range(1000) %}{% for j in range(1000) %}"
        "{% if x.index(99999) %}{% endif %}{% endfor %}{% endfor %}",
        "a call",
    ),
    (
        "filter_in_macros",
        "{% set x = range(100000)|list %}{% macro f(n) %}{% if n and x|max %}{{ f(n - 1) }}{{ f(n - 1) }}"
        "{% endif %}{% endmacro %}{{ f(40) }}",
        "the max filter",
    ),
]


@pytest.mark.parametrize(("template", "what"), [slow[1:] for slow in SLOW], ids=[slow[0] for slow in SLOW])
def test_a_render_stops_at_its_time_limit(template: str, what: str) -> None:
    limits = Limits(calls=10**9, seconds=0.05)
    with pytest.raises(RenderError) as info:
        render_template(template, CHAT, limits=limits)
    assert str(info.value) == f"{what} goes past Limits.seconds: at most 0.05 seconds of CPU time"


def test_the_time_between_pieces_is_the_callers() -> None:
    """A render taken piece by piece counts only the time the template runs, not the caller's between pieces."""
    template = jinja.environment().from_string(
        "{% set x = range(2000) | list %}{% for i in range(4) %}{{ x | length }}{% endfor %}"
    )
    pieces = []
    for piece in template.pieces(Limits(seconds=0.05), {}):
        pieces.append(piece)
        started = time.thread_time()
        while time.thread_time() - started < 0.03:  # the caller's own work, in the same thread
            pass
    assert pieces == ["2000"] * 4


def test_the_environment_renders_within_the_default_limits() -> None:
    """Templates compiled by :func:`codec.jinja.environment` directly are bounded too."""
    template = jinja.environment().from_string("{{ 'a' * 10**9 }}")
    with pytest.raises(RenderError, match=r"Limits\.built"):
        template.render()
    with pytest.raises(RenderError, match=r"Limits\.built"):
        list(template.generate())
    assert "".join(jinja.environment().from_string("{{ 'a' * 3 }}").generate()) == "aaa"


def test_constants_are_not_folded_past_the_limits() -> None:
    """The compiler folds constant expressions; none that a limit guards, so it never builds what a render may not."""
    tracemalloc.start()
    try:
        template = jinja.environment().from_string(
            "{{ 'a' | center(1000000000) }}{{ [0] | batch(1000000000, 0) | list }}"
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < PEAK
    with pytest.raises(RenderError, match=r"Limits\.built"):
        template.render()
