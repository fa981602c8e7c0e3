"""Headerless audio a client declares: G.711 telephone audio, whose bytes say nothing of what they are.

The declarations (their bytes become a WAV file, ``audio.g711.as_wav``, decoded as any file is):
- ``audio/basic`` (RFC 2046): 8 kHz mu-law mono, no parameters;
- ``audio/pcmu``, ``audio/pcma`` (RFC 3551: mu-law, A-law), with ``rate`` (default 8000) and ``channels``
  (1 only);
- in a form, a file named ``*.ul`` or ``*.al`` (FFmpeg's and sox's names for raw mu-law and A-law)
  sent without a type of its own.

A declared body that starts with a file header is that file, left for FFmpeg to read as it is: a
Sun/NeXT ``.au`` file (what ``mimetypes`` calls audio/basic) or a WAV file (G.711 WAV files sent with
the type of their samples).

A declaration's kind travels as ``audio/pcmu;rate=8000`` (``declared_type``): jobs store it, and their
worker decodes the bytes as what they were sent as. A wrong declaration is a 415 that names its fault.
"""

from __future__ import annotations

from whisper_endpoint.adapters.errors import UnsupportedMediaTypeError
from whisper_endpoint.audio import g711

_LAWS = {"audio/basic": "mulaw", **g711.MEDIA_TYPES}
_EXTENSIONS = {".ul": "audio/pcmu", ".al": "audio/pcma"}
_FILE_MAGICS = (b".snd", b"RIFF")  # .au, WAV
_RATES = (4000, 48000)  # what a G.711 rate parameter may be (RTP's dynamic payloads run 8 to 48 kHz)
GENERIC = ("", "application/octet-stream", "binary/octet-stream")


def declared_type(content_type: str | None) -> str:
    """The bare media type, lower case; a G.711 type with its rate (``audio/pcma;rate=8000``).
    ``UnsupportedMediaTypeError`` for a G.711 declaration with parameters this server cannot honour."""
    bare, *parameters = (content_type or "").split(";")
    bare = bare.strip().lower()
    if bare not in _LAWS:
        return bare
    values = {}
    for item in parameters:
        name, _, value = item.partition("=")
        values[name.strip().lower()] = value.strip().strip('"')
    if bare == "audio/basic":
        if values:
            raise _unsupported(f"audio/basic is 8 kHz mu-law mono and takes no parameters (got {content_type!r}); "
                               "for another rate send audio/pcmu;rate=N")
        return bare
    channels = values.pop("channels", "1")
    if channels != "1":
        raise _unsupported(f"{bare}: channels={channels[:20]!r}: raw G.711 is taken as mono only (channels=1); "
                           "send a multichannel recording as a WAV file")
    rate = values.pop("rate", str(g711.RATE))
    if not rate.isdigit() or not _RATES[0] <= int(rate) <= _RATES[1]:
        raise _unsupported(f"{bare}: rate={rate[:20]!r}: the rate must be an integer in {_RATES[0]}..{_RATES[1]} Hz "
                           f"(G.711 is {g711.RATE})")
    if values:
        raise _unsupported(f"{bare}: unknown parameter {min(values)[:20]!r}; it takes rate and channels")
    return f"{bare};rate={int(rate)}"


def for_file_name(kind: str, name: str | None) -> str:
    """A form file's declared type: its own, or for a generic one the type its name's extension says."""
    if kind in GENERIC and name:
        for extension, raw in _EXTENSIONS.items():
            if name.lower().endswith(extension):
                return f"{raw};rate={g711.RATE}"
    return kind


def as_file(body: bytes, kind: str) -> bytes:
    """The bytes a decoder reads: G.711 declared by ``kind`` (from ``declared_type``) as a WAV file,
    anything else as it came."""
    bare, _, rate = kind.partition(";rate=")
    law = _LAWS.get(bare)
    if law is None or body.startswith(_FILE_MAGICS):
        return body
    return g711.as_wav(body, law, int(rate or g711.RATE))


def _unsupported(message: str) -> UnsupportedMediaTypeError:
    return UnsupportedMediaTypeError(f"unsupported Content-Type: {message}")
