#!/usr/bin/env bash
# Set up (idempotent), then run the test suite; CI runs all of it.
#   ./test.sh            every test
#   ./test.sh --fast     the fast tier (-m "not slow", tests/tiers.py): the request path end to end, minutes
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
tier=()
if [ "${1:-}" = "--fast" ]; then
    shift
    tier=(-m "not slow")
fi
bash scripts/setup.sh
bash scripts/setup_browser.sh  # Chromium for the web page's tests
HF_HUB_OFFLINE=1 exec .venv/bin/python -m pytest -q --durations=15 "${tier[@]}" "$@"
