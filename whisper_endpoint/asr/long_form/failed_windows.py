"""A decoded window that failed: a repetition loop, unlikely text, or text far too long or too short for
the speech the window holds (issue 57).

Whisper's sequential decoder judges each window by its gzip compression ratio and average
log-probability and decodes it again hotter when either fails; faster-whisper's batched decoder has no
such check, and one 31 s window of a 154 s Dutch dialogue decoded into "... bovenop bovenop bovenop ..."
while seven turns of speech vanished. ``failure`` is that check for every decoding path, with the
repetition and speech-rate tests Whisper lacks; it is text and arithmetic only (no decoding), so a
window that passes costs nothing more. ``rank`` orders the candidates of a window decoded again.

The thresholds were set on the repetition-loop stress set (audio/stress) and the dev dialogues
(docs/long_form_accuracy.md has the figures).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass, replace

COMPRESSION_RATIO = 3.0  # gzip, as Whisper's (its own fallback starts at 2.4; this is the loop, not doubt)
LOOP_REPEATS, LOOP_WORDS = 4, 15  # a phrase 4+ times in a row, the run 15+ words long
# any 4-word phrase (not only numbers) 8+ times in one window; 3 words is too few: "gate 12 moves to gate 14,
# gate 14 moves to gate 16, ..." read back says "moves to gate" 10 times (audio/stress/stress_en_readback)
PHRASE_WORDS, PHRASE_REPEATS = 4, 8
LOGPROB = -1.0  # Whisper's log_prob_threshold ...
NO_SPEECH = 0.6  # ... which it waives when the window is likely silence (its no_speech_threshold)
MAX_WORDS_PER_S = 6.5  # faster than anyone speaks: invented or repeated text
MIN_WORDS_PER_S, MIN_SPEECH_S = 0.5, 10.0  # 10 s of speech, hardly a word: turns lost

_WORD = re.compile(r"[\w']+")
# Scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Myanmar, Khmer): their text
# has no words to count, so the speech-rate tests do not apply to it.
_UNSPACED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_NUMBER_WORDS = frozenset(
    "zero oh one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred "
    "thousand nul een twee drie vier vijf zes zeven acht negen tien".split()
)


@dataclass(frozen=True)
class Decoded:
    """What one window's decode gave.

    Attributes:
      text: the window's text, all its segments.
      avg_logprob: the decoder's average log-probability per token (None: not known).
      no_speech_prob: the probability that the window is silence (None: not known).
      speech_s: seconds of speech the VAD found in the window (None: not known; the rate tests are skipped).
    """

    text: str
    avg_logprob: float | None = None
    no_speech_prob: float | None = None
    speech_s: float | None = None


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def spaced(text: str) -> bool:
    """Whether ``text`` is mostly in a script that puts spaces between words (its words can be counted)."""
    letters = sum(character.isalpha() for character in text)
    return len(_UNSPACED.findall(text)) * 2 < letters if letters else True


def _repeats(tokens: list[str], start: int, size: int) -> int:
    """How many times in a row the phrase of ``size`` words at ``start`` is said from there."""
    phrase, count = tokens[start: start + size], 1
    while tokens[start + count * size: start + (count + 1) * size] == phrase:
        count += 1
    return count


def longest_run(tokens: list[str], max_size: int = 8) -> tuple[int, int]:
    """The phrase (of 1 to ``max_size`` words) repeated most often in a row: (repeats, words covered)."""
    best = (1, 0)
    for size in range(1, max_size + 1):
        for start in range(len(tokens) - 2 * size + 1):
            count = _repeats(tokens, start, size)
            if count > 1 and count * size > best[1]:
                best = (count, count * size)
    return best


def loop_start(tokens: list[str], max_size: int = 8) -> int | None:
    """Where a loop starts in ``tokens``: the end of the first saying of a phrase (1 to ``max_size``
    words) said ``LOOP_REPEATS`` or more times in a row over ``LOOP_WORDS`` or more words, or None."""
    for start in range(len(tokens)):
        for size in range(1, max_size + 1):
            count = _repeats(tokens, start, size)
            if count >= LOOP_REPEATS and count * size >= LOOP_WORDS:
                return start + size
    return None


def _is_number(token: str) -> bool:
    return token.isdigit() or token in _NUMBER_WORDS


def most_repeated_phrase(tokens: list[str], size: int = PHRASE_WORDS) -> int:
    """How often the most frequent phrase of ``size`` words occurs, phrases of numbers aside (a list of
    order or phone numbers repeats digits, not a loop)."""
    phrases = Counter(
        tuple(tokens[i: i + size]) for i in range(len(tokens) - size + 1)
        if not all(_is_number(t) for t in tokens[i: i + size])
    )
    return max(phrases.values(), default=0)


def failure(decoded: Decoded) -> str | None:
    """Why the window's decode failed, or None when it looks like a transcript of its speech."""
    tokens = words(decoded.text)
    ratio = compression_ratio(decoded.text)
    if ratio > COMPRESSION_RATIO:
        return f"compression ratio {ratio:.1f} > {COMPRESSION_RATIO}"
    repeats, covered = longest_run(tokens)
    if repeats >= LOOP_REPEATS and covered >= LOOP_WORDS:
        return f"a phrase repeated {repeats} times in a row ({covered} words)"
    most = most_repeated_phrase(tokens)
    if most >= PHRASE_REPEATS:
        return f"a {PHRASE_WORDS}-word phrase said {most} times"
    if decoded.avg_logprob is not None and decoded.avg_logprob < LOGPROB and tokens \
            and not (decoded.no_speech_prob or 0.0) > NO_SPEECH:
        return f"average log-probability {decoded.avg_logprob:.2f} < {LOGPROB}"
    if decoded.speech_s and spaced(decoded.text):
        rate = len(tokens) / decoded.speech_s
        if rate > MAX_WORDS_PER_S:
            return f"{rate:.1f} words per second of speech > {MAX_WORDS_PER_S}"
        if decoded.speech_s >= MIN_SPEECH_S and rate < MIN_WORDS_PER_S:
            return f"{rate:.2f} words per second over {decoded.speech_s:.0f} s of speech < {MIN_WORDS_PER_S}"
    return None


def mendable(decoded: Decoded) -> bool:
    """Whether a decode again can mend the failure: a loop or a speech rate no one speaks at (invented,
    repeated or dropped text) can be; an unlikely transcript alone cannot. On noisy speech, or speech the
    model knows poorly, decoded again it stays unlikely and the retry costs several windows for no gain
    (docs/long_form_accuracy.md, "Noise")."""
    return failure(replace(decoded, avg_logprob=None)) is not None


def rank(decoded: Decoded) -> tuple:
    """Sort key, best first: a decode that passes, the most likely first; of those that failed, the one
    that repeats least (a loop is likely to its decoder: its log-probability would pick it)."""
    if failure(decoded) is None:
        return (0, -(decoded.avg_logprob if decoded.avg_logprob is not None else -99.0))
    return (1, compression_ratio(decoded.text))


def compression_ratio(text: str) -> float:
    """Whisper's repetition measure: the text's UTF-8 length over its zlib-compressed length."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0
