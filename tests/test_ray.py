"""Scale-out on Ray, on a single-node cluster on loopback (2 CPUs, shared by the module's tests):
Ray Serve replicas of the handler answering concurrent requests, and the batch command's --ray mode
writing exactly what the single-process mode writes.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from support.paths import CLIPS
from support.audio import read_clip
from support.serving import CLIP, TEXT, free_port
from whisper_endpoint.batch import collect, run_batch

# Ray's own modules warn about their deprecated pydantic and config use; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def ray_cluster():
    """One local cluster for the module: Ray's start-up takes tens of seconds on 2 cores."""
    with pytest.MonkeyPatch.context() as patch:
        # What the workers load: the small model, one thread each.
        patch.setenv("ASR_MODEL", "embedded:tiny.en")
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.delenv("RAY_USAGE_STATS_ENABLED", raising=False)
        from whisper_endpoint.scale.cluster import connect

        ray = connect("local", num_cpus=2)
        assert os.environ["RAY_USAGE_STATS_ENABLED"] == "0"  # our default: no usage statistics
        yield ray
        ray.shutdown()


@pytest.fixture(scope="module")
def serve_url(ray_cluster):
    from ray import serve

    from whisper_endpoint.scale.serve_app import ScaleSettings, build

    # Two replicas at half a CPU each: with Ray Data's workers later, all fit in the 2 CPUs.
    settings = ScaleSettings(num_replicas=2, cpus_per_replica=0.5, host="127.0.0.1", port=free_port(),
                             max_ongoing_requests=2)
    serve.start(http_options={"host": settings.host, "port": settings.port})
    serve.run(build(settings), name=settings.name, route_prefix="/")
    yield f"http://{settings.host}:{settings.port}"
    serve.shutdown()


def test_two_replicas_serve_concurrent_requests(serve_url):
    clip = read_clip(CLIP)

    def post(_):
        return requests.post(f"{serve_url}/?return_timestamps=none", data=clip,
                             headers={"Content-Type": "audio/flac"}, timeout=120)

    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(post, range(8)))
    assert [r.status_code for r in responses] == [200] * 8
    assert {r.json()["text"] for r in responses} == {TEXT}
    assert len({r.headers["X-Replica"] for r in responses}) == 2  # both replicas did work


def test_serve_maps_client_errors_to_their_status(serve_url):
    response = requests.post(f"{serve_url}/", data=b"RIFF" + b"\1" * 200, headers={"Content-Type": "audio/wav"})
    assert (response.status_code, response.json()["code"]) == (415, "undecodable_audio")
    response = requests.post(f"{serve_url}/", data=read_clip(CLIP), params={"beam_size": "99"})
    assert (response.status_code, response.json()["code"]) == (422, "invalid_parameter")
    assert requests.get(f"{serve_url}/").status_code == 405


def test_ray_batch_mode_writes_what_the_single_process_mode_writes(ray_cluster, serve_url, tiny_handler, tmp_path):
    from whisper_endpoint.batch.ray_fan_out import RayFanOut

    inputs = tmp_path / "in"
    (inputs / "sub").mkdir(parents=True)
    for name in ("asterisk_all-circuits-busy-now.flac", "asterisk_vm-next.flac"):
        shutil.copy(CLIPS / name, inputs / name)
    shutil.copy(CLIPS / "asterisk_invalid.flac", inputs / "sub" / "asterisk_invalid.flac")
    (inputs / "sub" / "broken.wav").write_bytes(b"RIFF" + os.urandom(300))
    items = collect([str(inputs)])
    formats = ["json", "srt", "vtt"]
    local = run_batch(items, tmp_path / "local", tiny_handler, formats=formats, progress=False)
    fan_out = RayFanOut("local", workers=2, cpus_per_worker=0.5)
    spread = run_batch(items, tmp_path / "ray", formats=formats, progress=False, fan_out=fan_out)
    assert (spread.done, spread.failed) == (local.done, local.failed) == (3, 1)
    written = {p.relative_to(tmp_path / "local") for p in (tmp_path / "local").rglob("*") if p.is_file()}
    assert written == {p.relative_to(tmp_path / "ray") for p in (tmp_path / "ray").rglob("*") if p.is_file()}
    assert len(written) == 3 * 3 + 1
    for relative in written:
        assert (tmp_path / "ray" / relative).read_bytes() == (tmp_path / "local" / relative).read_bytes(), relative
    rerun = run_batch(items, tmp_path / "ray", formats=formats, progress=False, fan_out=fan_out)
    assert (rerun.done, rerun.failed, rerun.skipped) == (0, 0, 4)


def test_scale_settings_become_ray_serve_options(monkeypatch):
    from whisper_endpoint.scale.serve_app import ScaleSettings

    monkeypatch.setenv("ASR_MODEL", "embedded:tiny.en")
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value_never_forwarded")
    monkeypatch.setenv("SCALE_GPUS_PER_REPLICA", "0.5")
    fixed = ScaleSettings(num_replicas=3).deployment_options()
    assert fixed["num_replicas"] == 3 and "autoscaling_config" not in fixed
    assert (fixed["ray_actor_options"]["num_cpus"], fixed["ray_actor_options"]["num_gpus"]) == (1.0, 0.5)
    env = fixed["ray_actor_options"]["runtime_env"]["env_vars"]
    assert env["ASR_MODEL"] == "embedded:tiny.en" and "HF_TOKEN" not in env
    scaling = ScaleSettings(min_replicas=0, max_replicas=4).deployment_options()
    assert scaling["autoscaling_config"]["min_replicas"] == 0 and "num_replicas" not in scaling
    with pytest.raises(ValueError, match="SCALE_MAX_REPLICAS"):
        ScaleSettings(min_replicas=1)
