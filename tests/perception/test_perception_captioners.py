"""Caption backends on real keyframes: a tiny random-weight Qwen3-VL (qwen-vl) and a real
OpenAI-compatible server on loopback (`transformers serve`) for the openai backend."""
import json
from pathlib import Path

import pytest

from perception import keyframes
from perception.captioners import build_captioner, load_prompt
from perception.captioners.openai_vl import build_messages
from perception.pipeline import perceive_folder
from tests.perception.perception_media import GREEN, RED, make_clip
from tests.support.llm_server import free_port

QWEN3_TEXT = dict(vocab_size=151669, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=32, intermediate_size=128, tie_word_embeddings=True)


def build_tiny_qwen3_vl(path: Path) -> Path:
    """Random weights from a config (OFFLINE.md): Qwen3-VL text + vision tower, with Qwen3's real tokenizer."""
    import torch
    from transformers import Qwen2VLImageProcessorPil, Qwen3VLConfig, Qwen3VLForConditionalGeneration

    from tests.support.tiny_qwen import qwen3_tokenizer

    text = dict(QWEN3_TEXT, rope_parameters={"rope_type": "default", "rope_theta": 5e6,
                                             "mrope_section": [6, 5, 5], "mrope_interleaved": True})
    vision = dict(depth=2, hidden_size=64, num_heads=4, patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
                  out_hidden_size=64, num_position_embeddings=2304, deepstack_visual_indexes=[0, 1], intermediate_size=128)
    cfg = Qwen3VLConfig(text_config=text, vision_config=vision, image_token_id=151655, video_token_id=151656,
                        vision_start_token_id=151652, vision_end_token_id=151653, tie_word_embeddings=True)
    torch.manual_seed(0)
    Qwen3VLForConditionalGeneration(cfg).save_pretrained(path)
    qwen3_tokenizer().save_pretrained(path)
    Qwen2VLImageProcessorPil(patch_size=16, merge_size=2).save_pretrained(path)
    return path


def build_tiny_llava(path: Path) -> Path:
    """A tiny random LLaVA (CLIP vision + Qwen3 text): unlike Qwen3-VL its processor needs no torchvision,
    so `transformers serve` can load it here and take images."""
    import torch
    from transformers import (CLIPImageProcessorPil, CLIPVisionConfig, LlavaConfig, LlavaForConditionalGeneration,
                              LlavaProcessor, Qwen3Config)

    from tests.support.tiny_qwen import qwen3_tokenizer

    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                              image_size=64, patch_size=16)
    cfg = LlavaConfig(vision_config=vision, text_config=Qwen3Config(**dict(QWEN3_TEXT, tie_word_embeddings=False)), image_token_id=151655,
                      image_seq_length=16, vision_feature_layer=-1)
    torch.manual_seed(0)
    LlavaForConditionalGeneration(cfg).save_pretrained(path)
    tok = qwen3_tokenizer()
    ip = CLIPImageProcessorPil(size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64})
    LlavaProcessor(image_processor=ip, tokenizer=tok, patch_size=16, image_token="<|image_pad|>",
                   chat_template=tok.chat_template, num_additional_image_tokens=1,
                   vision_feature_select_strategy="default").save_pretrained(path)
    return path


def test_prompt_file_asks_for_environment_activity_objects():
    prompt = load_prompt().lower()
    for topic in ("environment", "activity and movement", "objects and their states"):
        assert topic in prompt


def test_narration_backend_uses_the_sidecar(cfg):
    cap = build_captioner(cfg.perception.captioner)
    assert cap.name == "narration" and not cap.needs_frames
    assert cap.caption([], "  The user  opens the fridge. ") == "The user opens the fridge."
    assert cap.caption([], None) is None


@pytest.mark.slow
def test_qwen_vl_end_to_end_on_real_frames(tmp_path, cfg):
    import torch

    torch.set_num_threads(1)
    model_dir = build_tiny_qwen3_vl(tmp_path / "tiny-qwen3-vl")
    clips = tmp_path / "clips"
    make_clip(clips / "2026-03-02T08-15-00.mp4", seconds=2.0, colors=(RED, GREEN))
    make_clip(clips / "2026-03-02T09-00-00.mp4", seconds=1.0, colors=(GREEN,))
    (clips / "2026-03-02T09-00-00.json").write_text(json.dumps({"narration": "The user waters a plant."}))
    c = cfg.perception.captioner
    c.backend, c.model_path, c.max_new_tokens = "qwen-vl", str(model_dir), 6
    cfg.perception.keyframes.max_frames, cfg.perception.keyframes.uniform_frames = 3, 2
    report = perceive_folder(clips, cfg, progress=False)
    assert not report.failed, report.summary()
    first, second = report.events

    # The caption in the event is what the model says about this clip's own keyframes.
    captioner = build_captioner(c)
    kc = cfg.perception.keyframes
    frames = keyframes.extract(clips / "2026-03-02T08-15-00.mp4", kc.max_frames, kc.uniform_frames, kc.scene_threshold)
    assert first.visual and first.visual == captioner.caption(frames, None)
    assert first.perception == {"captioner": "qwen-vl:tiny-qwen3-vl", "asr": None}
    assert second.visual.startswith("The user waters a plant. ") and len(second.visual) > len("The user waters a plant. ")
    # Every keyframe reached the model as its own run of image tokens.
    prompt = captioner.build_prompt([20] * len(frames))
    assert prompt.count("<|vision_start|>") == len(frames) and prompt.count("<|image_pad|>") == 20 * len(frames)


@pytest.fixture
def vlm_server(tmp_path):
    """`transformers serve` on loopback with a tiny VLM, stopped after the test."""
    from tests.support.llm_server import transformers_serve

    with transformers_serve(build_tiny_llava(tmp_path / "tiny-llava"), tmp_path / "serve.log", ready_timeout_s=90) as srv:
        yield srv["base_url"], srv["model"]


@pytest.mark.slow
def test_openai_backend_against_transformers_serve(tmp_path, cfg, vlm_server):
    import httpx

    base_url, model = vlm_server
    clips = tmp_path / "clips"
    make_clip(clips / "2026-03-02T08-15-00.mp4", seconds=2.0, colors=(RED, GREEN))
    c = cfg.perception.captioner
    c.backend, c.max_new_tokens = "openai", 6
    c.llm.model, c.llm.base_url, c.llm.timeout_s = model, base_url, 60
    report = perceive_folder(clips, cfg, progress=False)
    assert not report.failed, report.summary()
    (event,) = report.events
    assert event.visual and event.perception["captioner"] == model

    # The frames really go to the server as images: each one adds the model's image tokens to the prompt.
    kc = cfg.perception.keyframes
    frames = keyframes.extract(clips / "2026-03-02T08-15-00.mp4", kc.max_frames, kc.uniform_frames, kc.scene_threshold)
    assert len(frames) >= 2
    usage = []
    for n in (1, 2):
        msgs = build_messages("Describe.", frames[:n])
        assert [p["type"] for p in msgs[0]["content"]] == ["image_url"] * n + ["text"]
        assert msgs[0]["content"][0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
        r = httpx.post(f"{base_url}/chat/completions", timeout=60,
                       json={"model": model, "messages": msgs, "max_tokens": 2})
        r.raise_for_status()
        usage.append(r.json()["usage"]["prompt_tokens"])
    assert usage[1] - usage[0] >= 16  # 16 image tokens per frame in this tiny model


def test_unreachable_caption_server_is_a_clear_per_clip_error(tmp_path, cfg):
    clips = tmp_path / "clips"
    make_clip(clips / "2026-03-02T08-15-00.mp4", seconds=1.0)
    make_clip(clips / "2026-03-02T09-15-00.mp4", seconds=1.0)
    (clips / "2026-03-02T09-15-00.json").write_text(json.dumps({"transcript": "Meeting at noon."}))
    c = cfg.perception.captioner
    port = free_port()  # nothing listens there
    c.backend, c.llm.model, c.llm.base_url, c.llm.timeout_s = "openai", "vlm", f"http://127.0.0.1:{port}/v1", 5
    report = perceive_folder(clips, cfg, progress=False)
    # A clip is written whole or not at all: without its caption it fails (and a rerun retries it),
    # rather than going out as an audio-only event that a rerun could not complete.
    assert [r.clip for r in report.failed] == ["2026-03-02T08-15-00.mp4", "2026-03-02T09-15-00.mp4"]
    assert all(f"127.0.0.1:{port}" in r.error and "model 'vlm'" in r.error for r in report.failed)
