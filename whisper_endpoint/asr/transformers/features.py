"""Log-mel features for the transformers backend, computed the way the ctranslate2 backend does.

transformers' feature extractor pads a short window with 30 s of silent *audio* before the
log-mel; faster-whisper computes the log-mel of the speech alone (plus one hop) and pads the
*features* with zeros. The model sees different padding, and greedy text differs on some clips.
Using faster-whisper's recipe on both backends makes the backend a
speed choice, not a quality one: the converted models then give faster-whisper's text.

Only the fixed 30 s window path changes; long-form calls (``truncation=False``) keep transformers'
behaviour.
"""

from __future__ import annotations

import numpy as np
from transformers import BatchFeature, WhisperFeatureExtractor


class WindowFeatureExtractor(WhisperFeatureExtractor):
    def __call__(self, raw_speech, truncation: bool = True, padding: str | None = "max_length", **kwargs):
        if not truncation or padding != "max_length" or not _is_one_waveform(raw_speech):
            return super().__call__(raw_speech, truncation=truncation, padding=padding, **kwargs)
        return_tensors = kwargs.pop("return_tensors", None)
        return_attention_mask = kwargs.pop("return_attention_mask", None)
        # transformers 4's pipeline asks for the speech's frame count (word timestamps use it).
        return_token_timestamps = kwargs.pop("return_token_timestamps", None)
        speech = np.asarray(raw_speech, dtype=np.float32)[: self.n_samples]
        # One hop of padding, as faster-whisper adds; the frame it produces is dropped again below.
        padded = np.pad(speech, (0, self.hop_length))
        features = super().__call__(padded, truncation=False, padding="longest", **kwargs)["input_features"][0]
        frames = min(len(speech) // self.hop_length, self.nb_max_frames)
        window = np.zeros((features.shape[0], self.nb_max_frames), dtype=np.float32)
        window[:, :frames] = features[:, :frames]
        data = {"input_features": window[None]}
        if return_attention_mask:
            mask = np.zeros((1, self.nb_max_frames), dtype=np.int32)
            mask[0, :frames] = 1
            data["attention_mask"] = mask
        if return_token_timestamps:
            data["num_frames"] = [frames]
        return BatchFeature(data, tensor_type=return_tensors)


def _is_one_waveform(raw_speech) -> bool:
    return isinstance(raw_speech, np.ndarray) and raw_speech.ndim == 1
