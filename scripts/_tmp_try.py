import numpy as np, time
from scripts.nonspeech_corpus import noise, band_music
from whisper_endpoint.audio import decode_file
from whisper_endpoint.config import ModelSettings
from whisper_endpoint.handler import EndpointHandler
from tests.conftest import read_clip
h = EndpointHandler(settings=ModelSettings(asr_model="embedded:tiny.en", asr_backend="transformers"))
clip = decode_file(read_clip("asterisk_transfer.flac"), max_seconds=60).samples
for name, pre in [("silence31", np.zeros(31*16000)), ("pink31", noise(31, 1, -25))]:
    s = np.concatenate([pre, clip, np.zeros(16000)]).astype(np.float32)
    for drop in (False, True):
        t=time.process_time()
        r = h({"inputs": {"array": s, "sampling_rate": 16000}, "parameters": {"return_timestamps": "word", "drop_non_speech": drop}})
        print(name, drop, round(time.process_time()-t,1), r["text"], [c["timestamp"] for c in r["chunks"]][:3], r["warnings"])
