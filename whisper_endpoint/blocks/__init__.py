"""Long recordings in blocks: bounded memory, and jobs that resume after their last finished block.

A mono recording longer than 1.5 blocks (``BLOCK_SECONDS``, 600 s by default) is decoded to a temporary
file (``audio/spool.py``) and cut into blocks of equal length, each cut moved to the quietest 100 ms
near it (``plan.py``). Each block goes through the request's usual steps on its own: the ASR with the
diarization alongside it. Only its words, its speaker turns and one voice per speaker (a CAM++ centroid)
are kept, so what the request holds at once is one block's working set, whatever the length.

The speakers are then decided over the whole recording: the blocks' voices are grouped by similarity
(``linking.py``), two voices of one block never together, and the speaker counts asked for apply to the
groups. Names from the speaker library, the response and every format come after, as for a recording
decoded whole (``runner.py``).

A job keeps each finished block's result in its store (``saved.py``, ``DecodeContext.checkpoints``): a job
taken over by another server after its first one died starts after the last block kept.
"""
