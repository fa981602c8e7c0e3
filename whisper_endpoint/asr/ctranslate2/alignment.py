"""Word timestamps on CPU: CTranslate2's alignment run window by window, word starts at their onsets.

faster-whisper aligns a batch's text with one ``Whisper.align`` call over all its windows (the decoder
re-run over the text tokens, for the cross-attention that the DTW turns into word times). On CPU that
call costs more than the same windows aligned one at a time (docs/notes/2026-12-02-word-alignment.md),
with the same alignments: each window's result depends on its own encoder output and tokens only (on
AVX2 the int8 kernels round a batch and one window's token probabilities slightly differently).
Issue #36: the word timestamps a diarized request needs were most of what it cost beyond the ASR and
the diarizer. On GPU the batch stays whole (not measured there).

Then, for the models word_onsets.py knows (base, tiny.en), each window's words start where the onset
head's attention peaks (issue 59), computed by head_attention.py on CPU, and the previous word ends
there. This runs after faster-whisper has placed the words, so what it derives from them stays as it
was: the segments' ends (windows.py's second pass), the last word's end (the sequential decoder's next
seek) and the time since the last speech (its heuristics). On GPU the DTW times stay: the numpy decoder
would cost more than the GPU's whole decode.

An alignment can find nothing: a window with text but almost no frames gives the DTW an empty path, and
faster-whisper's ``find_alignment`` then raises (issue 69: a two-hour request lost to one 2.3 s piece).
Such a window's words are spread over their segment's span instead (word_spread.py).
"""

from __future__ import annotations

import logging
import threading
from typing import NamedTuple

import ctranslate2
import numpy as np
from faster_whisper.transcribe import merge_punctuations

from whisper_endpoint.asr import cost
from whisper_endpoint.asr.ctranslate2.head_attention import HeadAttention
from whisper_endpoint.asr.word_times import word_onsets, word_spread

logger = logging.getLogger(__name__)
MEL_FRAMES_PER_S = 100  # faster-whisper's ``num_frames`` count log-mel frames


class _Call(NamedTuple):
    """The arguments of faster-whisper's ``find_alignment``, in its order."""

    tokenizer: object
    text_tokens: list
    encoder_output: object
    num_frames: list
    median_filter_width: int


class _Frames(NamedTuple):
    """One window's encoder output, its frames of audio, its start (seconds) and its text tokens."""

    encoded: np.ndarray
    frames: int
    offset: float
    tokens: list[int]


class WindowByWindowAlignment:
    """Mixed into faster-whisper's ``WhisperModel``: ``find_alignment`` one window at a time on CPU, and
    word starts at their onsets where the model's onset head is known."""

    def __init__(self, model_size_or_path, *args, **kwargs):
        super().__init__(model_size_or_path, *args, **kwargs)
        self.onsets = HeadAttention.onset_head_of(model_size_or_path)  # None: DTW times only

    def find_alignment(self, tokenizer, text_tokens, encoder_output, num_frames, median_filter_width: int = 7):
        frames = [num_frames] * len(text_tokens) if isinstance(num_frames, int) else list(num_frames)
        if len(text_tokens) <= 1 or encoder_output.device != "cpu":
            return self._aligned(_Call(tokenizer, text_tokens, encoder_output, frames, median_filter_width))
        encoded = np.asarray(encoder_output)  # a view: shape (windows, frames, d_model)
        alignments = []
        for index, (tokens, count) in enumerate(zip(text_tokens, frames, strict=True)):
            window = ctranslate2.StorageView.from_array(encoded[index: index + 1])
            alignments += self._aligned(_Call(tokenizer, [tokens], window, [count], median_filter_width), first=index)
        return alignments

    def _aligned(self, call: _Call, first: int = 0):
        """faster-whisper's alignment of these windows; a window it cannot align gets its words spread
        (``_spread``), and its index (``first`` + its place here) is noted for ``add_word_timestamps``."""
        tokenizer, text_tokens, _, frames, _ = call
        try:
            found = super().find_alignment(*call)
        except Exception:  # the DTW's path came back empty or short: nothing to index the words with
            logger.warning("word alignment found no path over %d window(s); words spread over their segments",
                           len(text_tokens), exc_info=logger.isEnabledFor(logging.DEBUG))
            found = [None] * len(text_tokens)
        alignments = []
        for index, (alignment, tokens, count) in enumerate(zip(found, text_tokens, frames, strict=True)):
            if alignment is None or not _sound(alignment, count):
                alignment = _spread(tokenizer, tokens, count)
                _spread_here().add(first + index)
            alignments.append(alignment)
        return alignments

    def add_word_timestamps(self, segments, tokenizer, encoder_output, num_frames, prepend_punctuations,
                            append_punctuations, last_speech_timestamp):
        spans = [[(subsegment["start"], subsegment["end"]) for subsegment in window] for window in segments]
        spread = _spread_here()
        spread.clear()
        last = super().add_word_timestamps(segments, tokenizer, encoder_output, num_frames, prepend_punctuations,
                                           append_punctuations, last_speech_timestamp)
        frames = [num_frames] * len(segments) if isinstance(num_frames, int) else num_frames
        for index in sorted(spread):
            start = segments[index][0]["seek"] / self.frames_per_second
            audio = (start, start + frames[index] / MEL_FRAMES_PER_S)  # the timestamp tokens may point past it
            cost.count_words_spread(_respread(segments[index], spans[index], audio))
        if self.onsets is None or encoder_output.device != "cpu":
            return last
        encoded = np.asarray(encoder_output)
        for index, (window, count) in enumerate(zip(segments, frames)):
            if index in spread:  # no DTW times to look for the onsets around
                continue
            words = [word for subsegment in window for word in subsegment.get("words", ())]
            tokens = [token for subsegment in window for token in subsegment["tokens"] if token < tokenizer.eot]
            rows = _first_rows(tokenizer, tokens, prepend_punctuations, append_punctuations)
            if words and len(rows) == len(words):  # else the words are not faster-whisper's split: leave them
                offset = window[0]["seek"] / self.frames_per_second
                self._start_at_onsets(words, rows, tokenizer, _Frames(encoded[index], count, offset, tokens))
        return last

    def _start_at_onsets(self, words, rows, tokenizer, window: _Frames):
        """Each word's start (in place) to its onset, and the word before it ends there; the window's
        last word keeps its end."""
        encoded, frames, offset, tokens = window
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


_local = threading.local()  # a model serves several requests at once: each thread's own windows


def _spread_here() -> set[int]:
    """The windows of the ``add_word_timestamps`` call running on this thread whose words were spread."""
    spread = getattr(_local, "spread", None)
    if spread is None:
        spread = _local.spread = set()
    return spread


def _sound(alignment: list[dict], frames: int) -> bool:
    """Whether faster-whisper's words for a window have times it could have found: finite, in order, and
    within the window's audio (a short path can give words past it)."""
    end = frames / MEL_FRAMES_PER_S + word_onsets.FRAME_S
    times = [(word["start"], word["end"]) for word in alignment]
    return all(np.isfinite(start) and np.isfinite(stop) and 0 <= start <= stop <= end for start, stop in times)


def _spread(tokenizer, tokens: list[int], frames: int) -> list[dict]:
    """A window's words as faster-whisper's alignment gives them, timed over the window's audio in
    proportion to their length (``_respread`` moves them onto their segment). The decoder's probabilities
    come with the alignment, so a spread word's is unknown."""
    words, word_tokens = tokenizer.split_to_word_tokens(tokens + [tokenizer.eot])
    words, word_tokens = words[:-1], word_tokens[:-1]  # the end of text
    lengths = [word_spread.weight(word) for word in words]
    edges = word_spread.edges(lengths, 0.0, max(frames, 0) / MEL_FRAMES_PER_S)
    return [dict(word=word, tokens=t, start=start, end=end, probability=None)
            for word, t, (start, end) in zip(words, word_tokens, edges)]


def _respread(window: list[dict], spans: list[tuple[float, float]], audio: tuple[float, float]) -> int:
    """Each subsegment's words (in place) spread over the segment's own span, which the decoder's timestamp
    tokens gave, within the window's ``audio`` (start, end); the number of words so timed."""
    count = 0
    for subsegment, span in zip(window, spans):
        start, end = (min(max(time, audio[0]), audio[1]) for time in span)
        words = subsegment.get("words") or []
        edges = word_spread.edges([word_spread.weight(word["word"]) for word in words], start, end)
        for word, (word_start, word_end) in zip(words, edges):
            word["start"], word["end"] = round(word_start, 2), round(word_end, 2)
        subsegment["start"], subsegment["end"] = start, max(start, end)
        count += len(words)
    return count
