#!/usr/bin/env bash
# Simulate a deployment on Hugging Face Inference Endpoints' default container, offline, from PyPI.
#
#   scripts/simulate_endpoint.sh [IMAGE...]          IMAGE: current (default), legacy; "all" for both
#   scripts/simulate_endpoint.sh --build-only IMAGE  only build (and cache) the image's venv
#   scripts/simulate_endpoint.sh sagemaker           SageMaker's newest Hugging Face image (Python 3.12):
#                                                    its requirements resolved for it, installed nowhere
#
# For each image: a venv with the image's pinned stack (the toolkit's setup.py, packages as they were
# on PyPI when the image was built; cached in $SIMULATE_CACHE), then the cold start exactly as the
# toolkit's entrypoint.sh runs it (`pip install -r $HF_MODEL_DIR/requirements.txt --no-cache-dir`) on
# scripts/make_endpoint_repo.sh's output, then the toolkit's own webservice_starlette on a loopback
# port with HF_MODEL_DIR=that repository, and the toolkit's own audio files posted raw and as base64,
# HF_TASK unset and set, on both ASR backends, with DIARIZATION_MODEL=embedded. Results:
# results/endpoint_simulation.json (read by docs/serving.md). Not run by CI: it downloads several GB.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${SIMULATE_CACHE:-$HOME/.cache/whisper-endpoint/simulate}"
# The toolkit's source (read-only: copied before use). It has no PyPI release: take a checkout of
# huggingface/huggingface-inference-toolkit (commit 833b5a2 was simulated) and point TOOLKIT_DIR at it. The
# default is where this project's development machines keep one, beside the repository: the one path outside
# the repository that anything here names, and only as this optional script's default.
TOOLKIT="${TOOLKIT_DIR:-$ROOT/../shared/hf-inference-toolkit}"
if [ ! -d "$TOOLKIT/src/huggingface_inference_toolkit" ]; then
    echo "simulate_endpoint.sh: no inference toolkit source at $TOOLKIT: check out" \
        "huggingface/huggingface-inference-toolkit and run with TOOLKIT_DIR=/path/to/that/checkout" >&2
    exit 2
fi
PYTHON="${SIMULATE_PYTHON:-python3.11}"   # both images run Python 3.11
HOST_PY="${HOST_PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$HOST_PY" ] || HOST_PY=python3
RESULTS="${SIMULATE_RESULTS:-$ROOT/results/endpoint_simulation.json}"
# The toolkit's server configurations to run (all by default).
CONFIGS="${SIMULATE_CONFIGS:-ctranslate2 ctranslate2-task transformers transformers-task bad-diarization}"

# The image's stack: the toolkit's install_requires and its torch, st and diffusers extras
# (dockerfiles/pytorch/Dockerfile: pip install ".[torch,st,diffusers]"), minus kenlm, which it takes
# from a git commit (no registry has it; only pyctcdecode's optional language models use it).
TOOLKIT_COMMON=(Pillow librosa "pyctcdecode>=0.3.0" phonemizer ffmpeg starlette uvicorn pandas orjson einops)
image_packages() {
    case "$1" in
        current)  # toolkit 0.5.6 (its setup.py), the image Inference Endpoints runs today
            echo "transformers[sklearn,sentencepiece,audio,vision]==4.51.3 huggingface_hub[hf_transfer]==0.30.2" \
                 "sentence_transformers==4.0.2 diffusers==0.33.1 accelerate==1.6.0" \
                 "torch==2.5.1 torchvision torchaudio peft==0.15.1 pip==25.1" ;;
        legacy)  # the older image the platform still lists
            echo "transformers[sklearn,sentencepiece,audio,vision]==4.38.2 huggingface_hub[hf_transfer]==0.20.3" \
                 "sentence_transformers==2.4.0 diffusers==0.26.3 accelerate==0.27.2" \
                 "torch==2.2.0 torchvision torchaudio peft==0.9.0 pip==24.0" ;;
        *) echo "unknown image $1 (current, legacy)" >&2; return 1 ;;
    esac
}
# Unpinned packages (starlette, numpy...) as PyPI had them when the image was built: the last pinned
# release's date plus a margin. Starlette in particular must predate 1.0 (the webservice passes on_startup).
image_date() {
    case "$1" in
        current) echo 2025-05-01T00:00:00Z ;;
        legacy) echo 2024-03-15T00:00:00Z ;;
    esac
}

# Plain PyPI for the image (no machine-local pip configuration, indexes or constraints).
pypi() { PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= "$@"; }

build_image() {
    local image="$1" base="$CACHE/images/$1"
    if [ -f "$base/.complete" ]; then
        echo "image $image: cached in $base"
        return 0
    fi
    echo "image $image: building $base"
    rm -rf "$base"
    mkdir -p "$base"
    "$PYTHON" -m venv "$base/venv"
    # A pip that knows --uploaded-prior-to builds it; the image's own pip is then put back.
    pypi "$base/venv/bin/python" -m pip install --quiet --upgrade pip
    # shellcheck disable=SC2046
    pypi "$base/venv/bin/python" -m pip install --cache-dir "$CACHE/pip-cache" --uploaded-prior-to "$(image_date "$image")" \
        ${TOOLKIT_COMMON[@]} $(image_packages "$image") >"$base/build.log" 2>&1
    pypi "$base/venv/bin/python" -m pip freeze --all >"$base/freeze.txt"
    touch "$base/.complete"
    echo "image $image: built"
}

# The toolkit's server with one configuration; writes $WORK/<name>.json (start-up time, every request).
serve_and_post() {
    local name="$1" repo="$2" port="$3" pid startup status=ok
    shift 3
    echo "  $name: starting the toolkit's server ($*)"
    (cd "$WORK/app" && exec env -i PATH="$WORK/venv/bin:/usr/bin:/bin" HOME="$WORK/home" HF_HUB_OFFLINE=1 \
        HF_MODEL_DIR="$repo" "$@" "$WORK/venv/bin/python" -m uvicorn webservice_starlette:app \
        --host 127.0.0.1 --port "$port" >"$WORK/$name.log" 2>&1) &
    pid=$!
    startup=$("$HOST_PY" "$ROOT/scripts/simulate_requests.py" wait "http://127.0.0.1:$port" "$pid" 900) || status=failed
    if [ "$status" = ok ]; then
        "$HOST_PY" "$ROOT/scripts/simulate_requests.py" post "http://127.0.0.1:$port" "$TOOLKIT/tests/resources/audio" \
            "$WORK/$name.requests.json" >/dev/null
        kill "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    # The start-up's last error line, when it failed (the toolkit logs the exception, uvicorn exits).
    "$HOST_PY" - "$WORK" "$name" "$status" "$startup" "$*" <<'PY'
import json, sys
from pathlib import Path
work, name, status, startup, env = sys.argv[1:]
log = (Path(work) / f"{name}.log").read_text(errors="replace").splitlines()
requests = Path(work) / f"{name}.requests.json"
entry = {"env": env, "started": status == "ok", "startup_s": float(startup) if status == "ok" else None,
         "requests": json.loads(requests.read_text()) if requests.is_file() else []}
if status != "ok":
    entry["startup_error"] = [line for line in log if "Error" in line or "error" in line][-3:]
(Path(work) / f"{name}.json").write_text(json.dumps({name: entry}, ensure_ascii=False))
PY
}

# The toolkit's server in each configuration of $CONFIGS, on $WORK's repositories.
run_configurations() {
    local name
    for name in $CONFIGS; do
        case "$name" in
            ctranslate2) serve_and_post "$name" "$WORK/repository" 18301 DIARIZATION_MODEL=embedded ;;
            ctranslate2-task) serve_and_post "$name" "$WORK/repository" 18302 DIARIZATION_MODEL=embedded \
                HF_TASK=automatic-speech-recognition ;;
            transformers) serve_and_post "$name" "$WORK/repository-transformers" 18303 DIARIZATION_MODEL=embedded ;;
            transformers-task) serve_and_post "$name" "$WORK/repository-transformers" 18304 DIARIZATION_MODEL=embedded \
                HF_TASK=automatic-speech-recognition ;;
            bad-diarization) serve_and_post "$name" "$WORK/repository" 18305 DIARIZATION_MODEL=/no/such/pipeline ;;
            *) echo "unknown configuration $name" >&2; return 1 ;;
        esac
    done
}

simulate() {
    local image="$1"
    WORK="$CACHE/runs/$image"
    if [ -n "${SIMULATE_REUSE:-}" ] && [ -f "$WORK/coldstart.json" ]; then
        serve_again "$image"
        return
    fi
    build_image "$image"
    echo "image $image: fresh copy of the image in $WORK"
    rm -rf "$WORK"
    mkdir -p "$WORK/home" "$WORK/app"
    cp -a "$CACHE/images/$image/venv" "$WORK/venv"
    # The toolkit as the image lays it out (dockerfiles/pytorch/Dockerfile: /app).
    cp -r "$TOOLKIT/src/huggingface_inference_toolkit" "$WORK/app/"
    cp "$TOOLKIT/src/huggingface_inference_toolkit/webservice_starlette.py" "$WORK/app/"
    PYTHON="$HOST_PY" bash "$ROOT/scripts/make_endpoint_repo.sh" "$WORK/repository"

    echo "image $image: cold start (pip install -r requirements.txt --no-cache-dir)"
    pypi "$WORK/venv/bin/python" -m pip freeze --all >"$WORK/freeze-before.txt"
    local started ended
    started=$(date +%s.%N)
    (cd "$WORK" && pypi "$WORK/venv/bin/python" -m pip install -r "$WORK/repository/requirements.txt" --no-cache-dir \
        >"$WORK/coldstart.log" 2>&1) || echo "  the cold start's pip failed: $WORK/coldstart.log"
    ended=$(date +%s.%N)
    pypi "$WORK/venv/bin/python" -m pip freeze --all >"$WORK/freeze-after.txt"
    pypi "$WORK/venv/bin/python" -m pip check >"$WORK/pip-check.txt" 2>&1 || true
    "$HOST_PY" "$ROOT/scripts/simulate_requests.py" coldstart "$WORK/coldstart.log" "$WORK/freeze-before.txt" \
        "$WORK/freeze-after.txt" "$(echo "$ended - $started" | bc)" "$WORK/pip-check.txt" "$WORK/coldstart.json"
    tail -1 "$WORK/coldstart.log"

    # The transformers backend on a model saved by the image's own transformers, as a Hub model would be:
    # the carried CTranslate2 weights converted with the pushed code inside the image.
    echo "image $image: converting the carried model with the image's transformers"
    (cd "$WORK" && PYTHONPATH="$WORK/repository" HOME="$WORK/home" "$WORK/venv/bin/python" -c \
        "from whisper_endpoint.weights.convert import convert_ctranslate2_to_transformers as c; c('repository/models/asr', 'transformers-model')" \
        >"$WORK/convert.log" 2>&1) || echo "  conversion failed: $WORK/convert.log"
    PYTHON="$HOST_PY" bash "$ROOT/scripts/make_endpoint_repo.sh" "$WORK/repository-transformers" \
        --asr-model "$WORK/transformers-model" >/dev/null || true

    run_configurations
    local parts=("$WORK/coldstart.json") name
    for name in $CONFIGS; do
        parts+=("$WORK/$name.json")
    done

    "$HOST_PY" - "$WORK" "$image" "$("$WORK/venv/bin/python" -c 'import platform; print(platform.python_version())')" <<'PY'
import json, sys
from pathlib import Path
work, image, python = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
base = (work.parent.parent / "images" / image / "freeze.txt").read_text().splitlines()
keep = ("torch", "torchvision", "torchaudio", "transformers", "huggingface-hub", "diffusers", "starlette", "numpy", "pip")
image_pins = {line.split("==")[0]: line.split("==")[1] for line in base if line.split("==")[0].lower() in keep}
(work / "image.json").write_text(json.dumps({"image": {"python": python, "packages": image_pins}}))
PY
    parts=("$WORK/image.json" "${parts[@]}")
    "$HOST_PY" "$ROOT/scripts/simulate_requests.py" merge "$RESULTS" "$image" "${parts[@]}"
    echo "image $image: results in $RESULTS"
}

# SageMaker's Hugging Face PyTorch inference image, newest in the sagemaker SDK's image_uri_config
# (huggingface.json, sagemaker 2.257.7): transformers 4.51.3, PyTorch 2.6.0, Python 3.12. No Python 3.12
# here, so pip resolves the archive's code/requirements.txt for 3.12 wheels (--python-version) without
# installing: every package must have a 3.12 wheel and the set must agree. (A dry run cannot hold the
# image's packages as installed; the requirements move torch and transformers off the image's anyway.)
sagemaker_check() {
    WORK="$CACHE/runs/sagemaker"
    rm -rf "$WORK" && mkdir -p "$WORK"
    [ -x "$CACHE/resolver/bin/python" ] || { "$PYTHON" -m venv "$CACHE/resolver" && pypi "$CACHE/resolver/bin/python" -m pip install -q --upgrade pip; }
    (cd "$ROOT" && "$HOST_PY" scripts/package_sagemaker.py --output "$WORK/model.tar.gz" >/dev/null)
    tar -xzf "$WORK/model.tar.gz" -C "$WORK" code/requirements.txt code/requirements-runtime.txt
    local platforms=() tag status=resolved
    for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64; do
        platforms+=(--platform "$tag")
    done
    pypi "$CACHE/resolver/bin/python" -m pip install --dry-run --ignore-installed --target "$WORK/target" \
        --python-version 3.12 "${platforms[@]}" --only-binary=:all: --cache-dir "$CACHE/pip-cache" \
        --report "$WORK/report.json" -r "$WORK/code/requirements.txt" \
        >"$WORK/resolve.log" 2>&1 || status=failed
    "$HOST_PY" - "$WORK" "$status" <<'PY'
import json, sys
from pathlib import Path
work, status = Path(sys.argv[1]), sys.argv[2]
report = json.loads((work / "report.json").read_text()) if (work / "report.json").is_file() else {"install": []}
chosen = {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in report["install"]}
keep = ("torch", "torchvision", "torchaudio", "torchcodec", "transformers", "numpy", "pyannote.audio", "ctranslate2", "av")
log = (work / "resolve.log").read_text().splitlines()
entry = {"image": {"python": "3.12", "packages": {"transformers": "4.51.3", "torch": "2.6.0"}, "source": "sagemaker 2.257.7 image_uri_config/huggingface.json"},
         "resolution": {"status": status, "packages": {name: chosen[name] for name in keep if name in chosen},
                        "count": len(chosen), "errors": [line for line in log if "ERROR" in line][-3:]}}
(work / "sagemaker.json").write_text(json.dumps(entry))
PY
    "$HOST_PY" "$ROOT/scripts/simulate_requests.py" merge "$RESULTS" sagemaker "$WORK/sagemaker.json"
    echo "sagemaker: $status ($WORK/resolve.log)"
}

# SIMULATE_REUSE=1: the last cold start's venv again, with the repositories rebuilt from the current code
# (what changed since is code, not requirements), for the configurations in SIMULATE_CONFIGS; results
# of the other configurations are kept.
serve_again() {
    local image="$1" name parts=()
    echo "image $image: reusing $WORK (cold start of $(stat -c %y "$WORK/coldstart.json" | cut -d. -f1))"
    cmp -s "$ROOT/requirements.txt" "$WORK/repository/requirements.txt" || { echo "requirements changed: run without SIMULATE_REUSE" >&2; return 1; }
    rm -rf "$WORK/repository" "$WORK/repository-transformers"
    PYTHON="$HOST_PY" bash "$ROOT/scripts/make_endpoint_repo.sh" "$WORK/repository"
    PYTHON="$HOST_PY" bash "$ROOT/scripts/make_endpoint_repo.sh" "$WORK/repository-transformers" \
        --asr-model "$WORK/transformers-model" >/dev/null
    for name in $CONFIGS; do rm -f "$WORK/$name.json" "$WORK/$name.requests.json"; done
    run_configurations
    for part in "$WORK"/image.json "$WORK"/coldstart.json "$WORK"/{ctranslate2,ctranslate2-task,transformers,transformers-task,bad-diarization}.json; do
        [ -f "$part" ] && parts+=("$part")
    done
    "$HOST_PY" "$ROOT/scripts/simulate_requests.py" merge "$RESULTS" "$image" "${parts[@]}"
}

if [ "${1:-}" = "--build-only" ]; then
    shift
    for image in "$@"; do build_image "$image"; done
    exit 0
fi
IMAGES=("${@:-current}")
[ "${IMAGES[0]}" = all ] && IMAGES=(current legacy)
for image in "${IMAGES[@]}"; do
    if [ "$image" = sagemaker ]; then sagemaker_check; else simulate "$image"; fi
done
