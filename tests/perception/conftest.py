import os
import shutil

import pytest

# Real media needs the system tools (tools/sysdeps.sh installs them); fail with that hint, not obscurely.
MISSING = [t for t in ("ffmpeg", "espeak-ng") if not shutil.which(t)]

# Two cores are shared by the whole suite; models here must not each grab both.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def cfg(tmp_path):
    from core.config import load_config

    c = load_config()
    c.perception.cache_dir = str(tmp_path / "cache")
    return c


@pytest.fixture(autouse=True)
def _system_tools():
    if MISSING:
        pytest.fail(f"tests/perception need {', '.join(MISSING)}: run tools/sysdeps.sh")
