"""Result files: where each goes, how it is written (atomically) and what marks it done or failed.

For an input ``a/b.flac`` the results are ``a/b.flac.json`` (the handler's response, always; written
last, so its existence means the file is done), optionally any format of ``whisper_endpoint.formats``
(``.srt``, ``.vtt``, ``.txt``, ``.tsv``, ``.rttm``...), and on failure ``a/b.flac.error.json``. The
input's full name is kept, so ``b.flac`` and ``b.wav`` differ.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from whisper_endpoint import formats
from whisper_endpoint.adapters.http import dumps

# "json" is the handler's own response; the others are formats.FORMATS (OpenAI's "json" and "text" bodies
# are responses, not files: the handler's response and "txt" say more).
FORMATS = ("json", *(name for name in formats.FORMATS if name not in ("json", "text")))
ERROR_SUFFIX = ".error.json"


def result_path(out_dir: Path, relative: str, fmt: str = "json") -> Path:
    extension = "json" if fmt == "json" else formats.FORMATS[fmt].extension
    return out_dir / f"{relative}.{extension}"


def error_path(out_dir: Path, relative: str) -> Path:
    return out_dir / f"{relative}{ERROR_SUFFIX}"


def write_atomic(path: Path, text: str) -> None:
    """Write to a temporary file in the same folder, then rename: readers see all or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def render(result: dict, fmt: str, file_id: str, parameters: dict | None = None) -> str:
    if fmt == "json":
        return dumps(result, indent=1) + "\n"
    context = formats.Context(file_id=file_id, subtitles=formats.subtitle_options(parameters or {}))
    body = formats.render(result, fmt, context).body
    return body if isinstance(body, str) else dumps(body, indent=1) + "\n"


def write_results(out_dir: Path, relative: str, result: dict, formats: list[str], parameters: dict | None = None) -> None:
    """The extra formats first and the JSON last: once the JSON exists, everything is there. ``parameters``
    are the request's (the subtitle options)."""
    file_id = Path(relative).name
    for fmt in formats:
        if fmt != "json":
            write_atomic(result_path(out_dir, relative, fmt), render(result, fmt, file_id, parameters))
    write_atomic(result_path(out_dir, relative), render(result, "json", file_id))
    error_path(out_dir, relative).unlink(missing_ok=True)  # an earlier failure is now history


def write_failure(out_dir: Path, relative: str, path: str, error: dict) -> None:
    record = json.dumps({"file": path, **error}, ensure_ascii=False, indent=1) + "\n"
    write_atomic(error_path(out_dir, relative), record)

