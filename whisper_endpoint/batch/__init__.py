"""Batch transcription: many files in, one result file per input out (``python -m whisper_endpoint.batch``)."""

from whisper_endpoint.batch.inputs import InputError, Item, collect
from whisper_endpoint.batch.runner import run_batch

__all__ = ["InputError", "Item", "collect", "run_batch"]
