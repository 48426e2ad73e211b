"""Decision diagnostics are declared fields, and a decision file keeps exactly the keys it had:
a diagnostic is written when a reasoner, the guard or the bench set it, never as a null otherwise."""
import json

from core.formats import DIAGNOSTICS, Decision, read_records
from core.recall import Recalled
from reasoner.api import build_reasoner
from reasoner.guard import Guard

from tests.support.reasoner_cfg import cfg_with

BASE_KEYS = {"event_id", "assist", "message", "evidence", "retrieved", "timing_ms"}


def test_a_plain_decision_writes_no_diagnostic_keys():
    d = Decision(event_id="e1", assist=False)
    assert set(d.dump()) == BASE_KEYS
    assert d.dump()["message"] is None  # the format's own keys are written even when empty


def test_a_diagnostic_set_to_none_is_still_written():
    # A model that gave no reasoning trace: the key was set, so it stays, as before.
    d = Decision(event_id="e1", assist=True, message="Hi", reasoning=None, llm_called=True)
    assert d.dump() == {"event_id": "e1", "assist": True, "message": "Hi", "evidence": [], "retrieved": [],
                        "timing_ms": {}, "llm_called": True, "reasoning": None}


def test_gate_decision_keys(trained_gate, sample_instances):
    cfg = cfg_with(backend="gate", gate={"path": str(trained_gate[0])})
    inst = next(i for i in sample_instances if i.variant == "positive")
    current = inst.event(inst.decision_event)
    past = [Recalled(e, 0.5, "content") for e in inst.events[:-1]]
    d = build_reasoner(cfg).decide(inst.persona, past, current)
    out = d.dump()
    assert set(out) - BASE_KEYS <= {"llm_called", "context_tokens", "gate_score", "resolved", "now_score"}
    assert {"llm_called", "context_tokens", "gate_score"} <= set(out)
    assert out["llm_called"] is False and isinstance(out["context_tokens"], int) and 0 <= out["gate_score"] <= 1


def test_guard_adds_its_keys_and_a_file_round_trips(tmp_path, sample_instances):
    inst = next(i for i in sample_instances if i.variant == "positive")
    formed, now = inst.events[0], inst.events[-1]
    past = [Recalled(formed, 0.9, "cue")]
    g = Guard(cooldown_hours=1e6, ttl_hours=1e6)
    first = Decision(event_id=now.id, assist=True, message="Remember!", evidence=[formed.id], retrieved=[formed.id])
    assert g.apply(first, past, now) is first
    again = g.apply(first.model_copy(), past, now)
    out = again.dump()
    assert again.assist is False and set(out) == BASE_KEYS | {"guard", "suppressed_message"}
    assert out["suppressed_message"] == "Remember!" and "cooldown" in out["guard"]

    # Written, read back and written again: the same object, unknown keys kept.
    path = tmp_path / "decisions.jsonl"
    row = {**out, "heart_rate": 71}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (_, back), = read_records(path, Decision)[0]
    assert back.guard == out["guard"] and back.dump() == row


def test_every_diagnostic_is_a_declared_field():
    assert DIAGNOSTICS <= set(Decision.model_fields)
    d = Decision(event_id="e1", assist=False, **{k: None for k in DIAGNOSTICS})
    assert d.model_extra == {} and set(d.dump()) == BASE_KEYS | DIAGNOSTICS
