"""OpenAI wire shapes of codec's stream: ``chat.completion.chunk`` objects and Responses API events.

codec's stream events (:mod:`codec.models`: ``TextDelta``, ``ReasoningDelta``, ``ToolCallStart``,
``ToolCallDelta``, ``ToolCallEnd``) say what a reply holds as it arrives. A server sends them on in
one of two shapes, each made here by a small stateful object fed those events in order:

- :class:`ChatChunks`: Chat Completions, one ``chat.completion.chunk`` per delta (``id``,
  ``object``, ``created``, ``model``, ``choices`` with ``index``, ``delta`` and
  ``finish_reason``), the first delta carrying ``role``, and a last chunk with an empty delta and
  ``finish_reason`` ``"tool_calls"`` when the reply made calls, else ``"stop"``.
- :class:`ResponsesEvents`: the Responses API, the events its stream sends: ``response.created``
  and ``response.in_progress``, then per output item (reasoning, message, function call, in the
  order the reply writes them) ``response.output_item.added``, its content part, its deltas
  (``response.reasoning_text.delta``, ``response.output_text.delta``,
  ``response.function_call_arguments.delta``), the ``.done`` event with the item's whole text or
  arguments, ``response.output_item.done``, and last ``response.completed`` with every item. Each
  event has its ``sequence_number``; each item its ``id`` and ``output_index``.

Both write plain dicts (JSON-ready), the shapes the ``openai`` package's ``ChatCompletionChunk``
and ``ResponseStreamEvent`` types read. Neither does IO: ids and times are made once per object
(or given), nothing else.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import Any, Literal

from codec.models import (
    Event,
    ParseResult,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
)

#: The key a delta or a message writes reasoning under: ``reasoning_content`` (DeepSeek, vLLM and
#: SGLang's default) or ``reasoning`` (OpenRouter, Ollama, vLLM's newer releases).
ReasoningField = Literal["reasoning_content", "reasoning"]
REASONING_FIELDS: tuple[ReasoningField, ...] = ("reasoning_content", "reasoning")

#: The model name written when none is given: codec does not know which model wrote the reply.
DEFAULT_MODEL = "codec"


def reasoning_as(data: dict[str, Any], field: ReasoningField) -> dict[str, Any]:
    """``data`` (a delta or a message dump) with its ``reasoning_content`` written under ``field``."""
    if field == "reasoning_content" or "reasoning_content" not in data:
        return data
    return {(field if key == "reasoning_content" else key): value for key, value in data.items()}


def finish_reason(has_calls: bool) -> Literal["tool_calls", "stop"]:
    """The ``finish_reason`` of a reply: ``"tool_calls"`` when it made calls, else ``"stop"``."""
    return "tool_calls" if has_calls else "stop"


def _arguments_text(call: ToolCall) -> str:
    """A call's arguments as the JSON string the API sends (a string kept as a prompt wrote it stays itself)."""
    arguments: str = call.function.model_dump(mode="json")["arguments"]
    return arguments


# --------------------------------------------------------------------------- chat completions


class ChatChunks:
    """The ``chat.completion.chunk`` objects of one streamed completion.

    ``feed(events)`` gives a chunk for each event that has a delta (``ToolCallEnd`` has none);
    ``close()`` gives the last chunk, with an empty delta and the ``finish_reason``. ``id``
    defaults to a fresh ``chatcmpl-...``, ``created`` to the time the object is made (Unix
    seconds), ``model`` to :data:`DEFAULT_MODEL`; ``reasoning_field`` is the delta key reasoning
    goes under.
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        id: str | None = None,
        created: int | None = None,
        reasoning_field: ReasoningField = "reasoning_content",
    ) -> None:
        if reasoning_field not in REASONING_FIELDS:
            raise ValueError(f"reasoning_field must be one of {', '.join(REASONING_FIELDS)}, not {reasoning_field!r}")
        self.id = id if id is not None else f"chatcmpl-{uuid.uuid4().hex}"
        self.created = created if created is not None else int(time.time())
        self.model = model
        self.reasoning_field: ReasoningField = reasoning_field
        self.has_calls = False
        self._role_sent = False

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        """One chunk of this completion holding ``delta`` (the first one also says ``role``)."""
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def feed(self, events: Iterable[Event]) -> list[dict[str, Any]]:
        """The chunks of ``events``, in order: one per event with a delta."""
        chunks = []
        for event in events:
            if isinstance(event, ToolCallStart):
                self.has_calls = True
            delta = event.to_openai()
            if delta is not None:
                chunks.append(self.chunk(reasoning_as(delta, self.reasoning_field)))
        return chunks

    def close(self) -> list[dict[str, Any]]:
        """The last chunk: an empty delta and ``finish_reason`` (``"tool_calls"`` or ``"stop"``)."""
        return [self.chunk({}, finish_reason(self.has_calls))]


# --------------------------------------------------------------------------- responses


class _Item:
    """An output item being streamed: its kind, id, index, and what its deltas added up to."""

    __slots__ = ("call", "id", "index", "kind", "text")

    def __init__(self, kind: str, id: str, index: int, call: ToolCallStart | None = None) -> None:
        self.kind = kind  # "message", "reasoning" or "function_call"
        self.id = id
        self.index = index
        self.call = call
        self.text: list[str] = []


_PREFIX = {"message": "msg", "reasoning": "rs", "function_call": "fc"}


class ResponsesEvents:
    """The Responses API stream events of one response, made from codec's stream events.

    ``start()`` gives ``response.created`` and ``response.in_progress`` (``feed`` and ``close``
    give them first when ``start`` was not called); ``feed(events)`` the events of the items
    they open, add to and end; ``close(result)`` ends the open items and gives
    ``response.completed``, whose ``output`` holds every item done. ``result`` is the stream's
    :class:`~codec.models.ParseResult` after its ``close()``: it says which calls are damaged.

    Items follow the reply: reasoning text is a ``reasoning`` item (its text a ``reasoning_text``
    content part), content a ``message`` item (an ``output_text`` part), each call a
    ``function_call`` item whose ``call_id`` is codec's call id. Text that resumes after a call
    opens a new item. A ``.done`` event carries the item's whole text or arguments: what its
    deltas add up to. Item ids are ``msg_``, ``rs_`` or ``fc_``, the response id's suffix and the
    item's ``output_index``.

    Damaged calls (those a ``"damaged"`` issue concerns: cut short, a value guessed) appear like
    the others: never left out unless asked. With ``drop_damaged``, calls are held back until
    ``close``, which sends the intact ones whole (one arguments delta each) and leaves the
    damaged ones out; text and reasoning still stream as they arrive.
    """

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        id: str | None = None,
        created_at: int | None = None,
        drop_damaged: bool = False,
    ) -> None:
        self.id = id if id is not None else f"resp_{uuid.uuid4().hex}"
        self.created_at = created_at if created_at is not None else int(time.time())
        self.model = model
        self.drop_damaged = drop_damaged
        self._suffix = self.id.removeprefix("resp_")
        self._sequence = 0
        self._started = False
        self._closed = False
        self._output: dict[int, dict[str, Any]] = {}  # the items done, by output_index
        self._open: _Item | None = None  # the open message or reasoning item
        self._calls: dict[int, _Item] = {}  # the open function_call items, by codec's call index
        self._held: dict[int, ToolCallStart] = {}  # calls held back until close (drop_damaged)
        self._next_index = 0

    # ------------------------------------------------------------------ public

    @property
    def response(self) -> dict[str, Any]:
        """The response object as it stands: ``in_progress`` with the items done so far, then ``completed``."""
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "model": self.model,
            "status": "completed" if self._closed else "in_progress",
            "output": [self._output[index] for index in sorted(self._output)],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
        }

    def start(self) -> list[dict[str, Any]]:
        """``response.created`` and ``response.in_progress`` (nothing once started)."""
        if self._started:
            return []
        self._started = True
        created = self._event("response.created", response=self.response)
        return [created, self._event("response.in_progress", response=self.response)]

    def feed(self, events: Iterable[Event]) -> list[dict[str, Any]]:
        """The Responses events of codec's ``events``, in order."""
        if self._closed:
            raise ValueError("feed() after close()")
        out = self.start()
        for event in events:
            if isinstance(event, TextDelta | ReasoningDelta):
                if not event.text:
                    continue
                kind = "message" if isinstance(event, TextDelta) else "reasoning"
                if self._open is None or self._open.kind != kind:
                    out += self._end_open()
                    out += self._add_text_item(kind)
                item = self._open
                assert item is not None
                item.text.append(event.text)
                name = "response.output_text.delta" if kind == "message" else "response.reasoning_text.delta"
                extra: dict[str, Any] = {"logprobs": []} if kind == "message" else {}
                out.append(
                    self._event(
                        name, item_id=item.id, output_index=item.index, content_index=0, delta=event.text, **extra
                    )
                )
            elif isinstance(event, ToolCallStart):
                out += self._end_open()
                if self.drop_damaged:
                    self._held[event.index] = event
                else:
                    out += self._add_call(event)
            elif event.index in self._held:
                continue  # a call held back (drop_damaged): close() sends it whole, if it is intact
            elif event.index not in self._calls:
                raise ValueError(f"{type(event).__name__} of call {event.index}, which no ToolCallStart opened")
            elif isinstance(event, ToolCallDelta):
                out.append(self._arguments_delta(self._calls[event.index], event.arguments))
            else:
                out += self._end_call(self._calls.pop(event.index), _arguments_text(event.call))
        return out

    def close(self, result: ParseResult) -> list[dict[str, Any]]:
        """End what is open, send the calls held back (with ``drop_damaged``: the intact ones), then
        ``response.completed``."""
        if self._closed:
            return []
        out = self.start()
        out += self._end_open()
        for index, item in sorted(self._calls.items()):  # a call the stream never ended: end it as parsed
            out += self._end_call(item, _arguments_text(result.tool_calls[index]))
        self._calls.clear()
        damaged = result.damaged_indices
        for index, start in sorted(self._held.items()):
            if index in damaged:
                continue
            arguments = _arguments_text(result.tool_calls[index])
            item = self._new_item("function_call", start)
            out += self._added(item)
            if arguments:
                out.append(self._arguments_delta(item, arguments))
            out += self._end_call(item, arguments)
        self._held.clear()
        self._closed = True
        out.append(self._event("response.completed", response=self.response))
        return out

    # ------------------------------------------------------------------ items

    def _event(self, type_: str, **fields: Any) -> dict[str, Any]:
        event = {"type": type_, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event

    def _new_item(self, kind: str, call: ToolCallStart | None = None) -> _Item:
        index = self._next_index
        self._next_index += 1
        return _Item(kind, f"{_PREFIX[kind]}_{self._suffix}_{index}", index, call)

    def _item(self, item: _Item, done: bool) -> dict[str, Any]:
        """The item object: as added (empty, ``in_progress``) or done (whole, ``completed``)."""
        status = "completed" if done else "in_progress"
        text = "".join(item.text)
        if item.kind == "function_call":
            assert item.call is not None
            return {
                "type": "function_call",
                "id": item.id,
                "call_id": item.call.id,
                "name": item.call.name,
                "arguments": text if done else "",
                "status": status,
            }
        if item.kind == "message":
            content = [self._part(item, text)] if done else []
            return {"type": "message", "id": item.id, "role": "assistant", "status": status, "content": content}
        content = [self._part(item, text)] if done else []
        return {"type": "reasoning", "id": item.id, "summary": [], "content": content, "status": status}

    @staticmethod
    def _part(item: _Item, text: str) -> dict[str, Any]:
        if item.kind == "message":
            return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        return {"type": "reasoning_text", "text": text}

    def _added(self, item: _Item) -> list[dict[str, Any]]:
        return [self._event("response.output_item.added", output_index=item.index, item=self._item(item, done=False))]

    def _add_text_item(self, kind: str) -> list[dict[str, Any]]:
        item = self._open = self._new_item(kind)
        out = self._added(item)
        out.append(
            self._event(
                "response.content_part.added",
                item_id=item.id,
                output_index=item.index,
                content_index=0,
                part=self._part(item, ""),
            )
        )
        return out

    def _end_open(self) -> list[dict[str, Any]]:
        """The ``.done`` events of the open message or reasoning item, if one is open."""
        item, self._open = self._open, None
        if item is None:
            return []
        text = "".join(item.text)
        where = {"item_id": item.id, "output_index": item.index, "content_index": 0}
        if item.kind == "message":
            done = self._event("response.output_text.done", **where, text=text, logprobs=[])
        else:
            done = self._event("response.reasoning_text.done", **where, text=text)
        return [done, self._event("response.content_part.done", **where, part=self._part(item, text)), self._done(item)]

    def _add_call(self, start: ToolCallStart) -> list[dict[str, Any]]:
        item = self._calls[start.index] = self._new_item("function_call", start)
        return self._added(item)

    def _arguments_delta(self, item: _Item, fragment: str) -> dict[str, Any]:
        item.text.append(fragment)
        return self._event(
            "response.function_call_arguments.delta", item_id=item.id, output_index=item.index, delta=fragment
        )

    def _end_call(self, item: _Item, arguments: str) -> list[dict[str, Any]]:
        # The fragments concatenate to the final arguments (the stream's promise); the final text is
        # what the .done event and the item carry.
        item.text = [arguments]
        done = self._event(
            "response.function_call_arguments.done", item_id=item.id, output_index=item.index, arguments=arguments
        )
        return [done, self._done(item)]

    def _done(self, item: _Item) -> dict[str, Any]:
        data = self._item(item, done=True)
        self._output[item.index] = data
        return self._event("response.output_item.done", output_index=item.index, item=data)
