"""Memory tests share one pair of tiny artifacts, trained in seconds on the CPMBench sample."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.config import load_config
from core.formats import Instance, read_records

from tests.support.data import SAMPLE


@pytest.fixture(scope="session")
def instances() -> list[Instance]:
    good, bad = read_records(SAMPLE, Instance)
    assert not bad
    return [i for _, i in good]


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory, instances) -> Path:
    import torch

    from core.config import load_config as _lc
    from training.recipes import cue_encoder, linker

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("artifacts")
    cue_encoder.train(instances, root / "cue-encoder", cue_encoder.load_recipe(epochs=1, held_out=0.0),
                      str(SAMPLE), "test")
    linker.train(instances, root / "linker", linker.load_recipe(held_out=0.0), _lc().memory.embedder,
                 str(SAMPLE), "test", cue_spec=str(root / "cue-encoder"))
    return root


@pytest.fixture()
def cfg(artifacts):
    c = load_config(env={})
    c.memory.construction.cue_encoder = str(artifacts / "cue-encoder")
    c.memory.construction.linker = str(artifacts / "linker")
    return c


def env_for(artifacts: Path) -> dict:
    """Environment for a `promem` subprocess that uses the test artifacts."""
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PROMEM_MEMORY__CONSTRUCTION__CUE_ENCODER=str(artifacts / "cue-encoder"),
               PROMEM_MEMORY__CONSTRUCTION__LINKER=str(artifacts / "linker"))
    return env
