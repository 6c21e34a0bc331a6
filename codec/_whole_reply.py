"""Whole replies read at once (see "whole reply" in :mod:`codec.stream`): what a format's
:attr:`~codec.stream.Syntax.whole` reader gives, made a parse result, or None where the stream must
read the reply; and the helpers the stream shares with it."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from codec.models import ParseResult, built, parsed_call
from codec.schema import tool_name, tool_parameters, violations
from codec.tools import normalize_tool, normalize_tools

if TYPE_CHECKING:
    from codec.stream import Syntax

__all__ = [
    "SURROGATE",
    "ToolsByName",
    "WholeReading",
    "default_call_id",
    "has_surrogate",
    "read_whole",
    "tools_by_name",
]

#: A surrogate code point: half of a UTF-16 pair, no character. A str can hold one (decoded with
#: ``surrogateescape``, or from a lone ``\\u`` escape upstream), no UTF-8 text can.
SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate (what :data:`SURROGATE` finds): never where it is ASCII
    (a flag of the string, read in constant time); else where UTF-8 cannot encode it, as it cannot
    encode exactly the surrogates (the encoder runs an order of magnitude faster than the regex's
    search, which tests each character against the class)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def default_call_id(index: int) -> str:
    """The id of call ``index`` where the caller gives no ``call_id``: ``call_0``, ``call_1``..."""
    return f"call_{index}"


#: A call a :attr:`Syntax.whole` reader read: (name, arguments), or (name, arguments, the id the
#: reply writes for it, where its syntax writes ids).
WholeCall = tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str]
#: What a :attr:`Syntax.whole` reader gives: content, reasoning and the calls.
WholeReading = tuple[str, str, Sequence[WholeCall]]
#: The tools a stream checks calls against, by name.
ToolsByName = dict[str, Mapping[str, Any]]


def tools_by_name(tools: Sequence[Any] | None) -> ToolsByName | None:
    """The tools a stream checks calls against, by name (None: no tools given).

    Tools are read as rendering reads them (:func:`codec.tools.normalize_tools`, which raises
    :class:`~codec.errors.ToolError` for one in no shape it takes). Mappings in OpenAI's shape are
    read where they are, not copied: a parse reads only names and schemas, and a deep copy of
    every schema was most of the cost of parsing a short reply."""
    if tools is None:
        return None
    found: dict[str, Mapping[str, Any]] = {}
    if type(tools) is list:
        # A tool as OpenAI writes it, a dict holding a dict ``function`` with a str name, is what
        # normalize_tools passes on as it is: taken at once, the rest read by it (on every parse,
        # so the common shape costs a few lookups).
        for index, tool in enumerate(tools):
            function = tool.get("function") if type(tool) is dict else None
            name = function.get("name") if type(function) is dict else None
            if type(name) is str and tool.get("type", "function") == "function":
                found[name] = tool
                continue
            tool = normalize_tool(tool, index)
            name = tool_name(tool)
            if name is not None:
                found[name] = tool
        return found
    for tool in normalize_tools(tools) or ():
        name = tool_name(tool)
        if name is not None:
            found[name] = tool
    return found


def read_whole(
    syntax: Syntax,
    text: str,
    tools: Sequence[Any] | None,
    prompt: str | None,
    call_id: Callable[[int], str] | None,
) -> ParseResult | None:
    """What ``syntax``'s whole reply reader makes of ``text`` as a parse result, or None where it
    declines, where the prompt opened reasoning, or where checking a call against ``tools`` would
    report anything: the stream then reads the reply (and reports it). Strict or not, the result
    is the same, since a reading has nothing to report."""
    whole = syntax.whole
    if whole is None:
        return None
    if syntax.opened_reasoning(prompt) or has_surrogate(text):
        return None  # (a surrogate is replaced and reported where text enters the stream)
    by_name = tools_by_name(tools)
    reading = whole(text, by_name)
    if reading is None:
        return None
    content, reasoning, found = reading
    calls = []
    for index, call in enumerate(found):
        name, arguments = call[0], call[1]
        if by_name is not None:
            tool = by_name.get(name)
            if tool is None or violations(arguments, tool_parameters(tool) or {}):
                return None
        written = call[2] if len(call) == 3 else None
        calls.append(parsed_call(written or (call_id or default_call_id)(index), name, arguments))
    return built(ParseResult, content=content, reasoning=reasoning, tool_calls=calls, issues=[])
