"""Over-proactivity guard: cooldown, waiting for a development, state change, expiry, persistence."""
import json

from core.formats import Decision, Event
from core.recall import Link, Recalled
from reasoner.guard import Guard, Pending

FORMED = Event(id="e04", time="2026-03-02T08:00:00+01:00", visual="The oat milk carton is empty.")


def _at(eid, time, **kw):
    return Event(id=eid, time=time, visual="Walking past a grocery store.", **kw)


def _assist(now):
    return Decision(event_id=now.id, assist=True, message="Oat milk!", evidence=["e04"], retrieved=["e04"])


def test_same_intention_not_raised_twice_within_cooldown(tmp_path):
    g = Guard(cooldown_hours=12, ttl_hours=168, path=tmp_path / "guard.json")
    past = [Recalled(FORMED, 0.9, "cue")]
    n1 = _at("e10", "2026-03-02T18:00:00+01:00")
    assert g.apply(_assist(n1), past, n1).assist is True
    n2 = _at("e11", "2026-03-02T20:00:00+01:00")
    d2 = g.apply(_assist(n2), past, n2)
    assert d2.assist is False and d2.message is None and "cooldown" in d2.guard
    assert d2.suppressed_message == "Oat milk!"


def test_after_cooldown_waits_for_a_development(tmp_path):
    g = Guard(cooldown_hours=12, ttl_hours=168, path=tmp_path / "guard.json")
    n1 = _at("e10", "2026-03-02T18:00:00+01:00")
    g.apply(_assist(n1), [Recalled(FORMED, 0.9, "cue")], n1)
    n2 = _at("e20", "2026-03-03T18:00:00+01:00")
    d2 = g.apply(_assist(n2), [Recalled(FORMED, 0.9, "cue")], n2)
    assert d2.assist is False and "waiting for a state change or expiry" in d2.guard
    # Something new about it after the raise ("still no milk") lets it through again.
    dev = Event(id="e15", time="2026-03-03T08:00:00+01:00", visual="Black coffee again: still no oat milk.")
    past = [Recalled(FORMED, 0.9, "cue", links=[Link("e15", "development")]), Recalled(dev, 0.5, "link")]
    n3 = _at("e21", "2026-03-03T19:00:00+01:00")
    assert g.apply(_assist(n3), past, n3).assist is True


def test_state_change_resolves_for_good(tmp_path):
    g = Guard(cooldown_hours=1, ttl_hours=168, path=tmp_path / "guard.json")
    n1 = _at("e10", "2026-03-02T18:00:00+01:00")
    g.apply(_assist(n1), [Recalled(FORMED, 0.9, "cue")], n1)
    past = [Recalled(FORMED, 0.9, "cue", links=[Link("e12", "state_change"), Link("e15", "development")])]
    n2 = _at("e20", "2026-03-04T18:00:00+01:00")
    d = g.apply(_assist(n2), past, n2)
    assert d.assist is False and "resolved by e12" in d.guard


def test_expired_intention_is_not_raised(tmp_path):
    g = Guard(cooldown_hours=12, ttl_hours=24)
    late = _at("e90", "2026-03-05T18:00:00+01:00")
    d = g.apply(_assist(late), [Recalled(FORMED, 0.9, "cue")], late)
    assert d.assist is False and "expired" in d.guard


def test_state_survives_a_restart_and_a_damaged_file(tmp_path):
    path = tmp_path / "guard.json"
    n1 = _at("e10", "2026-03-02T18:00:00+01:00")
    g = Guard(12, 168, path)
    g.commit(g.apply(_assist(n1), [Recalled(FORMED, 0.9, "cue")], n1).dump(), tmp_path / "decisions.jsonl")
    n2 = _at("e11", "2026-03-02T19:00:00+01:00")
    assert Guard(12, 168, path).apply(_assist(n2), [Recalled(FORMED, 0.9, "cue")], n2).assist is False
    path.write_text("{not json")
    assert Guard(12, 168, path).apply(_assist(n2), [Recalled(FORMED, 0.9, "cue")], n2).assist is True


def test_silence_passes_through_untouched():
    g = Guard(12, 168)
    n = _at("e10", "2026-03-02T18:00:00+01:00")
    d = Decision(event_id="e10", assist=False)
    assert g.apply(d, [], n) is d


def test_assists_without_evidence_are_throttled_by_their_message(tmp_path):
    g = Guard(cooldown_hours=12, ttl_hours=168, path=tmp_path / "guard.json")

    def bare(now, msg="Call 0900-123456 now!"):
        return Decision(event_id=now.id, assist=True, message=msg, evidence=[], retrieved=[])

    n1 = _at("e10", "2026-03-02T18:00:00+01:00")
    d1 = g.apply(bare(n1), [], n1)
    assert d1.assist is True
    g.commit(d1.dump(), tmp_path / "decisions.jsonl")
    n2 = _at("e11", "2026-03-02T19:00:00+01:00")
    d2 = g.apply(bare(n2, "call 0900-654321 NOW"), [], n2)  # the same words: blocked, also after a reload
    assert d2.assist is False and "no recalled event" in d2.guard
    g2 = Guard(cooldown_hours=12, ttl_hours=168, path=tmp_path / "guard.json")
    assert g2.apply(bare(n2), [], n2).assist is False
    # an evidence id that is not among the recalled events keys nothing either
    d3 = g2.apply(Decision(event_id="e12", assist=True, message="Call 0900-123456 now!", evidence=["zz"]), [], n2)
    assert d3.assist is False
    assert g2.apply(bare(n2, "Something else entirely."), [], n2).assist is True
    n3 = _at("e30", "2026-03-03T08:00:00+01:00")  # after the cooldown
    assert g2.apply(bare(n3), [], n3).assist is True


def test_a_decision_lost_after_the_guard_saved_it_is_recorded_on_reopen(tmp_path):
    # The guard file is written first and carries the decision: a crash before the log append is
    # completed on reopen, so the raise the guard remembers always has its decision in the log.
    path, decisions = tmp_path / "guard.json", tmp_path / "decisions.jsonl"
    n1 = _at("e10", "2026-03-02T18:00:00+01:00")
    g = Guard(12, 168, path)
    row = g.apply(_assist(n1), [Recalled(FORMED, 0.9, "cue")], n1).dump()
    g.pending = Pending(str(decisions.resolve()), row)
    g.save()  # what commit writes before it appends; the process dies here
    assert not decisions.exists()
    again = Guard(12, 168, path)
    assert again.recover(decisions, set()) == row
    assert [json.loads(line) for line in decisions.read_text().splitlines()] == [row]
    assert again.recover(decisions, {"e10"}) is None  # complete: nothing appended twice
    assert Guard(12, 168, path).recover(tmp_path / "other.jsonl", set()) is None  # another log is not this one's


def test_closed_intention_record_silences_its_evidence(tmp_path):
    g = Guard(cooldown_hours=1, ttl_hours=168, path=tmp_path / "guard.json")
    n1 = _at("e10", "2026-03-02T18:00:00+01:00")
    why = {"e04": "intention int-1 from e04 is dismissed (its record)"}
    d = g.apply(_assist(n1), [Recalled(FORMED, 0.9, "cue")], n1, why)
    assert d.assist is False and d.guard == why["e04"] and d.suppressed_message == "Oat milk!"
    assert g.changed is False and "e04" not in g.state  # nothing was raised, so nothing to commit
    # Only the closed evidence is dropped when another one is open.
    other = Event(id="e05", time="2026-03-02T09:00:00+01:00", visual="The parcel notice.")
    both = Decision(event_id="e11", assist=True, message="Two things.", evidence=["e04", "e05"])
    n2 = _at("e11", "2026-03-02T19:00:00+01:00")
    d2 = g.apply(both, [Recalled(FORMED, 0.9, "cue"), Recalled(other, 0.8, "cue")], n2, why)
    assert d2.assist is True and d2.evidence == ["e05"] and "dismissed" in d2.guard
