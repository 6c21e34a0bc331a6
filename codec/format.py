"""The :class:`Format` base class: what every chat format offers (render, render_reply, parse, stream)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from codec import jinja
from codec.errors import RenderError, parse_error_at
from codec.models import Conversation, Message, ParseResult, Tool

if TYPE_CHECKING:
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

    # ------------------------------------------------------------------ decode

    def decode(self, prompt: str) -> Conversation:
        """The conversation ``prompt`` is a rendering of: messages, tools, generation prompt, variables.

        The result renders back to exactly ``prompt``; text that is not a rendering of this format
        raises :class:`~codec.errors.ParseError` at the offset where it stops matching.
        """
        if not isinstance(prompt, str):
            raise TypeError(f"decode() takes the prompt text (str), not {type(prompt).__name__}")
        conversation = self._decode(prompt)
        try:
            rendered = self.render(
                conversation.messages,
                conversation.tools,
                add_generation_prompt=conversation.add_generation_prompt,
                **conversation.variables,
            )
        except RenderError as e:
            raise parse_error_at(prompt, 0, f"not a {self.name} prompt: its conversation does not render ({e})") from e
        if rendered != prompt:
            pos = _first_difference(rendered, prompt)
            raise parse_error_at(prompt, pos, f"not a {self.name} prompt: the text stops matching the format here")
        return conversation

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
