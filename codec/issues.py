"""The closed set of issue kinds: for each, its severity, what it concerns and what it means.

An :class:`~codec.models.Issue` names one of these kinds. Its *severity* says what an agent may
do with the call it concerns:

``"note"``
    No call changed: text after the stop token, a repeated stop token, a call that does not fit
    the declared tools (the call is what the model wrote; whether to run it is the caller's call).
``"repaired"``
    The call is certainly what the model wrote: a closer inserted before the next call, a quote
    style normalised, a wrapper other models write.
``"damaged"``
    The name or the arguments may differ from what the model meant: the call was cut short, a
    value was dropped or guessed, or the repair had to choose between readings. An issue that
    concerns no call (``call_index`` None) is damaged when a call the model meant may be missing.

Its *scope* says whether it can concern a call (``"call"``: ``Issue.call_index`` names the entry
of ``tool_calls``, or None when the block gave no call) or only the text (``"text"``: always None).
README's "Issue kinds" table lists the same rows (a test checks that they agree).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

__all__ = ["KINDS", "IssueKind", "KindInfo", "Scope", "Severity", "severity"]

Severity = Literal["note", "repaired", "damaged"]
Scope = Literal["call", "text"]

IssueKind = Literal[
    "arguments_as_string",
    "assignment",
    "bare_call",
    "bare_function",
    "broken_call",
    "call_list",
    "call_opener",
    "duplicate_argument",
    "duplicate_key",
    "escaped_string",
    "fenced_call",
    "foreign_recipient",
    "foreign_tag",
    "function_closer_unterminated",
    "function_head_unterminated",
    "function_tag",
    "indented_markup",
    "inline_call",
    "json_arguments",
    "json_call",
    "invalid_list_element",
    "invalid_tool_call",
    "issues_dropped",
    "key_equals",
    "leading_zeros",
    "lone_surrogate",
    "missing_close_quote",
    "missing_closer",
    "missing_comma",
    "missing_open_quote",
    "missing_opener",
    "mixed_quotes",
    "null_value",
    "number_out_of_range",
    "orphan_closer",
    "parameter_closer_suffix",
    "parameter_closer_unterminated",
    "parameter_head_unterminated",
    "parameters_key",
    "parentheses",
    "printed_call",
    "quote_in_string",
    "quoted_name",
    "quoted_string",
    "raw_control_character",
    "reasoning_without_opener",
    "repaired_call",
    "repaired_list",
    "repeated_stop",
    "schema",
    "several_objects",
    "stray_closer",
    "stripped_tokens",
    "surrogate_pair",
    "text_after_stop",
    "truncated_call",
    "unclosed_reasoning",
    "unescaped_quote",
    "uneven_indentation",
    "unexpected_key",
    "unexpected_text",
    "unknown_header",
    "unknown_tool",
    "unquoted_value",
    "unwrapped_call",
    "value_indentation",
]


@dataclass(frozen=True)
class KindInfo:
    """One kind's row: its severity, its scope and what it means (README's wording)."""

    severity: Severity
    scope: Scope
    meaning: str


def _row(severity: Severity, scope: Scope, meaning: str) -> KindInfo:
    return KindInfo(severity, scope, meaning)


#: Every kind, by name.
KINDS: dict[str, KindInfo] = {
    # -- the reply's frame: no call changed
    "text_after_stop": _row("note", "text", "text after the stop token, kept as content"),
    "repeated_stop": _row("note", "text", "the stop token written again"),
    "reasoning_without_opener": _row(
        "note", "text", "a reasoning closer with no opener: the text before it read as reasoning the prompt opened"
    ),
    "unclosed_reasoning": _row(
        "repaired", "text", "a reasoning block not closed before a call: ended at the call opener"
    ),
    "unexpected_text": _row("note", "text", "a character the format takes nowhere, kept as content"),
    "orphan_closer": _row("note", "text", "a call closer with nothing open, ignored"),
    "stray_closer": _row("note", "text", "a closer with nothing open, ignored"),
    "unknown_header": _row(
        "note", "text", "a word of a message's header the format does not know (a role, a channel), ignored"
    ),
    "stripped_tokens": _row(
        "repaired",
        "text",
        "a reply decoded without its special tokens, read by the names they leave (analysis...assistantfinal...)",
    ),
    "issues_dropped": _row(
        "note", "text", "notes and repairs past the first 1,000 of a reply, not kept: counted by kind in this one"
    ),
    # -- what the model meant may be missing
    "invalid_tool_call": _row("damaged", "text", "a block that gives no usable call, kept as content"),
    "invalid_list_element": _row(
        "damaged", "text", "an element of a call list that is no call, dropped (its text kept)"
    ),
    # -- the call as written, checked against the tools
    "unknown_tool": _row("note", "call", "a call of a tool that is not declared, kept"),
    "schema": _row("note", "call", "arguments that do not fit the tool's schema, kept as written"),
    "null_value": _row("note", "call", "null for a parameter whose schema allows none, kept"),
    # -- certainly what the model wrote
    "missing_closer": _row("repaired", "call", "a closer missing before the next marker or the end, inserted"),
    "missing_opener": _row(
        "repaired", "call", "a tag's opener missing before its text (a key or a value), read as if written"
    ),
    "call_opener": _row("repaired", "call", "a call opened with another spelling of the opener"),
    "bare_call": _row("repaired", "call", "a call without its opening token"),
    "bare_function": _row("repaired", "call", "a function tag without the call's wrapper"),
    "parentheses": _row("repaired", "call", "arguments in (...) instead of {...}"),
    "quoted_string": _row("repaired", "call", "a string in JSON or single quotes instead of the format's"),
    "mixed_quotes": _row("repaired", "call", "a string opened with one kind of quote and closed with another"),
    "quoted_name": _row("repaired", "call", "a function or parameter name written between quotes"),
    "key_equals": _row("repaired", "call", "an argument written with '=' instead of ':'"),
    "missing_comma": _row("repaired", "call", "an argument written without the ',' before it"),
    "unquoted_value": _row("repaired", "call", "a value written without quotes, read as a string as written"),
    "function_head_unterminated": _row("repaired", "call", "'<function=NAME' without its '>'"),
    "function_closer_unterminated": _row("repaired", "call", "'</function' without its '>'"),
    "parameter_head_unterminated": _row("repaired", "call", "'<parameter=NAME' without its '>'"),
    "parameter_closer_suffix": _row("repaired", "call", "a parameter closer with extra characters ('</parameter1>')"),
    "parameter_closer_unterminated": _row("repaired", "call", "'</parameter' without its '>'"),
    "indented_markup": _row("repaired", "call", "indented tags, read as layout"),
    "uneven_indentation": _row(
        "repaired", "call", "a laid-out value whose lines are indented unevenly, kept as written"
    ),
    "value_indentation": _row("repaired", "call", "a value's layout indentation, removed"),
    "fenced_call": _row("repaired", "call", "a call inside a code fence"),
    "foreign_tag": _row("repaired", "call", "a call inside another model's tag"),
    "function_tag": _row("repaired", "call", "a call written as a function tag"),
    "foreign_recipient": _row(
        "repaired",
        "call",
        "a call addressed outside the tools' namespace (python, browser.search, a bare name): named by its recipient",
    ),
    "unwrapped_call": _row("repaired", "call", "a call object with no wrapper, as the whole reply"),
    "call_list": _row("repaired", "call", "calls written as one list"),
    "several_objects": _row("repaired", "call", "several call objects in one block"),
    "parameters_key": _row("repaired", "call", "'parameters' used for 'arguments'"),
    "arguments_as_string": _row("repaired", "call", "arguments given as a JSON string, decoded"),
    "unexpected_key": _row(
        "repaired", "call", "a key of the call object that is not part of a call, dropped (text kept)"
    ),
    "repaired_call": _row("repaired", "call", "a call object in Python-literal or single-quoted style, read"),
    "raw_control_character": _row("repaired", "call", "a raw line break or tab inside a string, kept"),
    "printed_call": _row("repaired", "call", "print(f(...)): the call f, the print dropped"),
    "assignment": _row("repaired", "call", "x = f(...): the call f, the assignment dropped (text kept)"),
    "surrogate_pair": _row("repaired", "call", "a character escaped as a surrogate pair in a Python string, joined"),
    "inline_call": _row("repaired", "call", "a call of a declared tool inside a line of prose"),
    "json_call": _row(
        "repaired",
        "call",
        "a call written as a JSON object (name and arguments) where the format writes another syntax",
    ),
    "json_arguments": _row(
        "repaired", "call", "a call's arguments written as one JSON object in place of the format's argument tags"
    ),
    "repaired_list": _row(
        "repaired", "call", "a call list the grammar refused (a missing comma...), each element read as a call"
    ),
    # -- may differ from what the model meant
    "truncated_call": _row("damaged", "call", "a call the reply ended inside: what was read of it is kept"),
    "broken_call": _row(
        "damaged", "call", "a call whose block closed but could not be read whole: what was read is kept"
    ),
    "duplicate_argument": _row("damaged", "call", "an argument given twice: the first value kept, the other reported"),
    "duplicate_key": _row("damaged", "call", "a key given twice in a call object: one value kept, the other reported"),
    "escaped_string": _row("damaged", "call", "a string read with its backslash escapes decoded, not raw"),
    "unescaped_quote": _row("damaged", "call", "quotes inside a string read as the value's own"),
    "quote_in_string": _row("damaged", "call", "a string quote not followed by structure, read as text"),
    "missing_open_quote": _row("damaged", "call", "a string without its opening quote, read up to its closer"),
    "missing_close_quote": _row("damaged", "call", "a string without its closing quote, ended with the call"),
    "number_out_of_range": _row("damaged", "call", "a number no float can hold, kept as its text"),
    "leading_zeros": _row(
        "damaged",
        "call",
        "a number written with leading zeros (02134): read as the number, or as its text where the tool wants a string",
    ),
    "lone_surrogate": _row(
        "damaged",
        "call",
        "a lone surrogate (an escape such as \\ud800, or the code point itself in the text), replaced with U+FFFD",
    ),
}

if set(KINDS) != set(get_args(IssueKind)):  # pragma: no cover - a kind named in one place only
    raise AssertionError(f"issue kinds out of step: {sorted(set(KINDS) ^ set(get_args(IssueKind)))}")


def severity(kind: str) -> Severity:
    """The severity of ``kind``."""
    return KINDS[kind].severity
