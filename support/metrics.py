"""The field's metrics, from the field's libraries, as every evaluation and test reports them.

- WER and CER: jiwer, on text normalised by Whisper's BasicTextNormalizer (lower case, no punctuation).
- cpWER and tcpWER (who said what): MeetEval. cpWER pairs each reference speaker's words with one
  hypothesis speaker's, the pairing that costs least; tcpWER also requires each word to fall within
  ``TCP_COLLAR_S`` of its reference time (MeetEval's default pseudo-word timing: a segment's time shared
  out by its words' characters). Texts are normalised as for WER first; ``characters`` scores each
  character as a word (Japanese).
- DER: pyannote.metrics, overlap scored, at two collars as ``DiarizationErrorRate(collar=...)`` takes
  them: 0 (nothing forgiven) and 0.25 s of reference boundary removed from scoring (0.125 s either side).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

DER_COLLARS = (0.0, 0.25)
TCP_COLLAR_S = 5.0


@lru_cache(maxsize=1)
def _normalizer():
    from transformers.models.whisper.english_normalizer import BasicTextNormalizer

    return BasicTextNormalizer()


def normalize(text: str) -> str:
    return _normalizer()(text).strip()


def wer(references: list[str], hypotheses: list[str]) -> float:
    import jiwer

    return jiwer.wer([normalize(t) for t in references], [normalize(t) for t in hypotheses])


def cer(references: list[str], hypotheses: list[str]) -> float:
    """Character error rate with all spaces removed (for Japanese and other unspaced scripts)."""
    import jiwer

    def squash(text: str) -> str:
        return "".join(normalize(text).split())

    return jiwer.cer([squash(t) for t in references], [squash(t) for t in hypotheses])


# --- who said what ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Said:
    """A stretch of one speaker's speech: a reference turn, a response's speaker entry or one word."""

    speaker: str
    start: float
    end: float
    text: str


def _units(text: str, characters: bool) -> str:
    text = normalize(text)
    return " ".join("".join(text.split())) if characters else text


def _seglst(stretches: Iterable[Said], characters: bool):
    from meeteval.io.seglst import SegLST

    return SegLST([{"session_id": "file", "speaker": s.speaker, "start_time": s.start, "end_time": s.end,
                    "words": _units(s.text, characters)} for s in stretches])


def cp_wer(reference: Iterable[Said], hypothesis: Iterable[Said], *, characters: bool = False) -> float:
    """cpWER (cpCER with ``characters``) of one recording, as a fraction."""
    import meeteval

    return float(meeteval.wer.cpwer(_seglst(reference, characters), _seglst(hypothesis, characters))
                 ["file"].error_rate)


def tcp_wer(reference: Iterable[Said], hypothesis: Iterable[Said], *, characters: bool = False,
            collar: float = TCP_COLLAR_S) -> float:
    """tcpWER (tcpCER with ``characters``) of one recording, as a fraction."""
    import meeteval

    return float(meeteval.wer.tcpwer(_seglst(reference, characters), _seglst(hypothesis, characters),
                                     collar=collar)["file"].error_rate)


def cp_error_rate(reference: dict[str, str], hypothesis: dict[str, str], *, characters: bool = False) -> float:
    """cpWER of texts given per speaker (each speaker's words in time order), without times."""
    def stretches(texts: dict[str, str]) -> list[Said]:
        return [Said(speaker, 0.0, 0.0, text) for speaker, text in texts.items()]

    return cp_wer(stretches(reference), stretches(hypothesis), characters=characters)


# --- diarization -----------------------------------------------------------------------------------


def read_rttm(path):
    """An RTTM file as a pyannote Annotation."""
    from pyannote.core import Annotation, Segment

    annotation = Annotation(uri=path.stem)
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "SPEAKER":
            start, duration = float(fields[3]), float(fields[4])
            annotation[Segment(start, start + duration)] = fields[7]
    return annotation


def annotation(turns):
    """Speaker turns (anything with ``start``, ``end`` and ``speaker``) as a pyannote Annotation."""
    from pyannote.core import Annotation, Segment

    found = Annotation()
    for turn in turns:
        found[Segment(turn.start, turn.end)] = turn.speaker
    return found


def der(reference, hypothesis, duration: float, collars: tuple[float, ...] = DER_COLLARS) -> dict:
    """DER (%) at each collar (default DER_COLLARS) over [0, duration], and the uncollared one's parts (s)."""
    from pyannote.core import Segment, Timeline
    from pyannote.metrics.diarization import DiarizationErrorRate

    whole = Timeline([Segment(0, duration)])
    scores = {}
    for collar in collars:
        detail = DiarizationErrorRate(collar=collar, skip_overlap=False)(reference, hypothesis, uem=whole,
                                                                          detailed=True)
        scores[f"der_collar_{collar:g}"] = round(100 * detail["diarization error rate"], 2)
        if collar == 0:
            scores.update(missed=round(detail["missed detection"], 2), false_alarm=round(detail["false alarm"], 2),
                          confusion=round(detail["confusion"], 2), scored_speech=round(detail["total"], 2))
    scores.update(speakers_found=len(hypothesis.labels()), speakers_true=len(reference.labels()))
    return scores
