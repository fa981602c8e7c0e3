"""Several ASR models in one server (``ASR_MODELS``), chosen per request by name, loaded on first use and
unloaded when idle or when ``MAX_LOADED_MODELS`` needs room (least recently used first).

A model in use is never unloaded; concurrent first requests load it once (the others wait for that
load); a model that fails to load answers 503 naming it while the others keep serving (the load is
tried again after ``RETRY_LOAD_S``). Pinned models (``PRELOAD_MODELS``, by default the first) load at
start-up and stay. Unloading drops the last reference and returns freed heap to the system
(``malloc_trim``: glibc keeps freed arenas otherwise).
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict

from whisper_endpoint.adapters.errors import NotFoundError, NotReadyError
from whisper_endpoint.core import heap
from whisper_endpoint.core.errors import EndpointError

logger = logging.getLogger(__name__)

OPENAI_DEFAULT = "whisper-1"
# OpenAI's own transcription models: a client written for OpenAI sends one of them; here they mean the default.
OPENAI_MODELS = frozenset({OPENAI_DEFAULT, "gpt-4o-transcribe", "gpt-4o-mini-transcribe", "gpt-4o-transcribe-diarize"})
RETRY_LOAD_S = 60.0  # a model that failed to load is tried again after this long


class ModelEntry(BaseModel):
    """One ``ASR_MODELS`` entry: ``[name=]reference[?backend=...&compute_type=...]``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    reference: str
    asr_backend: Optional[Literal["auto", "ctranslate2", "transformers"]] = None
    compute_type: Optional[str] = None

    @classmethod
    def parse(cls, text: str) -> "ModelEntry":
        head, _, query = text.strip().partition("?")
        name, equals, reference = head.partition("=")
        if not equals:
            name, reference = head, head
        options: dict = {}
        for item in filter(None, query.split("&")):
            key, _, value = item.partition("=")
            key = {"backend": "asr_backend"}.get(key, key)
            if key not in ("asr_backend", "compute_type") or not value:
                raise ValueError(f"{text!r}: options are backend=... and compute_type=..., not {item!r}")
            options[key] = value
        if not name.strip() or not reference.strip():
            raise ValueError(f"{text!r} is not [name=]reference[?backend=...&compute_type=...]")
        return cls(name=name.strip(), reference=reference.strip(), **options)

    def settings_update(self) -> dict:
        """What this entry sets in ``ModelSettings``: its model, and its backend and compute type if given."""
        update = {"asr_model": self.reference, "asr_backend": self.asr_backend, "compute_type": self.compute_type}
        return {key: value for key, value in update.items() if value is not None}


def parse_models(value) -> list[ModelEntry]:
    """``ASR_MODELS``: comma-separated entries (or a list of them); names distinct, none of them whisper-1."""
    items = [item for item in value.split(",") if item.strip()] if isinstance(value, str) else list(value)
    entries = [item if isinstance(item, ModelEntry) else ModelEntry.parse(item) for item in items]
    names = [entry.name for entry in entries]
    if len(set(names)) != len(names):
        raise ValueError(f"model names must differ (ASR_MODELS names {', '.join(names)})")
    taken = sorted(OPENAI_MODELS & set(names))
    if taken:
        raise ValueError(f"{', '.join(taken)} always mean the first model (OpenAI's names); give it another name")
    return entries


class UnknownModelError(NotFoundError):
    code = "model_not_found"


def resolve(names: list[str], name: str | None) -> str:
    """The configured name a request's ``model`` means (none or one of OpenAI's: the first); 404 otherwise."""
    if name in names:
        return name
    if name in (None, "") or name in OPENAI_MODELS:
        return names[0]
    raise UnknownModelError(f"the model {str(name)[:100]!r} does not exist here; this server has "
                            f"{', '.join(names)} ({OPENAI_DEFAULT} means {names[0]})")


@dataclass
class _Slot:
    entry: ModelEntry
    pinned: bool
    handler: object | None = None
    users: int = 0
    last_used: float = 0.0
    loads: int = 0
    load_seconds: float | None = None
    failed: tuple[float, str] | None = None  # when, and the message
    lock: threading.Lock = field(default_factory=threading.Lock)  # one load at a time


class ModelPool:
    """``load(entry)`` makes a handler for an entry; ``preloaded``: handlers already made (tests share one)."""

    def __init__(self, entries: list[ModelEntry], load: Callable[[ModelEntry], object], *,
                 pinned: list[str] | None = None, max_loaded: int = 0, idle_unload_s: float = 0.0,
                 preloaded: dict[str, object] | None = None):
        pinned = [entries[0].name] if pinned is None else pinned
        unknown = sorted(set(pinned) - {entry.name for entry in entries})
        if unknown:
            raise ValueError(f"PRELOAD_MODELS names {', '.join(unknown)}, which ASR_MODELS does not")
        self._slots = {entry.name: _Slot(entry, entry.name in pinned) for entry in entries}
        for name, handler in (preloaded or {}).items():
            self._slots[name].handler, self._slots[name].last_used = handler, time.monotonic()
        self._load, self.max_loaded, self.idle_unload_s = load, max_loaded, idle_unload_s
        self._state = threading.Lock()  # guards users, last_used and handler across slots
        self.default = entries[0].name

    # --- names -----------------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return list(self._slots)

    def resolve(self, name: str | None) -> str:
        return resolve(self.names, name)

    def loaded(self, name: str) -> bool:
        return self._slots[name].handler is not None

    def handler_if_loaded(self, name: str):
        return self._slots[name].handler

    def stats(self) -> dict[str, dict]:
        return {name: {"loaded": slot.handler is not None, "loads": slot.loads, "load_seconds": slot.load_seconds,
                       "pinned": slot.pinned} for name, slot in self._slots.items()}

    # --- use -------------------------------------------------------------------------------------

    @contextmanager
    def using(self, name: str) -> Iterator[object]:
        """The model's handler, loaded if need be, kept loaded until the block ends (blocking: call off the loop)."""
        slot = self._slots[name]
        with self._state:
            slot.users += 1  # from here on, nothing unloads it
        try:
            handler = slot.handler if slot.handler is not None else self._load_slot(slot)
            yield handler
        finally:
            with self._state:
                slot.users -= 1
                slot.last_used = time.monotonic()

    def load_pinned(self) -> None:
        """Start-up: load the default (the server is ready once it is, pinned or not), then every pinned
        model; a failure raises (the server is not ready)."""
        for slot in self._slots.values():
            if (slot.pinned or slot.entry.name == self.default) and slot.handler is None:
                self._load_slot(slot, retry=True)

    def _load_slot(self, slot: _Slot, retry: bool = False):
        with slot.lock:  # concurrent first users: one loads, the others wait here and find it loaded
            if slot.handler is not None:
                return slot.handler
            if slot.failed and not retry and time.monotonic() - slot.failed[0] < RETRY_LOAD_S:
                raise NotReadyError(slot.failed[1], code="model_load_failed", retry_after=int(RETRY_LOAD_S))
            self._make_room(slot)
            started = time.perf_counter()
            try:
                handler = self._load(slot.entry)
            except Exception as exc:
                message = f"the model {slot.entry.name!r} failed to load" + (
                    f": {exc.message}" if isinstance(exc, EndpointError) else " (see the server log)")
                logger.error("model loading failed: %s", message, exc_info=not isinstance(exc, EndpointError))
                slot.failed = (time.monotonic(), message)
                raise NotReadyError(message, code="model_load_failed", retry_after=int(RETRY_LOAD_S)) from exc
            slot.load_seconds, slot.failed = round(time.perf_counter() - started, 3), None
            slot.loads += 1
            with self._state:
                slot.handler, slot.last_used = handler, time.monotonic()
            logger.info("model %s loaded in %.1f s", slot.entry.name, slot.load_seconds)
            return handler

    # --- unloading -------------------------------------------------------------------------------

    def _make_room(self, incoming: _Slot) -> None:
        """Before a load: unload the least recently used idle, unpinned models past ``MAX_LOADED_MODELS``."""
        if not self.max_loaded:
            return
        while True:
            with self._state:
                loaded = [slot for slot in self._slots.values() if slot.handler is not None and slot is not incoming]
                if len(loaded) < self.max_loaded:
                    return
                idle = [slot for slot in loaded if not slot.users and not slot.pinned]
                if not idle:  # every loaded model is in use or pinned: go over the bound rather than fail
                    logger.warning("MAX_LOADED_MODELS=%d exceeded loading %s: the others are in use or pinned",
                                   self.max_loaded, incoming.entry.name)
                    return
                victim = min(idle, key=lambda slot: slot.last_used)
                victim.handler = None
            logger.info("model %s unloaded to make room for %s", victim.entry.name, incoming.entry.name)
            release_memory()

    def unload_idle(self, now: float | None = None) -> list[str]:
        """Unload the unpinned models unused for ``MODEL_IDLE_UNLOAD_S`` (0: never); the names unloaded."""
        if not self.idle_unload_s:
            return []
        now = time.monotonic() if now is None else now
        with self._state:
            done = []
            for name, slot in self._slots.items():
                if slot.handler is not None and not slot.users and not slot.pinned \
                        and now - slot.last_used >= self.idle_unload_s:
                    slot.handler = None
                    done.append(name)
        if done:
            logger.info("models unloaded after %.0f s idle: %s", self.idle_unload_s, ", ".join(done))
            release_memory()
        return done

    def start_idle_sweeper(self, stop: threading.Event) -> None:
        if not self.idle_unload_s:
            return
        period = max(0.1, min(self.idle_unload_s / 4, 10.0))

        def sweep() -> None:
            while not stop.wait(period):
                self.unload_idle()

        threading.Thread(target=sweep, name="model-idle-unload", daemon=True).start()


def release_memory() -> None:
    """Collect the dropped model, then give freed heap back to the system (glibc's malloc_trim)."""
    heap.release()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass
