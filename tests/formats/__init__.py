"""Test profiles: everything particular to one format that the format-independent tests need.

Each registered format has a module ``tests/formats/<name>.py`` that defines ``PROFILE``, a
:class:`Profile`; modules whose name starts with ``_`` hold what several profiles share. The
format-independent tests take the format list from ``codec.formats()`` and get each format's
profile from :func:`profile`, which fails (never skips) for a format without one, saying what to
add; ``tests/test_formats.py`` names every piece a format needs on the test side.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness import deep

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    import codec

Message = dict[str, Any]
Tools = list[dict[str, Any]] | None

#: Size of the adversarial inputs: large enough that a quadratic cost dwarfs the linear budgets
#: (a work of 8 per character): 40,000 characters in the deep profile, an eighth of that in the
#: default one, where a cost of c·n² is still over the budget for any c above 1/625 (a rescan of
#: the text per chunk, per call or per line is far above it).
N = 40_000 if deep() else 5_000
#: Nesting depth of the adversarial inputs: well past the interpreter's recursion limit.
DEEP = 5_000
#: Size of the inputs made of many calls, which cost far more per character than text (events, salvage):
#: a quarter of N still puts quadratic work far over the linear budget.
MANY = N // 4
#: Text the stream must pass through at once in every format (nothing in it can start a marker).
PLAIN_TEXT = "Olá, tudo bem? Vou verificar isso agora mesmo"


@dataclass(frozen=True)
class Adversarial:
    """One adversarial reply: its text, the tools to parse it with, and a known bug (xfail reason)."""

    text: str
    tools: list[dict[str, Any]] | None = None
    xfail: str | None = None
    raises: type[BaseException] | None = None  # what the known bug raises, if anything


@dataclass(frozen=True, kw_only=True)
class RoundTrip:
    """Which generated assistant messages a format carries, and what parsing the reply it writes gives back.

    The round trip (``test_round_trip.py``) renders each message with ``render_reply`` and parses the
    reply with the tools: the result must be :attr:`expected`, with no issue, also when streamed.
    """

    #: ``messages(with_tools)``: a strategy of (an assistant message the format carries, the tools to
    #: parse its reply with: None when ``with_tools`` is false). What the format cannot carry is left
    #: out explicitly, and the format's own tests check that each exclusion is real.
    messages: Callable[[bool], SearchStrategy[tuple[Message, Tools]]] = field(repr=False)
    #: ``expected(message, tools)``: what parsing the reply gives back, in the shape of a golden case's
    #: ``expected`` without issues: ``{"content", "reasoning", "tool_calls": [{"name", "arguments"}]}``.
    expected: Callable[[Message, Tools], dict[str, Any]] = field(repr=False)
    #: Whether the reply keeps the arguments' key order (False where the template sorts keys).
    keeps_key_order: bool
    #: The format instance whose replies these are; None: the registered one.
    fmt: codec.Format | None = None


@dataclass(frozen=True, kw_only=True)
class Decode:
    """What decoding a rendering gives back: the conversation less what the template drops or writes alike."""

    #: ``normal_form(case, text)``: what ``fmt.decode(text)`` gives for ``text``, the rendering of the
    #: generated conversation ``case`` (``{"messages", "tools", "add_generation_prompt", "variables"}``),
    #: as :attr:`dump_mode` dumps it (tool results linked to their calls, ids ``call_0``...);
    #: None where a text of the case holds the format's own markup, so that the prompt reads several
    #: ways that render the same (then only its rendering back is checked).
    normal_form: Callable[[dict[str, Any], str], dict[str, Any] | None] = field(repr=False)
    #: How the decoded conversation is dumped to be compared with the normal form: ``"json"`` (arguments as
    #: the JSON strings OpenAI sends) or ``"python"`` (arguments as values); ``tools`` is always there.
    dump_mode: str = "json"
    #: The format instance whose renderings these are; None: the registered one.
    fmt: codec.Format | None = None


@dataclass(frozen=True, kw_only=True)
class Profile:
    """What the format-independent tests need to know about one format.

    Known parser bugs are ``xfail(strict=True)``, so that a fix shows up as XPASS: per adversarial
    input (``Adversarial.xfail``, :attr:`generic_xfail`) or per generic test (:attr:`test_xfail`). A
    bug that a whole family of inputs hits (a crash on every reply cut inside reasoning) is instead
    left out of the generic tests by :attr:`known_bugs` and reproduced by an xfail test of the
    format's own test module.
    """

    #: Whole markers of the format; their cut fragments are derived.
    markers: tuple[str, ...]
    #: Pieces of the format's call syntax (a call's start, a value's start, a whole small call...).
    snippets: tuple[str, ...]
    #: Marks the end of a call: in a golden reply holding exactly one per call, the k-th one ends call k.
    call_closer: str
    #: Text the stream must pass through at once (nothing in it can start a marker).
    plain_text: str
    #: A call block the grammar rejects, kept as content.
    broken_block: str
    #: The format's own adversarial inputs (built when first needed: they are large).
    adversarial: Callable[[], dict[str, Adversarial]] = field(repr=False)
    #: Regexes (``codec.export`` notation) the constrained-decoding grammar keeps out of string values
    #: beyond what its call syntax declares (``text_forbid``); ``()`` when there are none.
    grammar_forbid: tuple[Any, ...]
    #: The round trip of generated messages through ``render_reply`` and ``parse``.
    round_trip: RoundTrip
    #: Other instances of the format whose replies must round-trip too (``Gemma3ToolCode(corrected=True)``),
    #: by a name for the test id.
    round_trip_variants: dict[str, RoundTrip] = field(default_factory=dict)
    #: What ``decode(render(case))`` gives back (``test_decode.py``).
    decode: Decode
    #: Other instances of the format whose renderings must decode too, by a name for the test id.
    decode_variants: dict[str, Decode] = field(default_factory=dict)
    #: Known bugs (xfail reasons) of the format on the adversarial inputs every format gets.
    generic_xfail: dict[str, str] = field(default_factory=dict)
    #: Known bugs (xfail reasons) of the format in a generic test, by the test's name without ``test_``
    #: (``"<name>/<golden case>"`` for the truncation tests, which run per golden case).
    test_xfail: dict[str, str] = field(default_factory=dict)
    #: Known parser bugs that whole families of inputs hit, as (reason, predicate on ``(text, prompt)``).
    #: The generic tests leave those inputs out, so that one known bug does not hide every other; a
    #: strict xfail test in the format's own module reproduces each bug (a fix shows up there as XPASS,
    #: and its entry here can then go).
    known_bugs: tuple[tuple[str, Callable[[str, str | None], bool]], ...] = field(repr=False, default=())


def _load() -> tuple[dict[str, Profile], dict[str, str]]:
    """Every profile module's ``PROFILE``, and for each module that does not give one, why."""
    profiles: dict[str, Profile] = {}
    broken: dict[str, str] = {}
    for module_info in pkgutil.iter_modules(__path__):
        name = module_info.name
        if name.startswith("_"):
            continue
        try:
            found = importlib.import_module(f"{__name__}.{name}").PROFILE
        except Exception as exc:  # reported by profile(name), in the tests of that format
            broken[name] = f"{type(exc).__name__}: {exc}"
            continue
        if not isinstance(found, Profile):
            broken[name] = f"PROFILE is a {type(found).__name__}, not a Profile"
            continue
        profiles[name] = found
    return profiles, broken


PROFILES, BROKEN = _load()


def missing_profile(name: str) -> str | None:
    """Why format ``name`` has no usable profile, or None when it has one."""
    if name in PROFILES:
        return None
    if name in BROKEN:
        return f"tests/formats/{name}.py does not give a Profile: {BROKEN[name]}"
    return f"format {name!r} has no test profile: add tests/formats/{name}.py defining PROFILE = Profile(...)"


def variant_params(kind: str) -> list[Any]:
    """``(format, variant)`` test parameters: every registered format (variant ``""``), then each variant its
    profile names in ``<kind>_variants`` (``kind``: ``"round_trip"`` or ``"decode"``). A format without a
    profile is one parameter, whose test fails at :func:`profile`."""
    import pytest

    import codec

    params = []
    for name in codec.formats():
        variants = getattr(PROFILES[name], f"{kind}_variants") if name in PROFILES else {}
        params.append(pytest.param(name, "", id=name))
        params += [pytest.param(name, variant, id=f"{name}-{variant}") for variant in variants]
    return params


def profile(name: str) -> Profile:
    """The profile of format ``name``; fails the calling test when there is none."""
    problem = missing_profile(name)
    if problem is not None:
        raise AssertionError(problem)
    return PROFILES[name]
