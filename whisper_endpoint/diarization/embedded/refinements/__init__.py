"""What the embedded pipeline does after pyannote's clustering, in this order: ``speech_fill.py`` (speech
pyannote left unlabelled goes to the nearest speaker), ``turn_check.py`` (each turn to the speaker
whose centroid is nearest), ``voice_changes.py`` (a turn holding two voices is cut where the voice
changes) and ``count_check.py`` (a speaker whose turns fall into two voices is split). Each has its
options as a dataclass, set from the pipeline's parameters."""
