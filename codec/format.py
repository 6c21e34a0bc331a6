"""The :class:`Format` base class: what every chat format offers (render, render_reply, parse, stream)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from codec import jinja
from codec.errors import RenderError, parse_error_at
from codec.models import Conversation, Message, ParseResult, Tool, ToolCall

if TYPE_CHECKING:
    from codec.export import CallSyntax, GrammarBuilder
    from codec.stream import Stream, Syntax

MessageLike = Mapping[str, Any] | Message
ToolLike = Mapping[str, Any] | Tool


class Format:
    """One chat format. Subclasses live in ``codec/formats/<name>.py``; the core never names one.

    A subclass sets ``name`` (and optional ``aliases``), implements :meth:`_render` and
    :meth:`render_reply`, and describes its reply syntax with :meth:`_syntax` (its grammar and
    the builder that turns parse events into content, reasoning and calls).
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
    #: Regular expressions that match only where a reply writes a tool call in this format's own
    #: syntax, for :func:`codec.detect_reply`.
    reply_markers: ClassVar[tuple[str, ...]] = ()

    _syntax_cache: Syntax | None = None

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
        msgs = jinja.require_messages(jinja.prepare_messages(messages))
        tls = jinja.prepare_tools(tools)
        if template is not None:
            return jinja.render_template(template, msgs, tls, add_generation_prompt=add_generation_prompt, **variables)
        return self._render(msgs, tls, add_generation_prompt=add_generation_prompt, **variables)

    def _render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        add_generation_prompt: bool,
        **variables: Any,
    ) -> str:
        raise NotImplementedError

    def render_reply(self, message: MessageLike) -> str:
        """The text the model generates for this assistant message, stop token included."""
        (msg,) = jinja.prepare_messages([message])
        return self._render_reply(msg)

    def _render_reply(self, message: dict[str, Any]) -> str:
        raise NotImplementedError

    # ------------------------------------------------------------------ constrained decoding

    #: Markers that are special tokens in the model's tokenizer (written as tokens in llguidance grammars).
    grammar_special_tokens: ClassVar[tuple[str, ...]] = ()

    def grammar(
        self,
        tools: Iterable[ToolLike],
        *,
        tool_choice: str = "auto",
        parallel: bool = True,
        dialect: str = "llguidance",
    ) -> str:
        """A grammar of this format's replies that only allows valid calls to ``tools``, for constrained decoding.

        ``tool_choice="auto"``: free text, then optionally calls; ``"required"``: at least one call.
        ``parallel=False``: at most one call. ``dialect``: ``"llguidance"`` (llguidance's Lark, also
        xgrammar's ``from_lark``), ``"gbnf"`` (llama.cpp) or ``"lark"`` (the lark package, LALR).
        See :mod:`codec.export` for what is constrained and how.
        """
        from codec import export

        return export.build(self, tools, tool_choice=tool_choice, parallel=parallel, dialect=dialect)

    def _grammar_calls(self, builder: GrammarBuilder, tools: list[dict[str, Any]]) -> CallSyntax:
        """This format's calls to ``tools`` (checked, non-empty or empty), for :meth:`grammar`."""
        raise NotImplementedError(f"format {self.name!r} cannot export a grammar yet")

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

    def _decode(self, prompt: str) -> Conversation:
        """Read the conversation out of ``prompt``; :meth:`decode` checks it renders back exactly."""
        raise NotImplementedError(f"format {self.name!r} cannot decode prompts yet")

    # ------------------------------------------------------------------ parse

    def parse(
        self,
        text: str,
        *,
        tools: Sequence[ToolLike] | None = None,
        strict: bool = False,
        prompt: str | None = None,
    ) -> ParseResult:
        """Decode a whole reply: ``stream.feed(text)`` then ``stream.close()``."""
        from codec.stream import Stream

        stream = Stream(self.syntax(), tools=tools, strict=strict, prompt=prompt, events=False)
        stream.feed(text)
        stream.close()
        return stream.result

    def stream(
        self,
        *,
        tools: Sequence[ToolLike] | None = None,
        strict: bool = False,
        prompt: str | None = None,
    ) -> Stream:
        """A sans-IO incremental parser: ``feed(chunk)`` returns events, ``close()`` flushes."""
        from codec.stream import Stream

        return Stream(self.syntax(), tools=tools, strict=strict, prompt=prompt)

    def syntax(self) -> Syntax:
        """The compiled reply syntax, built on first use and shared by every stream of this format."""
        cls = type(self)
        if cls._syntax_cache is None:
            cls._syntax_cache = self._syntax()
        return cls._syntax_cache

    def _syntax(self) -> Syntax:
        raise NotImplementedError

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
