"""Fixtures for the service tests: the CPU profile with a gate trained here in seconds (the
untuned bundled MiniLM as cue encoder and no linker, so memory needs no trained artifact), and
the real server (uvicorn on a free loopback port, in a thread)."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.support.data import REPO, SAMPLE  # noqa: F401  (imported by the tests here)

os.environ.pop("PROMEMAGENT_SERVE_TOKEN", None)  # a token in the developer's shell would lock the tests out


@pytest.fixture(scope="session")
def sample_instances():
    from core.formats import Instance, read_records

    good, bad = read_records(SAMPLE, Instance)
    assert not bad
    return {inst.id: inst for _, inst in good}


@pytest.fixture(scope="session")
def serve_gate(sample_instances, tmp_path_factory) -> Path:
    """A gate trained briefly on the sample: enough to run the CPU reasoner for real."""
    import torch

    from training.recipes.gate import load_recipe, train

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("serve-gate") / "gate"
    recipe = load_recipe(trees=20, folds=0, distractors=2, threads=1)
    train(list(sample_instances.values()), recipe, out, progress=False)
    return out


def overrides(gate: Path) -> dict:
    """PROMEM_* settings that point the CPU profile at the test artifacts (also for subprocesses)."""
    return {"PROMEM_REASONER__GATE__PATH": str(gate),
            "PROMEM_MEMORY__CONSTRUCTION__CUE_ENCODER": "base",
            "PROMEM_MEMORY__CONSTRUCTION__LINKER": "none",
            "PROMEM_REASONER__GATE__THING_READER": ""}  # composed by rule, whatever this checkout trained


@pytest.fixture(scope="session")
def serve_cfg(serve_gate):
    from core.config import load_config

    return load_config(REPO / "configs" / "cpu.yaml", env=overrides(serve_gate))


class LiveServer:
    def __init__(self, app, cfg=None):
        """cfg: serve with `promem serve`'s uvicorn settings for this config (default: uvicorn's own)."""
        import uvicorn

        from serve.server import server_config
        from tests.support.llm_server import free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = app
        config = (server_config(app, cfg, "127.0.0.1", self.port, log_level="warning") if cfg is not None else
                  uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.time() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def live(serve_cfg, tmp_path_factory):
    """The service on loopback with a fresh store: yields (LiveServer, store folder)."""
    from serve.app import create_app

    store = tmp_path_factory.mktemp("serve-store")
    with LiveServer(create_app(serve_cfg, store)) as srv:
        yield srv, store


@pytest.fixture()
def cli_env(serve_gate, monkeypatch):
    """The test artifacts for `promem` commands run in this process (cli.main.main)."""
    for k, v in overrides(serve_gate).items():
        monkeypatch.setenv(k, v)
