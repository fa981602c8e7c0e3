"""A diarized request's diarization runs on its own thread during the ASR (speakers/alongside.py): the
same response as one after the other, at the same time as the decode, and stopped with the request."""

import copy
import threading
import time

import numpy as np
import pytest

from support.paths import AUDIO
from support.audio import decode_reference

MEETING = AUDIO / "dialogues" / "flite_meeting.flac"
PARAMETERS = {"return_speaker_words": True, "return_speaker_turns": True}


class Timed:
    """Wraps one of the handler's real calls, noting when and on which thread each call ran and how it ended."""

    def __init__(self, call):
        self.call, self.calls = call, []

    def __call__(self, *args, **kwargs):
        note = {"thread": threading.current_thread().name, "start": time.monotonic()}
        self.calls.append(note)
        try:
            result = self.call(*args, **kwargs)
            note["ended"] = "returned"
            return result
        except BaseException as exc:
            note["ended"] = type(exc).__name__
            raise
        finally:
            note["end"] = time.monotonic()


@pytest.fixture
def timed(diarizing_handler, monkeypatch):
    asr = Timed(diarizing_handler.asr.transcribe)
    diarize = Timed(diarizing_handler.diarizer.diarize)
    monkeypatch.setattr(diarizing_handler.asr, "transcribe", asr)
    monkeypatch.setattr(diarizing_handler.diarizer, "diarize", diarize)
    return asr, diarize


@pytest.mark.slow  # timed runs, alongside and after
def test_the_diarization_runs_during_the_asr_and_gives_the_same_response(diarizing_handler, timed):
    from whisper_endpoint.speakers import alongside

    asr, diarize = timed
    assert alongside.overlaps(diarizing_handler.diarizer)  # this machine has a core beside the diarizer's thread
    together = diarizing_handler({"inputs": MEETING.read_bytes(), "parameters": PARAMETERS})
    [decoded], [diarized] = asr.calls, diarize.calls
    assert diarized["thread"].startswith("diarization") and decoded["thread"] == threading.current_thread().name
    assert diarized["start"] < decoded["end"] and diarized["ended"] == "returned"

    from whisper_endpoint.speakers.step import SpeakerStep

    shorter = copy.copy(diarizing_handler)  # the same models; audio longer than 30 s diarized after the ASR
    shorter.settings = diarizing_handler.settings.model_copy(update={"diarization_alongside_s": 30})
    shorter.speakers = SpeakerStep(shorter.settings, shared=diarizing_handler.speakers)
    after = shorter({"inputs": MEETING.read_bytes(), "parameters": PARAMETERS})
    assert diarize.calls[1]["thread"] == threading.current_thread().name
    assert diarize.calls[1]["start"] >= asr.calls[1]["end"]
    assert together == after and len({run["speaker"] for run in together["speakers"]}) == 3


def test_a_stopped_request_stops_its_diarization(diarizing_handler, timed, short_windows):
    """Cancelled at the ASR's first window: the diarization, started beside it, stops at its next step
    instead of running to its end on the worker."""
    from whisper_endpoint.core.decode_context import DISCONNECTED, DecodeContext, DecodeStopped

    asr, diarize = timed
    context = DecodeContext()
    context.listen(lambda progress: context.cancel(DISCONNECTED))
    with pytest.raises(DecodeStopped):
        diarizing_handler.run({"inputs": MEETING.read_bytes(), "parameters": PARAMETERS}, context)
    _wait_for_end(diarize.calls[0])
    assert diarize.calls[0]["ended"] in {"DecodeStopped", "_Abandoned"}


def test_a_stop_asked_while_waiting_reaches_the_diarization(diarizing_handler):
    """The request's deadline or its client's leaving, seen by the diarization itself (a request waiting
    for it after its ASR): here a context cancelled before the diarization starts."""
    from whisper_endpoint.core.config import InferenceConfig
    from whisper_endpoint.core.decode_context import SHUTDOWN, DecodeContext, DecodeStopped
    from whisper_endpoint.speakers import alongside

    context = DecodeContext()
    context.cancel(SHUTDOWN)
    samples = decode_reference(MEETING)
    with alongside.diarizing(diarizing_handler.diarizer, samples, InferenceConfig(), context) as diarization:
        with pytest.raises(DecodeStopped, match="shutdown"):
            diarization()


def test_no_speech_found_abandons_the_diarization(diarizing_handler, timed):
    """Noise: the ASR's speech detection finds no words, so the speakers are nobody; the diarization
    begun beside it ends early instead of labelling what nobody said."""
    noise = np.random.default_rng(0).normal(0, 0.1, 16000 * 60).astype(np.float32)
    asr, diarize = timed
    result = diarizing_handler({"inputs": {"array": noise.tolist(), "sampling_rate": 16000},
                                "parameters": {"return_speaker_turns": True}})
    assert result["speakers"] == [] and result["speaker_turns"] == []
    _wait_for_end(diarize.calls[0])
    assert diarize.calls[0]["ended"] == "_Abandoned"


def _wait_for_end(call: dict, longest_s: float = 30.0) -> None:
    waited = time.monotonic() + longest_s
    while "end" not in call and time.monotonic() < waited:
        time.sleep(0.05)
