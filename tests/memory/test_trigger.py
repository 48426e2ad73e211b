"""Context trigger on the tests' sample with real memory and the tests' trained models: walking each
timeline as the online loop does (check at an event, then remember it), it skips most ordinary moments
and keeps the decision moments of positive timelines; a too-short moment costs no encoding."""
import pytest

from core.formats import Event
from memory.api import open_memory
from memory.trigger import check

pytestmark = pytest.mark.slow


def _walk(cfg, inst):
    """Verdicts at each event of one timeline, from memory of the events before it."""
    out = {}
    with open_memory(cfg, None, inst.id) as mem:
        for e in inst.events:
            out[e.id] = check(mem, e).verdict
            mem.add(e)
    return out


def test_trigger_skips_ordinary_moments_and_keeps_positive_decisions(cfg, instances):
    cfg = cfg.model_copy(deep=True)
    cfg.memory.trigger.enabled = True
    ordinary = skipped = pos = pos_kept = 0
    for inst in instances:
        special = {inst.decision_event} | {x for it in inst.intentions for x in (it.formation, it.state_change) if x}
        verdicts = _walk(cfg, inst)
        for eid, v in verdicts.items():
            if eid not in special:
                ordinary += 1
                skipped += int(not v.needed)
        if inst.variant == "positive":
            pos += 1
            pos_kept += int(verdicts[inst.decision_event].needed)
    print(f"trigger on the sample: skipped {skipped}/{ordinary} ordinary moments, kept {pos_kept}/{pos} positive decisions")
    assert ordinary > 50 and skipped / ordinary >= 0.5
    assert pos and pos_kept == pos


def test_a_short_moment_is_skipped_without_encoding(cfg):
    cfg = cfg.model_copy(deep=True)
    with open_memory(cfg, None, "u1") as mem:
        got = check(mem, Event(id="x", time="2026-03-02T08:00:00+01:00", visual="A door."))
        assert got.verdict.needed is False and got.vectors is None and "content word" in got.verdict.reason
        quiet = check(mem, Event(id="y", time="2026-03-02T08:00:00+01:00",
                                 visual="The user walks past the bakery on the corner of the market square."))
        assert quiet.verdict.needed is False and quiet.verdict.reason == "trigger: no open intention"
        assert quiet.vectors is not None  # encoded once, for retrieval to reuse
