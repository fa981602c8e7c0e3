#!/usr/bin/env bash
# Reproduce every benchmark figure: results/benchmarks.json, docs/img/benchmarks.png and the table in
# docs/benchmarks.md (about an hour on a 2-core CPU). Extra arguments go to `python -m bench`
# (--quick for the smoke run, --items NAME... to re-run some items).
set -euo pipefail
cd "$(dirname "$0")/.."
# One thread per process: concurrent torch processes with more threads slow down 10-80x on 2 cores.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}" HF_HUB_OFFLINE=1
exec .venv/bin/python -m bench "$@"
