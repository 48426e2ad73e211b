"""ASR backends: faster-whisper on real espeak-ng speech; the whisperx glue that runs without whisperx."""
import importlib.util

import pytest

from core.config.perception import ASRConfig
from perception.asr import ASRError, Segment, build_asr, segments_to_text
from perception.asr.whisperx import segments_from_whisperx
from perception.audio import decode_audio
from tests.perception.perception_media import speech_wav, word_error_rate

SPOKEN = ("Remember to pick up the dry cleaning before six. "
          "The pharmacy on Main Street closes early on Saturday.")


def test_word_error_rate():
    assert word_error_rate("the cat sat", "The cat sat.") == 0.0
    assert word_error_rate("the cat sat", "the sat") == pytest.approx(1 / 3)
    assert word_error_rate("a b", "a x b y") == 1.0


@pytest.mark.slow
def test_faster_whisper_transcribes_espeak_speech(tmp_path):
    asr = build_asr(ASRConfig())
    assert asr.name == "faster-whisper:tiny.en"
    audio = decode_audio(speech_wav(SPOKEN, tmp_path / "s.wav"))
    text = asr.transcribe(audio).text
    wer = word_error_rate(SPOKEN, text)
    assert wer < 0.35, (wer, text)


def test_speaker_labels_become_prefixes():
    segs = [Segment(0, 1, " Did you get the milk?", "SPEAKER_00"), Segment(1, 2, "No.", "SPEAKER_01"),
            Segment(2, 3, "I'll get  it later.", "SPEAKER_01"), Segment(3, 4, "  ", "SPEAKER_00")]
    assert segments_to_text(segs) == "[SPEAKER_00] Did you get the milk? [SPEAKER_01] No. I'll get it later."
    assert segments_to_text([Segment(0, 1, "plain"), Segment(1, 2, "words")]) == "plain words"


def test_whisperx_result_to_segments_uses_word_speakers_when_segment_has_none():
    result = {"segments": [
        {"start": 0.0, "end": 1.0, "text": "Hi", "speaker": "A"},
        {"start": 1.0, "end": 2.0, "text": "see you at five",
         "words": [{"word": "see", "speaker": "B"}, {"word": "you", "speaker": "B"}, {"word": "at"}]},
        {"start": 2.0, "end": 3.0, "text": "unlabelled"},
    ]}
    segs = segments_from_whisperx(result)
    assert [s.speaker for s in segs] == ["A", "B", None]
    assert segments_to_text(segs) == "[A] Hi [B] see you at five unlabelled"


@pytest.mark.skipif(importlib.util.find_spec("whisperx") is not None, reason="whisperx is installed here")
def test_whisperx_missing_is_a_clear_error():
    with pytest.raises(ASRError, match=r"whisperx' is not installed.*faster-whisper"):
        build_asr(ASRConfig(backend="whisperx", model="large-v3", device="cuda"))


def test_unknown_backend_lists_the_known_ones():
    with pytest.raises(ValueError, match="faster-whisper, whisperx"):
        build_asr(ASRConfig(backend="nope"))
