#!/usr/bin/env bash
# Write the Inference Endpoints repository as it is pushed: code, requirements.txt, model card and model
# files (scripts/make_endpoint_repo.py says what and where). scripts/create_endpoint.py --push uploads it.
#   scripts/make_endpoint_repo.sh OUT [--asr-model REF|none] [--no-diarization]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" exec "$PY" "$ROOT/scripts/make_endpoint_repo.py" "$@"
