"""Stream a model reply as OpenAI chat.completion.chunk deltas.

Feeds ``replies/hermes.txt`` to a ``hermes`` stream a few characters at a time, as tokens
would arrive from an inference server, and prints the OpenAI ``delta`` of every event: content
as it is generated, then for each tool call its id and name as soon as the name is known and
its arguments as JSON fragments while they arrive. At the end it rebuilds each call's
arguments from the fragments, the way an OpenAI client does, and checks them against the
stream's final result (which equals ``fmt.parse`` of the whole reply).

Run it from anywhere with codec installed (``pip install .`` in a checkout): ``python examples/stream_reply.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import codec

HERE = Path(__file__).resolve().parent
CHUNK = 5  # characters per chunk; any chunking gives the same result


def main() -> None:
    tools = json.loads((HERE / "tools.json").read_text(encoding="utf-8"))
    with open(HERE / "replies" / "hermes.txt", encoding="utf-8", newline="") as f:
        reply = f.read()

    fmt = codec.get_format("hermes")
    stream = fmt.stream(tools=tools)
    chunks = [reply[i : i + CHUNK] for i in range(0, len(reply), CHUNK)]

    content = ""
    names: dict[int, str] = {}
    arguments: dict[int, str] = {}

    def show(events: list[codec.Event]) -> None:
        nonlocal content
        for event in events:
            delta = event.to_openai()
            if delta is None:  # ToolCallEnd: nothing to send, the call is complete
                continue
            print(json.dumps(delta, ensure_ascii=False))
            # What an OpenAI client does with the deltas:
            content += delta.get("content") or ""
            for call in delta.get("tool_calls", []):
                index = call["index"]
                function = call.get("function", {})
                if "name" in function:
                    names[index] = function["name"]
                arguments[index] = arguments.get(index, "") + function.get("arguments", "")

    for chunk in chunks:
        show(list(stream.feed(chunk)))
    show(list(stream.close()))

    result = stream.result
    print(f"\n{len(chunks)} chunks; content: {content.strip()!r}")
    expected = result.to_message().model_dump(mode="json").get("tool_calls") or []
    for index, call in enumerate(expected):
        rebuilt = arguments.get(index, "")
        same = "ok" if rebuilt == call["function"]["arguments"] else "MISMATCH"
        print(f"call {index}: {names.get(index)} {rebuilt} [{same}]")

    # Batch and stream are one code path: parsing the whole reply gives the same result.
    whole = fmt.parse(reply, tools=tools)

    def calls(r: codec.ParseResult) -> list[tuple[str, dict[str, object]]]:
        return [(c.function.name, c.function.arguments) for c in r.tool_calls]

    agree = whole.content == result.content and calls(whole) == calls(result)
    print("same as fmt.parse(whole reply):", "yes" if agree else "NO")


if __name__ == "__main__":
    main()
