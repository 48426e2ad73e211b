import json
import os
import socket
import subprocess
import sys

import pytest

from bench.harness import HarnessError, SystemRun, judge_and_score, run_benchmark, run_decisions
from bench.judges import build_judge
from bench.judges.keywords import KeywordJudge
from bench.metrics import compute_metrics
from bench.report import write_report
from bench.validate import validate_file
from core.config import load_config
from core.formats import METRIC_KEYS, Decision
from tests.bench.helpers import SAMPLE


@pytest.fixture()
def cfg(tmp_path):
    c = load_config()
    c.bench.cache_dir = str(tmp_path / "cache")
    return c


@pytest.fixture(scope="module")
def sample():
    instances, violations = validate_file(SAMPLE)
    assert not violations
    return instances


def test_retrieval_only_result_follows_section_6_and_resumes_from_cache(cfg, sample, tmp_path):
    r1 = run_benchmark(sample, "rag-bm25", cfg, data=str(SAMPLE), retrieval_only=True, progress=False)
    assert list(r1)[:6] == ["system", "data", "config", "metrics", "breakdown", "instances"]
    assert list(r1["metrics"]) == list(METRIC_KEYS)
    assert r1["metrics"]["DIR"] is not None and r1["metrics"]["FD"] is None and "note" in r1
    assert [row["id"] for row in r1["instances"]] == [i.id for i in sample]
    for row, inst in zip(r1["instances"], sample):
        d = row["decision"]
        assert d["event_id"] == inst.decision_event and d["assist"] is False
        assert 0 < len(d["retrieved"]) <= cfg.memory.retrieval.k
        assert inst.decision_event not in d["retrieved"]
        assert "retrieve" in d["timing_ms"] and d["context_tokens"] > 0
    assert r1["run"]["from_cache"] == 0
    # Anyone can recompute the metrics from the instances.
    again = compute_metrics(sample, [row["decision"] for row in r1["instances"]], None)
    assert again["metrics"] == r1["metrics"]
    # An interrupted run: one cached decision lost, the rest reused.
    cache_files = sorted((tmp_path / "cache" / "runs" / "rag-bm25").rglob("*.json"))
    assert len(cache_files) == len(sample)
    cache_files[0].unlink()
    r2 = run_benchmark(sample, "rag-bm25", cfg, data=str(SAMPLE), retrieval_only=True, progress=False)
    assert r2["run"]["from_cache"] == len(sample) - 1
    assert r2["metrics"] == r1["metrics"]
    # A config change that can change decisions misses the cache.
    cfg.memory.retrieval.k = 3
    r3 = run_benchmark(sample, "rag-bm25", cfg, data=str(SAMPLE), retrieval_only=True, progress=False)
    assert r3["run"]["from_cache"] == 0
    assert all(len(row["decision"]["retrieved"]) == 3 for row in r3["instances"])


@pytest.mark.slow  # starts two spawned worker processes
def test_worker_processes_give_the_same_decisions(cfg, sample):
    one = run_decisions(sample[:4], "rag-bm25", cfg, retrieval_only=True, progress=False)
    two = run_decisions(sample[:4], "rag-bm25", cfg, retrieval_only=True, workers=2, fresh=True, progress=False)
    assert not two.errors and two.cached == 0
    strip = lambda run: {k: {**v, "timing_ms": None} for k, v in run.decisions.items()}
    assert strip(one) == strip(two)


def _as_run(sample, messages):
    """Decisions as a system would have made them: speak `messages[id]` or stay silent."""
    run = SystemRun("hand")
    for inst in sample:
        msg = messages.get(inst.id)
        run.decisions[inst.id] = Decision(event_id=inst.decision_event, assist=msg is not None, message=msg,
                                          retrieved=[inst.events[0].id]).dump()
    return run


def test_judging_and_scoring_a_run(sample):
    pos = [i for i in sample if i.variant == "positive"]
    msgs = {pos[0].id: pos[0].intentions[0].reference, pos[1].id: "Have a nice evening!",
            next(i.id for i in sample if i.variant == "negative"): "Buy candles"}
    out = judge_and_score(sample, _as_run(sample, msgs), KeywordJudge(), retrieval_only=False)
    judged = {row["id"]: row["judged"] for row in out["instances"]}
    assert judged[pos[0].id] == {"i1": "TP"} and judged[pos[1].id] == {"i1": "FN"}
    m = out["metrics"]
    # TP 1, FN 1, FP 1 (the negative), TN 5 of the 6 silent-variant instances.
    assert m["Set-P"] == 50.0 and m["Set-R"] == 50.0 and m["Set-F1"] == 50.0
    # Acc-P: both positives spoke (content aside) + 5 silent right = 7/8; Acc-PA: 6/8.
    assert m["FD"] == pytest.approx(16.67) and m["Acc-P"] == 87.5 and m["Acc-PA"] == 75.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_judge_that_cannot_answer_fails_that_instance_only(sample):
    cfg = load_config()
    cfg.bench.judge_llm.base_url = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there
    cfg.bench.judge_llm.timeout_s = 2
    judge = build_judge(cfg, "llm")
    pos = next(i for i in sample if i.variant == "positive")
    out = judge_and_score(sample, _as_run(sample, {pos.id: "hi"}), judge, retrieval_only=False)
    assert set(out["errors"]) == {pos.id}
    assert "Connection" in out["errors"][pos.id] and pos.id in out["errors"][pos.id]
    assert out["extra_metrics"]["n"] == len(sample) - 1  # the rest is scored
    assert out["metrics"]["FD"] == 0.0
    # A judge that fails on every response it is asked about stops the run with one message.
    spoke = {i.id: "hi" for i in sample if i.variant == "positive"}
    spoke[next(i.id for i in sample if i.variant == "state_change")] = "hi"
    with pytest.raises(HarnessError, match="llm judge failed on the first 3"):
        judge_and_score(sample, _as_run(sample, spoke), judge, retrieval_only=False)


def test_missing_setup_stops_the_run_with_one_clear_message(cfg, sample):
    cfg.reasoner.gate.path = "/nonexistent/gate"
    with pytest.raises(HarnessError, match="reasoner"):
        run_benchmark(sample, "no-memory", cfg, data="x", judge=KeywordJudge(), progress=False)


def test_report_has_tables_and_a_plot(cfg, sample, tmp_path):
    results = [run_benchmark(sample, s, cfg, data=str(SAMPLE), retrieval_only=True, progress=False)
               for s in ("rag-bm25", "no-memory")]
    md, png = write_report(results, tmp_path / "rep" / "report.md")
    text = md.read_text()
    assert "| rag-bm25 | 8 |" in text and "| no-memory | 8 | 0.0 | 0.0 |" in text
    assert "## Per variant" in text and "## Per category" in text and "(report.png)" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_run_several_systems(tmp_path):
    env = {**os.environ, "PROMEM_BENCH__CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    out = tmp_path / "R.json"
    p = subprocess.run([sys.executable, "-m", "cli.main", "bench", "run", str(SAMPLE), "--system", "rag-bm25,no-memory",
                        "--retrieval-only", "--limit", "4", "-o", str(out), "--report", str(tmp_path / "rep.md")],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    for s in ("rag-bm25", "no-memory"):
        r = json.loads((tmp_path / f"R.{s}.json").read_text())
        assert r["system"] == s and len(r["instances"]) == 4
    assert (tmp_path / "rep.png").is_file() and "rag-bm25" in (tmp_path / "rep.md").read_text()
    rep = subprocess.run([sys.executable, "-m", "cli.main", "bench", "report", str(tmp_path / "R.rag-bm25.json"),
                          str(tmp_path / "R.no-memory.json"), "-o", str(tmp_path / "again.md")],
                         capture_output=True, text=True, env=env)
    assert rep.returncode == 0, rep.stderr
    assert "| no-memory | 4 |" in (tmp_path / "again.md").read_text() and (tmp_path / "again.png").is_file()
    (tmp_path / "junk.json").write_text("[1]")
    rep = subprocess.run([sys.executable, "-m", "cli.main", "bench", "report", str(tmp_path / "junk.json"),
                          "-o", str(tmp_path / "x.md")], capture_output=True, text=True, env=env)
    assert rep.returncode == 2 and "not a RESULT file" in rep.stderr
    bad = subprocess.run([sys.executable, "-m", "cli.main", "bench", "run", str(SAMPLE), "--system", "nope",
                          "-o", str(out)], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "unknown system 'nope'" in bad.stderr


def test_cache_key_follows_config_and_retrained_artifacts(cfg, tmp_path):
    from bench.harness import config_hash

    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "meta.json").write_text("{}")
    cfg.reasoner.gate.path = str(gate)
    h1 = config_hash(cfg, False)
    assert config_hash(cfg, False) == h1 and config_hash(cfg, True) != h1
    cfg.bench.judge = "llm"  # the judge does not change decisions
    assert config_hash(cfg, False) == h1
    (gate / "meta.json").write_text('{"threshold": 0.3}')  # retrained in place
    assert config_hash(cfg, False) != h1

