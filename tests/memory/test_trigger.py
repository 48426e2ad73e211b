"""Context trigger with real memory (SQLite + FAISS) and the tests' trained models: walking each
timeline as the online loop does (check at an event, then remember it), it skips most ordinary moments
and keeps the decision moments of positive timelines; the verdicts the benchmark computes after the
fact from the stored vectors are the online walk's; a planted opportunity whose formation memory did
not flag as an intention still passes; a too-short moment costs no encoding."""
import pytest

from bench.generator import generate
from bench.metrics import ordinary_events
from core.formats import Event
from memory.api import open_memory
from memory.trigger import check, verdicts_as_of

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
    ordinary = skipped = pos = pos_kept = 0
    for inst in instances:
        verdicts = _walk(cfg, inst)
        for e in ordinary_events(inst, inst.events[:-1]):
            ordinary += 1
            skipped += int(not verdicts[e.id].needed)
        if inst.variant == "positive":
            pos += 1
            pos_kept += int(verdicts[inst.decision_event].needed)
    print(f"trigger on the sample: skipped {skipped}/{ordinary} ordinary moments, kept {pos_kept}/{pos} positive decisions")
    assert ordinary > 50 and skipped / ordinary >= 0.5
    assert pos and pos_kept == pos


def test_after_the_fact_verdicts_are_the_online_walks_on_generated_timelines(cfg):
    """bench.metrics' ordinary skip share rests on verdicts_as_of: the same verdicts as an online walk,
    and most ordinary moments skipped with the shipped thresholds."""
    insts = generate(8, seed=5, split="test")
    same = total = skipped = 0
    for inst in insts:
        online = _walk(cfg, inst)
        ordinary = ordinary_events(inst, inst.events[:-1])
        with open_memory(cfg, None, inst.id + "-after") as mem:
            mem.add_many(list(inst.events[:-1]))
            after = verdicts_as_of(mem, ordinary)
        for e, v in zip(ordinary, after):
            total += 1
            skipped += int(not v.needed)
            same += int(v.needed == online[e.id].needed)
    print(f"generated: {skipped}/{total} ordinary moments skipped; after-the-fact verdict = online at {same}/{total}")
    assert same / total >= 0.97  # batched ingestion may link a little differently from one event at a time
    # the tests' cue encoder trains one epoch on the sample, so it separates these unseen scenarios less
    # than a trained one (BENCHMARKS.md "Context trigger": 53-65% with trained models); half is asserted
    # on the sample above
    assert total > 100 and skipped / total >= 0.4


def test_a_planted_opportunity_passes_even_when_no_intention_was_stored(cfg):
    """The formation is stored but (linker threshold out of reach) not flagged as an intention: the
    opportunity still passes on its top cue score, while an unrelated routine moment is skipped."""
    cfg = cfg.model_copy(deep=True)
    formation = Event(id="f", time="2026-03-02T08:00:00+01:00", location="Home kitchen",
                      visual="The user opens the fridge and finds the oat milk carton empty.",
                      audio="[user] We're out of oat milk, I need to buy some on the way home.")
    filler = [Event(id=f"d{i}", time=f"2026-03-02T{10 + i}:00:00+01:00", visual=v) for i, v in enumerate((
        "The user answers emails at the office desk, a cup of tea beside the keyboard.",
        "The user takes the stairs to the third floor meeting room for the weekly planning call.",
        "The user walks the dog around the park pond while ducks swim past."))]
    opportunity = Event(id="o", time="2026-03-02T18:10:00+01:00", location="Fresh Market",
                        visual="The user walks past the dairy shelf of the supermarket, oat milk cartons in a row.")
    routine = Event(id="r", time="2026-03-02T18:20:00+01:00",
                    visual="The user ties a shoelace on a bench at the tram stop and checks the timetable.")
    with open_memory(cfg, None, "planted") as mem:
        mem.constructor.linker.intent_threshold = 2.0  # nothing is flagged as an intention
        mem.add_many([formation, *filler])
        assert not mem.store.live_intentions_before("planted", opportunity.dt.timestamp())
        got = check(mem, opportunity).verdict
        assert got.needed, got
        assert got.similarity is None and got.cue_score is not None and got.cue_score >= cfg.memory.trigger.min_cue_score
        mem.add(opportunity)
        quiet = check(mem, routine).verdict
        assert not quiet.needed and quiet.reason.startswith("trigger: no open intention")


def test_a_short_moment_is_skipped_without_encoding(cfg):
    cfg = cfg.model_copy(deep=True)
    with open_memory(cfg, None, "u1") as mem:
        got = check(mem, Event(id="x", time="2026-03-02T08:00:00+01:00", visual="A door."))
        assert got.verdict.needed is False and got.vectors is None and "content word" in got.verdict.reason
        quiet = check(mem, Event(id="y", time="2026-03-02T08:00:00+01:00",
                                 visual="The user walks past the bakery on the corner of the market square."))
        assert quiet.verdict.needed is False and quiet.verdict.reason == "trigger: no open intention; no earlier event"
        assert quiet.vectors is not None  # encoded once, for retrieval to reuse
