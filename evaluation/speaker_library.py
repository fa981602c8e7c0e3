"""The speaker library end to end: voices enrolled through /v1/speakers of a real server, then named in
other recordings, before and after a restart; a voice enrolled from a finished job; the batch command.

    python -m evaluation speaker_library [--out results/speaker_library.json] [--model embedded:base]

One server process (``python -m whisper_endpoint.serving``, DIARIZATION_MODEL=embedded, its library in a
temporary folder beside its jobs database). Enrolled through the API (recordings other than the test files):
big_fish and small_fish from three turns each of fillets_barrel; slt from three sentences flite synthesises
here; two impostors found in no test file (the Asterisk prompts' Allison, flite's kal16). Test files, each
through POST /predict with its language and ``return_speaker_words``: fillets_cave, the first 240 s of
fillets_long (the same two actors) and flite_meeting (slt enrolled; rms and awb not).

A word (its middle inside a reference turn) is named right when it carries its speaker's name, or, for a
voice not enrolled, no enrolled name. Then the server is stopped and started again on the same files and the
test files are run again. Then fillets_barrel goes through POST /jobs with ``speaker_library: false``; the
job's label of big_fish (the majority of its words) is enrolled as ``big_fish_from_job`` (job_id + speaker),
the other fish entries are deleted, and fillets_cave must name big_fish's words ``big_fish_from_job``. Last,
``python -m whisper_endpoint.batch`` on fillets_cave with the same SPEAKERS_DB names the library's voices.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import requests

from evaluation.known_speakers import AUDIO, RATE, decode, flite_clips, impostor_clips, majority, scored_words
from support.audio import pcm16_wav
from support.paths import ROOT

KEY = "evaluation-key-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}
LONG_S = 240.0
TESTS = {  # name: (audio, language, seconds kept (None: all))
    "fillets_cave": (AUDIO / "dialogues" / "fillets_cave.flac", "nl", None),
    "fillets_long": (AUDIO / "long" / "fillets_long.flac", "nl", LONG_S),
    "flite_meeting": (AUDIO / "dialogues" / "flite_meeting.flac", "en", None),
}
BARREL = AUDIO / "dialogues" / "fillets_barrel.flac"


def turns_of(path: Path, seconds: float | None = None) -> list[dict]:
    turns = json.loads(path.with_suffix(".json").read_text())["turns"]
    return [t for t in turns if seconds is None or t["end"] <= seconds]


def enrolment() -> dict[str, list[np.ndarray]]:
    samples, clips = decode(BARREL), {}
    for turn in turns_of(BARREL):
        chosen = clips.setdefault(turn["speaker"], [])
        if 3.0 <= turn["end"] - turn["start"] <= 10.0 and len(chosen) < 3:
            chosen.append(samples[round(turn["start"] * RATE): round(turn["end"] * RATE)])
    voices = {**clips, "slt": flite_clips(("slt",))["slt"], **impostor_clips()}
    return {name: [c for c in found if 2.0 <= len(c) / RATE <= 30.0] for name, found in voices.items()}  # the API's rule


class Server:
    def __init__(self, folder: Path, model: str):
        self.port = 18000 + os.getpid() % 1000
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "ASR_MODEL": model, "DIARIZATION_MODEL": "embedded", "HOST": "127.0.0.1",
                    "PORT": str(self.port), "API_KEYS": KEY, "JOBS_DB": str(folder / "jobs.sqlite"),
                    "JOBS_POLL_S": "0.2", "HF_HUB_OFFLINE": "1", "LOG_LEVEL": "warning"}
        self.env.pop("SPEAKERS_DB", None)  # beside JOBS_DB: the default place
        self.process = None

    def __enter__(self) -> "Server":
        self.process = subprocess.Popen([sys.executable, "-m", "whisper_endpoint.serving"], env=self.env, cwd=ROOT)
        try:
            return self._ready()
        except BaseException:
            self.__exit__()
            raise

    def _ready(self) -> "Server":
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return self
            except requests.RequestException:  # not listening yet, or busy loading
                pass
            if self.process.poll() is not None:
                raise SystemExit(f"the server exited ({self.process.returncode})")
            time.sleep(0.5)
        raise SystemExit("the server did not become ready in 300 s")

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(timeout=120)

    def call(self, method: str, path: str, expect: int, **kwargs):
        headers = {**AUTH, **kwargs.pop("headers", {})}
        response = requests.request(method, f"{self.url}{path}", headers=headers, timeout=600, **kwargs)
        if response.status_code != expect:
            raise SystemExit(f"{method} {path}: {response.status_code} {response.text[:500]}")
        return response.json() if response.content else None


def b64(samples: np.ndarray) -> str:
    return base64.b64encode(pcm16_wav(samples)).decode()


def test_audio(name: str) -> tuple[bytes, list[dict], str]:
    path, language, seconds = TESTS[name]
    samples = decode(path)
    if seconds is not None:
        samples = samples[: round(seconds * RATE)]
    return pcm16_wav(samples), turns_of(path, seconds), language


def score(result: dict, turns: list[dict], enrolled: set[str]) -> dict:
    pairs = scored_words(result, turns)
    right = sum(1 for label, truth in pairs if label == truth or (truth not in enrolled and label not in enrolled))
    intruded = sum(1 for label, truth in pairs if truth not in enrolled and label in enrolled)
    wrong_names = sorted({m["name"] for m in result.get("speaker_matches", [])
                          if majority(pairs).get(m["name"]) != m["name"]})
    return {"words": len(pairs), "named_right": round(right / max(1, len(pairs)), 4),
            "unenrolled_words_named": intruded, "wrong_matches": wrong_names,
            "matches": result.get("speaker_matches", [])}


def run_tests(server: Server, audio: dict, enrolled: set[str]) -> dict:
    scores = {}
    for name, (data, turns, language) in audio.items():
        started = time.perf_counter()
        result = server.call("POST", "/predict", 200, json={"inputs": base64.b64encode(data).decode(), "parameters": {
            "language": language, "return_speaker_words": True}})
        scores[name] = {**score(result, turns, enrolled), "seconds": round(time.perf_counter() - started, 1)}
        print(name, {k: v for k, v in scores[name].items() if k != "matches"}, flush=True)
    return scores


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("speaker_library")
    options.add_argument("--model", default="embedded:base")
    args = options.parse_args(argv)
    clips = enrolment()
    audio = {name: test_audio(name) for name in TESTS}
    enrolled = set(clips)
    report: dict = {"model": args.model, "diarization": "embedded", "enrolled": {n: len(c) for n, c in clips.items()},
                    "tests": {name: {"language": language, "seconds": len(turns) and turns[-1]["end"]}
                              for name, (_, turns, language) in audio.items()}}
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        with Server(folder, args.model) as server:
            ids = {}
            for name, found in clips.items():
                ids[name] = server.call("POST", "/v1/speakers", 201, json={"name": name, "audio": [b64(c) for c in found]})
            report["library"] = [s | {"id": "..."} for s in server.call("GET", "/v1/speakers", 200)["data"]]
            report["before_restart"] = run_tests(server, audio, enrolled)
        with Server(folder, args.model) as server:
            report["after_restart"] = run_tests(server, audio, enrolled)
            report["library_after_restart"] = len(server.call("GET", "/v1/speakers", 200)["data"])
            report["from_job"] = from_job(server, ids, audio)
        report["batch"] = batch(folder, args.model, audio, enrolled - {"small_fish"})
    report["summary"] = summary(report)
    save("speaker_library", args.out, report, argv)
    print(json.dumps(report["summary"], indent=1))
    return 0


def from_job(server: Server, ids: dict, audio: dict) -> dict:
    job = server.call("POST", "/jobs", 202, data=pcm16_wav(decode(BARREL)), params={"language": "nl", "speaker_library": "false",
                      "return_speaker_words": "true"}, headers={**AUTH, "Content-Type": "audio/wav"})
    while (state := server.call("GET", f"/jobs/{job['id']}", 200))["status"] not in ("succeeded", "failed"):
        time.sleep(0.5)
    labels = majority(scored_words(state["result"], turns_of(BARREL)))
    label = next(label for label, truth in labels.items() if truth == "big_fish")
    made = server.call("POST", "/v1/speakers", 201, json={"name": "big_fish_from_job", "job_id": job["id"], "speaker": label})
    for name in ("big_fish", "small_fish"):
        server.call("DELETE", f"/v1/speakers/{ids[name]['id']}", 204)
    data, turns, language = audio["fillets_cave"]
    result = server.call("POST", "/predict", 200, json={"inputs": base64.b64encode(data).decode(), "parameters": {
        "language": language, "return_speaker_words": True}})
    pairs = scored_words(result, turns)
    big = [label for label, truth in pairs if truth == "big_fish"]
    others_named = sum(1 for label, truth in pairs if truth != "big_fish" and label == "big_fish_from_job")
    return {"job_speaker": label, "entry": made | {"id": "..."}, "tested_on": "fillets_cave",
            "big_fish_words_named": round(big.count("big_fish_from_job") / max(1, len(big)), 4),
            "other_words_named_big_fish_from_job": others_named}


def batch(folder: Path, model: str, audio: dict, enrolled: set[str]) -> dict:
    """The batch command on fillets_cave with the server's library (SPEAKERS_DB beside the same JOBS_DB)."""
    out = folder / "batch"
    env = {**os.environ, "ASR_MODEL": model, "DIARIZATION_MODEL": "embedded", "JOBS_DB": str(folder / "jobs.sqlite"),
           "HF_HUB_OFFLINE": "1"}
    env.pop("SPEAKERS_DB", None)
    subprocess.run([sys.executable, "-m", "whisper_endpoint.batch", str(TESTS["fillets_cave"][0]), "--out", str(out),
                    "--param", "language=nl", "--param", "return_speaker_words=true", "--no-progress"],
                   env=env, cwd=ROOT, check=True)
    result = json.loads(next(out.rglob("fillets_cave*.json")).read_text())
    for run in result["speakers"]:  # the job's entry is big_fish's voice
        for word in run.get("words", []):
            word["speaker"] = {"big_fish_from_job": "big_fish"}.get(word["speaker"], word["speaker"])
    for found in result.get("speaker_matches", []):
        found["name"] = {"big_fish_from_job": "big_fish"}.get(found["name"], found["name"])
    return score(result, audio["fillets_cave"][1], enrolled)


def summary(report: dict) -> dict:
    def words(stage):
        runs = report[stage].values()
        right = sum(r["named_right"] * r["words"] for r in runs)
        return {"named_right": round(right / sum(r["words"] for r in runs), 4),
                "unenrolled_words_named": sum(r["unenrolled_words_named"] for r in runs),
                "wrong_matches": sorted({n for r in runs for n in r["wrong_matches"]})}

    return {"before_restart": words("before_restart"), "after_restart": words("after_restart"),
            "from_job_big_fish_words_named": report["from_job"]["big_fish_words_named"],
            "batch_named_right": report["batch"]["named_right"]}

