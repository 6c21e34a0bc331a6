"""Parse a model reply into tool calls.

Reads a Hermes/Qwen2.5-style reply (``replies/hermes.txt``: a sentence, two ``<tool_call>``
blocks, ``<|im_end|>``) and the tools it may call (``tools.json``), parses it with the
``hermes`` format, and prints the content, each call with its typed arguments, any repairs the
parser made, and the OpenAI assistant message an API server would return. Then it renders the
assistant turn back to text with ``render_reply`` to show that the two directions agree.

Run it from anywhere with codec installed (``pip install .`` in a checkout): ``python examples/parse_reply.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import codec

HERE = Path(__file__).resolve().parent


def main() -> None:
    tools = json.loads((HERE / "tools.json").read_text(encoding="utf-8"))
    # newline="" keeps the reply's bytes exactly as the model produced them.
    with open(HERE / "replies" / "hermes.txt", encoding="utf-8", newline="") as f:
        reply = f.read()

    fmt = codec.get_format("hermes")
    result = fmt.parse(reply, tools=tools)

    print("content:", repr(result.content.strip()))
    for call in result.tool_calls:
        args = json.dumps(call.function.arguments, ensure_ascii=False)
        print(f"call {call.id}: {call.function.name}({args})")
    for issue in result.issues:
        print(f"issue: {issue.kind} at line {issue.line}, column {issue.column}: {issue.message}")
    if not result.issues:
        print("issues: none")

    message = result.to_message()
    print("\nOpenAI assistant message:")
    print(json.dumps(message.model_dump(mode="json"), ensure_ascii=False, indent=2))

    # The other direction: the text the model would generate for this message.
    rendered = fmt.render_reply(message)
    print("\nrendered back:")
    print(rendered)
    print("\nidentical to the reply:", "yes" if rendered == reply else "no")


if __name__ == "__main__":
    main()
