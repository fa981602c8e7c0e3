#!/usr/bin/env bash
# Set up (idempotent), then run the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
bash scripts/setup_browser.sh  # Chromium for the web page's tests
HF_HUB_OFFLINE=1 exec .venv/bin/python -m pytest -q --durations=15 "$@"
