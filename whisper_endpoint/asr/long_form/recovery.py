"""A failed window decoded again (issue 57): cut at the speech's own pauses (or its quietest points) into
pieces, each decoded alone with the temperature fallback and no previous text; a window too short to cut
is decoded again whole. The better of the two decodes by failed_windows' measures is kept, and the caller
is told whether the window was recovered; a decode kept with a loop in it has the loop cut to its first
saying (``without_loops``: a repeated phrase is text no one said).

Only a failure a retry can mend is decoded again (``needed``): an unlikely transcript is kept as it is,
with a warning. A request's windows decoded again are bounded (``Budget``): on noisy speech window after
window can fail, and each costs two or three windows again (docs/long_form_accuracy.md, "Noise").

The backend supplies ``decode(window) -> segments`` (its sequential decoder, settings of its own) and the
pauses; this module only chooses which decodes to try and which to keep. ``second_pass`` is what both
engines do after decoding a batch of windows: each judged and a failed one decoded again, then the
remainders the windows left out.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from whisper_endpoint.asr import decoding_options
from whisper_endpoint.asr.long_form import failed_windows
from whisper_endpoint.asr.long_form.windows import PackedSpeech, Window, leftovers
from whisper_endpoint.core.types import SAMPLE_RATE

logger = logging.getLogger(__name__)

PIECE_S = 10.0  # pieces of a window cut at its pauses: short enough that a loop has no room to start
# The pieces a request may decode again past its first failed window, as a share of its windows: a piece
# costs about a window decoded once, so the windows after the first add at most ~30% to the first decode.
BUDGET_SHARE = 0.3
RETRY_TEMPERATURES = 3  # a failed window's decodes again go at most this far down the fallback schedule


@dataclass(frozen=True)
class Recovered:
    segments: list
    recovered: bool  # False: every decode failed; the least bad is kept and a warning is due
    reason: str  # why the first decode failed
    kept: str  # which decode was kept: "alone" (the window decoded again whole), "pieces" or "first"


def retry_temperatures(temperature: float | list[float]) -> list[float]:
    """A failed window's temperatures when decoded again: the request's fallback schedule, at most
    ``RETRY_TEMPERATURES`` deep. On a language the model knows poorly every temperature is unlikely, and the
    whole schedule costs several times the window's first decode (docs/long_form_accuracy.md)."""
    schedule = temperature if isinstance(temperature, list) else \
        [temperature, *(t for t in decoding_options.FALLBACK_TEMPERATURES if t > temperature)]
    return list(schedule[:RETRY_TEMPERATURES])


def judged(segments: Sequence, speech_s: float | None) -> failed_windows.Decoded:
    """A window's segments as one decode: their text, and the log-probability and no-speech probability
    averaged over them by text length."""
    text = "".join(s.text for s in segments)
    weights = [max(1, len(s.text)) for s in segments]
    total = sum(weights) or 1

    def mean(name: str) -> float | None:
        values = [getattr(s, name, None) for s in segments]
        if not values or any(v is None for v in values):
            return None
        return sum(w * v for w, v in zip(weights, values)) / total

    return failed_windows.Decoded(text, mean("avg_logprob"), mean("no_speech_prob"), speech_s)


def pieces(window: Window, pauses: Sequence[float], longest: float = PIECE_S) -> list[Window]:
    """The window cut at pauses (times between speech spans) into pieces of at most ``longest`` seconds
    where the pauses allow (a span longer than that stays whole)."""
    cuts = [t for t in sorted(pauses) if window.start < t < window.end]
    found, start, last = [], window.start, window.start
    for cut in [*cuts, window.end]:
        if cut - start > longest and last > start:
            found.append(Window(start, last))
            start = last
        last = cut
    found.append(Window(start, window.end))
    return found


def quiet_cuts(audio: np.ndarray, window: Window, pauses: Sequence[float], longest: float = PIECE_S) -> list[float]:
    """``pauses``, and where speech runs on longer than ``longest`` without one (turns 0.05 s apart are
    one VAD span), the quietest 20 ms near each ``longest`` step: a piece may still start mid-word, but
    a window with no pause at all is cut too."""
    frame = SAMPLE_RATE // 50
    cuts = sorted(t for t in pauses if window.start < t < window.end)
    found = []
    for start, end in zip([window.start, *cuts], [*cuts, window.end]):
        step = start + longest
        while end - step > 1.0:
            lo, hi = round((step - longest / 3) * SAMPLE_RATE), round(step * SAMPLE_RATE)
            frames = audio[lo: hi - (hi - lo) % frame].reshape(-1, frame)
            energy = np.square(frames, dtype=np.float32).sum(axis=1)
            found.append((lo + frame * int(np.argmin(energy)) if len(frames) else hi) / SAMPLE_RATE)
            step = found[-1] + longest
    return sorted([*cuts, *found])


@dataclass
class Budget:
    """What a request of ``windows`` windows may decode again: its first failed window always (one loop
    in a short file is the difference between a transcript and a repeated word), then pieces while they
    stay within ``BUDGET_SHARE`` of its windows."""

    windows: int
    spent: int = 0  # pieces decoded again so far
    refused: int = 0  # failed windows left as they were

    def allows(self, window: Window, pauses: Sequence[float]) -> bool:
        charge = len(pieces(window, pauses))
        if self.spent and self.spent + charge > BUDGET_SHARE * self.windows:
            self.refused += 1
            return False
        self.spent += charge
        return True

    def report(self, decoding: dict, warnings: list[str]) -> None:
        """The windows left as they were, in ``decoding``'s count of windows not recovered and said once."""
        if self.refused:
            decoding["windows_not_recovered"] += self.refused
            warnings.append(f"{self.refused} window(s) whose transcript failed were not decoded again: the "
                            f"request's share for decoding again ({BUDGET_SHARE:.0%} of its windows) was spent; "
                            "their text may repeat or miss words")


def needed(decoded: failed_windows.Decoded, warnings: list[str]) -> str | None:
    """Why ``decoded``, a window's first decode, is to be decoded again; None when it passed, or when it
    failed in a way a retry does not mend (said in ``warnings``)."""
    reason = failed_windows.failure(decoded)
    if reason is None or failed_windows.mendable(decoded):
        return reason
    logger.info("a window's transcript is unlikely (%s): kept, not decoded again", reason)
    warnings.append(f"a window's transcript is unlikely ({reason}): noisy speech, or speech the model knows "
                    "poorly; it was kept as it is (decoded again it would be no surer)")
    return None


def recover(window: Window, first: Sequence, decode: Callable[[Window], list], pauses: Sequence[float],
            reason: str, speech_s: float | None = None) -> Recovered:
    """Decode ``window`` again, whose first decode (``first``) failed for ``reason``; ``speech_s``: the
    seconds of speech in it (default: all of it, as in a window of packed speech). The pieces only: the
    whole window decoded again first never mended a loop the pieces did not, and cost about as much."""
    speech_s = window.end - window.start if speech_s is None else speech_s
    cut = pieces(window, pauses)
    name = "pieces" if len(cut) > 1 else "alone"
    again = [segment for piece in cut for segment in decode(piece)]
    if failed_windows.failure(judged(again, speech_s)) is None:
        return Recovered(again, True, reason, name)
    candidates = {"first": list(first), name: again}
    kept = min(candidates, key=lambda key: failed_windows.rank(judged(candidates[key], speech_s)))
    return Recovered(without_loops(candidates[kept]), False, reason, kept)


def second_pass(group: list[Window], found: list, packed: PackedSpeech, budget: Budget, counter, decoding: dict,
                again: Callable[[Window], list], alone: Callable[[Window], list] | None) -> tuple[list, int]:
    """A decoded batch's windows (``group``, packed time, ``found`` their segments), each judged and a failed
    one decoded again in pieces by ``again`` while ``budget`` allows (else its loops cut); then what the
    windows not decoded again left out, each remainder decoded by ``alone`` (None: not decoded again). The
    segments, and how many remainders were left undecoded because ``counter`` (the request's bound) was
    spent; ``decoding`` and ``counter.notes`` say what was done."""
    redone = set()
    for window in group:
        if counter.spent:
            break
        mine = [s for s in found if window.holds(s.start, s.end)]
        reason = needed(judged(mine, window.end - window.start), counter.notes)
        if reason is None:
            continue
        cuts = quiet_cuts(packed.audio, window, packed.pauses())
        if budget.allows(window, cuts):
            recovered = recover(window, mine, again, cuts, reason)
            count(recovered, decoding, counter.notes)
            instead = recovered.segments
            redone.add(window)
        else:  # left as it was, but for its loops
            instead = without_loops(mine)
        found = [s for s in found if all(s is not m for m in mine)] + instead
    skipped = 0
    for window in leftovers([w for w in group if w not in redone], found) if alone is not None else []:
        if counter.spent:
            skipped += 1
            continue
        found += alone(window)
        decoding["remainders_decoded_again"] += 1
    return found, skipped


def without_loops(segments: Sequence) -> list:
    """``segments`` with each repetition loop cut to its first saying: a segment that says the one
    before it again is dropped, and a segment whose own text loops ends where the loop starts (its
    words with it). Text only: nothing is decoded again."""
    kept, previous = [], None
    for segment in segments:
        said = failed_windows.words(segment.text)
        if said and said == previous:
            continue
        previous = said
        cut = failed_windows.loop_start(said)
        if cut is not None:
            segment = _cut(segment, cut)
        kept.append(segment)
    return kept


def _cut(segment, keep: int):
    """``segment`` with its first ``keep`` words of text (failed_windows.words' count) and word times."""
    text, counted = "", 0
    for piece in segment.text.split(" "):
        if counted >= keep:
            break
        text, counted = f"{text} {piece}" if text else piece, counted + len(failed_windows.words(piece))
    words, counted = segment.words, 0
    if words:
        kept_words = []
        for word in words:
            if counted >= keep:
                break
            kept_words.append(word)
            counted += len(failed_windows.words(getattr(word, "word", None) or word.text))  # faster-whisper's, ours
        words = type(words)(kept_words)
    end = words[-1].end if words else segment.end
    return dataclasses.replace(segment, text=(" " if segment.text.startswith(" ") else "") + text.strip(),
                               words=words, end=end)


def count(again: Recovered, decoding: dict, warnings: list[str]) -> None:
    """A window decoded again, in the response: ``decoding``'s counts, and a warning when not recovered."""
    decoding["windows_decoded_again"] += 1
    logger.info("a window decoded again (%s): %s, kept %s", again.reason,
                "recovered" if again.recovered else "not recovered", again.kept)
    if not again.recovered:
        decoding["windows_not_recovered"] += 1
        warnings.append(f"a window's transcript failed ({again.reason}) and every decode again failed too: "
                        "its text may repeat or miss words")
