"""The LLM judge against a real OpenAI-compatible server, then its success paths with a test
double standing in for the external endpoint (random weights never answer a verdict)."""
import json

import pytest

from bench.harness import run_benchmark
from bench.judges import JudgeError
from bench.judges.llm import LLMJudge
from bench.metrics import compute_metrics
from core.config import load_config
from tests.bench.helpers import SAMPLE, decision, instance, intention, model

KW = [["oat milk"]]


def judge_cfg(base_url="http://127.0.0.1:9/v1", model_name="judge"):
    cfg = load_config()
    cfg.bench.judge_llm.base_url = base_url
    cfg.bench.judge_llm.model = model_name
    cfg.bench.judge_llm.max_tokens = 12
    cfg.bench.judge_llm.timeout_s = 60
    return cfg


@pytest.mark.slow  # starts `transformers serve`
def test_real_server_garbage_answer_is_a_clear_judge_error(qwen_server, tmp_path):
    cfg = judge_cfg(qwen_server["base_url"], qwen_server["model"])
    judge = LLMJudge(cfg, cache_dir=tmp_path)
    pos = model(instance("p", "positive", [intention("i1", "e1", KW)]))
    with pytest.raises(JudgeError) as err:
        judge.judge(pos, decision(pos, True, "Grocery store ahead: oat milk?"))
    assert "'p'" in str(err.value) and "'i1'" in str(err.value) and "no single verdict" in str(err.value)
    assert not list(tmp_path.rglob("*.json"))  # a failure is never cached: a rerun asks again


class ScriptedEndpoint:
    """Test double for the external judge endpoint: answers from a script, counts calls."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = []

    def chat(self, messages, max_tokens=None, temperature=None):
        self.calls.append(messages)
        return self.answers.pop(0)


def test_verdicts_map_to_labels_and_are_cached(tmp_path):
    cfg = judge_cfg()
    pos = model(instance("p", "positive", [intention("i1", "e1", KW), intention("i2", "e2", [["news"]])]))
    ep = ScriptedEndpoint('{"verdict": "addresses"}', "<think>hm</think> does_not_address")
    j = LLMJudge(cfg, llm=ep, cache_dir=tmp_path)
    d = decision(pos, True, "Passing the store: oat milk.")
    assert j.judge(pos, d) == {"i1": "TP", "i2": "FN"}
    assert len(ep.calls) == 2 and j.answered == 2
    j2 = LLMJudge(cfg, llm=ScriptedEndpoint(), cache_dir=tmp_path)  # a later run: all from disk
    assert j2.judge(pos, d) == {"i1": "TP", "i2": "FN"}
    cached = [json.loads(p.read_text()) for p in tmp_path.rglob("*.json")]
    assert sorted(c["verdict"] for c in cached) == ["addresses", "does_not_address"]


def test_state_change_follow_up_is_tn_and_stale_push_is_fp(tmp_path):
    cfg = judge_cfg()
    sc = model(instance("s", "state_change", [intention("i1", "e1", KW, state_change="e3")]))
    j = LLMJudge(cfg, llm=ScriptedEndpoint('{"verdict": "follow_up"}', '{"verdict": "pursue_stale"}',
                                           '{"verdict": "unrelated"}'), cache_dir=tmp_path)
    labels = [j.judge(sc, decision(sc, True, m)) for m in ("Roommate got it - recipe?", "Buy oat milk!", "Hi")]
    assert labels == [{"i1": "TN"}, {"i1": "FP"}, {"i1": "FP"}]
    m = compute_metrics([sc] * 3, [decision(sc, True, "x")] * 3, labels)["metrics"]
    assert m["FD"] == pytest.approx(66.67) and m["Acc-P"] == pytest.approx(33.33)


def test_one_garbage_answer_is_retried(tmp_path):
    pos = model(instance("p", "positive", [intention("i1", "e1", KW)]))
    ep = ScriptedEndpoint("lorem ipsum", '{"verdict": "addresses"}')
    assert LLMJudge(judge_cfg(), llm=ep, cache_dir=tmp_path).judge(pos, decision(pos, True, "oat milk")) == {"i1": "TP"}
    assert len(ep.calls) == 2


@pytest.mark.slow  # trains a small gate (the reasoner tests' fixture)
def test_full_run_with_the_trained_gate_reasoner(trained_gate, tmp_path):
    from bench.judges.keywords import KeywordJudge
    from bench.validate import validate_file

    cfg = load_config()
    cfg.bench.cache_dir = str(tmp_path / "cache")
    cfg.reasoner.gate.path = str(trained_gate[0])
    sample, _ = validate_file(SAMPLE)
    r = run_benchmark(sample, "rag-bm25", cfg, data=str(SAMPLE), judge=KeywordJudge(), progress=False)
    assert not r["errors"] and r["judge"] == "keywords" and not r["retrieval_only"]
    assert all(r["metrics"][k] is not None for k in ("DIR", "SCR", "FD", "Acc-P", "Acc-PA"))
    assert r["extra_metrics"]["LLM-call-share"] == 0.0  # the gate is on-device
    for row, inst in zip(r["instances"], sample):
        d, labels = row["decision"], row["judged"]
        assert {"retrieve", "reason"} <= set(d["timing_ms"]) and len(d["retrieved"]) == cfg.memory.retrieval.k
        assert d["message"] is None if not d["assist"] else d["message"]
        if inst.variant != "positive":
            assert set(labels.values()) == {"FP" if d["assist"] else "TN"}
        else:
            assert set(labels) == {it.id for it in inst.intentions}
    again = compute_metrics(sample, [row["decision"] for row in r["instances"]], [row["judged"] for row in r["instances"]])
    assert again["metrics"] == r["metrics"]
