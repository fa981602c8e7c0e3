"""The transcribe command's progress bar: drawn on a terminal for audio longer than a window, from the
handler's own progress reports; never where no one can see it, nor when asked not to."""

import io

from support.paths import AUDIO
from whisper_endpoint.cli.progress import FileProgress
from whisper_endpoint.core.decode_context import DecodeContext

MEETING = AUDIO / "dialogues" / "flite_meeting.flac"  # 36 s: two windows


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _transcribed(handler, progress: FileProgress) -> dict:
    try:
        return handler.run({"inputs": MEETING.read_bytes()}, progress.listen(DecodeContext()))
    finally:
        progress.close()


def test_a_terminal_sees_the_windows_the_stage_and_the_audio_done(tiny_handler):
    screen = Terminal()
    result = _transcribed(tiny_handler, FileProgress("flite_meeting.flac", enabled=True, stream=screen))
    drawn = screen.getvalue()
    assert "flite_meeting.flac" in drawn and "2/2" in drawn and "words" in drawn
    last = max(chunk["timestamp"][1] for chunk in result["chunks"])
    assert f"0:{int(last):02d} of audio done" in drawn  # the last segment's end, as m:ss


def test_no_bar_off_a_terminal_or_when_asked_not_to(tiny_handler):
    off_terminal = FileProgress("x", enabled=True, stream=io.StringIO())
    not_asked = FileProgress("x", enabled=False, stream=Terminal())
    tiny_handler.run({"inputs": MEETING.read_bytes()}, off_terminal.listen(not_asked.listen(DecodeContext())))
    assert off_terminal.stream.getvalue() == not_asked.stream.getvalue() == ""
