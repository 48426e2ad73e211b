"""`promem serve` as a real process: it starts on the port asked, serves, and a restart on the same
store keeps every user's memory and decisions."""
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.serve.conftest import REPO, overrides
from tests.support.llm_server import free_port
from tests.support.processes import stop, wait_healthy

pytestmark = pytest.mark.slow


def start(store: Path, gate: Path, log: Path):
    port = free_port()
    env = {**os.environ, **overrides(gate), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    exe = Path(sys.executable).with_name("promem")
    with open(log, "w") as fh:
        proc = subprocess.Popen([str(exe), "serve", "-c", str(REPO / "configs" / "cpu.yaml"), "--store", str(store),
                                 "--host", "127.0.0.1", "--port", str(port)], stdout=fh, stderr=subprocess.STDOUT,
                                env=env, cwd=REPO)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url + "/healthz", log, 120, "promem serve")
    return proc, url


def test_promem_serve_restarts_with_memory_and_decisions_kept(serve_gate, tmp_path):
    store = tmp_path / "store"
    evs = [{"id": "e1", "time": "2026-09-17T20:30:00-07:00", "location": "kitchen",
            "visual": "An empty birthday-candle box in the junk drawer.", "audio": "[user] We used the last ones."},
           {"id": "e2", "time": "2026-09-18T17:30:00-07:00", "location": "Grand Ave",
            "visual": "Walking past a party-supply shop with balloons in the window."}]
    proc, url = start(store, serve_gate, tmp_path / "serve1.log")
    try:
        first = httpx.post(url + "/v1/users/u1/events", json=evs, timeout=120).json()
        assert [d["event_id"] for d in first] == ["e1", "e2"] and first[1]["retrieved"] == ["e1"]
    finally:
        stop(proc)
    assert (store / "serve").is_dir()
    proc, url = start(store, serve_gate, tmp_path / "serve2.log")
    try:
        again = httpx.post(url + "/v1/users/u1/events", json=evs[1], timeout=120).json()
        assert again == first[1]  # answered from the decision log, not decided twice
        rec = httpx.get(url + "/v1/users/u1/recall", params={"event_id": "e2"}).json()
        assert [x["event"]["id"] for x in rec["recalled"]] == ["e1"]
        assert httpx.get(url + "/v1/users/u2/recall", params={"event_id": "e1"}).status_code == 404
    finally:
        stop(proc)


@pytest.mark.parametrize("missing, says", [("gate", "promem train gate"), ("cue", "promem train cue-encoder")])
def test_promem_serve_without_a_trained_artifact_says_what_is_missing(serve_gate, tmp_path, monkeypatch, capsys,
                                                                      missing, says):
    from cli.main import main

    for k, v in overrides(serve_gate).items():
        monkeypatch.setenv(k, v)
    key = "PROMEM_REASONER__GATE__PATH" if missing == "gate" else "PROMEM_MEMORY__CONSTRUCTION__CUE_ENCODER"
    monkeypatch.setenv(key, str(tmp_path / "not-trained"))
    assert main(["serve", "--store", str(tmp_path / "s"), "--port", str(free_port())]) == 2  # before listening
    err = capsys.readouterr().err
    assert "promem serve: cannot start" in err and "not-trained" in err and says in err


def test_bench_serve_writes_latency_json(serve_gate, sample_instances, tmp_path, monkeypatch, capsys):
    import json

    from cli.main import main
    from tests.serve.conftest import SAMPLE

    for k, v in overrides(serve_gate).items():
        monkeypatch.setenv(k, v)
    out = tmp_path / "serve.json"
    assert main(["bench", "serve", str(SAMPLE), "--users", "1", "-o", str(out)]) == 0
    result = json.loads(out.read_text())
    first = next(iter(sample_instances.values()))  # one user replays the first timeline
    assert result["users"] == 1 and result["events"] == len(first.events) and result["http_errors"] == 0
    assert 0 < result["request_ms"]["p50"] <= result["request_ms"]["p95"]
    assert result["reasoner"] == "gate" and result["events_per_s"] > 0
