"""``deepseek_pythonic``: DeepSeek-style role tokens with tool calls as a Python-like list.

Reference template: ``deepseek-pythonic.jinja`` (an unattributed composite: DeepSeek's role tokens
spelled in ASCII, the vLLM / Llama 3.2 "pythonic" tool prompt, Qwen3's reasoning logic). A reply
after the generation prompt ``<|Assistant|>`` looks like::

    <think>
    The user wants the weather.
    </think>

    Let me check.[get_weather(city="Paris", days=3), noop()]<|end_of_sentence|>

Strings are ``"`` + value + ``"`` with **nothing escaped** (a value holding ``"`` or a line break
is written as is); every other value is JSON (``true``, ``null``, ``1e+20``, ``{"k": [1]}``).
Keyword arguments and calls are separated by ``", "``. Tool results come back in a user turn, one
line each: ``<|User|>tool_response\\n{ "output": "Sunny" }\\n``.

Quirks of the reference template, reproduced by the renderer (FORMATS.md §6.3):

* D1/D2. Strings unescaped, other values ``tojson``; ``arguments`` given as a non-empty string fail
  (``Object of type Undefined is not JSON serializable``: the template looks each character up
  as a key), an empty one gives ``f()``.
* D3. ``<|end_of_sentence|>`` is written only after a tool-call list: a plain assistant turn is
  never closed, so ``...A1<|User|>Q2...``. Text is never trimmed.
* D4. Content and calls are glued: ``<|Assistant|>Pre.[f(a="x")]<|end_of_sentence|>``.
* D5. A run of tool messages opens one ``<|User|>tool_response\\n``; each string (or list...)
  result is ``{ "output": JSON }\\n``, a mapping result is its bare JSON with no line break.
* D6. The prompt opens ``<|begin_of_sentence|>``; with tools, ``\\n\\n`` (when there is system
  text), the tools prompt and each tool's JSON + ``\\n\\n`` come first, then the system text. Only
  the LAST system message is used (its content through ``str()``), none is written in place;
  ``developer`` messages are dropped.
* D7. Without ``reasoning_content``, content holding ``</think>`` is cut after the last
  ``</think>`` and the reasoning is then taken from the already-cut content, so the answer is
  written twice: ``<think>\\nIt is sunny.\\n</think>\\n\\nIt is sunny.``.
* D8. The ``<think>\\nREASONING\\n</think>\\n\\n`` block is written only for assistant messages after
  the last real user query (one whose content does not start with ``tool_response`` or
  ``<tool_response>``) that are the last message or have reasoning. Otherwise
  ``enable_thinking=False`` writes ``</think>`` after ``<|Assistant|>``. The generation prompt is
  ``<|Assistant|>``, ``<|Assistant|><think>`` (``enable_thinking=True``) or
  ``<|Assistant|></think>`` (``enable_thinking=False``).
* Images: one ``<image>`` per ``image`` part of any user message, all written BEFORE
  ``<|begin_of_sentence|>``; content lists otherwise give their text parts, joined.
"""

from __future__ import annotations

from typing import Any

from codec._lark import CompiledGrammar, compile_grammar
from codec.format import Format
from codec.formats._pythonic import CallListReader, PythonicBuilder, pythonic_syntax
from codec.formats._render import (
    attr,
    call_method,
    concat,
    defined,
    is_iterable,
    is_mapping,
    iterate,
    string,
    subscript,
    tojson,
)
from codec.stream import CONTENT, REASONING, Syntax
from codec.watch import Delimiter

BOS = "<|begin_of_sentence|>"
USER = "<|User|>"
ASSISTANT = "<|Assistant|>"
EOS = "<|end_of_sentence|>"
IMAGE = "<image>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
TOOL_RESPONSE = USER + "tool_response\n"
TOOLS_PROMPT = (
    "# Tools\n\nYou have access to the following functions. To call functions, please respond with a python list "
    'of the calls. Respond in the format [func_name1(params_name1="string_value", params_name2=123...), '
    "func_name2(params)] String parameters MUST be wrapped in double quotes. Do not use variables.\n\n"
)
#: How a user message that carries tool results starts (it is then not the user's query, D8).
TOOL_RESPONSE_PREFIXES = ("tool_response", "<tool_response>")


# ---------------------------------------------------------------------------- render


def render_value(value: Any) -> str:
    """An argument value: a string between ``"`` with nothing escaped (D1), anything else ``tojson`` (D2)."""
    return concat('"', value, '"') if isinstance(value, str) else tojson(value)


def render_call(call: Any) -> str:
    """``NAME(key=value, ...)`` for an OpenAI tool call (or its bare ``function`` object)."""
    function = attr(call, "function")
    if not defined(function):
        function = call
    out = [concat(attr(function, "name"), "(")]
    arguments = attr(function, "arguments")
    pairs = [concat(key, "=") + render_value(subscript(arguments, key)) for key in iterate(arguments)]
    return "".join(out) + ", ".join(pairs) + ")"


def render_calls(calls: Any) -> str:
    """``[call, call]<|end_of_sentence|>``: the calls joined by ``", "`` (D2, D3)."""
    return "[" + ", ".join(render_call(call) for call in iterate(calls)) + "]" + EOS


def content_text(content: Any) -> str:
    """A message's text: a string as is (never trimmed), else its ``text`` parts joined."""
    if isinstance(content, str):
        return content
    if not is_iterable(content):
        return ""
    return "".join(string(attr(item, "text")) for item in iterate(content) if attr(item, "type") == "text")


def image_tokens(messages: list[dict[str, Any]]) -> str:
    """``<image>`` for each ``image`` part of every user message's content list."""
    out: list[str] = []
    for message in messages:
        content = attr(message, "content")
        if attr(message, "role") == "user" and is_iterable(content) and not isinstance(content, str):
            out.extend(IMAGE for item in iterate(content) if attr(item, "type") == "image")
    return "".join(out)


def render_system(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """What follows ``<|begin_of_sentence|>``: the tools block and the last system message's text (D6)."""
    system: Any = None
    for message in messages:
        if attr(message, "role") == "system":
            system = attr(message, "content")
    out: list[str] = []
    if tools:
        if system:
            out.append("\n\n")
        out.append(TOOLS_PROMPT)
        out.extend(tojson(tool) + "\n\n" for tool in tools)
    if system:
        out.append(string(system))
    return "".join(out)


def last_query_index(messages: list[dict[str, Any]]) -> int:
    """Index of the last user message that is not a tool result (the last index when there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if attr(message, "role") != "user":
            continue
        content = attr(message, "content")
        if not (isinstance(content, str) and content.startswith(TOOL_RESPONSE_PREFIXES)):
            return index
    return len(messages) - 1


def split_reasoning(message: dict[str, Any]) -> tuple[Any, Any]:
    """(content, reasoning) as the template reads them, with its extraction order bug (D7)."""
    content = attr(message, "content")
    reasoning = attr(message, "reasoning_content")
    if defined(reasoning) and reasoning is not None:
        return content, reasoning
    if isinstance(content, str) and THINK_CLOSE in content:
        content = content.split(THINK_CLOSE)[-1].lstrip("\n")
        return content, content.split(THINK_CLOSE)[0].rstrip("\n").split(THINK_OPEN)[-1].lstrip("\n")
    return content, ""


def think_block(reasoning: Any) -> str:
    """``<think>\\nREASONING\\n</think>\\n\\n`` with the reasoning's surrounding line breaks stripped."""
    return concat(THINK_OPEN + "\n", call_method(reasoning, "strip", "\n"), "\n" + THINK_CLOSE + "\n\n")


def render_conversation(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    add_generation_prompt: bool,
    variables: dict[str, Any],
) -> str:
    """The prompt, as the reference template renders it (errors raised in the template's order)."""
    thinking_set = "enable_thinking" in variables
    thinking = variables.get("enable_thinking")
    out = [image_tokens(messages), BOS, render_system(messages, tools)]
    query = last_query_index(messages)
    for index, message in enumerate(messages):
        role = attr(message, "role")
        if role == "user":
            out.append(USER + content_text(attr(message, "content")))
        elif role == "assistant":
            content, reasoning = split_reasoning(message)
            out.append(ASSISTANT)
            if index > query and reasoning:  # the template's `(loop.last or reasoning) and reasoning`
                out.append(think_block(reasoning))
            elif thinking_set and not thinking:
                out.append(THINK_CLOSE)
            out.append(content_text(content))
            calls = attr(message, "tool_calls")
            if calls:
                out.append(render_calls(calls))
        elif role == "tool":
            if index == 0 or attr(messages[index - 1], "role") != "tool":
                out.append(TOOL_RESPONSE)
            content = attr(message, "content")
            out.append(tojson(content) if is_mapping(content) else '{ "output": ' + tojson(content) + " }\n")
    if add_generation_prompt:
        out.append(ASSISTANT)
        if thinking_set:
            out.append(THINK_OPEN if thinking else THINK_CLOSE)
    return "".join(out)


def reply_text(message: dict[str, Any]) -> str:
    """What the model writes for ``message`` (see :meth:`DeepseekPythonic.render_reply`)."""
    content = attr(message, "content")
    reasoning = attr(message, "reasoning_content")
    if not defined(reasoning):
        reasoning = ""
        if isinstance(content, str) and THINK_CLOSE in content:  # the extraction D7 means to do
            reasoning = content.split(THINK_CLOSE)[0].rstrip("\n").split(THINK_OPEN)[-1].lstrip("\n")
            content = content.split(THINK_CLOSE)[-1].lstrip("\n")
    out = [think_block(reasoning)] if reasoning else []
    out.append(content_text(content))
    calls = attr(message, "tool_calls")
    if calls:
        out.append(render_calls(calls))
    return "".join(out)


def _closing_quote_test(grammar: CompiledGrammar) -> str:
    """What must follow a quote for it to close a string argument: ARG_STRING's final lookahead."""
    pattern: str = grammar.terminals["ARG_STRING"].pattern.to_regexp()
    start = pattern.rindex("(?=")
    return pattern[start + 3 : pattern.rindex(")")]


def raw_string(token: str) -> str:
    """A string argument as the template writes it: the text between its quotes, unescaped."""
    return token[1:-1]


class DeepseekPythonicBuilder(PythonicBuilder):
    """String arguments are written '"' + value + '"' with no escaping: the text between is the value."""

    def arg_string(self, c: list[Any]) -> str:
        return raw_string(str(c[0]))


class DeepseekPythonic(Format):
    """DeepSeek-style role tokens, Python-list calls (reference: ``deepseek-pythonic.jinja``)."""

    name = "deepseek_pythonic"
    aliases = ("deepseek", "pythonic")
    summary = 'DeepSeek-style pythonic calls: [get_weather(city="Paris", days=3)]<|end_of_sentence|>'
    stop_token = EOS
    reference_template = "deepseek-pythonic.jinja"

    def _render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        add_generation_prompt: bool,
        **variables: Any,
    ) -> str:
        return render_conversation(messages, tools, add_generation_prompt, variables)

    def _render_reply(self, message: dict[str, Any]) -> str:
        """The assistant turn as written after ``<|Assistant|>``.

        In order: ``<think>\\nREASONING\\n</think>\\n\\n`` when the message has reasoning (line breaks
        around it stripped), the content as is (text parts joined; never trimmed), and, only when
        there are calls, ``[call, ...]<|end_of_sentence|>``. A reply without calls has no stop
        token: the template never writes one after a plain answer (D3), the model's end of turn is
        then its tokenizer's EOS, outside the text.

        This is the turn as the template writes the last message of a conversation, after the
        user's query, with one deliberate difference: without ``reasoning_content``, reasoning
        inline in the content (``<think>\\n...\\n</think>\\n\\nanswer``) is split off as the
        template means to (the text before the first ``</think>``, after ``<think>``), not with its
        order bug (D7), which would write the answer as the reasoning.

        The generation prompt depends on ``enable_thinking``: ``<|Assistant|><think>`` when true,
        so the model generates this reply without its leading ``<think>``;
        ``<|Assistant|></think>`` when false, so a reply then has no reasoning block;
        ``<|Assistant|>`` when unset.
        """
        return reply_text(message)

    def _syntax(self) -> Syntax:
        grammar = compile_grammar("deepseek_pythonic")
        return pythonic_syntax(
            grammar,
            DeepseekPythonicBuilder,
            text_terminals={"TEXT": CONTENT, "THOUGHT": REASONING},
            blocks={"LBRACK": None},
            stop="<|end_of_sentence|>",
            # A closing quote counts only where `, name=` or `)` follows: wake the lexer only there.
            string=Delimiter('"', '"', lookahead=120, follows=_closing_quote_test(grammar)),
            reasoning_open="THINK_OPEN",
            prompt_opens_reasoning=lambda prompt: prompt.rstrip().endswith("<think>"),
            fast_terminals={"CALL_LIST": CallListReader(grammar, raw_string).lexer()},
        )
