#!/usr/bin/env bash
# Idempotent: Debian's Chromium and its driver for the web page's browser tests (tests/test_web_page.py).
# Playwright drives this Chromium (its own browser downloads are not used). Installs only what is
# missing; without root or apt it says what to run, and those tests fail naming the same command.
set -euo pipefail
PACKAGES="chromium chromium-driver"
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    SUDO="sudo"
fi
# A failed install must not stop the other tests: the browser tests fail on their own, naming the command.
if command -v apt-get >/dev/null && { [ "$(id -u)" = 0 ] || [ -n "$SUDO" ]; } &&
    $SUDO apt-get update -qq &&
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null; then
    exit 0
fi
echo "setup_browser.sh: Chromium is missing; install it with: sudo apt-get update && sudo apt-get install -y $PACKAGES" >&2
