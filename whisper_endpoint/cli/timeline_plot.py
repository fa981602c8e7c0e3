"""A speaker timeline as PNG: one lane per speaker, turns as bars, what was said written under them.

For looking at a diarized result (1 to ~15 min of audio reads well). Text is kept legible by giving
each label only the room up to the next label in its row (two rows per lane, alternating) and
shortening it with "…" to fit; a label with room for fewer than a few characters is left out.
Uses matplotlib's object API with the Agg canvas: no pyplot, no global state, no display needed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from whisper_endpoint.core.types import SpeakerTurn
from whisper_endpoint.speakers.merge import LabeledWord, speaker_runs

SECONDS_PER_INCH = 20.0  # x scale before the width limits below
WIDTH_IN = (8.0, 32.0)
FONT_PT = 7
CHARS_PER_INCH = 16.0  # at FONT_PT in the default sans-serif font (measured ~18), a little conservative
MIN_CHARS = 4
PHRASE_GAP_S = 1.0
UNLABELLED = "(no speaker)"


def draw_timeline(
    turns: Iterable[SpeakerTurn],
    words_or_runs: Iterable = (),
    path: str | Path = "timeline.png",
    *,
    duration: float | None = None,
    title: str | None = None,
) -> Path:
    """Draw ``turns`` and the transcript, save a PNG at ``path`` and return the path.

    ``words_or_runs``: LabeledWords (grouped into runs here), the ``speakers`` dicts of the response
    (``{"speaker", "text", "timestamp"}``), or plain Words without speakers (a lane of their own).
    ``duration`` (the x axis) defaults to the latest time seen.
    """
    turns = [t for t in turns if t.end >= t.start]  # NaN times fail this too
    labels = _labels(words_or_runs)
    if duration is None or not duration > 0:
        duration = max([t.end for t in turns] + [end for _, end, _, _ in labels] + [1.0])
    lanes = _lanes(turns, labels)

    width = min(max(duration / SECONDS_PER_INCH, WIDTH_IN[0]), WIDTH_IN[1])
    fig = Figure(figsize=(width, 1.0 + 0.8 * max(len(lanes), 1)), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colours = [f"C{i % 10}" for i in range(len(lanes))]
    for speaker, y in lanes.items():
        bars = [(t.start, max(t.end - t.start, duration / 2000)) for t in turns if t.speaker == speaker]
        ax.broken_barh(bars, (y + 0.05, 0.3), facecolors=colours[y], alpha=0.6)
    chars_per_second = CHARS_PER_INCH * _axes_width_in(width) / duration
    _write_labels(ax, labels, lanes, chars_per_second=chars_per_second, until=duration)

    ax.set_xlim(0, duration)
    ax.set_ylim(max(len(lanes), 1) - 0.5, -0.5)  # first speaker on top
    ax.set_yticks([y + 0.2 for y in lanes.values()], list(lanes))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{int(x // 60)}:{x % 60:04.1f}"))
    ax.set_xlabel("time (m:ss)")
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, format="png")
    return path


def _labels(items: Iterable) -> list[tuple[float, float, str, str]]:
    """(start, end, text, lane) per text to write, in time order: one per run or phrase."""
    items = list(items)
    if items and isinstance(items[0], LabeledWord):
        items = speaker_runs(items)
    labels = []
    for item in items:
        if isinstance(item, dict):
            start, end = item["timestamp"]
            labels.append((start, end, item["text"].strip(), item.get("speaker") or UNLABELLED))
        elif item.start is not None and item.end is not None and item.end >= item.start:
            labels.append((item.start, item.end, item.text.strip(), getattr(item, "speaker", None) or UNLABELLED))
    return _phrases(sorted(labels, key=lambda label: label[0]))


def _phrases(labels: list[tuple[float, float, str, str]]) -> list[tuple[float, float, str, str]]:
    """Join neighbours of one lane less than PHRASE_GAP_S apart (plain words), so text reads on."""
    out: list[tuple[float, float, str, str]] = []
    for start, end, text, lane in labels:
        if out and out[-1][3] == lane and start - out[-1][1] < PHRASE_GAP_S:
            out[-1] = (out[-1][0], max(end, out[-1][1]), f"{out[-1][2]} {text}", lane)
        else:
            out.append((start, end, text, lane))
    return out


def _lanes(turns: list[SpeakerTurn], labels: list[tuple[float, float, str, str]]) -> dict[str, int]:
    """Lane index per speaker, in order of first appearance; unlabelled text last."""
    firsts = [(t.start, t.speaker) for t in turns] + [(start, lane) for start, _, _, lane in labels]
    order = dict.fromkeys(speaker for _, speaker in sorted(firsts, key=lambda first: first[0]))
    order.pop(UNLABELLED, None)
    if any(lane == UNLABELLED for *_, lane in labels):
        order[UNLABELLED] = None
    return {speaker: y for y, speaker in enumerate(order)}


def _write_labels(ax, labels, lanes: dict[str, int], *, chars_per_second: float, until: float) -> None:
    """Two rows per lane, alternating; each label gets the room up to the next one in its row."""
    rows: dict[tuple[int, int], list[tuple[float, str]]] = {}
    counts: dict[str, int] = {}
    for start, _, text, lane in labels:
        counts[lane] = counts.get(lane, -1) + 1
        rows.setdefault((lanes[lane], counts[lane] % 2), []).append((start, text))
    for (y, row), entries in rows.items():
        for i, (start, text) in enumerate(entries):
            room = (entries[i + 1][0] if i + 1 < len(entries) else until) - start
            fitted = _fit(text, int(room * chars_per_second) - 1)
            if fitted:  # rows sit above the lane's bar (the y axis points down)
                ax.text(start, y - 0.02 - 0.26 * row, fitted, fontsize=FONT_PT, va="bottom", clip_on=True)


def _fit(text: str, chars: int) -> str:
    if chars < MIN_CHARS or not text:
        return ""
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def _axes_width_in(fig_width: float) -> float:
    return max(fig_width - 1.6, 1.0)  # minus the speaker names on the left and the margins
