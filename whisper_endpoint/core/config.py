"""Settings (from the environment, read once at start-up) and per-request inference options.

``ModelSettings`` says which models to load and how; ``InferenceConfig`` is what one request may ask
for. Both validate everything and say what would have been valid.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, ClassVar, Literal, Optional

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from whisper_endpoint.core import bounded_json
from whisper_endpoint.core.languages import normalize_language
from whisper_endpoint.core.subtitle_options import SubtitleOptions
from whisper_endpoint.core.types import SAMPLE_RATE

DEFAULT_ASR_MODEL = "embedded:base"
MAX_CHANNELS = 8  # of a multichannel request (from_array takes as many for a down-mix)
ChannelName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
MAX_KNOWN_SPEAKERS = 8  # names per request
MAX_CLIPS_PER_SPEAKER = 3
# Unmatched clusters keep these labels, so a known speaker may not be called one of them.
_RESERVED_NAME = re.compile(r"SPEAKER_\d+")


def _not_reserved(name: str) -> str:
    if _RESERVED_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is the label of an unnamed speaker; choose another name")
    if any(not character.isprintable() for character in name):  # would break srt, txt and rttm lines
        raise ValueError("a speaker name may not hold line breaks, tabs or other control characters")
    return name


SpeakerName = Annotated[ChannelName, AfterValidator(_not_reserved)]


def _text_list(value: str, name: str, expected: str) -> list:
    """A list parameter sent as text (query string, form fields): a JSON list or comma-separated values,
    its length and depth bounded before it is parsed (core/bounded_json.py); ``ValueError`` otherwise."""
    text = value.strip()
    try:
        if text.startswith("["):
            return bounded_json.loads(text, name)
        bounded_json.check(text, name, max_depth=None, max_length=bounded_json.PARAMETER_MAX_LENGTH)
    except bounded_json.JSONValueError as exc:
        raise ValueError(f"{exc.problem}; send {expected}") from None
    return text.split(",")


class KnownSpeaker(BaseModel):
    """One enrolled voice of a request: a name and 1-3 clips (base64 or data URLs) of that voice alone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: SpeakerName
    audio: list[str] = Field(min_length=1, max_length=MAX_CLIPS_PER_SPEAKER)

    @field_validator("audio", mode="before")
    @classmethod
    def _one_or_more(cls, value):
        return [value] if isinstance(value, str) else value


def cache_root() -> Path:
    """Where the project keeps what it makes (models, the jobs database, the speaker library) unless told
    otherwise: ``$XDG_CACHE_HOME/whisper-endpoint``, by default ``~/.cache/whisper-endpoint``."""
    import os

    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "whisper-endpoint"


class ModelSettings(BaseSettings):
    """Which models to load, on what, and how. Read from environment variables (names in capitals)."""

    model_config = SettingsConfigDict(populate_by_name=True, extra="ignore")

    asr_model: str = Field(
        DEFAULT_ASR_MODEL,
        description="Hub id, local directory, or embedded:tiny.en / embedded:base (or a model stored in the endpoint "
        "repository, which then is the default).",
    )
    assistant_model: Optional[str] = Field(
        None, description="Assistant for speculative decoding (transformers backend); off when unset."
    )
    diarization_model: Optional[str] = Field(
        None, description="'embedded', a pyannote Hub pipeline id, or a local pipeline directory / config.yaml; "
        "off when unset."
    )
    # The toolkit exports HF_HUB_TOKEN; users usually set HF_TOKEN. Accept both, never print either.
    hf_token: Optional[SecretStr] = Field(
        None, validation_alias=AliasChoices("HF_TOKEN", "HF_HUB_TOKEN", "hf_token"),
        description="For gated or private Hub models; a secret, never logged.",
    )
    asr_backend: Literal["auto", "ctranslate2", "transformers"] = Field(
        "auto",
        description="auto: ctranslate2 for CTranslate2 models (embedded ones included), transformers otherwise.",
    )
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: cuda when available, else cpu.")
    compute_type: Literal[
        "auto", "int8", "int8_float16", "int8_float32", "int8_bfloat16", "float16", "bfloat16", "float32"
    ] = Field(
        "auto",
        description="auto: int8 (ctranslate2) / float32 (transformers) on CPU, float16 on CUDA.",
    )
    cpu_threads: int = Field(0, ge=0, le=256, description="0 lets the backend decide.")
    diarization_threads: int = Field(
        0, ge=0, le=256,
        description="torch threads per diarization; 0: one up to 4 cores, a quarter of the cores beyond "
        "(at most 4; whisper_endpoint/core/threads.py).",
    )
    diarization_alongside_s: float = Field(
        1800.0, ge=0,
        description="Audio up to this long is diarized on a thread of its own while the ASR decodes, where a core "
        "is left beside the diarizer's threads (whisper_endpoint/speakers/alongside.py): about the ASR's wall time "
        "instead of both added, for the diarizer's working memory on top of the ASR's; longer audio, or 0, is "
        "diarized after the ASR (the same output).",
    )
    num_workers: int = Field(
        1, ge=1, le=64,
        description="ctranslate2: requests the one loaded model decodes in parallel (CTranslate2 workers; "
        "each extra one holds its own buffers, not another copy of the weights). The server and Ray "
        "replicas set it to their decode concurrency unless NUM_WORKERS is set. About 29 MiB each once used.",
    )
    model_cache_dir: Path = Field(
        default_factory=cache_root,
        description="Where embedded models are assembled ($XDG_CACHE_HOME is honoured).",
    )
    max_audio_seconds: float = Field(
        4 * 3600.0, gt=0, description="Longest decoded audio accepted; decoding stops past it. Audio past 1.5 "
        "blocks is decoded in blocks (BLOCK_SECONDS): its memory stops growing there, its samples take 3.66 MiB "
        "of temporary disk per minute (docs/long_recordings.md)."
    )
    block_seconds: float = Field(
        600.0, ge=0,
        description="Audio longer than 1.5 blocks is decoded in blocks of about this length "
        "(whisper_endpoint/blocks/): held on disk, one block in memory at a time, the speakers linked across "
        "blocks; a job keeps each finished block and resumes after the last one. 0: always whole. At least 10.",
    )
    max_batch_size: Optional[int] = Field(
        None,
        ge=1,
        le=256,
        description="Most windows decoded at once (a request's batch_size is capped by it); unset: the "
        "device's default (core/device.py): 8 on CPU and 24 on CUDA; each window encoded at once holds 91 MiB for "
        "embedded:base on CPU.",
    )
    speakers_dir: Optional[Path] = Field(
        None, description="Known speakers: one folder per name holding 2-30 s clips of that voice, embedded at "
        "start-up (needs DIARIZATION_MODEL); a request's known_speakers win on a name clash.",
    )

    @field_validator("block_seconds")
    @classmethod
    def _block(cls, value: float) -> float:
        if 0 < value < 10:
            raise ValueError(f"BLOCK_SECONDS must be 0 (never in blocks) or at least 10, got {value:g}")
        return value

    def with_workers_for(self, concurrency: int) -> "ModelSettings":
        """These settings with one CTranslate2 worker per concurrent request, unless NUM_WORKERS was set."""
        if "num_workers" in self.model_fields_set:
            return self
        return self.model_copy(update={"num_workers": concurrency})


class InferenceConfig(SubtitleOptions):
    """Options of one request (``parameters``). Unknown keys are ignored and reported in ``warnings``.

    The one definition of what a request may ask for: the request flow, the backends and the
    diarization step all read this object (frozen: a step that needs other options makes a
    ``model_copy(update=...)``). Adding a parameter is one field here, the code that reads it, and
    its description, from which docs/parameters.md's table is generated (``python -m scripts.generate_docs``).
    """

    model_config = ConfigDict(extra="ignore", frozen=True)
    # Fields no step of the handler reads because the renderers consume them (srt and vtt cues).
    ROUTE_ONLY: ClassVar[frozenset[str]] = frozenset(SubtitleOptions.model_fields)

    task: Literal["transcribe", "translate"] = Field(
        "transcribe", description="translate: into English (multilingual models only)."
    )
    batch_size: int = Field(
        24, ge=1, le=256, description="Windows decoded at once on long audio; at most MAX_BATCH_SIZE (lowered, with "
        "a warning, when asked for more). transformers: on CUDA only (a CPU decodes its windows one at a time), 1 "
        "with the assistant.",
    )
    assisted: bool = Field(
        False, description="Speculative decoding (transformers backend with ASSISTANT_MODEL; greedy, with "
        "return_timestamps none).",
    )
    chunk_length_s: int = Field(
        30, ge=1, le=30, description="The longest window on long audio (Whisper's window is 30 s at most); under 15 "
        "it is raised to 15, since each window costs a full 30 s encoder pass.",
    )
    sampling_rate: int = Field(
        SAMPLE_RATE, ge=1000, le=384000, description="Rate of an array input; files carry their own."
    )
    language: Optional[str] = Field(
        None, description="Code or English name (ja, japanese, mandarin...); none or auto detects it."
    )
    languages: Optional[list[str]] = Field(
        None, min_length=1, max_length=20,
        description="The languages the audio may be in (codes or names, e.g. ['nl', 'en']; as text a JSON list or "
        "comma-separated): detection picks among them, per segment when several are spoken (docs/languages.md); "
        "one value is the same as language.",
    )
    num_speakers: Optional[int] = Field(None, ge=1, le=100, description=(
        "Diarization: the number of speakers. Without it the diarizer counts, and the warnings say when "
        "its count was uncertain (\"the speaker count is uncertain: ...\")."))
    min_speakers: Optional[int] = Field(None, ge=1, le=100, description="Diarization: at least this many (<= max).")
    max_speakers: Optional[int] = Field(None, ge=1, le=100, description="Diarization: at most this many.")
    beam_size: int = Field(
        1, ge=1, le=10, description="1: greedy, as the reference handler; 2-5 trade speed for quality. Unset: "
        "greedy within one 30 s window, a beam of 3 over longer audio (docs/long_form_accuracy.md); "
        "beam_size 1 keeps long audio greedy."
    )
    return_timestamps: Literal["none", "segment", "word"] = Field(
        "segment", description="What chunks are: segments, words, or none (true / false accepted)."
    )
    initial_prompt: Optional[str] = Field(
        None, max_length=2000, description="Text that primes vocabulary and style; Whisper keeps its last 223 tokens "
        "(longer prompts are trimmed, with a warning); the text of a control token such as <|endoftext|> is a 422.",
    )
    vad_filter: bool = Field(
        False, description="Drop non-speech before decoding (short audio; long audio always runs through the VAD)."
    )
    temperature: float = Field(
        0.0, ge=0.0, le=1.0,
        description="0: greedy, with the backend's fallback schedule (ctranslate2: 0.2, 0.4... when a window's text "
        "repeats or is unlikely; transformers: only for a window decoded again); > 0: sampled at this temperature. "
        "OpenAI's temperature field.",
    )
    hotwords: Optional[str] = Field(
        None, max_length=1000, description="Words to favour (names, terms): faster-whisper's hotwords; transformers: "
        "a prompt before initial_prompt. Both share Whisper's 223-token prompt budget, the hotwords first.",
    )
    condition_on_previous_text: bool = Field(
        True, description="Sequential decoding: each window sees the text before it (false: less repetition). Long "
        "audio is decoded in independent batched windows on both backends (a warning when set).",
    )
    no_speech_threshold: float = Field(
        0.6, ge=0.0, le=1.0,
        description="Whisper's rule: a window whose no-speech probability is above it and whose average "
        "log-probability is under -1 is skipped (also by drop_non_speech after any decode).",
    )
    return_confidence: bool = Field(
        False, description="Chunks carry Whisper's confidence: words 'probability'; segments 'avg_logprob', "
        "'no_speech_prob', 'compression_ratio', 'temperature'; word chunks come with 'segments' beside them. "
        "Always on in OpenAI's verbose_json.",
    )
    drop_non_speech: bool = Field(
        True,
        description="No words over silence, noise or music: nothing is decoded when the VAD finds no speech, and "
        "words outside its speech (or in segments Whisper marks as no speech) are dropped; false keeps all "
        "Whisper decodes.",
    )
    recover_dropped_speech: bool = Field(
        True,
        description="Long audio (ctranslate2): decode once more, alone, the rest of any batched window whose "
        "transcript stopped early (batched decoding drops such utterances); one 30 s encoder pass per remainder.",
    )
    diarize: bool = Field(True, description="Label speakers when DIARIZATION_MODEL is set; false skips it.")
    return_speaker_turns: bool = Field(
        False, description="Also return the diarization's own turns (start, end, speaker), e.g. for RTTM."
    )
    return_speaker_words: bool = Field(False, description="Add each word with its speaker to 'speakers'.")
    multichannel: bool = Field(
        False, description="Transcribe each channel of a 2- to 8-channel file on its own: one speaker per channel."
    )
    channel_names: Optional[list[ChannelName]] = Field(
        None, min_length=1, max_length=MAX_CHANNELS,
        description="Multichannel: one name per channel (default CHANNEL_0...); as text (query string, form "
        "fields) a JSON list or comma-separated names.",
    )
    diarize_channels: bool = Field(
        False, description="Multichannel: also diarize each channel (with DIARIZATION_MODEL set)."
    )
    known_speakers: Optional[list[KnownSpeaker]] = Field(
        None, min_length=1, max_length=MAX_KNOWN_SPEAKERS,
        description="With diarization: voices to name, [{'name', 'audio': base64 clip or list of 1-3}], clips "
        "(base64 or data URLs) of 2-30 s of that voice alone; speakers that match take the names.",
    )
    return_speaker_embeddings: bool = Field(
        False, description="Return one speaker embedding per speaker, with the embedding model's name."
    )
    speaker_library: bool = Field(
        True, description="Name the voices of the server's speaker library (/v1/speakers, SPEAKERS_DIR) when "
        "diarized; false: only this request's known_speakers.",
    )

    @field_validator("language", mode="before")
    @classmethod
    def _language(cls, value):
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("must be a language code or name, e.g. 'en' or 'english'")
        return normalize_language(value)

    @field_validator("languages", mode="before")
    @classmethod
    def _languages(cls, value):
        if isinstance(value, str):  # text-only routes: a JSON list or comma-separated codes
            value = _text_list(value, "languages", "a JSON list of language codes or comma-separated codes")
        if not isinstance(value, list) or not all(isinstance(code, str) for code in value):
            raise ValueError("must be a list of language codes or names, e.g. ['nl', 'en']")
        codes = [normalize_language(code) for code in value]
        if None in codes:
            raise ValueError("'auto' is not a language: leave languages unset to detect among all")
        return list(dict.fromkeys(codes))

    @model_validator(mode="after")
    def _one_language(self):
        # One allowed language is that language; with language given, it must be one of them.
        if self.languages is None:
            return self
        if self.language is not None and self.language not in self.languages:
            raise ValueError(f"language {self.language!r} is not among languages {self.languages}")
        if len(self.languages) == 1 and self.language is None:
            object.__setattr__(self, "language", self.languages[0])
        return self

    @field_validator("channel_names", mode="before")
    @classmethod
    def _channel_names(cls, value):
        # Text-only routes (query string, OpenAI form fields) send a JSON list or comma-separated names.
        if isinstance(value, str):
            return _text_list(value, "channel_names", "a JSON list of names or comma-separated names")
        return value

    @field_validator("channel_names")
    @classmethod
    def _distinct_names(cls, names):
        if names is not None and len(set(names)) != len(names):
            raise ValueError("channel names must differ from each other")
        return names

    @field_validator("known_speakers")
    @classmethod
    def _distinct_speakers(cls, speakers):
        names = [speaker.name for speaker in speakers or []]
        if len(set(names)) != len(names):
            raise ValueError("each known speaker needs a name of its own (a name appears twice)")
        return speakers

    @field_validator("return_timestamps", mode="before")
    @classmethod
    def _timestamps(cls, value):
        # transformers' pipeline convention: True means segment-level, False none.
        if value is True:
            return "segment"
        if value is False or value is None:
            return "none"
        return value

    @model_validator(mode="after")
    def _speaker_bounds(self):
        low, high, exact = self.min_speakers, self.max_speakers, self.num_speakers
        if low is not None and high is not None and low > high:
            raise ValueError(
                f"min_speakers must be smaller than or equal to max_speakers (here: {low} > {high})"
            )
        if exact is not None and (
            (low is not None and exact < low) or (high is not None and exact > high)
        ):
            raise ValueError(
                f"num_speakers={exact} lies outside min_speakers..max_speakers ({low}..{high})"
            )
        return self

    @classmethod
    def known_fields(cls) -> frozenset[str]:
        return frozenset(cls.model_fields)
