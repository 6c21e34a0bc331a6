"""Data models: OpenAI-shaped messages and tools, parse results, issues and stream events.

Messages, tools and results are pydantic models so that they validate plain OpenAI dicts and
dump back to them. ``FunctionCall.arguments`` is a dict in Python and a JSON string in
``model_dump(mode="json")``, exactly as OpenAI sends it. Stream events are small frozen
dataclasses: a stream creates one per delta, and they need no validation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializationInfo,
    computed_field,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from codec.errors import ToolError
from codec.issues import IssueKind, Severity, severity
from codec.tools import normalize_tool


def dump_arguments(arguments: dict[str, Any]) -> str:
    """The JSON text of a call's arguments, as ``model_dump(mode="json")`` and the stream deltas spell it."""
    return json.dumps(arguments, ensure_ascii=False)


class _Model(BaseModel):
    """Base: unknown keys are kept (OpenAI payloads carry more than we read), ``None`` fields are not dumped."""

    model_config = ConfigDict(extra="allow")

    def __setattr__(self, name: str, value: Any) -> None:
        # A model :func:`built` made shares its set of field names and its empty extras with every
        # other one of its shape; the first assignment gives it copies of its own, so that what
        # it records (a new extra's name and value) stays its own.
        if self.__pydantic_extra__ is _NO_EXTRAS:
            _set(self, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
            _set(self, "__pydantic_extra__", {})
        super().__setattr__(name, value)

    def __getstate__(self) -> dict[Any, Any]:
        # Pickling keeps shared objects shared: models unpickled together would share one set and
        # one extras dict that is not :data:`_NO_EXTRAS`, so an assignment to one would change them
        # all. Each pickles copies of its own instead, as a validated model does.
        state = super().__getstate__()
        if self.__pydantic_extra__ is _NO_EXTRAS:
            state = {**state, "__pydantic_fields_set__": set(self.__pydantic_fields_set__), "__pydantic_extra__": {}}
        return state

    @model_serializer(mode="wrap")
    def _drop_none(self, handler: Any) -> Any:
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


_M = TypeVar("_M", bound=_Model)


def built(cls: type[_M], **fields: Any) -> _M:
    """An instance of ``cls`` holding every one of its ``fields`` as given, unvalidated: what
    ``cls.model_construct(**fields)`` makes (equal to it, dumped the same), at a third of its cost.
    For values a parser built that are right by construction, on the path of every parse; the
    caller gives every field (no default is filled in).

    Its set of field names (``model_fields_set``) and its empty extras are shared by every model
    built with the same fields, which halves what a parsed call holds (two models of four
    attributes each, a million of them in a long reply); assigning an attribute gives the model
    copies of its own first (``_Model.__setattr__``), and copies and unpickled models have their
    own. Read ``model_fields_set`` of such a model, do not change it in place."""
    model = _new(cls)
    _set_dict(model, fields)
    key = (cls, *fields)
    names = _FIELD_NAMES.get(key)
    if names is None:
        names = _FIELD_NAMES[key] = set(fields)
    _set_fields_set(model, names)
    _set_extra(model, _NO_EXTRAS)  # (extra="allow": model_construct's empty extras)
    _set_private(model, None)
    return model


_set = object.__setattr__
# The slots every pydantic model has, set through their descriptors (object.__setattr__ finds
# each along the class's MRO first: twice the cost of a parse's smallest result); a model is
# made as object.__new__ makes it, as no model here has a __new__ of its own.
_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
#: The field-name sets :func:`built` models share, by class and field names in order.
_FIELD_NAMES: dict[tuple[Any, ...], set[str]] = {}
#: The empty extras :func:`built` models share (never changed: see ``_Model.__setattr__``).
_NO_EXTRAS: dict[str, Any] = {}


def parsed_call(call_id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
    """A tool call a parser read (its name a str, its arguments a JSON-able dict by construction),
    built without validation."""
    return built(ToolCall, id=call_id, type="function", function=built(FunctionCall, name=name, arguments=arguments))


class Function(_Model):
    """A tool's function definition: its name, description and JSON-schema parameters."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class Tool(_Model):
    """A tool as OpenAI declares it: ``{"type": "function", "function": {...}}``. It validates the
    other shapes :mod:`codec.tools` reads too (the Responses API's flat tools, Anthropic's), as
    this one, and refuses the rest with what is wrong."""

    type: Literal["function"] = "function"
    function: Function

    @model_validator(mode="before")
    @classmethod
    def _normalized(cls, value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value
        try:
            return normalize_tool(value)
        except (ToolError, TypeError) as exc:  # the message as it is, without pydantic's "Value error, "
            raise PydanticCustomError("tool_shape", str(exc)) from None


class FunctionCall(_Model):
    """The function part of a tool call. ``arguments`` may be given as a dict or as a JSON object string."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @field_validator("arguments", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as exc:
                raise ValueError(f"arguments is not valid JSON: {exc}") from exc
            if not isinstance(value, dict):
                raise ValueError("arguments must encode a JSON object")
        return value

    @field_serializer("arguments")
    def _encode(self, value: dict[str, Any] | str, info: SerializationInfo) -> Any:
        # A decoded prompt keeps arguments a template wrote as plain text (not a JSON object) as
        # that text, so it renders back: in JSON it is already the arguments string.
        if info.mode != "json" or isinstance(value, str):
            return value
        return dump_arguments(value)


class ToolCall(_Model):
    """One tool call of an assistant message."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(_Model):
    """An OpenAI chat message. ``reasoning_content`` carries the model's reasoning, where a format has it.

    The assistant message of a reply (:meth:`ParseResult.to_message`) always dumps its ``content``,
    ``null`` when it has none (a message of calls alone), as OpenAI's API writes it: code that reads
    ``message["content"]`` finds it. Other messages leave out what is None."""

    role: str
    content: str | list[dict[str, Any]] | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    #: A reply's message, made by :meth:`ParseResult.to_message` (its content is dumped even when null).
    _reply: bool = PrivateAttr(default=False)

    @model_serializer(mode="wrap")
    def _drop_none(self, handler: Any) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        kept = {k: v for k, v in data.items() if v is not None}
        if self._reply and "content" not in kept:
            kept = {"role": kept.pop("role", self.role), "content": None, **kept}
        return kept


class Issue(_Model):
    """Something lenient parsing repaired or could not use, with where it happened in the reply.

    ``pos`` is the 0-based offset in the whole reply, ``line`` and ``column`` are 1-based, and
    ``text`` holds the reply text the issue is about when that text is not kept anywhere else.
    """

    kind: IssueKind
    message: str
    pos: int
    line: int
    column: int
    text: str | None = None
    #: The entry of ``tool_calls`` the issue concerns: None for an issue about the text, or about
    #: a block that gave no call.
    call_index: int | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def severity(self) -> Severity:
        """``"note"``, ``"repaired"`` or ``"damaged"``: fixed by the kind (see :mod:`codec.issues`)."""
        return severity(self.kind)


class ParseResult(_Model):
    """What a reply decodes to. Every character of the reply is in one of these fields."""

    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    issues: list[Issue] = Field(default_factory=list)

    @property
    def damaged_indices(self) -> frozenset[int]:
        """The entries of ``tool_calls`` that a ``"damaged"`` issue concerns."""
        return frozenset(
            issue.call_index for issue in self.issues if issue.call_index is not None and issue.severity == "damaged"
        )

    @property
    def intact_calls(self) -> list[ToolCall]:
        """The calls no ``"damaged"`` issue concerns: each is what the model wrote, repaired or not
        (an agent that must not run a guess runs these)."""
        damaged = self.damaged_indices
        return [call for index, call in enumerate(self.tool_calls) if index not in damaged]

    def to_message(self, *, drop_damaged: bool = False) -> Message:
        """The OpenAI assistant message; whitespace-only content beside tool calls counts as none.
        With ``drop_damaged``, only the :attr:`intact_calls` (the issues still say what was left out)."""
        calls = self.intact_calls if drop_damaged else list(self.tool_calls)
        content: str | None = self.content
        if not self.content or (calls and not self.content.strip()):
            content = None
        message = Message(
            role="assistant",
            content=content,
            reasoning_content=self.reasoning or None,
            tool_calls=calls or None,
        )
        message._reply = True
        return message


class Conversation(_Model):
    """A rendered prompt decoded back: what ``fmt.render`` needs to give the same text again.

    ``fmt.render(c.messages, c.tools, add_generation_prompt=c.add_generation_prompt, **c.variables)``
    reproduces the decoded prompt byte for byte.
    """

    messages: list[Message] = Field(default_factory=list)
    #: The tools exactly as the prompt declares them (OpenAI tool JSON; key order kept).
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt: bool = False
    #: Template variables the prompt shows (``bos_token``, ``enable_thinking``...).
    variables: dict[str, Any] = Field(default_factory=dict)

    @field_validator("tools", mode="before")
    @classmethod
    def _plain_tools(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [tool.model_dump() if isinstance(tool, BaseModel) else tool for tool in value]
        return value


# --------------------------------------------------------------------------- stream events


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Content text."""

    text: str

    def to_openai(self) -> dict[str, Any] | None:
        return {"content": self.text}


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Reasoning text (sent as ``reasoning_content``, as OpenAI-compatible servers do)."""

    text: str

    def to_openai(self) -> dict[str, Any] | None:
        return {"reasoning_content": self.text}


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """A call's name is known; its arguments follow as :class:`ToolCallDelta` fragments."""

    index: int
    id: str
    name: str

    def to_openai(self) -> dict[str, Any] | None:
        function = {"name": self.name, "arguments": ""}
        return {"tool_calls": [{"index": self.index, "id": self.id, "type": "function", "function": function}]}


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a call's arguments JSON; the fragments of one call concatenate to its arguments string."""

    index: int
    arguments: str

    def to_openai(self) -> dict[str, Any] | None:
        return {"tool_calls": [{"index": self.index, "function": {"arguments": self.arguments}}]}


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    """A call is complete. It adds nothing to the OpenAI stream, so ``to_openai()`` is ``None``."""

    index: int
    call: ToolCall

    def to_openai(self) -> dict[str, Any] | None:
        return None


Event = TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallEnd
