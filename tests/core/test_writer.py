"""codec.sink.CallWriter: the one writer of argument JSON, driven directly.

Whatever a builder reads in whatever order (arguments, strings in pieces, a name after the
arguments, repeats, a cut), the fragments sent concatenate to exactly the final arguments' JSON
(as ``model_dump(mode="json")`` writes it), a whole parse (no events) ends with the same call,
and the first of a repeated argument is kept.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import toy
from harness import examples
from hypothesis import given
from hypothesis import strategies as st

from codec.models import ToolCallDelta, ToolCallEnd, ToolCallStart
from codec.sink import CallWriter, Output

PARAMETERS = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
TOOLS: dict[str, Any] = {"f": {"type": "function", "function": {"name": "f", "parameters": PARAMETERS}}}


def output(*, events: bool = True, tools: dict[str, Any] | None = None) -> Output:
    return Output(
        toy._grammar(),
        tools=tools,
        strict=False,
        events=events,
        call_id=lambda index: f"c{index}",
        line_column=lambda pos: (1, pos + 1),
        snippet=lambda pos: "",
        reading=lambda text: None,
    )


def fragments(out: Output, index: int = 0) -> str:
    return "".join(e.arguments for e in out.events if isinstance(e, ToolCallDelta) and e.index == index)


def dumped_arguments(out: Output, index: int = 0) -> str:
    return out.result().tool_calls[index].model_dump(mode="json")["function"]["arguments"]  # type: ignore[no-any-return]


# A builder's reading of one call: operations in reply order.
keys = st.sampled_from(["a", "b", "é", 'q"uote', "k\n"])
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("argument"), keys, values),
        st.tuples(st.just("string"), keys, st.lists(st.text(max_size=4), max_size=4)),
    ),
    max_size=6,
)


def read(out: Output, ops: list[tuple[Any, ...]], *, name_first: bool, cut_in_string: bool) -> CallWriter:
    """Tell a writer ``ops``; the name comes first or last; a cut inside a last, open string."""
    call = out.call("f" if name_first else None, 0)
    for op in ops:
        if op[0] == "argument":
            call.argument(op[1], op[2], 0)
        else:
            call.string_start(op[1], 0)
            for piece in op[2]:
                call.string_more(piece)
            call.string_end()
    if not name_first:
        call.start("f")
    if cut_in_string:
        call.string_start("open", 0)
        call.string_more("partial")
        call.cut("raw", "cut", 0)
    else:
        call.end()
    return call


@examples(300)
@given(ops=operations, name_first=st.booleans(), cut_in_string=st.booleans())
def test_fragments_concatenate_to_the_arguments_json(
    ops: list[tuple[Any, ...]], name_first: bool, cut_in_string: bool
) -> None:
    streamed = output()
    call = read(streamed, ops, name_first=name_first, cut_in_string=cut_in_string)
    assert fragments(streamed) == dumped_arguments(streamed) == json.dumps(call.arguments, ensure_ascii=False)
    whole = output(events=False)
    read(whole, ops, name_first=name_first, cut_in_string=cut_in_string)
    assert whole.result() == streamed.result()
    assert not any(isinstance(e, ToolCallDelta) for e in whole.events)  # a whole parse writes no JSON
    first: dict[str, Any] = {}
    for op in ops:
        first.setdefault(op[1], op[2] if op[0] == "argument" else "".join(op[2]))
    if cut_in_string:  # ("open" is no key of ops)
        first["open"] = "partial"
    assert call.arguments == first  # the first of a repeated argument is kept
    repeats = len(ops) - len({op[1] for op in ops})
    kinds = [issue.kind for issue in streamed.result().issues]
    assert kinds.count("duplicate_argument") == repeats
    assert kinds.count("broken_call") == cut_in_string  # (the block did not run to the reply's end)
    assert [issue.call_index for issue in streamed.result().issues] == [0] * len(kinds)


def test_arguments_read_before_the_name_are_sent_when_it_arrives() -> None:
    out = output()
    call = out.call(None, 0)
    call.argument("a", 1, 0)
    assert out.events == []
    call.start("f")
    call.argument("b", "x", 5)
    call.end()
    assert [type(e) for e in out.events] == [ToolCallStart, ToolCallDelta, ToolCallDelta, ToolCallDelta, ToolCallEnd]
    assert fragments(out) == '{"a": 1, "b": "x"}'


def test_a_cut_string_keeps_what_was_sent_of_it() -> None:
    out = output()
    out.block_ran_to_end = True  # the stream says the reply ended inside the block
    call = out.call("f", 0)
    call.string_start("s", 3)
    call.string_more("Par")
    call.cut("<raw>", "reply ends", 9)
    assert call.arguments == {"s": "Par"}
    (issue,) = out.result().issues
    assert (issue.kind, issue.pos, issue.text, issue.call_index) == ("truncated_call", 9, "<raw>", 0)
    assert fragments(out) == '{"s": "Par"}'


def test_whole_arguments_must_extend_what_was_sent() -> None:
    out = output()
    call = out.call("f", 0)
    call.string_start("s", 0)
    call.string_more("ab")
    assert call.extends({"s": "abc", "t": 1}) and not call.extends({"s": "xb"}) and not call.extends({"t": 1})
    call.string_end()
    call.end(arguments={"s": "ab", "t": [1]})
    assert fragments(out) == '{"s": "ab", "t": [1]}'
    with pytest.raises(AssertionError, match="takes back"):
        other = out.call("g", 0)
        other.argument("a", 1, 0)
        other.end(arguments={"b": 2})


def test_extends_is_the_same_in_a_whole_parse() -> None:
    for events in (True, False):
        call = output(events=events).call("f", 0)
        call.argument("a", [1, 2], 0)
        call.string_start("s", 0)
        call.string_more('q"')
        assert call.extends({"a": [1, 2], "s": 'q"uote'})
        assert not call.extends({"a": [1, 2, 3]})


def test_an_unstarted_call_has_sent_nothing() -> None:
    call = output().call(None, 0)
    call.argument("a", 1, 0)
    assert call.extends({"b": 2})


def test_the_finished_call_is_checked_against_its_tool() -> None:
    out = output(tools=TOOLS)
    ok = out.call("f", 0)
    ok.argument("n", 3, 0)
    ok.end()
    wrong = out.call("f", 10)
    wrong.argument("n", "three", 12)
    wrong.end()
    unknown = out.call("g", 20)
    unknown.end(25)
    result = out.result()
    assert [(i.kind, i.pos) for i in result.issues] == [("schema", 10), ("unknown_tool", 25)]
    assert [e.call.function.name for e in out.events if isinstance(e, ToolCallEnd)] == ["f", "f", "g"]
    assert [c.id for c in result.tool_calls] == ["c0", "c1", "c2"]


@examples(100)
@given(arguments=st.dictionaries(keys, values, max_size=4))
def test_a_call_read_whole_is_the_call_read_piece_by_piece(arguments: dict[str, Any]) -> None:
    whole = output()
    whole.whole_call("f", 0, arguments)
    pieces = output()
    call = pieces.call("f", 0)
    for key, value in arguments.items():
        call.argument(key, value, 0)
    call.end()
    assert whole.result() == pieces.result()
    assert fragments(whole) == fragments(pieces) == json.dumps(arguments, ensure_ascii=False)
    quiet = output(events=False)
    quiet.whole_call("f", 0, arguments)
    assert quiet.result() == whole.result() and not any(isinstance(e, ToolCallDelta) for e in quiet.events)
