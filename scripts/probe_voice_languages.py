"""Probe (issue 58): which witness tells a voice's language best, over many Fish Fillets levels.

For each level (none kept apart: alibaba, aztec, cellar, columns, computer, crabshow, engine, keys, magnet,
nor the mixed check set's emulator and propulsion), each fish and each voice actor (Czech on every level,
Dutch on every third), the voice's lines are packed into one window (time order, 0.5 s apart, up to 29.5 s)
and compared:

- ``window``: Whisper's language detection over that window (the voice heard over its own speech);
- ``spans``: each line's detection over its own frames of the window (span_languages.detect), pooled as
  language_rule pooled a voice's spans before (geometric mean weighted by duration);
- ``scored``: the voice's longest lines (up to 28 s) decoded greedily in each candidate language, the
  average log-probability per token (the decoder's check language_rule used for a hesitating voice).

    apt-get install -y sox fillets-ng-data fillets-ng-data-nl fillets-ng-data-cs
    pip install --target /tmp/pylib soundfile
    HF_HUB_OFFLINE=1 PYTHONPATH=.:audio/generate:/tmp/pylib .venv/bin/python scripts/probe_voice_languages.py run 0 2 OUT0.jsonl
    (and ``run 1 2 OUT1.jsonl`` beside it), then ``... summary OUT0.jsonl OUT1.jsonl``
"""
import json
import math
import sys
import tempfile
from pathlib import Path
import numpy as np

import mixed as gen
from build import FILLETS, sox_turn

HELD = set("alibaba aztec cellar columns computer crabshow engine keys magnet emulator propulsion".split())
RATE = 16000

def run(part, parts, out):
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler
    from whisper_endpoint.backends import encoder_cache, span_languages
    from faster_whisper.audio import pad_or_trim
    from faster_whisper.tokenizer import Tokenizer
    h = EndpointHandler(settings=ModelSettings(asr_model="embedded:base", cpu_threads=1))
    model = h.asr.model
    levels = sorted(p.name for p in (FILLETS / "sound").iterdir() if p.name not in HELD and (p / "cs").exists())
    levels = levels[part::parts]
    done = set()
    if Path(out).exists():
        done = {(r["level"], r["lang"], r["fish"]) for r in map(json.loads, open(out))}
    work = Path(tempfile.mkdtemp())
    for i, level in enumerate(levels):
        try:
            lines = gen.game_lines(level)
        except Exception as exc:
            print(level, "skip", exc); continue
        for lang in ("cs", "nl"):
            if lang == "nl" and i % 3: continue
            for fish in ("big_fish", "small_fish"):
                if (level, lang, fish) in done: continue
                mine = [l for l in lines if l["speaker"] == fish and lang in l["sound"]]
                pieces = [sox_turn(l["sound"][lang], work) for l in mine]
                pieces = [p for p in pieces if len(p) > 0.3 * RATE]
                if sum(map(len, pieces)) < 4 * RATE: continue
                # a window of the voice's lines with 0.5 s gaps, up to 30 s
                gap = np.zeros(RATE // 2, dtype=np.float32)
                audio, spans, t = [], [], 0.0
                for p in pieces:
                    if t + len(p) / RATE > 29.5: break
                    audio += [p.astype(np.float32), gap]; spans.append((t, t + len(p) / RATE)); t += len(p) / RATE + 0.5
                if not spans:
                    continue
                audio = np.concatenate(audio)
                with encoder_cache.active(True):
                    feats = span_languages.window_features(model, audio, 0.0, len(audio) / RATE)
                    win, found = span_languages.detect(model, feats, 0.0, spans, None)
                spans_out = [{"s": round(f.start, 2), "e": round(f.end, 2),
                              "p": {k: round(v, 5) for k, v in sorted(f.probabilities.items(), key=lambda kv: -kv[1])[:6]}}
                             for f in found]
                # check window: longest spans up to 28 s concatenated (as voice_language_check does)
                kept, total = [], 0.0
                for s, e in sorted(spans, key=lambda x: x[0] - x[1]):
                    if total + e - s <= 28.0:
                        kept.append(audio[int(s * RATE): int(e * RATE)]); total += e - s
                cfeat = pad_or_trim(model.feature_extractor(np.concatenate(kept))[..., :-1])
                enc = model.encode(cfeat)
                # candidates: top 4 by the window and the truth
                top = sorted(win.probabilities, key=lambda c: -win.probabilities[c])[:4]
                scored = {}
                for code in dict.fromkeys(top + [lang, "pl", "sk", "en"] if lang == "cs" else top + [lang, "de", "af", "en"]):
                    tok = Tokenizer(model.hf_tokenizer, True, task="transcribe", language=code)
                    prompt = [*tok.sot_sequence, tok.no_timestamps]
                    r = model.model.generate(enc, [prompt], beam_size=1, max_length=model.max_length // 2,
                                             return_scores=True, suppress_blank=True)[0]
                    ids = r.sequences_ids[0]
                    scored[code] = {"score": r.scores[0], "n": len(ids), "text": tok.decode(ids)}
                row = {"level": level, "lang": lang, "fish": fish, "check_s": round(total, 2),
                       "window": {k: round(v, 5) for k, v in sorted(win.probabilities.items(), key=lambda kv: -kv[1])[:6]},
                       "spans": spans_out, "scored": scored}
                with open(out, "a") as f:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
                print(level, lang, fish, top[:2], {c: round(v["score"], 3) for c, v in scored.items()}, flush=True)


FLOOR = 1e-4  # language_rule._FLOOR


def pooled(row):
    """The voice's languages as language_rule pooled its spans before: geometric mean, weighted by duration."""
    codes = sorted({c for s in row["spans"] for c in s["p"]} | set(row["scored"]))
    total = sum(s["e"] - s["s"] for s in row["spans"])
    mean_log = {}
    for code in codes:
        acc = 0.0
        for s in row["spans"]:
            z = sum(s["p"].values()) + FLOOR * len(codes)
            acc += math.log((s["p"].get(code, 0) + FLOOR) / z) * (s["e"] - s["s"])
        mean_log[code] = acc / total
    top = max(mean_log.values())
    return {c: math.exp(v - top) for c, v in sorted(mean_log.items(), key=lambda kv: -kv[1])}


def checked(p, row, ambiguous=0.5):
    """The first of ``p``, or of its first two the one the decoder scores higher when the second is at
    least ``ambiguous`` as likely (language_rule's check before)."""
    first, second = sorted(p, key=lambda c: -p[c])[:2]
    if p[second] >= ambiguous * p[first] and first in row["scored"] and second in row["scored"]:
        return max((first, second), key=lambda c: row["scored"][c]["score"])
    return first


RULES = {
    "spans pooled (geometric mean)": lambda r: next(iter(pooled(r))),
    "spans pooled, decoder check at 0.5 (the rule before)": lambda r: checked(pooled(r), r),
    "window (the voice heard over its own speech)": lambda r: max(r["window"], key=r["window"].get),
    "window, decoder check at 0.5": lambda r: checked(r["window"], r),
}


def summary(paths):
    rows = [json.loads(line) for path in paths for line in open(path)]
    result = {}
    for lang in ("cs", "nl"):
        mine = [r for r in rows if r["lang"] == lang]
        result[lang] = {"voices": len(mine), "levels": len({r["level"] for r in mine}),
                        "right": {name: sum(rule(r) == lang for r in mine) for name, rule in RULES.items()},
                        "wrong": {name: [[r["level"], r["fish"], rule(r)] for r in mine if rule(r) != lang]
                                  for name, rule in RULES.items()}}
    return {"summary": result, "rows": rows}


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        print(json.dumps(summary(sys.argv[2:]), ensure_ascii=False))
