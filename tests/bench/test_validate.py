import copy
import subprocess
import sys

import pytest

from bench.validate import Violation, check_object, validate_file
from tests.bench.helpers import SAMPLE, ev, instance, intention, write_jsonl

POS = instance("pos", "positive", [intention("i1", "e1", [["oat milk"], ["grocery", "store"]])])
SC = instance("sc", "state_change", [intention("i1", "e1", [["oat milk"]], state_change="e3")])


def rules(obj) -> set[str]:
    return {v.rule for v in check_object(obj, "f.jsonl", 7)}


def test_sample_loads_without_violations():
    instances, violations = validate_file(SAMPLE)
    assert violations == []
    assert len(instances) == 8
    assert {i.variant for i in instances} == {"positive", "negative", "no_formation", "state_change"}


def test_valid_hand_made_instances_pass():
    assert rules(POS) == set()
    assert rules(SC) == set()
    assert rules(instance("nf", "no_formation")) == set()


def mutate(base, fn):
    obj = copy.deepcopy(base)
    fn(obj)
    return obj


@pytest.mark.parametrize("base,fn,rule", [
    (POS, lambda o: o.pop("persona"), "required_key"),
    (POS, lambda o: o.__setitem__("category", "sports"), "category"),
    (POS, lambda o: o.__setitem__("variant", "maybe"), "variant"),
    (POS, lambda o: o["events"][1].__setitem__("id", "e1"), "event_id_unique"),
    (POS, lambda o: o["events"][1].pop("time"), "required_key"),
    (POS, lambda o: o["events"][1].__setitem__("time", "2026-03-02T09:00:00"), "time_format"),
    (POS, lambda o: o["events"][1].__setitem__("time", "2026-03-01T09:00:00-05:00"), "time_order"),
    (POS, lambda o: [o["events"][1].pop("visual"), o["events"][1].pop("audio")], "event_content"),
    (POS, lambda o: o.__setitem__("decision_event", "e9"), "decision_event_ref"),
    (POS, lambda o: o.__setitem__("decision_event", "e2"), "decision_event_last"),
    (POS, lambda o: o["intentions"][0].__setitem__("formation", "e9"), "formation_ref"),
    (POS, lambda o: o["intentions"][0].__setitem__("keywords", []), "keywords"),
    (POS, lambda o: o["intentions"][0].__setitem__("keywords", [["oat"], []]), "keywords"),
    (POS, lambda o: o["intentions"][0].__setitem__("keywords", [["oat", ""]]), "keywords"),
    (POS, lambda o: o["intentions"][0].__setitem__("keywords", "oat milk"), "keywords"),
    (POS, lambda o: o["intentions"][0].__setitem__("state_change", "e3"), "state_change_null"),
    (POS, lambda o: o["intentions"][0].__setitem__("reference", ""), "reference"),
    (POS, lambda o: o.__setitem__("intentions", []), "intentions_count"),
    (POS, lambda o: o["intentions"].append(copy.deepcopy(o["intentions"][0])), "intention_id_unique"),
    (instance("nf", "no_formation"), lambda o: o["intentions"].append(intention("i1", "e1", [["x"]])),
     "intentions_count"),
    (SC, lambda o: o["intentions"][0].__setitem__("state_change", None), "state_change_set"),
    (SC, lambda o: o["intentions"][0].__setitem__("state_change", "e9"), "state_change_ref"),
    (SC, lambda o: [o["intentions"][0].__setitem__("formation", "e3"),
                    o["intentions"][0].__setitem__("state_change", "e2")], "state_change_order"),
    (SC, lambda o: o["intentions"][0].__setitem__("state_change", "e4"), "state_change_order"),
    (SC, lambda o: o["intentions"][0].__setitem__("formation", "e4"), "formation_order"),
])
def test_each_rule_is_checked(base, fn, rule):
    assert rule in rules(mutate(base, fn))


def test_formation_at_decision_allowed_only_for_positive_with_empty_keywords():
    # An imported CAB context: one event, the intention forms at the decision moment, keywords empty.
    one = instance("cab", "positive", [intention("i1", "e1", [])], events=[ev("e1", 9, "At the bus stop.")])
    assert rules(one) == set()
    neg = mutate(one, lambda o: o.__setitem__("variant", "negative"))
    assert {"formation_order", "keywords"} <= rules(neg)


def test_violation_names_file_line_instance_and_rule():
    v = check_object(mutate(POS, lambda o: o.__setitem__("category", "sports")), "data/x.jsonl", 12)[0]
    assert isinstance(v, Violation)
    text = str(v)
    for part in ("data/x.jsonl", "12", "'pos'", "category", "sports"):
        assert part in text


def test_malformed_lines_are_violations_and_the_rest_is_checked(tmp_path):
    bad_cat = mutate(POS, lambda o: (o.__setitem__("id", "bad"), o.__setitem__("category", "sports")))
    path = write_jsonl(tmp_path / "b.jsonl", [POS, "{not json", bad_cat, "[1, 2]", SC, copy.deepcopy(POS)])
    instances, violations = validate_file(path)
    assert [i.id for i in instances] == ["pos", "sc"]
    got = {(v.line, v.rule) for v in violations}
    assert got == {(2, "json"), (3, "category"), (4, "json"), (6, "instance_id_unique")}


def test_cli_exit_codes(tmp_path):
    good = write_jsonl(tmp_path / "g.jsonl", [POS, SC])
    bad = write_jsonl(tmp_path / "b.jsonl", [POS, "{oops"])
    cmd = [sys.executable, "-m", "cli.main", "bench", "validate"]
    ok = subprocess.run(cmd + [str(good)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "2 valid instance(s), 0 violation(s)" in ok.stdout
    ko = subprocess.run(cmd + [str(bad)], capture_output=True, text=True)
    assert ko.returncode == 1
    assert f"{bad}:2" in ko.stderr and "[json]" in ko.stderr
