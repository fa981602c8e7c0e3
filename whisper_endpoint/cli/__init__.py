"""The ``whisper-endpoint`` command: its dispatcher (``main``), ``transcribe``, and the pieces they share."""
