"""Benchmarks: the handler against the raw backends, precision, batching, diarization, scaling, serving.

``python -m bench`` (or ``bench/run.sh``) reproduces every figure in results/benchmarks.json,
docs/img/benchmarks.png and the table in docs/benchmarks.md; ``--quick`` runs the same code on a
tiny input (the smoke test). ``bench/gpu_transformers.py`` is the separate CUDA script.
"""
