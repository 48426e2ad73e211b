"""Fixtures shared across test folders (session-scoped, so each is built once per run): the
CPMBench sample, a tiny random Qwen3 with a real LoRA adapter, a real `transformers serve`
server on loopback, and a gate trained briefly on the sample."""
from __future__ import annotations

import os

import pytest

from tests.support.data import SAMPLE

# Nothing may reach for a model hub at test time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def sample_instances():
    from core.formats import Instance, read_records

    good, bad = read_records(SAMPLE, Instance)
    assert not bad and len(good) == 8
    return [inst for _, inst in good]


@pytest.fixture(scope="session")
def tiny_qwen(tmp_path_factory):
    """(base model folder, LoRA adapter folder) for the tiny random Qwen3."""
    import torch

    from tests.support.tiny_qwen import save_tiny_lora_adapter, save_tiny_qwen3

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("tiny-qwen3")
    base = save_tiny_qwen3(root / "base")
    adapter = save_tiny_lora_adapter(base, root / "adapter")
    return base, adapter


@pytest.fixture(scope="session")
def qwen_server(tiny_qwen, tmp_path_factory):
    """`transformers serve` pinned to the tiny Qwen3 on a free loopback port."""
    from tests.support.llm_server import transformers_serve

    with transformers_serve(tiny_qwen[0], tmp_path_factory.mktemp("serve") / "serve.log") as server:
        yield server


@pytest.fixture(scope="session")
def trained_gate(sample_instances, tmp_path_factory):
    """A gate trained briefly on the 8 sample instances, with cue-encoder features (the untuned
    MiniLM stands in for the trained cue encoder) and cross-fitted role scores and threshold:
    (folder, meta)."""
    from training.recipes.gate import load_recipe, train

    out = tmp_path_factory.mktemp("gate") / "gate"
    recipe = load_recipe(trees=60, folds=2, threads=1)
    meta = train(sample_instances, recipe, out, progress=False, cue_spec="base")
    return out, meta
