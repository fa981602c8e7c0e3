"""When each cue is on screen: from its first word to its last, longer where the audio leaves room; and
the time of words whose timestamps collapsed to a point (``given_time``).

A cue wants ``min_cue_duration`` first, then as long as its text takes to read at ``MAX_READING_CPS``
(never more than ``max_cue_duration``). What its words do not cover it takes from the silence after its
last word, then from the silence before its first word (at most ``MAX_LEAD_IN_S`` of it). Consecutive
cues keep ``MIN_GAP_S`` between them. Issue 60: a cue followed at once by the next speaker used to get
nothing, however much silence lay before it.
"""

from __future__ import annotations

import math

from whisper_endpoint.core.config import SubtitleOptions

MIN_GAP_S = 0.083  # two frames at 24 fps between consecutive cues
MAX_READING_CPS = 20.0  # characters a second (Netflix's count: every character but the line break)
MAX_LEAD_IN_S = 1.0  # a cue shows at most this long before its first word: longer reads as nobody's line
COLLAPSED_S = 0.03  # a word shorter has no time of its own: none or one of the alignment's 20 ms frames

Span = tuple[float, float]  # start, end in seconds


def shown_times(spoken: list[Span], characters: list[int], options: SubtitleOptions) -> list[Span]:
    """Each cue's (start, end) on screen, from its words' (first start, last end) and its characters."""
    longest = options.max_cue_duration
    shortest = min(options.min_cue_duration, longest)
    times = _apart(spoken)
    readable = [min(max(shortest, count / MAX_READING_CPS), longest) for count in characters]
    # The minimum first, for every cue, so that no cue's reading time takes a neighbour's minimum; each
    # first for the cues that can reach it, so that a cue that cannot takes no time one that can needs.
    for wanted in ([shortest] * len(times), readable):
        for reachable_only in (True, False):
            times = _widened(times, spoken, wanted, reachable_only)
    return [(round(start, 3), round(end, 3)) for start, end in times]


def _apart(spoken: list[Span]) -> list[Span]:
    """The words' spans, each ending ``MIN_GAP_S`` before the next begins (never before its own start)."""
    out = []
    for index, (start, end) in enumerate(spoken):
        if index + 1 < len(spoken):
            end = max(start, min(end, spoken[index + 1][0] - MIN_GAP_S))
        out.append((start, end))
    return out


def _widened(times: list[Span], spoken: list[Span], wanted: list[float], reachable_only: bool) -> list[Span]:
    """Each cue lengthened towards its wanted duration, out of the silences beside it (``reachable_only``:
    only the cues that can reach it).

    A silence between two cues may serve both: the later cue's lead-in and the earlier cue's stay. The
    pass from the end works out the lead-in each cue asks for (what the silence after it cannot give once
    the next cue's ask is set aside); the pass from the start then gives each cue its lead-in, and after
    its words what it still lacks, leaving the next cue its ask."""
    count = len(times)
    lacks = [max(0.0, want - (end - start)) for (start, end), want in zip(times, wanted)]
    after = [max(0.0, times[i + 1][0] - MIN_GAP_S - times[i][1]) for i in range(count - 1)] + [math.inf]
    before = [max(0.0, times[0][0])] + after[:-1] if count else []
    lead_room = [max(0.0, MAX_LEAD_IN_S - (first - start)) for (start, _), (first, _) in zip(times, spoken)]
    asks = [0.0] * (count + 1)
    for i in range(count - 1, -1, -1):
        from_after = max(0.0, after[i] - asks[i + 1])
        reachable = lacks[i] <= from_after + min(lead_room[i], before[i]) + 1e-9
        if reachable_only and not reachable:
            lacks[i] = 0.0
        asks[i] = min(lead_room[i], before[i], max(0.0, lacks[i] - from_after))
    out, left = [], before[0] if count else 0.0
    for i, (start, end) in enumerate(times):
        lead = min(asks[i], left)
        stay = min(lacks[i] - lead, max(0.0, after[i] - asks[i + 1]))
        out.append((start - lead, end + stay))
        left = after[i] - stay
    return out


def given_time(spans: list[Span], lengths: list[int]) -> list[Span]:
    """Consecutive words' spans, those that collapsed to a point (Whisper's alignment gave them no frame)
    sharing the time from the start of the word before them to the end of the word after them with those
    two, by length (characters)."""
    out, index = list(spans), 0
    while index < len(out):
        if out[index][1] - out[index][0] >= COLLAPSED_S:
            index += 1
            continue
        last = index
        while last + 1 < len(out) and out[last + 1][1] - out[last + 1][0] < COLLAPSED_S:
            last += 1
        low, high = max(index - 1, 0), min(last + 1, len(out) - 1)
        out[low:high + 1] = by_length((out[low][0], max(out[low][0], out[high][1])), lengths[low:high + 1])
        index = high + 1
    return out


def by_length(span: Span, lengths: list[int]) -> list[Span]:
    """The span shared out in consecutive pieces of these lengths."""
    (start, end), total, done, out = span, max(sum(lengths), 1), 0, []
    for length in lengths:
        begin = start + (end - start) * done / total
        done += length
        out.append((round(begin, 3), round(start + (end - start) * done / total, 3)))
    return out
