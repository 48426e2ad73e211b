"""Cascade: the gate dismisses clear non-moments; only the rest reach the LLM (a real server here)."""
import pytest

from core.recall import Recalled
from reasoner.api import build_reasoner

from tests.support.llm_server import free_port
from tests.support.reasoner_cfg import cfg_with

pytestmark = pytest.mark.slow


def _moment(sample_instances):
    inst = next(i for i in sample_instances if i.variant == "positive")
    return inst, [Recalled(e, 0.5, "content") for e in inst.events[:-1]][-8:], inst.event(inst.decision_event)


def test_dismissed_moments_never_reach_the_llm(trained_gate, sample_instances):
    inst, past, current = _moment(sample_instances)
    # The LLM endpoint is a closed port: any call would come back as an error.
    cfg = cfg_with(backend="cascade", gate={"path": str(trained_gate[0]), "threshold": 0.0, "use_calibrated": False},
                   cascade={"dismiss_below": 1.01},  # its own level: the gate threshold does not apply
                   llm={"backend": "openai", "base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "m"})
    d = build_reasoner(cfg).decide(inst.persona, past, current)
    assert d.assist is False and d.llm_called is False and d.error is None
    assert 0 < d.context_tokens and "gate" in d.timing_ms


def test_moments_the_gate_keeps_go_to_the_llm(trained_gate, sample_instances, qwen_server):
    inst, past, current = _moment(sample_instances)
    cfg = cfg_with(backend="cascade", gate={"path": str(trained_gate[0])}, cascade={"dismiss_below": 0.0},
                   llm={"backend": "openai", "base_url": qwen_server["base_url"], "model": qwen_server["model"],
                        "max_tokens": 8})
    d = build_reasoner(cfg).decide(inst.persona, past, current)
    assert d.llm_called is True
    assert d.assist is False and d.error.startswith("parse:")  # random weights: garbage -> silence
    assert d.context_tokens > 300  # the gate's tokens plus the rendered prompt
    assert d.retrieved == [r.event.id for r in past]
