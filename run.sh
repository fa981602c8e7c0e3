#!/usr/bin/env bash
# Set up (idempotent), then transcribe an audio file with the embedded default model.
# Usage: ./run.sh [AUDIO_FILE] [--json] [--param key=value ...]
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh >&2
if [ $# -eq 0 ] || [[ "$1" == --* ]]; then
    set -- audio/clips/asterisk_all-circuits-busy-now.flac "$@"
fi
HF_HUB_OFFLINE=1 exec .venv/bin/whisper-endpoint transcribe "$@"
