#!/usr/bin/env bash
# Builds the environment tests/test_vllm.py runs in: vLLM 0.33.0's released wheel without its
# dependencies (a plain install pulls CUDA torch and about 200 packages), the CPU torch wheel,
# and the pure-Python packages vLLM's parser modules import (tests/vllm-requirements.txt).
#
#   bash tests/vllm-env.sh [VENV]      (default: ../vllm-venv next to the checkout)
#   PYTHONPATH=. VENV/bin/python -m pytest tests/test_vllm.py -n 0
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$here/../vllm-venv}"
python3 -m venv "$venv"
pip="$venv/bin/pip"
"$pip" install --quiet --upgrade pip
"$pip" install --quiet -e "$here[test]"
"$pip" install --quiet torch==2.13.0
"$pip" install --quiet --no-deps vllm==0.33.0
"$pip" install --quiet --no-deps -r "$here/tests/vllm-requirements.txt"
# Reinstalled last so that its entry point (vllm.general_plugins) is registered in this venv.
"$pip" install --quiet --no-deps -e "$here"
"$venv/bin/python" -c "import vllm.tool_parsers, vllm.reasoning, vllm.parser.abstract_parser; print('vLLM parsers import')"
