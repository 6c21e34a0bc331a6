#!/usr/bin/env bash
# Builds the environment bench/peers.py runs in: codec, vLLM 0.33.0 as tests/vllm-env.sh installs
# it (the released wheel without its GPU stack, CPU torch, the packages its parser modules import),
# and SGLang 0.5.23's wheel without its dependencies plus what its function-call parsers import.
# Never part of the default install or CI: it is gigabytes, and only the peer benchmark needs it.
#
#   bash bench/peers-env.sh [VENV]       (default: ../peers-venv next to the checkout)
#   VENV/bin/python bench/peers.py --quick
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$here/../peers-venv}"
bash "$here/tests/vllm-env.sh" "$venv"
pip="$venv/bin/pip"
"$pip" install --quiet --no-deps sglang==0.5.23
# What sglang.srt.function_call and the modules it imports need at import time (found by importing
# FunctionCallParser in a clean environment until it loads), and ijson for vLLM's DeepSeek V3.2
# engine parser. xgrammar 0.2.8 is what vLLM 0.33 pins; SGLang takes it too.
"$pip" install --quiet partial_json_parser orjson numpy psutil pybase64 requests packaging pillow \
    starlette msgspec pyzmq tqdm ipython aiohttp ijson xgrammar==0.2.8
"$venv/bin/python" -c "from sglang.srt.function_call.function_call_parser import FunctionCallParser; print('SGLang parsers import')"
