#!/usr/bin/env bash
# Do the floors hold? Installs the lowest version requirements-runtime.txt and requirements-server.txt
# allow of every package they give a ">=" floor into a venv layered over an existing environment, then
# runs the fast tier of the tests there. Not run by CI. (requirements.txt adds the platforms' pins over the
# runtime file: they are checked by scripts/simulate_endpoint.sh, not here.)
#
#   BASE_VENV=.venv scripts/check_lowest.sh [PYTEST_ARGS...]
#
# Layered: the new venv sees BASE_VENV's site-packages after its own (a .pth file), so torch, its CUDA
# libraries and the test tools are used as they are installed there: nothing large is downloaded. The
# torch family (torch, torchaudio, torchvision, torchcodec) is not floored: it stays the base's. The
# floors and what they need that the base does not satisfy are installed into the new venv only
# (scripts/floors.py; pip never uninstalls outside the venv it runs in); a floor that another
# requirement's dependencies exclude is reported and stops the check. Models are assembled and
# converted by the floor versions into their own cache. Exit status: the tests'.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BASE="$(cd "${BASE_VENV:-$ROOT/.venv}" && pwd)"
WORK="${LOWEST_DIR:-$HOME/.cache/whisper-endpoint/lowest-layered}"
VENV="$WORK/venv"
cd "$ROOT"

FILES=(requirements-runtime.txt requirements-server.txt)
rm -rf "$VENV"  # a fresh venv each time: what a previous floor needed must not linger
mkdir -p "$WORK"
"$BASE/bin/python" -m venv --without-pip "$VENV"
SITE="$(ls -d "$VENV"/lib/python3*/site-packages)"
"$BASE/bin/python" -c 'import site; print("\n".join(site.getsitepackages()))' >"$SITE/base.pth"

"$VENV/bin/python" -m scripts.floors "${FILES[@]}"
echo "installed in the layered venv (over $BASE):"
"$VENV/bin/python" -m pip --disable-pip-version-check list --path "$SITE" --format freeze | sed 's/^/  /'

# This checkout's package, in the tests and in the scripts they start (the base's editable install of
# it is not seen through the layering, and may be another checkout).
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 MODEL_CACHE_DIR="$WORK/models" TEST_MODEL_CACHE="$WORK/models"
status=0  # a failed conversion (transformers) is a finding too: the tests still run and say the rest
"$VENV/bin/python" -m whisper_endpoint.weights tiny.en base || { status=1; echo "model assembly failed" >&2; }
[ $# -gt 0 ] || set -- -q -p no:cacheprovider -m "not slow"  # the fast tier (tests/tiers.py)
"$VENV/bin/python" -m pytest "$@" || status=$?
exit $status
