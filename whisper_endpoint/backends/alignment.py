"""Word timestamps on CPU: CTranslate2's alignment run window by window, not on the whole batch.

faster-whisper aligns a batch's text with one ``Whisper.align`` call over all its windows (the decoder
re-run over the text tokens, for the cross-attention that the DTW turns into word times). On CPU that
call cost 2.3x the same windows aligned one at a time (the 10 windows of the first 5 min of the
13.4 min Dutch file, one thread: 2.94 against 1.26 CPU s), with the same alignments and token
probabilities to the bit: each window's result depends on its own encoder output and tokens only.
Issue #36: the word timestamps a diarized request needs were most of what it cost beyond the ASR and
the diarizer. On GPU the batch stays whole (not measured there).
"""

from __future__ import annotations

import ctranslate2
import numpy as np


class WindowByWindowAlignment:
    """Mixed into faster-whisper's ``WhisperModel``: ``find_alignment`` one window at a time on CPU."""

    def find_alignment(self, tokenizer, text_tokens, encoder_output, num_frames, median_filter_width: int = 7):
        if isinstance(num_frames, int) or len(text_tokens) <= 1 or encoder_output.device != "cpu":
            return super().find_alignment(tokenizer, text_tokens, encoder_output, num_frames, median_filter_width)
        encoded = np.asarray(encoder_output)  # a view: shape (windows, frames, d_model)
        alignments = []
        for index, (tokens, frames) in enumerate(zip(text_tokens, num_frames, strict=True)):
            window = ctranslate2.StorageView.from_array(encoded[index: index + 1])
            alignments += super().find_alignment(tokenizer, [tokens], window, [frames], median_filter_width)
        return alignments
