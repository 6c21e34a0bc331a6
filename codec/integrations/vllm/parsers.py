"""codec's formats as vLLM ``ToolParser`` and ``ReasoningParser`` classes (this module imports vLLM).

One tool parser class per format (``codec_<format>``) and one reasoning parser per format whose
replies have a reasoning block (a harmony member's: its reasoning messages). vLLM builds one
parser object of each per request; each holds one codec :class:`~codec.stream.Stream` for that
request and feeds it only ``delta_text``. The parsers declare ``engine_based_streaming``, so
vLLM's serving layer hands them each chunk once and calls ``finish_streaming()`` at the end of
the reply, which closes the stream and gives what it still held back (the tail of a possible
marker, a call that completes only there).

What the adapter does with what vLLM has no field for:

- Reasoning. With ``--reasoning-parser codec_<format>``, the reasoning parser reports the
  reasoning block as ``reasoning`` and hands the reply's raw text after it to the tool parser.
  Without a reasoning parser vLLM marks the tool parser ``skip_reasoning_parsing``: reasoning is
  then content, as everywhere in vLLM, and the tool parser writes the block back as content
  (the format's opener, the reasoning, its closer), streamed and whole alike. A reasoning block
  the tool parser still finds after a reasoning parser ran is streamed as ``reasoning``.
- Damaged calls (an issue of severity ``"damaged"``, :attr:`~codec.models.ParseResult.damaged_indices`):
  a call's name and arguments are streamed as soon as they are read, and nothing sent is taken
  back, so a damaged call stays in the reply, whole or streamed alike, and a warning on the
  ``codec.integrations.vllm`` logger names the call, its tool and the issue kinds.
- Call ids are vLLM's (``chatcmpl-tool-<random>``), the same for a call streamed and finished.
- Token ids are not read: codec works on text, and the text is what vLLM decodes from them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.entrypoints.openai.responses.protocol import ResponsesRequest
from vllm.reasoning.abs_reasoning_parsers import ReasoningParser
from vllm.renderers.chat_utils import make_tool_call_id
from vllm.sampling_params import StructuredOutputsParams
from vllm.tool_parsers.abstract_tool_parser import ToolParser
from vllm.tool_parsers.utils import custom_tool_parameters, flat_namespace_tool_name

from codec import export
from codec.errors import CodecError
from codec.format import Format
from codec.formats import formats, get_format
from codec.integrations.vllm import (
    DERIVED,
    REASONING_FORMATS,
    parser_format,
    reasoning_class_name,
    tool_class_name,
)
from codec.integrations.vllm.handover import Split, harmony_markers, harmony_reasoning, leading_reasoning
from codec.models import Event, ParseResult, ReasoningDelta, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from codec.stream import Stream

if TYPE_CHECKING:
    from codec.export import Reasoning

__all__ = ["CodecHarmonyReasoningParser", "CodecReasoningParser", "CodecToolParser", "reasoning_markers"]

logger = logging.getLogger("codec.integrations.vllm")


# ---------------------------------------------------------------------------- shared pieces


def reasoning_markers(fmt: Format) -> Reasoning | None:
    """The reasoning block of ``fmt``'s replies (opener, text after it, closer), or None without one.
    A harmony member's is a reasoning message: its channel's header, and the message closer."""
    harmony = harmony_markers(fmt)
    if harmony is not None:
        return harmony_reasoning(harmony)
    _, calls = export.call_syntax(fmt, [])
    if calls.reasoning is not None:
        return calls.reasoning
    syntax = fmt.syntax()
    if syntax.reasoning_close is None or fmt.wire.reasoning is None:
        return None
    # A format whose export leaves reasoning out still reads a reasoning block in its replies,
    # which its call opener ends where the parser says so (Syntax.reasoning_closer).
    opener = fmt.wire.call[0]
    ends = (opener,) if syntax.reasoning_closer is not None and opener else ()
    return export.Reasoning(fmt.wire.reasoning[0], syntax.reasoning_close, forbid_markers=ends)


def _marker_strings(fmt: Format) -> set[str]:
    """The fixed markers of ``fmt``'s replies: call openers, reasoning markers, special tokens, stop token."""
    _, calls = export.call_syntax(fmt, [{"type": "function", "function": {"name": "f", "parameters": {}}}])
    markers = {trigger for trigger, _ in calls.triggers}
    markers.update(fmt.grammar_special_tokens)
    reasoning = reasoning_markers(fmt)
    if reasoning is not None:
        markers.update((reasoning.open, reasoning.close))
    if fmt.stop_token:
        markers.add(fmt.stop_token)
    return markers


def _markers_are_added_tokens(fmt: Format, tokenizer: Any) -> bool:
    """Whether one of ``fmt``'s markers is an added token of ``tokenizer``: vLLM's detokenizer drops
    those when ``skip_special_tokens`` (its default) and they are special, and the parser never sees
    them. A tokenizer without ``get_added_vocab`` (vLLM's ``TokenizerLike`` requires only
    ``get_vocab``) is asked for its whole vocabulary."""
    added = getattr(tokenizer, "get_added_vocab", tokenizer.get_vocab)()
    return any(marker in added or marker.strip() in added for marker in _marker_strings(fmt))


def _function_tool(fields: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A function tool given by its flat fields (name, description, parameters, strict), as an
    OpenAI chat tool."""
    function = {
        "name": name,
        **{k: fields[k] for k in ("description", "parameters", "strict") if fields.get(k) is not None},
    }
    return {"type": "function", "function": function}


def _chat_tools(tool: Any) -> list[dict[str, Any]]:
    """One tool of a vLLM request (or of a parser's constructor) as the OpenAI chat tools the model
    is shown, pydantic object or plain dict alike.

    The shapes: a chat tool (``{"type": "function", "function": {...}}``); a Responses function
    tool, flat (``name`` and ``parameters`` at the top); a Responses ``custom`` tool, as the
    one-string function (``input``) vLLM's serving layer shows the model; a Responses
    ``namespace``, its function tools named ``<namespace>__<name>`` as vLLM names them. A tool the
    model does not call by name (web search, file search...) gives none.
    """
    data = tool.model_dump(mode="json", by_alias=True) if hasattr(tool, "model_dump") else dict(tool)
    kind, name = data.get("type", "function"), data.get("name")
    if isinstance(data.get("function"), Mapping):
        return [{"type": "function", "function": {k: v for k, v in data["function"].items() if v is not None}}]
    if kind == "function" and isinstance(name, str):
        return [_function_tool(data, name)]
    if kind == "custom" and isinstance(name, str):
        return [_function_tool({"description": data.get("description"), "parameters": custom_tool_parameters()}, name)]
    if kind == "namespace" and isinstance(name, str):
        inner = [
            t for t in data.get("tools") or [] if isinstance(t, Mapping) and t.get("type", "function") == "function"
        ]
        return [
            _function_tool(t, flat_namespace_tool_name(name, t["name"]))
            for t in inner
            if isinstance(t.get("name"), str)
        ]
    return []


def _tools_of(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """``tools`` (a request's or a parser constructor's) as plain OpenAI chat tools (codec's tools),
    or None without any the model can call."""
    found = [chat for tool in tools or [] for chat in _chat_tools(tool)]
    return found or None


def _named_choice(choice: Any) -> str | None:
    """The tool a named ``tool_choice`` forces, or None (``"auto"``, ``"required"``, ``"none"``...).

    Chat completions name it ``{"type": "function", "function": {"name": ...}}``; the Responses
    API ``{"type": "function", "name": ...}``, or ``{"type": "custom", "name": ...}`` for a custom tool."""
    name = getattr(getattr(choice, "function", None), "name", None)
    if isinstance(name, str):
        return name
    name = getattr(choice, "name", None)
    if getattr(choice, "type", None) in ("function", "custom") and isinstance(name, str):
        return name
    return None


def _own_constraint(request: Any) -> bool:
    """Whether ``request`` constrains its text itself: structured outputs, a chat ``response_format``
    or a Responses ``text.format``."""
    text = getattr(request, "text", None)
    return (
        getattr(request, "structured_outputs", None) is not None
        or getattr(request, "response_format", None) is not None
        or getattr(text, "format", None) is not None
    )


def _constrain(request: Any, grammar: str) -> None:
    """``grammar`` as ``request``'s structured output, where vLLM reads it for the request's API: a
    chat completion's ``structured_outputs`` (its ``response_format`` dropped, as vLLM's own parsers
    do for forced calls); a Responses request's parser constraint (``_parser_structured_outputs``,
    which vLLM prefers to ``text.format``), leaving the fields the client sent as they are; and
    ``_grammar_from_parser``, so that vLLM constrains the reply from its first token."""
    outputs = StructuredOutputsParams(grammar=grammar)
    # The grammar allows a reasoning block before the calls: vLLM then applies it from the first
    # token, not from where the reasoning parser says reasoning ends.
    request._grammar_from_parser = True
    if isinstance(request, ResponsesRequest):
        request._parser_structured_outputs = outputs
        return
    request.structured_outputs = outputs
    request.response_format = None


def _arguments_json(call: Any) -> str:
    """A codec call's arguments as the JSON string OpenAI sends (what its deltas concatenate to)."""
    arguments: str = call.model_dump(mode="json")["function"]["arguments"]
    return arguments


def _report_damage(parser: str, result: ParseResult) -> None:
    """A warning per damaged call of ``result`` (and one for damaged text), naming the issue kinds."""
    for index in sorted(result.damaged_indices):
        kinds = sorted({i.kind for i in result.issues if i.call_index == index and i.severity == "damaged"})
        name = result.tool_calls[index].function.name if index < len(result.tool_calls) else "?"
        logger.warning("%s: tool call %d (%s) is damaged, sent as read: %s", parser, index, name, ", ".join(kinds))
    lost = sorted({i.kind for i in result.issues if i.call_index is None and i.severity == "damaged"})
    if lost:
        logger.warning("%s: the reply's text is damaged (kept as content): %s", parser, ", ".join(lost))


class _CallIds:
    """vLLM's random tool-call ids (``chatcmpl-tool-<random>``), one per call index of a reply."""

    def __init__(self) -> None:
        self._ids: dict[int, str] = {}

    def __call__(self, index: int) -> str:
        if index not in self._ids:
            self._ids[index] = make_tool_call_id()
        return self._ids[index]


class _Delta:
    """One ``DeltaMessage`` being assembled from codec events, in the order they came."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[Any] = []  # DeltaToolCall

    def call(self, index: int) -> Any:
        """The entry for call ``index``: the last one if it is that call's, else a new one."""
        if self.calls and self.calls[-1].index == index:
            return self.calls[-1]
        entry = DeltaToolCall(index=index, function=DeltaFunctionCall())
        self.calls.append(entry)
        return entry

    def message(self) -> Any:
        """The ``DeltaMessage``, or None when there is nothing to send."""
        content, reasoning = "".join(self.content), "".join(self.reasoning)
        if not (content or reasoning or self.calls):
            return None
        return DeltaMessage(content=content or None, reasoning=reasoning or None, tool_calls=self.calls)


# ---------------------------------------------------------------------------- tool parser


class CodecToolParser(ToolParser):  # type: ignore[misc]  # vLLM is untyped here (not installed for mypy)
    """A vLLM tool parser for one codec format (``format_name``), one codec stream per request.

    ``extract_tool_calls`` parses a whole reply with :meth:`Format.parse`;
    ``extract_tool_calls_streaming`` feeds each ``delta_text`` to the request's stream and turns
    its events into a ``DeltaMessage``, keeping ``prev_tool_call_arr`` (name, arguments JSON)
    and ``streamed_args_for_tool`` (the arguments sent) in step; ``finish_streaming`` closes the
    stream. ``adjust_request`` keeps the markers in the decoded text and constrains decoding to
    codec's grammar where the request forces calls.
    """

    format_name: ClassVar[str] = ""
    #: vLLM's serving layer feeds only new text and calls finish_streaming() at the end.
    engine_based_streaming: ClassVar[bool] = True
    #: vLLM's own required / named path expects JSON calls: this parser reads the format's own.
    supports_required_and_named: ClassVar[bool] = False

    def __init__(self, tokenizer: Any, tools: list[Any] | None = None, **kwargs: Any) -> None:
        super().__init__(tokenizer, tools)
        self.format = parser_format(self.format_name)
        #: The tools given to the constructor (vLLM's interface), read where a request has none.
        self._tools = _tools_of(tools)
        self.name = f"codec_{self.format.name}"
        #: Set by vLLM's Parser when no reasoning parser is configured: reasoning is then content.
        self.skip_reasoning_parsing = False
        self._reasoning = reasoning_markers(self.format)
        self._stream: Stream | None = None
        self._closed = False
        self._ids = _CallIds()
        self._in_reasoning = False  # a reasoning block is being written back as content

    # -------------------------------------------------------------- request

    def adjust_request(self, request: Any) -> Any:
        """The request (a chat completion or a Responses request), with ``skip_special_tokens=False``
        when the format's markers are added tokens (dropped from the text otherwise), and codec's
        grammar (GBNF, which vLLM's xgrammar and guidance backends both take) as its structured
        output for ``tool_choice="required"``, a named tool, or ``"auto"`` with a ``strict`` tool."""
        if not request.tools or request.tool_choice == "none":
            return request
        if _markers_are_added_tokens(self.format, self.model_tokenizer):
            request.skip_special_tokens = False
        grammar = self._grammar(request)
        if grammar is not None:
            _constrain(request, grammar)
        return request

    def _request_tools(self, request: Any) -> list[dict[str, Any]] | None:
        """The tools calls are read against: the request's, else those given to the constructor."""
        return _tools_of(getattr(request, "tools", None)) or self._tools

    def _grammar(self, request: Any) -> str | None:
        """codec's grammar for the calls ``request`` forces, or None when it forces none."""
        tools = self._request_tools(request) or []
        parallel = request.parallel_tool_calls is not False
        choice = request.tool_choice
        name = _named_choice(choice)
        if name is not None:
            named = [tool for tool in tools if tool["function"]["name"] == name]
            if not named:
                logger.warning("%s: tool_choice names %r, which is not among the tools: not enforced", self.name, name)
                return None
            return self.format.grammar(named, tool_choice="required", parallel=parallel, dialect="gbnf")
        if choice == "required":
            return self.format.grammar(tools, tool_choice="required", parallel=parallel, dialect="gbnf")
        if any(tool["function"].get("strict") for tool in tools):
            if _own_constraint(request):
                # The user's own constraint on the text wins over the strict tools: say so.
                logger.warning("%s: strict tools are not enforced: the request has structured outputs", self.name)
                return None
            return self.format.grammar(tools, tool_choice="auto", parallel=parallel, dialect="gbnf")
        return None

    # -------------------------------------------------------------- whole replies

    def extract_tool_calls(self, model_output: str, request: Any) -> Any:
        """The calls and content of a whole reply, as :meth:`Format.parse` reads it."""
        result = self.format.parse(
            model_output, tools=self._request_tools(request), prompt=self._prompt(), call_id=_CallIds()
        )
        _report_damage(self.name, result)
        calls = [
            ToolCall(
                id=call.id,
                type="function",
                function=FunctionCall(name=call.function.name, arguments=_arguments_json(call)),
            )
            for call in result.tool_calls
        ]
        content = self._reasoning_as_content(result.reasoning) + result.content
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=content or None)

    def _reasoning_as_content(self, reasoning: str) -> str:
        """A reasoning block written back as content (vLLM's convention for reasoning nothing took)."""
        if not reasoning or self._reasoning is None:
            return ""
        return f"{self._reasoning.open}{self._reasoning.open_rest}{reasoning}{self._reasoning.close}"

    def _prompt(self) -> str | None:
        """What the stream is told of the prompt: after a reasoning parser, that no reasoning is
        open (the text starts after it); without one, nothing (codec reads it from the reply)."""
        return None if self.skip_reasoning_parsing else ""

    # -------------------------------------------------------------- streaming

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> Any:
        """The ``DeltaMessage`` of what ``delta_text`` completes, or None while the stream holds it back."""
        if self._closed:
            raise CodecError(f"{self.name}: the reply was already finished (finish_streaming was called)")
        if self._stream is None:
            self._stream = self.format.stream(
                tools=self._request_tools(request), prompt=self._prompt(), call_id=self._ids
            )
        return self._message(self._stream.feed(delta_text))

    def finish_streaming(self) -> Any:
        """The ``DeltaMessage`` of what the stream still held at the end of the reply (None if nothing);
        damaged calls are reported here, once the whole reply is read."""
        if self._stream is None or self._closed:
            return None
        self._closed = True
        message = self._message(self._stream.close(), final=True)
        _report_damage(self.name, self._stream.result)
        return message

    def _message(self, events: list[Event], *, final: bool = False) -> Any:
        delta = _Delta()
        for event in events:
            if isinstance(event, ReasoningDelta):
                if not self.skip_reasoning_parsing:
                    delta.reasoning.append(event.text)
                    continue
                if not self._in_reasoning and self._reasoning is not None:
                    delta.content.append(self._reasoning.open + self._reasoning.open_rest)
                    self._in_reasoning = True
                delta.content.append(event.text)
                continue
            self._end_reasoning(delta)
            if isinstance(event, TextDelta):
                delta.content.append(event.text)
            elif isinstance(event, ToolCallStart):
                self._start_call(delta, event)
            elif isinstance(event, ToolCallDelta):
                self._add_arguments(delta, event.index, event.arguments)
            elif isinstance(event, ToolCallEnd):
                # The end of a call sends nothing: its arguments are all streamed. vLLM appends
                # to the last call what prev_tool_call_arr holds beyond streamed_args_for_tool.
                self.prev_tool_call_arr[event.index]["arguments"] = _arguments_json(event.call)
        if final:
            self._end_reasoning(delta)
        return delta.message()

    def _end_reasoning(self, delta: _Delta) -> None:
        if self._in_reasoning and self._reasoning is not None:
            delta.content.append(self._reasoning.close)
            self._in_reasoning = False

    def _start_call(self, delta: _Delta, event: ToolCallStart) -> None:
        if event.index != len(self.prev_tool_call_arr):
            raise CodecError(f"{self.name}: call {event.index} started after {len(self.prev_tool_call_arr)} calls")
        self.prev_tool_call_arr.append({"name": event.name, "arguments": ""})
        self.streamed_args_for_tool.append("")
        self.current_tool_id = event.index
        self.current_tool_name_sent = True
        entry = delta.call(event.index)
        entry.id = event.id
        entry.type = "function"
        entry.function.name = event.name

    def _add_arguments(self, delta: _Delta, index: int, arguments: str) -> None:
        self.streamed_args_for_tool[index] += arguments
        self.prev_tool_call_arr[index]["arguments"] = self.streamed_args_for_tool[index]
        entry = delta.call(index)
        entry.function.arguments = (entry.function.arguments or "") + arguments


# ---------------------------------------------------------------------------- reasoning parser


class CodecReasoningParser(ReasoningParser):  # type: ignore[misc]  # vLLM is untyped here (not installed for mypy)
    """A vLLM reasoning parser for one codec format (``format_name``): the reply's reasoning block,
    as codec reads it, streamed as ``reasoning``; the raw text after it goes on to the tool parser.

    Streaming feeds each ``delta_text`` to one codec stream (told the prompt when vLLM gives its
    token ids) for the reasoning deltas. Reasoning has ended once the closer follows an open
    block, or once the reply is seen not to open one; ``finish_streaming`` then hands over the
    raw text after the closer. At the end of a reply that never left reasoning (or whose first
    other text came only at its end) it gives what the stream read: reasoning, content and calls.
    """

    format_name: ClassVar[str] = ""
    engine_based_streaming: ClassVar[bool] = True

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self.format = parser_format(self.format_name)
        self.name = f"codec_{self.format.name}"
        markers = reasoning_markers(self.format)
        if markers is None:
            raise TypeError(f"{self.name}: the format's replies have no reasoning block")
        self.markers = markers
        self._prompt: str | None = None
        self._prompt_ids: list[int] | None = None
        self._stream: Stream | None = None
        self._raw = ""
        self._open = False  # a reasoning block is open (the prompt's or the reply's)
        self._ended = False
        self._handover: str | None = None  # the raw text after reasoning, until finish_streaming takes it
        self._sent = ""  # the reasoning streamed so far
        self._ids = _CallIds()

    @property
    def reasoning_start_str(self) -> str | None:
        """The format's reasoning opener."""
        return self.markers.open

    @property
    def reasoning_end_str(self) -> str | None:
        """The format's reasoning closer."""
        return self.markers.close

    def adjust_request(self, request: Any) -> Any:
        """The request, with ``skip_special_tokens=False`` when the reasoning markers are added tokens."""
        added = self.model_tokenizer.get_added_vocab()
        if self.markers.open in added or self.markers.close in added:
            request.skip_special_tokens = False
        return request

    # -------------------------------------------------------------- token ids

    def _text(self, ids: Sequence[int]) -> str:
        return str(self.model_tokenizer.decode(list(ids), skip_special_tokens=False))

    def _open_in(self, text: str) -> bool:
        """Whether ``text`` ends inside a reasoning block: an opener with no closer after it."""
        return text.rfind(self.markers.open) > text.rfind(self.markers.close)

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        """Whether reasoning has ended in the text of ``input_ids`` (a prompt, or a prompt and what
        followed): where a block was closed and none opened after it, or where the text holds no
        opener and reads as content (as a reply with no marker and no prompt does).

        Of the prompt given to :meth:`set_prompt_token_ids` (vLLM's serving layer asks this of it
        before the reply's first chunk, and skips the reasoning parser where it is True), only
        where the prompt ends in a closed block (thinking off): after any other prompt the reply
        may open a block of its own, which this parser reads, handing the rest over at once where
        the reply opens none. (A forced call's grammar is applied from the first token whatever
        this says: :func:`_constrain` tells vLLM that codec's grammars allow a reasoning block.)"""
        text = self._text(input_ids)
        if self._prompt_ids is not None and list(input_ids) == self._prompt_ids:
            return text.rstrip().endswith(self.markers.close) and not self._open_in(text)
        if self.markers.open not in text:
            return bool(text.strip())
        return text.rfind(self.markers.close) > text.rfind(self.markers.open)

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        """The ids after the first token that completes the reasoning closer (all of them when the
        text opens no reasoning block; none while the block is open)."""
        text = self._text(input_ids)
        if self.markers.close not in text:
            return [] if self.markers.open in text else list(input_ids)
        low, high = 1, len(input_ids)  # the shortest prefix holding the closer: found by bisection
        while low < high:
            middle = (low + high) // 2
            if self.markers.close in self._text(input_ids[:middle]):
                high = middle
            else:
                low = middle + 1
        return list(input_ids[low:])

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """How many of the reply's ``token_ids`` come before its content: those up to the closer."""
        return len(token_ids) - len(self.extract_content_ids(list(token_ids)))

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        """The prompt, read from its token ids: the stream is then told whether it opened reasoning."""
        self._prompt_ids = list(prompt_token_ids)
        self._prompt = self._text(prompt_token_ids)

    def adjust_initial_state_from_prompt(self, prompt_token_ids: Sequence[int]) -> None:
        """Nothing more than :meth:`set_prompt_token_ids` does: the stream reads the prompt itself."""
        self.set_prompt_token_ids(prompt_token_ids)

    # -------------------------------------------------------------- whole replies

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        """The reasoning of a whole reply (None where it has none, or an empty block) and the raw
        text around it (the tool parser reads that; None where there is none): the text before
        the block, if any, then the text after it."""
        result = self.format.parse(model_output, prompt=self._prompt, call_id=_CallIds())
        block = self._closed_block(model_output)
        if block is not None:
            before, head = block
            rest = before + self._after_block(head, model_output[len(before) + len(head) :])
            return result.reasoning or None, rest or None
        if not result.reasoning:
            return None, model_output or None
        # Unclosed: the rest starts where the parse ended the block at a call opener, or else at a
        # marker the block may not hold (a call), if any.
        ended = [issue.pos for issue in result.issues if issue.kind == "unclosed_reasoning"]
        if ended:
            return result.reasoning, self._reopened(model_output[ended[0] :])
        if self.format.syntax().reasoning_closer is not None:
            return result.reasoning, None
        found = [i for i in (model_output.find(m) for m in self.markers.forbid_markers) if i >= 0]
        return result.reasoning, (model_output[min(found) :] if found else None)

    def _reopened(self, rest: str) -> str:
        """``rest``, the raw text from the call that ended an unclosed reasoning block, after the
        block's opener written again: the tool parser, reading it as a reply of its own, then reads
        what follows the call as the whole reply's parse does (an empty block the call ends, sent
        as nothing; a closer written after the calls, Kimi K2's late ``</think>``, as the format
        reads one there), where without the opener it could not tell that a block was open."""
        return self.markers.open + self.markers.open_rest + rest

    def _closed_block(self, text: str) -> tuple[str, str] | None:
        """The text before the reasoning block ``text`` closes and the block itself (from its opener,
        or from the start where the prompt opened it, to its closer), or None where its first closer
        ends no block (a closer the parse keeps as text, or one written after calls that ended the
        block: Kimi K2's section opened inside ``<think>``). An empty block is a block."""
        end = text.find(self.markers.close)
        if end < 0:
            return None
        head = text[: end + len(self.markers.close)]
        start = head.rfind(self.markers.open)
        before = head[:start] if start >= 0 else ""
        # The parse of the text up to the closer is the judge: all of it reasoning but ``before``,
        # and no call (a call inside the block ended it there, as the stream reads it).
        parsed = self.format.parse(head, prompt=self._prompt, call_id=_CallIds())
        if parsed.content.strip() != before.strip() or parsed.tool_calls:
            return None
        return before, head[len(before) :]

    # -------------------------------------------------------------- streaming

    def has_engine_confirmed_reasoning_end(self) -> bool:
        """Whether the reasoning has ended in what was fed (vLLM then moves on to the tool parser)."""
        return self._ended

    def extract_reasoning_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
    ) -> Any:
        """The reasoning ``delta_text`` completes, as a ``DeltaMessage`` (None while held back)."""
        if self._ended:
            # Driven on alone (vLLM's serving layer takes the handover with finish_streaming as
            # soon as reasoning ends): the text held for the handover comes first, in order.
            text, self._handover = (self._handover or "") + delta_text, None
            return DeltaMessage(content=text) if text else None
        if self._stream is None:
            self._stream = self.format.stream(prompt=self._prompt, call_id=self._ids)
            syntax = self.format.syntax()
            opens = syntax.prompt_opens_reasoning
            self._open = self._prompt is not None and opens is not None and opens(self._prompt)
        self._raw += delta_text
        events = self._stream.feed(delta_text)
        reasoning = "".join(e.text for e in self._leading_reasoning(events))
        if reasoning:
            self._open = True  # reasoning the prompt opened, read so by the stream
        self._decide(events)
        if self._ended:
            reasoning = self._complete_reasoning(reasoning)
        self._sent += reasoning
        return DeltaMessage(reasoning=reasoning) if reasoning else None

    def _leading_reasoning(self, events: list[Event]) -> list[ReasoningDelta]:
        """The reasoning events before the first other one (what follows belongs to the tool parser)."""
        leading: list[ReasoningDelta] = []
        for event in events:
            if not isinstance(event, ReasoningDelta):
                break
            leading.append(event)
        return leading

    def _decide(self, events: list[Event]) -> None:
        """Whether reasoning has ended, and where the raw text after it starts."""
        text = self._raw.lstrip()
        if not self._open and text.startswith(self.markers.open):
            self._open = True
        if not self._open and self._prompt is None and text.startswith(self.markers.close):
            # An empty block the prompt opened (with no prompt, the stream reads a closer first so):
            # it gives no reasoning, and the rest starts after its closer.
            self._open = True
        if self._open:
            end = self._raw.find(self.markers.close)
            rest = self._raw[end + len(self.markers.close) :]
            other = any(not isinstance(e, ReasoningDelta) for e in events)
            # A call that ended the block unclosed, as the parse of the text so far reads it (a
            # closer may follow the calls, in the same chunk): the rest starts at the call.
            ended = self._ended_by_call() if other else None
            if ended is not None:
                self._end(self._reopened(self._raw[ended:]))
            # Wait for the first text after the closer: the whitespace before it may be the block's.
            elif end >= 0 and rest.strip():
                self._end(self._after_block(self._raw[: end + len(self.markers.close)], rest))
            elif end < 0 and other:
                # The block ends unclosed, at a marker it may not hold: the rest starts there.
                found = [i for i in (self._raw.find(m) for m in self.markers.forbid_markers) if i >= 0]
                self._end(self._raw[min(found) :] if found else "")
            return
        reply_opens = self.markers.open.startswith(text)  # still could be the opener
        prompt_known = self._prompt is not None
        other = any(not isinstance(e, ReasoningDelta) for e in events)
        if (prompt_known and text and not reply_opens) or other:
            self._end(self._raw)

    def _ended_by_call(self) -> int | None:
        """Where a call ended the reasoning block unclosed in the raw text so far (an
        ``unclosed_reasoning`` issue of its parse), or None."""
        parsed = self.format.parse(self._raw, prompt=self._prompt, call_id=_CallIds())
        ended = [issue.pos for issue in parsed.issues if issue.kind == "unclosed_reasoning"]
        return ended[0] if ended else None

    def _after_block(self, head: str, rest: str) -> str:
        """``rest``, the raw text after a reasoning block ``head``, less the whitespace the format
        reads as part of the block (a think block's blank line; gemma4 keeps it as content)."""
        space = rest[: len(rest) - len(rest.lstrip())]
        if not space:
            return rest
        probe = self.format.parse(head + space + "x", prompt=self._prompt, call_id=_CallIds()).content
        kept = probe[:-1] if probe.endswith("x") and space.endswith(probe[:-1]) else space
        return kept + rest[len(space) :]

    def _end(self, rest: str) -> None:
        self._ended = True
        self._handover = rest

    def _complete_reasoning(self, reasoning: str) -> str:
        """``reasoning`` with whatever of the block the stream still held back (its tail), read from
        the raw text up to the closer: the reasoning sent then equals what a whole parse gives."""
        assert self._handover is not None
        head = self._raw[: len(self._raw) - len(self._handover)]
        if not self._open or not head:
            return reasoning
        # A block a call opener ended (no closer): read with what follows, so that the line breaks
        # before the opener are not the block's.
        text = head if self.markers.close in head else self._raw
        whole = self.format.parse(text, prompt=self._prompt, call_id=_CallIds()).reasoning
        sent = self._sent + reasoning
        return reasoning + whole[len(sent) :] if whole.startswith(sent) else reasoning

    def finish_streaming(self) -> Any:
        """After reasoning ended: the raw text after it, as content (vLLM hands it to the tool parser).
        At the end of a reply still in reasoning: what the stream read of the rest (reasoning,
        content, calls), since no tool parser will read it."""
        if self._ended:
            rest, self._handover = self._handover, None
            return DeltaMessage(content=rest) if rest else None
        if self._stream is None:
            return None
        delta = _Delta()
        in_reasoning = True
        events = self._stream.close()
        for event in events:
            if isinstance(event, ReasoningDelta) and in_reasoning:
                delta.reasoning.append(event.text)
                continue
            in_reasoning = False
            if isinstance(event, (TextDelta, ReasoningDelta)):
                delta.content.append(event.text)
            elif isinstance(event, ToolCallStart):
                entry = delta.call(event.index)
                entry.id, entry.type, entry.function.name = event.id, "function", event.name
            elif isinstance(event, ToolCallDelta):
                entry = delta.call(event.index)
                entry.function.arguments = (entry.function.arguments or "") + event.arguments
        self._ended = True
        _report_damage(self.name, self._stream.result)
        return delta.message()


# ---------------------------------------------------------------------------- harmony


class CodecHarmonyReasoningParser(CodecReasoningParser):
    """The reasoning parser of a harmony member (gpt-oss): the reasoning messages a reply opens with
    (``<|channel|>analysis<|message|>...<|end|>``, one or more, or their stripped form
    ``analysis...``) streamed as ``reasoning``; the raw text from the next message on (a preamble,
    a call, the final answer) goes on to the tool parser, which reads it as a reply of its own.
    Reasoning on a later message (after a preamble) is the tool parser's, streamed as
    ``reasoning`` too. Where the split falls is :func:`~codec.integrations.vllm.handover.leading_reasoning`'s.
    """

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self._split: Split | None = None
        self._judged = -1  # the last place a message may start that was judged

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        """The leading reasoning messages of a whole reply (None where it opens with none) and the
        raw text after them, from the next message on."""
        split = leading_reasoning(self.format, model_output, prompt=self._prompt)
        if split is None:
            return None, model_output or None
        return split.reasoning, model_output[split.rest :] or None

    def _decide(self, events: list[Event]) -> None:
        """Reasoning ends at the first text or call the stream reads: the rest starts at the message
        that holds it (all of the reply where it opens with no reasoning). With the prompt known
        (and no reasoning message open in it), a reply whose start can be no reasoning message's
        header (a call's, a preamble's) opens with no reasoning: all of it is handed over at once,
        so that the tool parser sends its calls as they complete, not at the end of the reply."""
        if all(isinstance(event, ReasoningDelta) for event in events):
            if self._prompt is not None and not self._open and not self._may_open_reasoning(self._raw):
                self._split = None
                self._end(self._raw)
            else:
                self._after_a_message()
            return
        self._split = leading_reasoning(self.format, self._raw, prompt=self._prompt)
        self._end(self._raw[self._split.rest :] if self._split is not None else self._raw)

    def _after_a_message(self) -> None:
        """Reasoning ends where a reasoning message is followed by the header of one that is not
        (a call's, a preamble's, the answer's), though the stream holds that message back: the
        split is taken there, once per place a message may start."""
        m = harmony_markers(self.format)
        assert m is not None
        ends = [self._raw.rfind(token) for token in (m.start, m.channel)]
        closer = self._raw.rfind(m.end)
        ends.append(closer + len(m.end) if closer >= 0 else -1)
        role = self._raw.rfind(m.role) if m.stripped else -1
        boundary = max(*ends, role)
        tail = self._raw[boundary:]
        # (judged once the next message's header is whole: where its body starts is then known)
        if boundary == role:
            after = tail[len(m.role) :]
            whole = any(after.startswith(channel) and len(after) > len(channel) for channel in m.channels)
        else:
            whole = m.message in tail
        if boundary <= 0 or boundary == self._judged or not whole or self._may_open_reasoning(tail):
            return
        self._judged = boundary
        split = leading_reasoning(self.format, self._raw, prompt=self._prompt)
        # (the role's name may be a word of the reasoning in a stripped reply: only a split there counts)
        if split is not None and (boundary != role or split.end == role):
            self._split = split
            self._end(self._raw[split.rest :])

    def _may_open_reasoning(self, text: str) -> bool:
        """Whether ``text`` (the reply so far, or its last message so far) may still be a reasoning
        message: it is, or begins, a reasoning message's header, written in full, without its
        opener, or stripped."""
        m = harmony_markers(self.format)
        assert m is not None
        text = text.lstrip()
        headers = [m.channel + m.reasoning_channel, m.start + m.role + m.channel + m.reasoning_channel]
        if m.stripped:
            headers.append(m.reasoning_channel)
        return any(header.startswith(text) or text.startswith(header) for header in headers)

    def _complete_reasoning(self, reasoning: str) -> str:
        """``reasoning`` with what the stream still held back of the leading reasoning messages."""
        whole = self._split.reasoning if self._split is not None else ""
        sent = self._sent + reasoning
        return reasoning + whole[len(sent) :] if whole.startswith(sent) else reasoning


# ---------------------------------------------------------------------------- one class per format


def _tool_parser(format_name: str) -> type[CodecToolParser]:
    """``format_name``'s tool parser class, named as :func:`~codec.integrations.vllm.register` registers it."""
    namespace = {"format_name": format_name, "__module__": __name__}
    return type(tool_class_name(format_name), (CodecToolParser,), namespace)


def _reasoning_parser(format_name: str) -> type[CodecReasoningParser]:
    """``format_name``'s reasoning parser class (a format of :data:`REASONING_FORMATS`, or
    :data:`DERIVED`): a harmony member's reads reasoning messages, every other one a reasoning block
    (a derived format is known only when a parser is made: never harmony, which derivation refuses)."""
    if format_name not in REASONING_FORMATS and format_name != DERIVED:
        raise ValueError(f"{format_name} is not among the formats with reasoning: {sorted(REASONING_FORMATS)}")
    namespace = {"format_name": format_name, "__module__": __name__}
    harmony = format_name != DERIVED and harmony_markers(get_format(format_name)) is not None
    base = CodecHarmonyReasoningParser if harmony else CodecReasoningParser
    return type(reasoning_class_name(format_name), (base,), namespace)


# Every format's classes, under the names register() gives vLLM (a format added to the registry
# gets its parsers with no line to add here).
for _name in formats():
    globals()[tool_class_name(_name)] = _tool_parser(_name)
    if _name in REASONING_FORMATS:
        globals()[reasoning_class_name(_name)] = _reasoning_parser(_name)
del _name
# The format derived from $CODEC_DERIVE_TEMPLATE (read when vLLM makes a parser).
CodecDerivedToolParser = _tool_parser(DERIVED)
CodecDerivedReasoningParser = _reasoning_parser(DERIVED)
