"""Checking that a chat template, a format's parser and its grammar agree: what ``codec check`` runs.

:func:`check_template` draws conversations (:func:`codec.testing.strategies.conversations`, from a
seed) and runs four checks, each on its own run of the generator (for the round trip and the
grammar, conversations whose assistants write plain prose beside their calls, to tools that all
declare parameters):

``render``
    the template, rendered as transformers would (:mod:`codec.jinja`), against the format's
    renderer: the same text, or the same error on both sides;
``round_trip``
    every assistant turn with calls to declared tools that tool results answer (after a user's
    message), as the template writes it (what follows the prompt of the messages before it, up to
    the stop token that ends the reply), parses back to the same calls, with the content the
    template writes before them, and no issue; values the format itself cannot carry (the reply
    codec writes for the message reads back the same way) are not held against the template;
``decode``
    the template's prompt decodes back to a conversation that the template renders identically;
``grammar``
    each such reply is accepted by the format's exported grammar, run by llguidance (skipped when
    llguidance is not installed).

Calls in the round trip's and the grammar's conversations, and in half the decode check's, have the
format's own ids (:meth:`~codec.format.Format.default_call_id`), which its template takes (Mistral's
take only ids of nine characters); the template is given the format's tokenizer variables
(:attr:`~codec.format.Format.tokenizer_variables`) where a conversation gives none.

A check stops at its first counterexample, which hypothesis then shrinks to a small conversation;
the same seed gives the same conversations, counterexamples included, however codec is installed.
A check that finds nothing to check in any conversation (a template that raises on each, writes no
turn the format's stop token ends...) is not checked, with the reason, and the run does not pass.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir, storage_directory
from hypothesis.errors import NoSuchExample
from hypothesis.internal.conjecture import providers

from codec import jinja
from codec._compare import first_difference, render_outcomes, template_messages, text_difference
from codec.errors import ParseError, RenderError
from codec.export import call_syntax
from codec.format import Format
from codec.testing import grammars
from codec.testing.strategies import conversations, rich_conversations, tools

__all__ = ["CHECKS", "Check", "Counterexample", "Report", "check_template"]

#: The checks, in the order they run and are reported, with what each one says.
CHECKS: dict[str, str] = {
    "render": "render parity",
    "round_trip": "reply round trip",
    "decode": "decode",
    "grammar": "grammar",
}


@dataclass(frozen=True)
class Unchecked:
    """Nothing to check in one conversation, and why: the template's doing (it raises, writes no
    reply...) or the conversation's (``template=False``: no call to check, say)."""

    reason: str
    template: bool = True


#: What a check says of one conversation: True (they agree), why they disagree, or why there was
#: nothing to check in it.
Outcome = bool | str | Unchecked


@dataclass(frozen=True)
class Counterexample:
    """The smallest conversation found on which a check fails, and what fails."""

    conversation: dict[str, Any]
    detail: str


@dataclass
class Check:
    """One check's result: the conversations it ran on, those it found something to check in, and
    its counterexample, if any (or why it did not run: ``skipped``; why it checked nothing:
    :attr:`not_checked`)."""

    name: str
    generated: int = 0
    checked: int = 0
    counterexample: Counterexample | None = None
    skipped: str | None = None
    #: Why conversations had nothing to check, and in how many.
    unchecked: Counter[Unchecked] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        """The check ran on at least one conversation with something to check, and found no counterexample."""
        return self.counterexample is None and self.skipped is None and self.checked > 0

    @property
    def not_checked(self) -> str | None:
        """Why a check that ran found nothing to check in any conversation (the commonest reason), or None."""
        if self.skipped is not None or self.checked or self.counterexample is not None:
            return None
        # What the template did says more than the conversations that gave it nothing to do.
        reasons = [why for why, _ in self.unchecked.most_common()]
        reason = next((why for why in reasons if why.template), reasons[0] if reasons else None)
        conversations = f"{self.generated} conversation{'' if self.generated == 1 else 's'}"
        return f"nothing to check in {conversations}" + ("" if reason is None else f": {reason.reason}")

    def as_json(self) -> dict[str, Any]:
        found = self.counterexample
        return {
            "ok": self.ok,
            "generated": self.generated,
            "checked": self.checked,
            "skipped": self.skipped,
            "not_checked": self.not_checked,
            "counterexample": None if found is None else {"conversation": found.conversation, "detail": found.detail},
        }


@dataclass
class Report:
    """What :func:`check_template` found: the format, the settings of the run and every check."""

    format: str
    examples: int
    seed: int
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every check ran and agreed on something, or was skipped (llguidance is not installed): a
        check that found nothing to check, like one that failed, does not pass."""
        return all(check.ok or check.skipped is not None for check in self.checks)

    def as_json(self) -> dict[str, Any]:
        """The report as JSON data: ``{"format", "examples", "seed", "ok", "checks": {name: ...}}``."""
        return {
            "format": self.format,
            "examples": self.examples,
            "seed": self.seed,
            "ok": self.ok,
            "checks": {check.name: check.as_json() for check in self.checks},
        }

    def summary(self) -> str:
        """A short human summary: one line per check, then each counterexample with what fails."""
        lines = []
        for check in self.checks:
            title = CHECKS[check.name]
            if check.skipped is not None:
                lines.append(f"{title}: skipped ({check.skipped})")
            elif check.not_checked is not None:
                lines.append(f"{title}: NOT CHECKED ({check.not_checked})")
            elif check.ok:
                lines.append(f"{title}: ok ({check.checked} checked in {check.generated} conversations)")
            else:
                lines.append(f"{title}: FAILED")
        for check in self.checks:
            found = check.counterexample
            if found is None:
                continue
            conversation = json.dumps(found.conversation, ensure_ascii=False)
            lines += ["", f"{CHECKS[check.name]} counterexample: {conversation}", found.detail]
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- renders


class _Renders:
    """The template's renders of prefixes of conversations, cached by their input (the four checks
    run on the same conversations, and the round trip renders each prefix more than once)."""

    def __init__(
        self, template: str, size: int = 4096, arguments: str = "object", defaults: Mapping[str, Any] | None = None
    ) -> None:
        self.template = template
        self.size = size
        self.arguments = arguments  # how the template takes call arguments (template_messages)
        self.defaults = dict(defaults or {})  # the tokenizer's variables (Format.tokenizer_variables)
        self.cache: OrderedDict[str, str | RenderError] = OrderedDict()

    def render(self, messages: list[dict[str, Any]], tools: Any, generation: bool, variables: Mapping[str, Any]) -> str:
        """The template's prompt, given the tokenizer's variables where ``variables`` has none of
        them; :class:`RenderError` where it raises."""
        variables = {**self.defaults, **variables}
        key = json.dumps([messages, tools, generation, variables], sort_keys=True, default=repr)
        if key in self.cache:
            self.cache.move_to_end(key)
            found = self.cache[key]
        else:
            try:
                given = template_messages(messages, self.arguments)
                found = jinja.render_template(
                    self.template, given, tools, add_generation_prompt=generation, **dict(variables)
                )
            except RenderError as exc:
                found = exc
            self.cache[key] = found
            if len(self.cache) > self.size:
                self.cache.popitem(last=False)
        if isinstance(found, RenderError):
            raise found
        return found


@dataclass(frozen=True)
class _Turn:
    """An assistant turn with calls as the template writes it: the prompt before it, the reply."""

    index: int
    prompt: str
    reply: str


def _normal(arguments: Any) -> str:
    value = json.loads(arguments) if isinstance(arguments, str) else arguments
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class _Checker:
    """The four checks of one template against one format."""

    def __init__(self, template: str, fmt: Format) -> None:
        self.template = template
        self.fmt = fmt
        self.renders = _Renders(template, arguments=fmt.template_arguments, defaults=fmt.tokenizer_variables)
        self.stops = call_syntax(fmt, [])[1].stops
        self.grammar_texts: dict[str, str] = {}

    # ------------------------------------------------------------------ render parity

    def render(self, case: dict[str, Any]) -> Outcome:
        theirs, ours = render_outcomes(self.template, self.fmt, case)
        if theirs == ours:
            return True
        if theirs.startswith("RenderError: ") or ours.startswith("RenderError: "):
            shown = [
                (who, text if len(text) <= 300 else text[:300] + "...")
                for who, text in (("the template", theirs), (self.fmt.name, ours))
            ]
            return "one side raises\n" + "\n".join(f"  {who}: {text!r}" for who, text in shown)
        return "the template and the format render differently\n" + text_difference(
            theirs, ours, expected_name="template", actual_name=self.fmt.name
        )

    # ------------------------------------------------------------------ decode

    def decode(self, case: dict[str, Any]) -> Outcome:
        messages, tools = jinja.prepare_messages(case["messages"]), jinja.prepare_tools(case["tools"])
        generation, variables = bool(case["add_generation_prompt"]), case["variables"]
        try:
            prompt = self.renders.render(messages, tools, generation, variables)
        except RenderError as exc:
            return _raises(exc)
        try:
            conversation = self.fmt.decode(prompt)
        except ParseError as exc:
            return f"the template's prompt does not decode: {exc.message} (at {_where(prompt, exc.pos)})"
        again = conversation.model_dump(mode="json", exclude_none=True)
        try:
            text = self.renders.render(
                jinja.prepare_messages(conversation.messages),
                jinja.prepare_tools(conversation.tools),
                conversation.add_generation_prompt,
                conversation.variables,
            )
        except RenderError as exc:
            return f"the decoded conversation does not render: {exc}\ndecoded: {json.dumps(again, ensure_ascii=False)}"
        if text == prompt:
            return True
        return (
            "the decoded conversation renders differently\n"
            + text_difference(prompt, text, expected_name="prompt", actual_name="decoded")
            + f"\ndecoded: {json.dumps(again, ensure_ascii=False)}"
        )

    # ------------------------------------------------------------------ replies

    def turns(self, case: dict[str, Any]) -> list[_Turn] | Unchecked:
        """The assistant turns with calls to declared tools that tool results answer, as the template
        writes them (or why the conversation has none that the template writes apart from the turns
        before it)."""
        tools = jinja.prepare_tools(case["tools"])
        if not tools:
            return Unchecked("no conversation declared tools", template=False)
        declared = {tool.get("function", tool).get("name") for tool in tools}
        messages, variables = jinja.prepare_messages(case["messages"]), case["variables"]
        found, why = [], Unchecked("no assistant turn called declared tools that tool results answered", template=False)
        for index, message in enumerate(messages):
            calls = message.get("tool_calls")
            if message.get("role") != "assistant" or not index or not isinstance(calls, list) or not calls:
                continue
            if not any(earlier.get("role") == "user" for earlier in messages[:index]):
                continue  # an assistant speaking first: some templates write the system text into its turn
            if index + 1 == len(messages) or messages[index + 1].get("role") != "tool":
                continue  # unanswered: some templates then write the content after the calls, which no model does
            if any(
                not isinstance(call, dict) or call.get("function", {}).get("name") not in declared for call in calls
            ):
                continue
            turn = self._turn(messages, tools, index, variables)
            if isinstance(turn, Unchecked):
                why = turn
            elif not _content_after_calls(message, turn.reply, self.fmt.wire.call[1]):
                found.append(turn)
        return found or why

    def _turn(
        self, messages: list[dict[str, Any]], tools: Any, index: int, variables: Mapping[str, Any]
    ) -> _Turn | Unchecked:
        answered = index + 1  # the turn with the tool results after it: the model's reply ends where they start
        while answered < len(messages) and messages[answered].get("role") == "tool":
            answered += 1
        try:
            before = self.renders.render(messages[:index], tools, False, variables)
            prompt = self.renders.render(messages[:index], tools, True, variables)
            written = self.renders.render(messages[:answered], tools, False, variables)
        except RenderError as exc:
            return _raises(exc)
        if written.startswith(prompt):
            start = len(prompt)
        elif written.startswith(before) and len(prompt) > len(before):
            # The generation prompt is not written as the turn opens (a template may end it with
            # text the turn lacks): the turn starts where the two part, within the generation prompt.
            # (Not inside a marker both begin alike: a trailing "<..." fragment is the turn's.)
            common = written[: first_difference(prompt, written)]
            start = len(re.sub(r"<[^<>\n]*\Z", "", common))
            opened = self.fmt.syntax().opened_reasoning
            if opened(written[:start]) and not opened(prompt) and self.fmt.wire.reasoning:
                # The generation prompt closes at once a reasoning block (thinking off) that the turn
                # fills: a model that reasons writes that block itself, so the turn starts at its opener.
                start = max(len(before), written.rfind(self.fmt.wire.reasoning[0], len(before), start))
            if start <= len(before):
                return Unchecked("the template does not open an assistant's turn as its generation prompt does")
        else:
            return Unchecked("the template writes the turns before an assistant's calls otherwise once they follow")
        turn, calls = written[start:], len(messages[index]["tool_calls"])
        # The reply ends at the first stop token after its calls (a stop token inside an argument
        # ends no reply): the first one before which the format reads as many calls as were made.
        ends = sorted({found + len(stop) for stop in self.stops for found in _occurrences(turn, stop)})
        if not ends:
            stops = " or ".join(repr(stop) for stop in self.stops)
            return Unchecked(
                f"the template ends no assistant turn with calls with {self.fmt.name}'s stop token {stops}"
            )
        prompt_before = written[:start]
        end = next((end for end in ends if self._reads_calls(turn[:end], calls, prompt_before)), None)
        if end is None:  # no reading without issues: the first stop after as many calls, else the first stop
            counted = (end for end in ends if len(self.fmt.parse(turn[:end], prompt=prompt_before).tool_calls) >= calls)
            end = next(counted, ends[0])
        return _Turn(index, prompt_before, turn[:end])

    def _reads_calls(self, reply: str, calls: int, prompt: str) -> bool:
        result = self.fmt.parse(reply, prompt=prompt)
        return len(result.tool_calls) >= calls and not result.issues

    def _calls_written(self, case: dict[str, Any], index: int) -> int:
        """How many of message ``index``'s calls the template writes: the fewest that render the
        conversation as all of them do."""
        messages, tools = jinja.prepare_messages(case["messages"]), jinja.prepare_tools(case["tools"])
        answered = index + 1  # the turn and its tool results, as _turn renders them
        while answered < len(messages) and messages[answered].get("role") == "tool":
            answered += 1
        calls, variables = messages[index]["tool_calls"], case["variables"]
        try:
            whole = self.renders.render(messages[:answered], tools, False, variables)
            for count in range(1, len(calls)):
                fewer = [
                    *messages[:index],
                    {**messages[index], "tool_calls": calls[:count]},
                    *messages[index + 1 : answered],
                ]
                if self.renders.render(fewer, tools, False, variables) == whole:
                    return count
        except RenderError:
            pass
        return len(calls)

    def _own_calls(self, message: dict[str, Any], tools: Any) -> list[tuple[str, str]]:
        """The calls the format reads back from its own reply for ``message``."""
        result = self.fmt.parse(self.fmt.render_reply(message), tools=tools)
        return [(call.function.name, _normal(call.function.arguments)) for call in result.tool_calls]

    def round_trip(self, case: dict[str, Any]) -> Outcome:
        turns = self.turns(case)
        if isinstance(turns, Unchecked):
            return turns
        tools = jinja.prepare_tools(case["tools"])
        messages = jinja.prepare_messages(case["messages"])
        for turn in turns:
            message = messages[turn.index]
            result = self.fmt.parse(turn.reply, tools=tools, prompt=turn.prompt)
            got = [(call.function.name, _normal(call.function.arguments)) for call in result.tool_calls]
            want = [(c["function"]["name"], _normal(c["function"].get("arguments", {}))) for c in message["tool_calls"]]
            where = f"assistant message {turn.index} as the template writes it: {turn.reply!r}"
            if got != want and got == self._own_calls(message, tools):
                continue  # what the format cannot carry (an untyped value that its schema reads as another type)
            if got != want:  # a template may write only some of the calls (gpt-oss's, the first)
                want = want[: self._calls_written(case, turn.index)]
            if got != want:
                return f"{where}\nparses to the calls {got}\ninstead of {want}" + _issues(result.issues)
            if result.issues:
                return f"{where}\nparses with issues" + _issues(result.issues)
            content = message.get("content")
            written = content.strip() if isinstance(content, str) else ""
            found, first_call = turn.reply.find(written), turn.reply.find(message["tool_calls"][0]["function"]["name"])
            if not 0 <= found < first_call:  # the template does not write it before the calls (some drop it)
                written = ""
            # (a template may write it as the reasoning of the call, as gpt-oss's analysis message)
            if result.content.strip() != written and not (written and result.reasoning.strip() == written):
                return f"{where}\nparses to the content {result.content!r} instead of {written!r}"
        return True

    def grammar(self, case: dict[str, Any]) -> Outcome:
        turns = self.turns(case)
        if isinstance(turns, Unchecked):
            return turns
        tools = jinja.prepare_tools(case["tools"]) or []
        key = json.dumps(tools, sort_keys=True)
        if key not in self.grammar_texts:
            self.grammar_texts[key] = self.fmt.grammar(tools)
        text = self.grammar_texts[key]
        for turn in turns:
            reply = grammars.reply_without_stop(self.fmt, turn.reply)
            stopped = grammars.accepted_prefix(text, reply, self.fmt.grammar_special_tokens)
            if stopped is not None:
                return (
                    f"assistant message {turn.index} as the template writes it: {reply!r}\n"
                    f"is refused by the {self.fmt.name} grammar at {_where(reply, stopped)}: "
                    f"{reply[max(0, stopped - 40) : stopped]!r} | {reply[stopped : stopped + 40]!r}"
                )
        return True


def _raises(exc: RenderError) -> Unchecked:
    message = str(exc)
    return Unchecked(f"the template raises: {message if len(message) <= 100 else message[:100] + '...'}")


def _content_after_calls(message: dict[str, Any], reply: str, closer: str) -> bool:
    """Whether the template writes the content of ``message`` after its calls (``closer`` ends each)
    in ``reply``, answered or not, as Gemma 4 31B's interleaved template does: no model does that,
    so there is no reply to read."""
    content = message.get("content")
    text = content.strip() if isinstance(content, str) else ""
    last = reply.rfind(closer) if closer else -1
    return bool(text) and last >= 0 and reply.rfind(text) >= last + len(closer)


def _occurrences(text: str, part: str) -> list[int]:
    found, pos = [], text.find(part)
    while pos >= 0:
        found.append(pos)
        pos = text.find(part, pos + 1)
    return found


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"offset {pos} (line {line}, column {column})"


def _issues(issues: list[Any]) -> str:
    return "".join(f"\n  {issue.kind}: {issue.message}" for issue in issues)


# --------------------------------------------------------------------------- running


def _with_parameters(tool_list: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tools that all declare parameters (an empty object where one had none): calls drawn for them
    fit their schemas, as a model constrained by the format's grammar writes them."""
    empty = {"type": "object", "properties": {}}
    return [{**tool, "function": {"parameters": empty, **tool["function"]}} for tool in tool_list]


def _with_ids(fmt: Format, case: dict[str, Any]) -> dict[str, Any]:
    """``case`` with the format's own call ids (:meth:`Format.default_call_id`, numbered across the
    conversation), each tool result right after calls given its call's (the results answer the
    calls in order): ids the format's template takes (Mistral's take only ids of nine characters),
    so that the turns they are in get written and checked."""
    round_ids: list[str] = []  # the new ids of the latest calls, while tool results follow them
    count, answered = 0, 0
    messages = []
    for message in case["messages"]:
        calls = message.get("tool_calls")
        if message.get("role") == "assistant" and isinstance(calls, list) and calls:
            round_ids = [fmt.default_call_id(count + index) for index in range(len(calls))]
            count, answered = count + len(calls), 0
            renamed = [{**call, "id": new} for call, new in zip(calls, round_ids, strict=True)]
            message = {**message, "tool_calls": renamed}
        elif message.get("role") == "tool" and answered < len(round_ids):
            message = {**message, "tool_call_id": round_ids[answered]}
            answered += 1
        else:
            round_ids = []
        messages.append(message)
    return {**case, "messages": messages}


def _strategy(name: str, fmt: Format) -> st.SearchStrategy[dict[str, Any]]:
    if name in ("round_trip", "grammar"):  # turns whose content can be read back as written
        declared = tools().map(_with_parameters)
        return st.one_of(
            conversations(tools=declared, string_arguments=False, readable_replies=True),
            conversations(tools=declared, string_arguments=False, readable_replies=True, odd_orders=False),
        ).map(lambda case: _with_ids(fmt, case))
    drawn = st.one_of(conversations(), conversations(content_parts=True), rich_conversations())
    if name == "render":  # the drawn ids as they are: where the template refuses them, the format must too
        return drawn
    return st.one_of(drawn, drawn.map(lambda case: _with_ids(fmt, case)))


def _search(
    check: Check,
    fmt: Format,
    run: Callable[[dict[str, Any]], Outcome],
    examples: int,
    seed: int,
    tick: Callable[[], None],
) -> None:
    """Run ``run`` on up to ``examples`` conversations; on a failure, shrink it into ``check``."""
    failed = False

    def fails(case: dict[str, Any]) -> bool:
        nonlocal failed
        outcome = run(case)
        if not failed:  # the calls after the first failure are hypothesis shrinking it
            check.generated += 1
            if isinstance(outcome, Unchecked):
                check.unchecked[outcome] += 1
            else:
                check.checked += 1
            tick()
        failed = failed or isinstance(outcome, str)
        return isinstance(outcome, str)

    options = settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    try:
        found = find(_strategy(check.name, fmt), fails, settings=options, random=random.Random(seed))
    except NoSuchExample:
        return
    outcome = run(found)
    check.counterexample = Counterexample(found, outcome if isinstance(outcome, str) else "(not reproduced)")


@contextmanager
def _as_installed() -> Iterator[None]:
    """hypothesis as a check runs it: the same conversations for a seed wherever codec is
    installed, and nothing left in the working directory.

    Now and then hypothesis draws a constant it read in the source of the loaded modules it deems
    local (those outside site-packages and the standard library): codec's own modules in a
    checkout, none of them once installed, and whatever else the caller's process loaded. There
    is no setting for it, so while the check runs the harvest is an empty one (the cache of
    constants it filled is emptied before and after, so that the caller's own tests harvest as
    before). What hypothesis stores (that harvest, its Unicode tables) goes to a temporary folder,
    not to a ``.hypothesis`` folder of the working directory; the example database is off.
    """
    harvest = getattr(providers, "_get_local_constants", None)  # (older releases harvest none)
    stored: Any = storage_directory()
    home: Path = getattr(stored, "path", stored)  # a StorageDirectory (older releases: the Path itself)
    with tempfile.TemporaryDirectory(prefix="codec-check-") as scratch:
        set_hypothesis_home_dir(scratch)
        if harvest is not None:
            from hypothesis.internal.constants_ast import Constants  # there wherever constants are harvested

            providers.CONSTANTS_CACHE.cache.clear()
            providers._get_local_constants = Constants  # an empty harvest
        try:
            yield
        finally:
            set_hypothesis_home_dir(home)
            if harvest is not None:
                providers._get_local_constants = harvest
                providers.CONSTANTS_CACHE.cache.clear()


def check_template(
    template: str,
    fmt: Format,
    *,
    examples: int = 100,
    seed: int = 0,
    checks: Iterable[str] = tuple(CHECKS),
    progress: Callable[[str, int, int], None] | None = None,
) -> Report:
    """Check ``template`` against ``fmt`` on ``examples`` conversations per check, drawn from ``seed``.

    ``checks`` names the checks to run (:data:`CHECKS`, all by default). ``progress(check, done,
    examples)`` is called after each conversation. Raises
    :class:`~codec.errors.RenderError` when the template does not compile.
    """
    jinja.environment().from_string(template)  # a syntax error (jinja2.TemplateSyntaxError) is bad input
    checker = _Checker(template, fmt)
    report = Report(format=fmt.name, examples=examples, seed=seed)
    runs: dict[str, Callable[[dict[str, Any]], Outcome]] = {
        "render": checker.render,
        "round_trip": checker.round_trip,
        "decode": checker.decode,
        "grammar": checker.grammar,
    }
    wanted = set(checks)
    if wanted - set(CHECKS):
        raise ValueError(f"unknown checks {sorted(wanted - set(CHECKS))}: expected some of {', '.join(CHECKS)}")
    with _as_installed():
        for name in (name for name in CHECKS if name in wanted):
            check = Check(name)
            report.checks.append(check)
            if name == "grammar" and not grammars.available():
                check.skipped = "llguidance is not installed: pip install llguidance tokenizers"
                continue

            def tick(check: Check = check) -> None:
                if progress is not None:
                    progress(check.name, check.generated, examples)

            _search(check, fmt, runs[name], examples, seed, tick)
    return report
