"""A real OpenAI-compatible server on loopback for tests: `transformers serve` pinned to a local model."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.support.processes import stop, wait_healthy


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def transformers_serve(model_dir: str | Path, log_path: str | Path, ready_timeout_s: float = 300):
    """Yields {"base_url", "model", "port"}; the server process is stopped on exit."""
    port = free_port()
    exe = Path(sys.executable).with_name("transformers")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    log_path = Path(log_path)
    with open(log_path, "w") as fh:
        proc = subprocess.Popen([str(exe), "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port),
                                 "--device", "cpu"], stdout=fh, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, url + "/health", log_path, ready_timeout_s, "transformers serve")
        yield {"base_url": url + "/v1", "model": str(model_dir), "port": port}
    finally:
        stop(proc, 15)
