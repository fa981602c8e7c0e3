"""A window decoded into a loop (or into far too few words) is found and decoded again (issue 57)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from whisper_endpoint.asr.long_form import failed_windows, recovery
from whisper_endpoint.asr.long_form.failed_windows import Decoded, failure
from whisper_endpoint.asr.long_form.windows import Window

# What the base model gave for one 31 s window of a 154 s Dutch dialogue (issue 57), shortened.
BOVENOP = ("Ik begin ze nou toch wel aardig te vinden. Als ze maar niet van die dingen"
           + " bovenop" * 40)
DUTCH = ("Greenpeace zou hier eens moeten komen kijken. Dit zouden die lui van Three Mile Island moeten zien, "
         "zeg. Maar wat moeten wij ermee? Laten we ze allemaal uitroeien. Zulke misbaksels hebben niet het recht "
         "om dezelfde lucht, uh, hetzelfde water te ademen als wij. Dat is gemeen! Ik denk bovendien dat we de "
         "oorzaak moeten aanpakken, niet de gevolgen.")
# Lists that repeat without looping (audio/stress/stress_en_inventory, stress_en_readback), as Whisper writes them.
ORDERS = " ".join(f"Order {n}." for n in range(4512, 4521))
COUNT = " ".join(f"{n}," for n in range(1, 21)) + " 20 pallets in total."
PHONES = ("The phone numbers for the suppliers are 555-0198 for screws and bolts, 555-0199 for tapes and glue, "
          "555-0200 for garden supplies and 555-0201 for lighting.")
SCHEDULE = ("Monday, two trucks in the morning and one truck in the afternoon. Tuesday, two trucks in the morning "
            "and one truck in the afternoon. Wednesday, two trucks in the morning and one truck in the afternoon.")
READBACK = ("Can you give me the reference again, slowly please? Yes. The reference is alpha, alpha, 7, 7, bravo, "
            "bravo, 3, 3. Alpha, alpha, 7, 7, bravo, bravo, 3, 3. Alpha, alpha, 7, 7, bravo, bravo, 3, 3. Is that "
            "right?")
# The base model's own text (stress_en_readback): "moves to gate" 10 times, said so.
GATES = ("Good, then I will read the gate changes once more, and please say them back to me, gate 12 moves to gate "
         "14, gate 14 moves to gate 16, gate 16 moves to gate 18, gate 18 moves to gate 20. Gate 12 moves to gate 14, "
         "gate 14 moves to gate 16, gate 16 moves to gate 18, gate 18 moves to gate 20. Correct, gate 20 moves to "
         "gate 22, and gate 22 is closed all day. Gate 20 moves to gate 22, and gate 22 is closed all day, "
         "understood, understood.")


@pytest.mark.parametrize("text", [BOVENOP, "Ik weet het niet. " * 8, "Thank you. " * 20])
def test_a_loop_fails(text):
    assert failure(Decoded(text, avg_logprob=-0.3, no_speech_prob=0.01, speech_s=30.0)) is not None


@pytest.mark.parametrize("text, speech_s", [(DUTCH, 20.0), (ORDERS, 9.0), (COUNT, 10.0), (PHONES, 10.0),
                                            (SCHEDULE, 12.0), (READBACK, 12.0), (GATES, 20.0)])
def test_speech_lists_and_repeats_that_are_said_pass(text, speech_s):
    assert failure(Decoded(text, avg_logprob=-0.4, no_speech_prob=0.02, speech_s=speech_s)) is None


def test_unlikely_text_fails_unless_the_window_is_likely_silence():
    assert failure(Decoded(DUTCH, avg_logprob=-1.3, no_speech_prob=0.1, speech_s=20.0)) is not None
    assert failure(Decoded(DUTCH, avg_logprob=-1.3, no_speech_prob=0.8, speech_s=20.0)) is None


def test_text_far_too_long_or_too_short_for_the_speech_fails():
    assert failure(Decoded(DUTCH, speech_s=5.0)) is not None  # 52 words in 5 s of speech
    assert failure(Decoded("Ja.", speech_s=25.0)) is not None  # 25 s of speech, one word: turns lost
    assert failure(Decoded("Ja.", speech_s=4.0)) is None  # a short window may hold one word
    assert failure(Decoded("Ja.")) is None  # speech not known: no rate test


def test_pieces_cut_at_pauses_within_the_length():
    cut = recovery.pieces(Window(0.0, 30.0), [3.0, 8.0, 12.0, 19.0, 25.0, 40.0])
    assert cut == [Window(0.0, 8.0), Window(8.0, 12.0), Window(12.0, 19.0), Window(19.0, 25.0), Window(25.0, 30.0)]
    assert recovery.pieces(Window(0.0, 30.0), []) == [Window(0.0, 30.0)]


def test_speech_without_pauses_is_cut_at_its_quietest_points():
    import numpy as np

    audio = np.ones(30 * 16000, dtype=np.float32)
    audio[round(8.5 * 16000): round(8.6 * 16000)] = 0.0  # a 0.1 s dip the VAD did not call a pause
    cuts = recovery.quiet_cuts(audio, Window(0.0, 30.0), pauses=[25.0])
    assert 8.5 <= cuts[0] < 8.6 and 25.0 in cuts
    pieces = recovery.pieces(Window(0.0, 30.0), cuts)
    assert len(pieces) == 4 and all(p.end - p.start <= recovery.PIECE_S for p in pieces)


def _segments(text):
    from whisper_endpoint.core.types import Segment

    return [Segment(0.0, 20.0, text, None, avg_logprob=-0.3, no_speech_prob=0.01)]


def test_recovery_decodes_the_pieces_once_and_says_when_they_failed():
    tried = []

    def decode(window):
        tried.append(window)
        return _segments(" Ja, dat klopt wel, dat weet ik heel zeker.")

    again = recovery.recover(Window(0.0, 20.0), _segments(BOVENOP), decode, [10.0], "loop")
    # the pieces only: the whole window decoded again first cost a window more and rarely mended a loop
    assert tried == [Window(0.0, 10.0), Window(10.0, 20.0)]
    assert again.recovered and again.kept == "pieces"
    assert [s.text for s in again.segments] == [" Ja, dat klopt wel, dat weet ik heel zeker."] * 2

    short = recovery.recover(Window(0.0, 8.0), _segments(BOVENOP), decode, [4.0], "loop")
    assert short.kept == "alone" and tried[-1] == Window(0.0, 8.0)  # too short to cut: decoded again whole

    stuck = recovery.recover(Window(0.0, 20.0), _segments(BOVENOP), lambda w: _segments(BOVENOP), [], "loop")
    assert not stuck.recovered and "bovenop" in stuck.segments[0].text


def test_only_a_failure_a_retry_can_mend_is_decoded_again():
    warnings = []
    unlikely = Decoded(DUTCH, avg_logprob=-1.3, no_speech_prob=0.1, speech_s=20.0)
    assert failure(unlikely) is not None and recovery.needed(unlikely, warnings) is None
    assert len(warnings) == 1 and "unlikely" in warnings[0] and "-1.30" in warnings[0]
    looped = Decoded(BOVENOP, avg_logprob=-1.3, no_speech_prob=0.1, speech_s=30.0)
    assert recovery.needed(looped, warnings) is not None and len(warnings) == 1
    dropped = Decoded("Ja.", avg_logprob=-1.3, speech_s=25.0)  # turns lost: the pieces find them
    assert recovery.needed(dropped, warnings) is not None
    assert recovery.needed(Decoded(DUTCH, avg_logprob=-0.4, speech_s=20.0), warnings) is None and len(warnings) == 1


def test_a_window_not_recovered_is_counted_and_said():
    decoding, warnings = {"windows_decoded_again": 0, "windows_not_recovered": 0}, []
    recovery.count(recovery.Recovered([], True, "loop", "alone"), decoding, warnings)
    recovery.count(recovery.Recovered([], False, "compression ratio 22.3 > 3.0", "pieces"), decoding, warnings)
    assert decoding == {"windows_decoded_again": 2, "windows_not_recovered": 1}
    assert len(warnings) == 1 and "compression ratio 22.3" in warnings[0]


def _planted_loop(monkeypatch, backend_module):
    """The batched decoder's first window says "the" 40 times: what the real model then does with it."""
    forward = backend_module.RequestPipeline.forward
    planted = []

    def looping(self, *args, **kwargs):
        outputs = forward(self, *args, **kwargs)
        if not planted and outputs and outputs[0]:
            outputs[0][0]["text"] = " the" * 40
            planted.append(True)
        return outputs

    monkeypatch.setattr(backend_module.RequestPipeline, "forward", looping)


CLIP = "asterisk_dictate_enter_filename.flac"  # 6.0 s: two windows of 4 s, or one of 30 s
CHEAP = {"return_timestamps": "none", "beam_size": 1}


def test_a_looped_batched_window_is_decoded_again(tiny_handler, short_windows, monkeypatch):
    from support.audio import read_clip
    from whisper_endpoint.asr.ctranslate2 import model

    _planted_loop(monkeypatch, model)
    looped = tiny_handler({"inputs": read_clip(CLIP), "parameters": {"chunk_length_s": 4, **CHEAP}})
    decoding = looped["decoding"]
    assert decoding["mode"] == "batched" and decoding["windows_decoded_again"] == 1
    assert decoding["windows_not_recovered"] == 0 and not looped["warnings"]
    assert " the the the" not in looped["text"]
    assert {"numeric", "dictation", "exit"} <= set(failed_windows.words(looped["text"]))  # the words are back


def test_a_looped_sequential_window_is_decoded_again(tiny_handler, monkeypatch):
    import dataclasses

    from support.audio import read_clip
    from whisper_endpoint.asr.ctranslate2 import sequential

    convert, planted = sequential.as_segment, []

    def looping(segment, language=None):  # the first segment decoded says "the" 40 times
        made = convert(segment, language)
        if planted:
            return made
        planted.append(True)
        return dataclasses.replace(made, text=" the" * 40)

    monkeypatch.setattr(sequential, "as_segment", looping)
    looped = tiny_handler({"inputs": read_clip(CLIP), "parameters": CHEAP})
    decoding = looped["decoding"]
    assert decoding["mode"] == "sequential" and decoding["windows_decoded_again"] == 1
    assert decoding["windows_not_recovered"] == 0 and " the the the" not in looped["text"]
    assert {"numeric", "dictation", "exit"} <= set(failed_windows.words(looped["text"]))


def test_text_without_spaces_is_not_counted_in_words():
    """Japanese (the meeting of audio/ja, 25 s of speech) has no spaces to count words by: the rate tests
    leave it alone, and a loop in it is still caught by its compression."""
    said = ("おはようございます。今日の会議を始めましょう。はい、まず、先月の売り上げについて報告します。"
            "お願いします。前年と比べてどうでしたか。前年より12%増えました。新しいプランガコーチョウです。"
            "会約率も少し下がっています。サポートの対応が早くなった体と思います。")
    assert failed_windows.failure(failed_windows.Decoded(said, -0.3, 0.01, 25.0)) is None
    assert failed_windows.failure(failed_windows.Decoded("はい、" * 40, -0.3, 0.01, 25.0)) is not None


def test_a_request_decodes_again_its_first_failed_window_then_a_share_of_its_windows():
    window, pauses = Window(0.0, 30.0), [10.0, 20.0]  # three pieces each
    short = recovery.Budget(windows=5)
    assert short.allows(window, pauses) and not short.allows(window, pauses)
    long = recovery.Budget(windows=20)  # 30% of 20 windows: six pieces, two windows' worth
    assert [long.allows(window, pauses) for _ in range(4)] == [True, True, False, False]
    decoding, warnings = {"windows_not_recovered": 1}, []
    long.report(decoding, warnings)
    assert decoding["windows_not_recovered"] == 3 and len(warnings) == 1 and warnings[0].startswith("2 window(s)")
    recovery.Budget(windows=20).report(decoding, warnings)
    assert len(warnings) == 1


def test_a_decode_kept_with_a_loop_has_the_loop_cut_to_its_first_saying():
    looped = [SimpleNamespace(start=0.0, end=20.0, text=BOVENOP, words=None),
              SimpleNamespace(start=20.0, end=22.0, text=" Thank you.", words=None),
              SimpleNamespace(start=22.0, end=24.0, text=" Thank you.", words=None),
              SimpleNamespace(start=24.0, end=26.0, text=" Ja, dat klopt.", words=None)]
    looped = [_dataclass(s) for s in looped]
    cut = recovery.without_loops(looped)
    assert [s.text for s in cut] == ["Ik begin ze nou toch wel aardig te vinden. Als ze maar niet van die dingen bovenop",
                                     " Thank you.", " Ja, dat klopt."]
    assert failure(Decoded("".join(s.text for s in cut), speech_s=26.0)) is None
    said = [_dataclass(SimpleNamespace(start=0.0, end=9.0, text=GATES, words=None))]
    assert recovery.without_loops(said) == said  # said repeats are not loops

    stuck = recovery.recover(Window(0.0, 20.0), _segments(BOVENOP), lambda w: _segments(BOVENOP), [], "loop")
    assert not stuck.recovered and stuck.segments[0].text.count("bovenop") == 1


def _dataclass(namespace):
    from whisper_endpoint.core.types import Segment

    return Segment(namespace.start, namespace.end, namespace.text, namespace.words)
