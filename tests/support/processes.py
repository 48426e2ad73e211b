"""Real server processes in tests: wait until one answers its health URL, and stop it."""
from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path


def wait_healthy(proc: subprocess.Popen, health_url: str, log_path: Path, timeout_s: float, what: str) -> None:
    """Returns once health_url answers 200; raises with the log's tail if the process dies or times out."""
    deadline = time.time() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {Path(log_path).read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(health_url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.time() > deadline:
            stop(proc)
            raise RuntimeError(f"{what} not ready after {timeout_s} s: {Path(log_path).read_text()[-2000:]}")
        time.sleep(0.3)


def stop(proc: subprocess.Popen, timeout_s: float = 20) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
