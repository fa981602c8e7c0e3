"""A running job's finished blocks in its store (``DecodeContext.checkpoints``, whisper_endpoint/blocks/):
what lets another server resume the job after the last block kept instead of starting it again.

Called on the decoding thread, never on the event loop. A block is kept only while this server holds the
job's lease (a server that lost it must not write over the one that took it over)."""

from __future__ import annotations

import logging

from whisper_endpoint.jobs.store import JobStore

logger = logging.getLogger(__name__)


class KeptBlocks:
    def __init__(self, store: JobStore, job_id: str, owner: str):
        self.store, self.job_id, self.owner = store, job_id, owner

    def load(self, index: int, key: str) -> dict | None:
        body = self.store.load_block(self.job_id, index, key)
        if body is not None:
            logger.info("job %s: block %d taken from the store, not decoded again", self.job_id, index)
        return body

    def other_key(self, index: int, key: str) -> str | None:
        """The key of the block kept at ``index`` when it is not ``key`` (None: none kept, or under ``key``): a
        block decoded by other models, or for other samples, which is decoded again."""
        kept = self.store.block_key(self.job_id, index)
        if kept is None or kept == key:
            return None
        logger.info("job %s: block %d was kept under another key: decoded again", self.job_id, index)
        return kept

    def save(self, index: int, key: str, body: dict) -> None:
        if not self.store.save_block(self.job_id, self.owner, index, key, body):
            logger.info("job %s: block %d not kept: this server no longer holds the job", self.job_id, index)
