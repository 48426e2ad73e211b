"""Fixtures for the SFT recipe tests: a tiny random Qwen3 with the real Qwen3 vocabulary, and
the CPMBench sample instances."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.data import REPO, SAMPLE  # noqa: F401  (SAMPLE: imported by the tests here)

TINY_RECIPE = REPO / "training" / "configs" / "sft_tiny.yaml"


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory) -> Path:
    import torch

    from tests.support.tiny_qwen import save_tiny_qwen3

    torch.set_num_threads(1)
    return save_tiny_qwen3(tmp_path_factory.mktemp("sft-tiny-qwen3") / "base")
