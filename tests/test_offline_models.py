"""Weights named by hub id on a machine that has none cached and may not download: every loader
ends with one message naming the model, the cache it looked in and the way out
(core/providers/hub.py), never the hub library's "check your internet connection".

Each case runs in a fresh process with HF_HOME pointed at an empty folder and HF_HUB_OFFLINE=1,
so the hub library reads that cache from its first import."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support.data import REPO, SAMPLE

LOADERS = textwrap.dedent('''
    import json, sys
    out = {}
    def attempt(name, fn):
        try:
            fn()
            out[name] = "loaded"
        except Exception as exc:
            out[name] = f"{type(exc).__name__}: {exc}"
    from core.config import EmbedderConfig, LLMConfig
    from core.config.perception import ASRConfig
    from core.providers.embedder import SentenceTransformerEmbedder
    from core.providers.llm_transformers import TransformersChat
    from perception.asr.faster_whisper import FasterWhisperASR
    attempt("llm", lambda: TransformersChat(LLMConfig(backend="transformers", model="Qwen/Qwen3-8B")))
    attempt("embedder", lambda: SentenceTransformerEmbedder(EmbedderConfig(backend="sentence-transformers",
                                                                           path="sentence-transformers/all-mpnet-base-v2")))
    attempt("asr", lambda: FasterWhisperASR(ASRConfig(model="small.en")))
    print(json.dumps(out))
''')


def _env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMEM_", "HF_"))}
    return env | {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                  "TOKENIZERS_PARALLELISM": "false"}


def _says_what_is_missing(text: str, model_id: str, cache, way_out: str) -> None:
    assert model_id in text and str(cache) in text and way_out in text, text
    assert f"huggingface-cli download {model_id}" in text and "check your internet" not in text, text


def test_train_sft_names_the_base_model_the_cache_and_the_way_out(tmp_path):
    r = subprocess.run([sys.executable, "-m", "cli.main", "train", "sft", "-c", "configs/gpu.yaml",
                        "--data", str(SAMPLE), "-o", str(tmp_path / "adapter")],
                       cwd=REPO, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr[-3000:]
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("promem train sft: base model 'Qwen/Qwen3-8B' is not on this machine"), r.stderr[-3000:]
    _says_what_is_missing(last, "Qwen/Qwen3-8B", tmp_path / "hf" / "hub", "--base DIR")
    assert "Traceback" not in r.stderr


@pytest.fixture(scope="module")
def loader_errors(tmp_path_factory) -> tuple[dict, object]:
    tmp = tmp_path_factory.mktemp("offline")
    r = subprocess.run([sys.executable, "-c", LOADERS], cwd=REPO, env=_env(tmp), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1]), tmp / "hf" / "hub"


@pytest.mark.parametrize("loader, model_id, way_out", [
    ("llm", "Qwen/Qwen3-8B", "reasoner.llm.model"),
    ("embedder", "sentence-transformers/all-mpnet-base-v2", "memory.embedder.path"),
    ("asr", "Systran/faster-whisper-small.en", "perception.asr.model"),
])
def test_every_hub_loader_says_what_is_missing(loader_errors, loader, model_id, way_out):
    errors, cache = loader_errors
    _says_what_is_missing(errors[loader], model_id, cache, way_out)
