"""The :class:`Format` base class: what every chat format offers (render, render_reply, decode, parse,
stream, grammar), and :class:`Functions`, the five functions each format module defines for it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from codec import jinja
from codec.errors import ParseError, RenderError, parse_error_at
from codec.models import Conversation, Message, ParseResult, Tool, ToolCall

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

        ``variables`` are the template variables (``bos_token``, ``enable_thinking``...). With
        ``template``, that chat template is rendered instead, exactly as transformers would.
        Raises :class:`~codec.errors.RenderError` where the reference template raises.
        """
        _require_list("messages", messages)
        if tools is not None:
            _require_list("tools", tools)
        msgs = jinja.require_messages(jinja.prepare_messages(messages))
        tls = jinja.prepare_tools(tools)
        if template is not None:
            return jinja.render_template(template, msgs, tls, add_generation_prompt=add_generation_prompt, **variables)
        return self.functions.prompt_text(msgs, tls, add_generation_prompt, variables)

    def render_reply(self, message: MessageLike) -> str:
        """The text the model generates for this assistant message, stop token included."""
        (msg,) = jinja.prepare_messages([message])
        own = self.functions.reply_text
        return own(msg) if own is not None else self.kit().reply_text(msg)

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
        from codec.formats import BUILTINS, get_format  # the registry imports this module

        for cls in BUILTINS:
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
        makes each call's id from its index (default ``call_0``, ``call_1``...).

        A reply in the shape the format's template writes is read at once by the format's whole
        reply reader (``Syntax.whole``), which gives exactly what the stream would; any other reply
        goes through the stream."""
        from codec.stream import Stream, read_whole

        syntax = self.syntax()
        if type(text) is str:
            found = read_whole(syntax, text, tools, prompt, call_id)
            if found is not None:
                return found
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
        ``call_id`` makes each call's id from its index (default ``call_0``, ``call_1``...)."""
        from codec.stream import Stream

        return Stream(self.syntax(), tools=tools, strict=strict, prompt=prompt, call_id=call_id)

    def syntax(self) -> Syntax:
        """The compiled reply syntax, shared by every stream of this format."""
        return self.kit().syntax()

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


def _require_list(what: str, value: object) -> None:
    """``messages`` and ``tools`` are sequences of objects: a string or a single mapping given in
    their place is a :class:`~codec.errors.RenderError` that says so (not a complaint about its
    first character)."""
    if isinstance(value, (str, bytes, Mapping)):
        raise RenderError(f"{what} must be a list, not a {type(value).__name__}")
