"""Fixtures for the SFT recipe tests: a tiny random Qwen3 with the real Qwen3 vocabulary, and
the CPMBench sample instances."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # tests.support is imported from the repository root
    sys.path.insert(0, str(REPO))
SAMPLE = REPO.parent / "shared" / "examples" / "cpmbench_sample.jsonl"
if not SAMPLE.is_file():
    SAMPLE = Path(os.environ.get("PROMEM_SAMPLE", "/work/shared/examples/cpmbench_sample.jsonl"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
TINY_RECIPE = REPO / "training" / "configs" / "sft_tiny.yaml"


@pytest.fixture(scope="session")
def sample_instances():
    from core.formats import Instance, read_records

    good, bad = read_records(SAMPLE, Instance)
    assert not bad and len(good) == 8
    return [inst for _, inst in good]


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory) -> Path:
    import torch

    from tests.support.tiny_qwen import save_tiny_qwen3

    torch.set_num_threads(1)
    return save_tiny_qwen3(tmp_path_factory.mktemp("sft-tiny-qwen3") / "base")
