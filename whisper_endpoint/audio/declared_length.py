"""The length an audio file's header declares, and the warning when it decodes to less.

A file that decodes to less audio than its header declares (FLAC's STREAMINFO total samples, a WAV
data chunk's size, an MP4 track's or a Matroska segment's duration, an MP3 Xing/VBRI frame count)
was cut short, typically an incomplete upload: what decodes is transcribed, and ``Audio.warnings``
names both lengths. A warning, not an error: the transcript of what arrived is right, and a refusal
would throw it away. Files that declare no length (MediaRecorder's WebM, streamed FLAC whose total
is 0, Ogg, ADTS, whose FFmpeg durations are estimates) are never flagged.
"""

from __future__ import annotations

TRUNCATION_TOLERANCE_S = 0.5  # codec delay and padding stay under 0.3 s (AAC priming at 8 kHz)


def truncation_warnings(data: bytes, container, stream, decoded: float) -> tuple[str, ...]:
    """A warning naming both lengths when ``decoded`` seconds fall short of what the header declares."""
    declared = _declared_seconds(data, container, stream)
    if declared is None or decoded + TRUNCATION_TOLERANCE_S >= declared:
        return ()
    return (
        (
            f"the file declares {declared:.2f} s of audio but only {decoded:.2f} s decode (a truncated file or "
            f"an incomplete upload?): the transcript covers those {decoded:.2f} s"
        ),
    )


def _declared_seconds(data: bytes, container, stream) -> float | None:
    """The length the file's header declares, for the formats that declare one (FFmpeg's durations of
    the others are estimates from what is there, or from the bit rate)."""
    name = container.format.name
    if name == "wav":  # FFmpeg clamps the data chunk's size to the bytes present: read the header
        return _wav_declared_seconds(data)
    if name == "matroska,webm":
        return container.duration / 1e6 if container.duration is not None else None
    declares = name in ("flac", "mov,mp4,m4a,3gp,3g2,mj2") or (name == "mp3" and _mp3_has_length_tag(data))
    if declares and stream.duration is not None:
        return float(stream.duration * stream.time_base)
    return None


def _wav_declared_seconds(data: bytes) -> float | None:
    """The data chunk's size over the byte rate; None for streamed WAV (size 0 or 0xFFFFFFFF) and RF64."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    position, byte_rate = 12, 0
    while position + 8 <= len(data):
        chunk, size = data[position : position + 4], int.from_bytes(data[position + 4 : position + 8], "little")
        if chunk == b"fmt " and size >= 12:
            byte_rate = int.from_bytes(data[position + 16 : position + 20], "little")
        elif chunk == b"data":
            return size / byte_rate if byte_rate and size not in (0, 0xFFFFFFFF) else None
        position += 8 + size + (size & 1)  # chunks are padded to even sizes
    return None


def _mp3_has_length_tag(data: bytes) -> bool:
    """A Xing/Info or VBRI tag (frame count) in the first frame, after any ID3v2 tag."""
    start = 0
    if data[:3] == b"ID3" and len(data) >= 10:
        start = 10 + ((data[6] & 0x7F) << 21 | (data[7] & 0x7F) << 14 | (data[8] & 0x7F) << 7 | (data[9] & 0x7F))
    head = data[start : start + 256]
    return any(tag in head for tag in (b"Xing", b"Info", b"VBRI"))
