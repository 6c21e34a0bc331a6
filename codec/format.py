"""The :class:`Format` base class: what every chat format offers (render, render_reply, decode, parse,
stream, grammar), and :class:`Functions`, the five functions each format module defines for it."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from codec import jinja
from codec._whole_reply import default_call_id, read_whole
from codec.errors import ParseError, RenderError, RenderWarning, parse_error_at
from codec.models import Conversation, Message, ParseResult, Tool, ToolCall
from codec.tools import normalize_tools

if TYPE_CHECKING:
    from codec.stream import Stream, Syntax
    from codec.wire import Family, WireSpec

MessageLike = Mapping[str, Any] | Message
ToolLike = Mapping[str, Any] | Tool
#: ``prompt_text(messages, tools, add_generation_prompt, variables)``, on prepared plain data.
PromptText = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None, bool, dict[str, Any]], str]


@dataclass(frozen=True)
class Functions:
    """The functions of a format module that are its own, under the same names in every
    ``codec/formats/<name>.py``, which :class:`Format` calls (on messages and tools already prepared
    as plain data). The reply side is the format's wire family's (:attr:`Format.wire`)."""

    #: ``prompt_text(messages, tools, add_generation_prompt, variables)``: the prompt, byte for byte
    #: as the reference template renders it; :class:`~codec.errors.RenderError` where it raises.
    prompt_text: PromptText
    #: ``prompt_conversation(prompt)``: the conversation a prompt reads as (:meth:`Format.decode`
    #: checks that it renders back), or :class:`~codec.errors.ParseError` where it reads as none.
    prompt_conversation: Callable[[str], Conversation]
    #: ``reply_text(message)``: what the model writes for an assistant message, stop token included,
    #: where the template's assistant turn writes it otherwise than the family's renderer
    #: (``Family.reply_text``) would; None: the family's.
    reply_text: Callable[[dict[str, Any]], str] | None = None


class Format:
    """One chat format, which owns both directions: prompts (render, decode) and replies (parse,
    stream, grammar). The core never names one.

    A subclass, last in its module ``codec/formats/<name>.py``, declares data: its ``name`` (and
    ``aliases``), what describes it (``summary``, ``stop_token``, the markers that detect it), and
    ``functions``, the module's five :class:`Functions`; this class does the rest.
    """

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    #: One line for ``codec formats``.
    summary: ClassVar[str] = ""
    #: What the model emits to end its turn; parsing accepts it at the end of a reply.
    stop_token: ClassVar[str] = ""
    #: File name of the reference chat template this format reproduces (for docs and tests).
    reference_template: ClassVar[str] = ""
    #: Text that every chat template of this format contains (a Jinja string literal's ``\\"`` counts
    #: as ``"``), for :func:`codec.detect`. A format without markers is never detected.
    template_markers: ClassVar[tuple[str, ...]] = ()
    #: How the reference template takes a call's arguments: ``"object"`` (a mapping, which it
    #: writes itself) or ``"json_text"`` (OpenAI's JSON text, which it joins to its own text as it
    #: is). Such a format writes object arguments as their JSON text, and render parity gives the
    #: template that text (:func:`codec._compare.template_messages`).
    template_arguments: ClassVar[str] = "object"
    #: The tokenizer's variables the reference template reads (its special tokens: ``eos_token``...),
    #: with the values of the format's models' tokenizer: transformers always gives a template
    #: them, so rendering, with the format's renderer or with a template, uses them wherever the
    #: caller gives none (:meth:`template_variables`).
    tokenizer_variables: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    #: What the format module defines (an instance may hold another set: a variant of the format).
    functions: Functions
    #: The reply syntax: a member of a wire family (an instance may hold another: a variant).
    wire: WireSpec

    # ------------------------------------------------------------------ render

    def render(
        self,
        messages: Iterable[MessageLike],
        tools: Iterable[ToolLike] | None = None,
        *,
        add_generation_prompt: bool = False,
        template: str | None = None,
        **variables: Any,
    ) -> str:
        """The prompt text for ``messages`` and ``tools``, byte-identical to the format's reference template.

        ``variables`` are the template variables (``bos_token``, ``enable_thinking``...), the
        tokenizer's (:attr:`tokenizer_variables`) where they give none of those. With
        ``template``, that chat template is rendered instead, exactly as transformers would.
        ``tools`` may come in OpenAI's chat shape, the Responses API's or Anthropic's, and are
        given to the template in the first (:func:`codec.tools.normalize_tools`; another shape
        raises :class:`~codec.errors.ToolError`). Raises :class:`~codec.errors.RenderError` where
        the reference template raises (with a hint where the cause is in the input: see
        :func:`render_hint`), and warns (:class:`~codec.errors.RenderWarning`) for each message whose
        text the prompt does not hold, which the template left out; the prompt is the template's.
        """
        _require_list("render", "messages", messages)
        if tools is not None:
            _require_list("render", "tools", tools)
        msgs = jinja.require_messages(jinja.prepare_messages(messages))
        tls = jinja.prepare_tools(normalize_tools(tools))
        variables = self.template_variables(variables)
        try:
            if template is not None:
                prompt = jinja.render_template(
                    template, msgs, tls, add_generation_prompt=add_generation_prompt, **variables
                )
            else:
                prompt = self.functions.prompt_text(msgs, tls, add_generation_prompt, variables)
        except RenderError as exc:
            hint = render_hint(exc, msgs, tls)
            if not hint:
                raise
            raise RenderError(exc.reason, hint) from exc
        warn_dropped(prompt, msgs, "the template" if template is not None else f"the {self.name} template")
        return prompt

    def render_reply(self, message: MessageLike) -> str:
        """The text the model generates for this assistant message, stop token included.

        Call arguments are a dict or the JSON text of an object; other text raises
        :class:`~codec.errors.RenderError` (no model writes it, and no parser would read it back)."""
        if not isinstance(message, (Mapping, Message)):
            raise TypeError(
                f"render_reply() takes an assistant message (a dict or a codec.Message), not {type(message).__name__}"
            )
        (msg,) = jinja.prepare_messages([message])
        _check_reply_arguments(msg)
        msg = self._with_ids(msg)
        own = self.functions.reply_text
        return own(msg) if own is not None else self.kit().reply_text(msg)

    def reply_ids(self, message: MessageLike) -> list[str] | None:
        """The ids :meth:`render_reply` writes for the message's calls, where the format's replies
        write ids (None where they write none)."""
        (msg,) = jinja.prepare_messages([message])
        return self.kit().reply_ids(self._with_ids(msg))

    def _with_ids(self, message: dict[str, Any]) -> dict[str, Any]:
        """``message`` with each call that has no id given :meth:`default_call_id`'s, where the
        format's replies write ids: what the model would write, not the call's index (Mistral's
        templates take only ids of nine letters and digits)."""
        calls = message.get("tool_calls")
        if not isinstance(calls, list) or self.kit().reply_ids({}) is None:
            return message
        filled = [
            {**call, "id": self.default_call_id(index)}
            if isinstance(call, dict) and not isinstance(call.get("id"), str)
            else call
            for index, call in enumerate(calls)
        ]
        return {**message, "tool_calls": filled}

    def template_variables(self, variables: Mapping[str, Any]) -> dict[str, Any]:
        """``variables`` as a template of this format is given them: the tokenizer's
        (:attr:`tokenizer_variables`) where ``variables`` has none of that name, then ``variables``."""
        return {**self.tokenizer_variables, **variables}

    # ------------------------------------------------------------------ constrained decoding

    def grammar(
        self,
        tools: Iterable[ToolLike],
        *,
        tool_choice: str | Mapping[str, Any] = "auto",
        parallel: bool = True,
        dialect: str = "llguidance",
    ) -> str:
        """A grammar of this format's replies that only allows valid calls to ``tools``, for constrained decoding.

        ``tool_choice="auto"``: free text, then optionally calls; ``"required"``: at least one call;
        ``"none"``: text (and reasoning) only; OpenAI's ``{"type": "function", "function": {"name":
        NAME}}``: at least one call, of that tool only. ``parallel=False``: at most one call.
        ``dialect``: ``"llguidance"`` (llguidance's Lark), ``"gbnf"`` (llama.cpp, also xgrammar's
        ``from_ebnf``) or ``"lark"`` (the lark package, LALR). Schema keywords the grammar leaves
        out give one :class:`codec.GrammarWarning` naming them and where. See
        :mod:`codec.export` for what is constrained and how.
        """
        from codec import export

        return export.build(self, tools, tool_choice=tool_choice, parallel=parallel, dialect=dialect)

    def structural_tag(
        self, tools: Iterable[ToolLike], *, tool_choice: str | Mapping[str, Any] = "auto", parallel: bool = True
    ) -> dict[str, Any]:
        """xgrammar's structural tag (``{"type": "structural_tag", "format": {...}}``) for this format's calls.

        Free text until a call opener (``triggered_tags``), then a call of a declared tool:
        ``json_schema`` contents of the tools' parameters where xgrammar writes the format's
        arguments itself (``hermes``: style ``json``, ``qwen3_coder``: ``qwen_xml``), else a
        ``grammar`` content holding this format's GBNF calls. ``tool_choice`` and ``parallel`` as in
        :meth:`grammar`; ``"none"`` is text without a call opener. Schema keywords left out by a
        ``grammar`` content give a :class:`codec.GrammarWarning` (xgrammar reads a
        ``json_schema`` content's keywords itself).
        """
        from codec import export

        tag, gaps = export.structural_tag(self, tools, tool_choice=tool_choice, parallel=parallel)
        export.warn_gaps(self, gaps, stacklevel=2)
        return tag

    def request_fields(
        self,
        tools: Iterable[ToolLike],
        *,
        server: str,
        tool_choice: str | Mapping[str, Any] = "auto",
        parallel: bool = True,
    ) -> dict[str, Any]:
        """The JSON fields to merge into a request to ``server`` that hold the reply to :meth:`grammar`.

        ``"vllm"``: ``{"structured_outputs": {"grammar": GBNF}}``; ``"sglang"``: ``{"ebnf": GBNF}``;
        ``"llama.cpp"``: ``grammar`` and ``preserved_tokens`` (the markers a tokenizer may hold as
        special tokens), and for ``tool_choice="auto"`` a lazy grammar of the calls alone
        (``grammar_lazy``, ``grammar_triggers`` on each call opener). Warnings as :meth:`grammar`.
        """
        from codec import export

        fields, gaps = export.request_fields(self, tools, server=server, tool_choice=tool_choice, parallel=parallel)
        export.warn_gaps(self, gaps, stacklevel=2)
        return fields

    # ------------------------------------------------------------------ decode

    def decode(self, prompt: str) -> Conversation:
        """The conversation ``prompt`` is a rendering of: messages, tools, generation prompt, variables.

        The result renders back to exactly ``prompt``; text that is not a rendering of this format
        raises :class:`~codec.errors.ParseError` at the offset where it stops matching. Tool results
        the prompt does not link to their calls are linked in call order (:func:`link_tool_results`)
        wherever that renders the same.
        """
        if not isinstance(prompt, str):
            raise TypeError(f"decode() takes the prompt text (str), not {type(prompt).__name__}")
        conversation = self._decode(prompt)
        self._check_no_sibling_reads_tools(conversation, prompt)
        return conversation

    def _decode(self, prompt: str) -> Conversation:
        """:meth:`decode` without asking the formats with the same replies."""
        conversation = self.functions.prompt_conversation(prompt)
        unlinked = any(m.role == "tool" and (m.tool_call_id is None or m.name is None) for m in conversation.messages)
        if unlinked:  # link a copy: the conversation as read stays the answer where linking changes the text
            linked = conversation.model_copy(deep=True)
            if link_tool_results(linked.messages) and self._renders_to(linked, prompt) is True:
                return linked
        outcome = self._renders_to(conversation, prompt)
        if outcome is True:
            return conversation
        if isinstance(outcome, RenderError):
            message = f"not a {self.name} prompt: its conversation does not render ({outcome})"
            raise parse_error_at(prompt, 0, message) from outcome
        raise parse_error_at(prompt, outcome, f"not a {self.name} prompt: the text stops matching the format here")

    def _check_no_sibling_reads_tools(self, conversation: Conversation, prompt: str) -> None:
        """A prompt read without tools, which a format with the same replies (a prompt variant, or
        the format it varies) reads with tools, is that format's: its tools block was taken for
        system text. Raise rather than lose the tools silently."""
        if conversation.tools:
            return
        from codec.formats import builtins, get_format  # the registry imports this module

        for cls in builtins():
            if cls.name == self.name or get_format(cls.name).syntax() is not self.syntax():
                continue
            try:
                other = get_format(cls.name)._decode(prompt)
            except ParseError:
                continue
            if other.tools:
                message = (
                    f"not a {self.name} prompt with tools: it reads as a {cls.name} prompt, whose tools block "
                    f"{self.name} would take for system text (decode it with {cls.name!r})"
                )
                raise parse_error_at(prompt, 0, message)

    def _renders_to(self, conversation: Conversation, prompt: str) -> bool | int | RenderError:
        """True if ``conversation`` renders to ``prompt``; else where they differ, or why it does not render."""
        try:
            with warnings.catch_warnings():  # (a check of a reading: what the template leaves out is no news here)
                warnings.simplefilter("ignore", RenderWarning)
                rendered = self.render(
                    conversation.messages,
                    conversation.tools,
                    add_generation_prompt=conversation.add_generation_prompt,
                    **conversation.variables,
                )
        except RenderError as exc:
            return exc
        return True if rendered == prompt else _first_difference(rendered, prompt)

    # ------------------------------------------------------------------ parse

    def default_call_id(self, index: int) -> str:
        """The id of call ``index`` of a reply where the caller gives no ``call_id``: ``call_0``,
        ``call_1``... (a format whose template takes only ids of another shape makes such ids)."""
        return default_call_id(index)

    def parse(
        self,
        text: str,
        *,
        tools: Sequence[ToolLike] | None = None,
        strict: bool = False,
        prompt: str | None = None,
        call_id: Callable[[int], str] | None = None,
    ) -> ParseResult:
        """Decode a whole reply: what ``stream.feed(text)`` then ``stream.close()`` give. ``call_id``
        makes each call's id from its index (default :meth:`default_call_id`).

        A reply in the shape the format's template writes is read at once by the format's whole
        reply reader (``Syntax.whole``), which gives exactly what the stream would; any other reply
        goes through the stream."""
        if not isinstance(text, str):
            raise TypeError(f"parse() takes the reply text (str), not {type(text).__name__}")
        syntax = self.syntax()
        call_id = call_id or self.default_call_id
        if type(text) is str:
            found = read_whole(syntax, text, tools, prompt, call_id)
            if found is not None:
                return found
        from codec.stream import Stream  # (imported where a reply needs the grammar: lark with it)

        stream = Stream(syntax, tools=tools, strict=strict, prompt=prompt, events=False, call_id=call_id)
        stream.feed(text)
        stream.close()
        return stream.result

    def stream(
        self,
        *,
        tools: Sequence[ToolLike] | None = None,
        strict: bool = False,
        prompt: str | None = None,
        call_id: Callable[[int], str] | None = None,
    ) -> Stream:
        """A sans-IO incremental parser: ``feed(chunk)`` returns events, ``close()`` flushes.
        ``call_id`` makes each call's id from its index (default :meth:`default_call_id`)."""
        from codec.stream import Stream

        return Stream(self.syntax(), tools=tools, strict=strict, prompt=prompt, call_id=call_id or self.default_call_id)

    def syntax(self) -> Syntax:
        """The compiled reply syntax, shared by every stream of this format."""
        # Kept beside the spec it was compiled from (asked on every parse: a family's syntax()
        # hashes its markers to find it), and compiled again for another spec, as kit() is.
        cached = self.__dict__.get("_syntax")
        if cached is not None and cached[0] is self.wire:
            return cached[1]  # type: ignore[no-any-return]
        syntax = self.kit().syntax()
        self.__dict__["_syntax"] = (self.wire, syntax)
        return syntax

    @property
    def reply_markers(self) -> tuple[str, ...]:
        """Regular expressions that match only where a reply writes a tool call in this format's own
        syntax, for :func:`codec.detect_reply` (the wire family's, from :attr:`wire`)."""
        return self.kit().reply_markers()

    @property
    def grammar_special_tokens(self) -> tuple[str, ...]:
        """Markers that are special tokens in the model's tokenizer (written as tokens in llguidance
        grammars): :attr:`wire`'s ``special_tokens``."""
        return self.wire.special_tokens

    def kit(self) -> Family:
        """The reply side compiled from :attr:`wire`: shared by every format with the same spec."""
        cached = self.__dict__.get("_kit")
        if cached is not None and cached[0] is self.wire:
            return cached[1]  # type: ignore[no-any-return]
        from codec.wire import compile_spec

        kit = compile_spec(self.wire)
        self.__dict__["_kit"] = (self.wire, kit)
        return kit

    def __repr__(self) -> str:
        return f"<codec format {self.name!r}>"


def _first_difference(a: str, b: str) -> int:
    """The first offset where ``a`` and ``b`` differ (the shorter length if one is a prefix of the other)."""
    lo, hi = 0, min(len(a), len(b))  # invariant: a[:lo] == b[:lo]; slices compare in C
    while lo < hi:
        mid = (lo + hi) // 2
        if a[lo : mid + 1] == b[lo : mid + 1]:
            lo = mid + 1
        else:
            hi = mid
    return lo


def link_tool_results(messages: list[Message]) -> bool:
    """Give each tool result that names no call the id and name of the call it answers.

    After an assistant message with calls, each tool message answers the call its
    ``tool_call_id`` names, else the first unanswered call of its ``name``, else the first
    unanswered call (results come in call order: the OpenAI convention). Prompts of most formats
    carry neither the id nor the name, yet other formats need one to render a result, so a
    decoded conversation links them: it then converts to any format. Fields the prompt gave are
    kept. Returns whether anything was filled in.
    """
    filled = False
    open_calls: list[ToolCall] = []
    for message in messages:
        if message.role != "tool":
            open_calls = list(message.tool_calls or ()) if message.role == "assistant" else []
            continue
        call = _answered_call(message, open_calls)
        if call is None:
            continue
        open_calls.remove(call)
        if message.tool_call_id is None:
            message.tool_call_id = call.id
            filled = True
        if message.name is None:
            message.name = call.function.name
            filled = True
    return filled


def _answered_call(result: Message, calls: list[ToolCall]) -> ToolCall | None:
    """The call among ``calls`` (not answered yet) that tool message ``result`` answers."""
    if result.tool_call_id is not None:
        return next((call for call in calls if call.id == result.tool_call_id), None)
    if result.name is not None:
        return next((call for call in calls if call.function.name == result.name), None)
    return calls[0] if calls else None


def _require_list(function: str, what: str, value: object) -> None:
    """``messages`` and ``tools`` are sequences of objects: a string or a single mapping given in
    their place is a :class:`~codec.errors.RenderError` that says so (not a complaint about its
    first character), and a value that is no sequence at all (None) a :class:`TypeError` naming
    ``function``."""
    if isinstance(value, (str, bytes, Mapping)):
        raise RenderError(f"{what} must be a list, not a {type(value).__name__}")
    if not isinstance(value, Iterable):
        shown = "None" if value is None else f"a {type(value).__name__}"
        raise TypeError(f"{function}() takes {what} as a list of {what[:-1]} objects, not {shown}")


def _check_reply_arguments(message: dict[str, Any]) -> None:
    """Refuse call arguments that are text but not a JSON object's: what a model writes is JSON."""
    calls = message.get("tool_calls")
    for index, call in enumerate(calls if isinstance(calls, list) else ()):
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if not isinstance(arguments, str):
            continue
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:  # JSONDecodeError, and the numbers json cannot hold
            problem = f"is not JSON text ({exc})"
        else:
            if isinstance(value, dict):
                continue
            problem = f"is JSON text of {type(value).__name__}, not of an object"
        name = function.get("name") if isinstance(function, dict) else None
        raise RenderError(
            f"tool_calls[{index}] ({name!r}): arguments {problem}: give the arguments as a dict, or as the "
            f"JSON text of an object: {_shorten(arguments)}"
        )


def _shorten(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[: width - 3] + "...")


# ---------------------------------------------------------------------------- what a render says


def render_hint(exc: RenderError, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """What to do about ``exc``, a template's error on ``messages`` and ``tools``, where its cause
    is in the input and codec can name it; "" where it cannot. Only the input is looked at, so the
    template's message (``exc.reason``) stays what the template says."""
    reason = exc.reason
    if tools is None and "'NoneType' object is not iterable" in reason:
        return "no tools were given, and this template iterates over them: pass tools=[] for none"
    if "content" in reason:
        empty = [f"messages[{i}]" for i, message in enumerate(messages) if message.get("content") is None]
        if empty:
            which = ", ".join(empty[:5]) + (f" and {len(empty) - 5} more" if len(empty) > 5 else "")
            have = "has" if len(empty) == 1 else "have"
            return f'{which} {have} no content (null or missing), which this template reads as text: give "content": ""'
    return ""


def warn_dropped(prompt: str, messages: list[dict[str, Any]], template: str) -> None:
    """One :class:`~codec.errors.RenderWarning` per message whose text ``prompt`` does not hold.

    A message's text is its string content or each of its text parts, stripped; it is in the
    prompt where it appears as it is or JSON-escaped (as ``tojson`` writes it). Messages are
    looked for from where the one before was found, so that a conversation costs one pass over
    the prompt when the template writes them in order (anywhere in it otherwise)."""
    pos = 0
    for index, message in enumerate(messages):
        content = message.get("content")
        parts = isinstance(content, list)
        texts = [content] if isinstance(content, str) else _part_texts(content) if isinstance(content, list) else []
        for raw in texts:
            text = raw.strip()
            if not text:
                continue
            found = prompt.find(text, pos)
            if found >= 0:
                pos = found + len(text)
                continue
            if text in prompt or any(escaped in prompt for escaped in _escaped(text)):
                continue
            role = message.get("role")
            advice = " (its content is a list of parts, and the template may read only a string)" if parts else ""
            warnings.warn(
                f"messages[{index}] ({role}): its text does not appear in the prompt; {template} left it out{advice}",
                RenderWarning,
                stacklevel=3,
            )
            break


def _part_texts(parts: list[Any]) -> list[str]:
    return [
        part["text"]
        for part in parts
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
    ]


def _escaped(text: str) -> tuple[str, str]:
    """``text`` inside a JSON string, as ``tojson`` writes it and with every non-ASCII character escaped."""
    return json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1]
