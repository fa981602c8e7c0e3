"""Word timestamps on CPU: CTranslate2's alignment run window by window, word starts at their onsets.

faster-whisper aligns a batch's text with one ``Whisper.align`` call over all its windows (the decoder
re-run over the text tokens, for the cross-attention that the DTW turns into word times). On CPU that
call cost 2.3x the same windows aligned one at a time (the 10 windows of the first 5 min of the
13.4 min Dutch file, one thread: 2.94 against 1.26 CPU s), with the same alignments: each window's
result depends on its own encoder output and tokens only. The token probabilities were the same to the
bit on an AVX-512 CPU; on AVX2 the int8 kernels round a batch and one window differently (up to ~0.07).
Issue #36: the word timestamps a diarized request needs were most of what it cost beyond the ASR and
the diarizer. On GPU the batch stays whole (not measured there).

Then, for the models word_onsets.py knows (base, tiny.en), each window's words start where the onset
head's attention peaks (issue 59), computed by head_attention.py on CPU, and the previous word ends
there. This runs after faster-whisper has placed the words, so what it derives from them stays as it
was: the segments' ends (windows.py's second pass), the last word's end (the sequential decoder's next
seek) and the time since the last speech (its heuristics). On GPU the DTW times stay: the numpy decoder
would cost more than the GPU's whole decode.
"""

from __future__ import annotations

import ctranslate2
import numpy as np
from faster_whisper.transcribe import merge_punctuations

from whisper_endpoint.backends import word_onsets
from whisper_endpoint.backends.head_attention import HeadAttention


class WindowByWindowAlignment:
    """Mixed into faster-whisper's ``WhisperModel``: ``find_alignment`` one window at a time on CPU, and
    word starts at their onsets where the model's onset head is known."""

    def __init__(self, model_size_or_path, *args, **kwargs):
        super().__init__(model_size_or_path, *args, **kwargs)
        self.onsets = HeadAttention.onset_head_of(model_size_or_path)  # None: DTW times only

    def find_alignment(self, tokenizer, text_tokens, encoder_output, num_frames, median_filter_width: int = 7):
        if isinstance(num_frames, int) or len(text_tokens) <= 1 or encoder_output.device != "cpu":
            return super().find_alignment(tokenizer, text_tokens, encoder_output, num_frames, median_filter_width)
        encoded = np.asarray(encoder_output)  # a view: shape (windows, frames, d_model)
        alignments = []
        for index, (tokens, frames) in enumerate(zip(text_tokens, num_frames, strict=True)):
            window = ctranslate2.StorageView.from_array(encoded[index: index + 1])
            alignments += super().find_alignment(tokenizer, [tokens], window, [frames], median_filter_width)
        return alignments

    def add_word_timestamps(self, segments, tokenizer, encoder_output, num_frames, prepend_punctuations,
                            append_punctuations, last_speech_timestamp):
        last = super().add_word_timestamps(segments, tokenizer, encoder_output, num_frames, prepend_punctuations,
                                           append_punctuations, last_speech_timestamp)
        if self.onsets is None or encoder_output.device != "cpu":
            return last
        encoded = np.asarray(encoder_output)
        frames = [num_frames] * len(segments) if isinstance(num_frames, int) else num_frames
        for index, (window, count) in enumerate(zip(segments, frames)):
            words = [word for subsegment in window for word in subsegment.get("words", ())]
            tokens = [token for subsegment in window for token in subsegment["tokens"] if token < tokenizer.eot]
            rows = _first_rows(tokenizer, tokens, prepend_punctuations, append_punctuations)
            if words and len(rows) == len(words):  # else the words are not faster-whisper's split: leave them
                offset = window[0]["seek"] / self.frames_per_second
                self._start_at_onsets(words, rows, tokenizer, tokens, encoded[index], count, offset)
        return last

    def _start_at_onsets(self, words, rows, tokenizer, tokens, encoded, frames, offset):
        """Each word's start (in place) to its onset, and the word before it ends there; the window's
        last word keeps its end."""
        sequence = [*tokenizer.sot_sequence, tokenizer.no_timestamps, *tokens, tokenizer.eot]
        # Row r predicts text token r (the first row is <|notimestamps|>'s); frames past the audio are padding.
        attention = self.onsets(encoded, sequence)[len(tokenizer.sot_sequence):, : frames // 2]
        starts = [(word["start"] - offset) / word_onsets.FRAME_S for word in words]
        ends = [(word["end"] - offset) / word_onsets.FRAME_S for word in words]
        onsets = offset + word_onsets.frame_time(word_onsets.onset_frames(attention[rows], starts, ends))
        for word, onset, following in zip(words, onsets, [*onsets[1:], None]):
            word["start"] = float(onset)
            word["end"] = max(float(onset), word["end"] if following is None else float(following))


def _first_rows(tokenizer, tokens, prepend_punctuations, append_punctuations) -> list[int]:
    """The row of each word's own first token, for the words faster-whisper makes of ``tokens`` (split at
    spaces, punctuation merged into its neighbour, as add_word_timestamps does)."""
    split, split_tokens = tokenizer.split_to_word_tokens(tokens + [tokenizer.eot])
    rows = np.cumsum([0] + [len(t) for t in split_tokens[:-2]])
    alignment = [{"word": word, "tokens": t, "row": int(row)} for word, t, row in zip(split[:-1], split_tokens[:-1], rows)]
    merge_punctuations(alignment, prepend_punctuations, append_punctuations)
    return [entry["row"] for entry in alignment if entry["word"]]
