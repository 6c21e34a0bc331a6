"""A toy ``invoke`` member: a call wrapper, invoke and argument tags, a stop token and reasoning
markers of its own, heads that say each value's kind (``values="flagged"``, as DeepSeek's DSML
writes them) and bare invokes read::

    <reason>
    reasoning
    </reason>

    <calls>
    <call name="get_weather">
    <arg name="city" string="true">Paris</arg>
    <arg name="days" string="false">3</arg>
    </call>
    </calls><|done|>

(minimax_m2 is the member whose heads say nothing of the kind: its values are typed by the schema.)
"""

from __future__ import annotations

from typing import Any

from codec.wire import WireSpec
from wire_toys import call
from wire_toys.xml_params import TOOLS as XML_PARAMS_TOOLS

SPEC = WireSpec(
    "invoke",
    call=("<calls>", "</calls>"),
    stop="<|done|>",
    reasoning=("<reason>", "</reason>"),
    name=('<call name="', '">'),
    arguments="tagged",
    parameter=('<arg name="', '">', "</arg>"),
    values="flagged",
    separator="\n\n",
    recover=("bare_invoke",),
)

#: The xml_params toy's tools: the same arguments, in another family's tags.
TOOLS: list[dict[str, Any]] = XML_PARAMS_TOOLS

#: (Calls come without content: a grammar of ``tool_choice="required"`` lets reasoning, not text, come first.)
MESSAGES: list[dict[str, Any]] = [
    {"role": "assistant", "content": "Hello! How can I help?"},
    {"role": "assistant", "content": "Tags like <b>bold</b> and a < b stay text."},
    {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "São Paulo", "days": 3})]},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            call("get_weather", {"city": "Paris"}),
            call(
                "write_file",
                {
                    "path": 'notes/a "quoted" name.txt',
                    "text": "line one\n  <b>indented</b> line, 'single' and \"double\" quotes\nlast line\n",
                    "options": {"mode": "w", "tags": ["a", 'b "c"'], "backup": True},
                    "lines": [1, 2, 3],
                },
            ),
        ],
    },
    {"role": "assistant", "content": "", "tool_calls": [call("noop", {})]},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [call("write_file", {"path": "doc.md", "text": "Other tags, <arg> and <call>, are text."})],
    },
    {
        "role": "assistant",
        "content": "Writing it now.",
        "tool_calls": [call("write_file", {"path": "x", "text": "\nbody\n"})],
    },
]
