"""Local agreement (whisper_streaming's LocalAgreement-2): the open utterance is decoded again as it
grows, and the words two successive decodes agree on, from the utterance's start, are final; only
those are sent as deltas, so a delta is never taken back.
"""

from __future__ import annotations

import re

_PUNCTUATION = re.compile(r"[^\w']+")


def _key(word: str) -> str:
    # Successive decodes often differ only in case or punctuation ("now" vs "now."): still agreement.
    return _PUNCTUATION.sub("", word.lower())


def words(text: str) -> list[str]:
    return text.split()


class LocalAgreement:
    """The confirmed words of one utterance and the last hypothesis they are checked against."""

    def __init__(self):
        self.confirmed: list[str] = []
        self._previous: list[str] = []

    def update(self, hypothesis: str) -> str:
        """Take a new decode of the utterance so far; return the newly confirmed text ("" if none)."""
        current = words(hypothesis)
        agreed = 0
        for old, new in zip(self._previous, current):
            if _key(old) != _key(new):
                break
            agreed += 1
        self._previous = current
        if agreed <= len(self.confirmed) or not self._extends(current):
            return ""
        fresh = current[len(self.confirmed) : agreed]
        return self._add(fresh)

    def finish(self, final: str) -> str:
        """The rest of the final text, when it extends what was confirmed; "" when it does not (the
        ``completed`` event still carries the final text)."""
        current = words(final)
        if not self._extends(current):
            return ""
        return self._add(current[len(self.confirmed) :])

    def _extends(self, current: list[str]) -> bool:
        head = current[: len(self.confirmed)]
        return len(head) == len(self.confirmed) and all(
            _key(a) == _key(b) for a, b in zip(head, self.confirmed)
        )

    def _add(self, fresh: list[str]) -> str:
        if not fresh:
            return ""
        text = " ".join(fresh)
        text = f" {text}" if self.confirmed else text
        self.confirmed.extend(fresh)
        return text
