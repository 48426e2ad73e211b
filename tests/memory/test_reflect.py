"""Scheduled reflection on a real store with the tests' trained linker: a formation the online pass missed
(its thresholds forced out of reach) is found, a missed state change resolves its intention, a rerun adds
nothing, and the precomputed brief lists what was found and is served by `promem brief` while fresh."""
import dataclasses
import json

from bench.reflect_gain import deaf
from cli.main import main
from core.timeutil import parse_time
from memory.api import open_memory
from memory.brief import brief_from_store
from memory.construct.encoder import EncoderConstructor
from memory.reflect import day_events, reflect

from tests.memory.conftest import env_for



def _deaf(cfg, intents=True, links=True):
    """The CPU constructor with its intention and/or state-change detection switched off."""
    return deaf(EncoderConstructor(cfg), intents, links)


def _remember(cfg, store, user, inst, constructor):
    with open_memory(cfg, store, user, constructor=constructor) as mem:
        mem.add_many(inst.events)


def _days(inst):
    return sorted({e.dt.date() for e in inst.events})


def test_reflection_fills_a_planted_gap_once_and_precomputes_the_brief(cfg, instances, tmp_path, monkeypatch, capsys):
    inst = next(i for i in instances if i.variant == "positive")
    formation = inst.intentions[0].formation
    before = inst.event(inst.decision_event)
    inst = inst.model_copy(update={"events": [e for e in inst.events if e.dt < before.dt]})
    _remember(cfg, tmp_path, "u1", inst, _deaf(cfg))
    with open_memory(cfg, tmp_path, "u1") as mem:
        assert mem.store.intention_records("u1") == []  # the gap: the first pass stored no intention
        reports = [reflect(cfg, mem.store, "u1", d) for d in _days(inst)]
        recs = mem.store.intention_records("u1")
        assert sum(r.intentions_added for r in reports) == len(recs) > 0
        assert formation in {r.evidence[0] for r in recs}  # the labelled formation is among those found
        assert sum(r.events for r in reports) == len(inst.events) == len(mem.store.all_event_ids("u1"))
        again = [reflect(cfg, mem.store, "u1", d) for d in _days(inst)]  # idempotent
        assert all(r.intentions_added == 0 and r.resolved == 0 for r in again)
        assert [r.model_dump() for r in mem.store.intention_records("u1")] == [r.model_dump() for r in recs]
        last = again[-1]
        at = parse_time(last.brief_at)
        b = brief_from_store(mem.store, "u1", cfg, at)
        assert b.computed_at is not None and len(b.items) == last.brief_items
        live = {r.id for r in recs if r.status in ("open", "raised")}
        assert {i.id for i in b.items} <= live and (b.items or b.omitted or not live)
        fresh = brief_from_store(mem.store, "u1", cfg, at, use_cache=False)
        assert [i.id for i in fresh.items] == [i.id for i in b.items] and fresh.computed_at is None
        # a change to the intentions makes the precomputed brief stale
        if live:
            from memory.intentions import IntentionBook

            IntentionBook(mem.store, "u1").dismiss(sorted(live)[0], at=at.timestamp())
            assert brief_from_store(mem.store, "u1", cfg, at).computed_at is None

    for k, v in env_for_cli(cfg).items():
        monkeypatch.setenv(k, v)
    assert main(["reflect", "--store", str(tmp_path), "--user", "u1", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["intentions_added"] == 0 and rep["day"] == _days(inst)[-1].isoformat()
    assert main(["brief", "--store", str(tmp_path), "--user", "u1", "--at", rep["brief_at"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["computed_at"] is not None  # served without recomputing
    assert main(["reflect", "--store", str(tmp_path), "--user", "u1", "--day", "2026-13-01"]) == 2
    assert "not a date" in capsys.readouterr().err


def env_for_cli(cfg) -> dict:
    from pathlib import Path

    env = env_for(Path(cfg.memory.construction.linker).parent)
    return {k: v for k, v in env.items() if k.startswith("PROMEM_")}


def test_reflection_resolves_an_intention_whose_state_change_was_missed(cfg, instances, tmp_path):
    inst = next(i for i in instances if i.variant == "state_change" and i.intentions[0].state_change)
    want = inst.intentions[0]
    _remember(cfg, tmp_path, "u1", inst, _deaf(cfg, intents=False))
    with open_memory(cfg, tmp_path, "u1") as mem:
        store = mem.store
        assert all(ln.kind != "state_change" for ln in store.links_touching("u1", [want.formation]))  # the gap
        assert want.formation in {r.evidence[0] for r in store.intention_records("u1") if r.status == "open"}
        total = sum(reflect(cfg, store, "u1", d).resolved for d in _days(inst))
        recs = {r.evidence[0]: r for r in store.intention_records("u1")}
        assert want.formation in recs and total >= 1
        rec = recs[want.formation]
        assert rec.status == "resolved" and rec.transitions[-1].event_id == want.state_change
        assert sum(reflect(cfg, store, "u1", d).resolved for d in _days(inst)) == 0
        assert len(day_events(store, "u1", _days(inst)[0])) >= 1
