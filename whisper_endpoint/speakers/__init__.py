"""Diarization's place in a request: load and run the diarizer, words -> speakers, known speakers by name."""
