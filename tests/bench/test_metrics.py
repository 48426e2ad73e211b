"""Each metric on small cases computed by hand (counts in the comments)."""
import pytest

from bench.metrics import NO_INTENTION, compute_metrics
from core.formats import METRIC_KEYS
from tests.bench.helpers import decision, instance, intention, model

KW = [["oat milk"]]


def case_set():
    pos1 = model(instance("pos1", "positive", [intention("i1", "e1", KW), intention("i2", "e2", KW)]))
    pos2 = model(instance("pos2", "positive", [intention("i1", "e1", KW)], category="shopping"))
    neg = model(instance("neg", "negative", [intention("i1", "e1", KW)]))
    nf = model(instance("nf", "no_formation", category="shopping"))
    sc1 = model(instance("sc1", "state_change", [intention("i1", "e1", KW, state_change="e3")]))
    sc2 = model(instance("sc2", "state_change", [intention("i1", "e1", KW, state_change="e3")]))
    rows = [
        (pos1, decision(pos1, True, "oat milk!", ["e1"], llm_called=True, context_tokens=100), {"i1": "TP", "i2": "FN"}),
        (pos2, decision(pos2, False, None, ["e1", "e2"], context_tokens=200), {"i1": "FN"}),
        (neg, decision(neg, True, "oat milk?", ["e1"], llm_called=True), {"i1": "FP"}),
        (nf, decision(nf, False, None, [], error="LLMError: timeout"), {NO_INTENTION: "TN"}),
        (sc1, decision(sc1, True, "Your roommate got it; want a recipe?", ["e1", "e3"]), {"i1": "TN"}),  # follow-up
        (sc2, decision(sc2, True, "Buy oat milk", ["e1"]), {"i1": "FP"}),  # stale push
    ]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def test_all_metrics_on_a_mixed_set():
    # TP 1 (pos1.i1); FN 2 (pos1.i2, pos2.i1); FP 2 (neg, sc2); TN 2 (nf, sc1 follow-up).
    out = compute_metrics(*case_set())
    m = out["metrics"]
    assert list(m) == list(METRIC_KEYS)
    assert m["DIR"] == pytest.approx(66.67)  # formations retrieved: pos1.i1 yes, pos1.i2 no, pos2.i1 yes
    assert m["SCR"] == 50.0  # sc1 has e1 and e3, sc2 lacks e3
    assert m["FD"] == 50.0  # 2 FP / (2 FP + 2 TN)
    assert m["Acc-P"] == 50.0  # right: pos1 (spoke), nf, sc1 (follow-up) -> 3/6
    assert m["Acc-PA"] == pytest.approx(33.33)  # pos1 misses i2 -> only nf, sc1 -> 2/6
    assert m["Set-P"] == pytest.approx(33.33)  # 1 / (1 + 2)
    assert m["Set-R"] == pytest.approx(33.33)  # 1 / (1 + 2)
    assert m["Set-F1"] == pytest.approx(33.33)
    x = out["extra"]
    assert (x["TP"], x["FN"], x["FP"], x["TN"], x["n"]) == (1, 2, 2, 2, 6)
    assert x["Demand-Acc"] == 50.0  # pos1 right, pos2 wrong
    assert x["No-Demand-Acc"] == 50.0  # nf, sc1 right; neg, sc2 wrong
    assert x["MD-all"] == pytest.approx(16.67) and x["FD-all"] == pytest.approx(33.33)  # pos2; neg, sc2 of 6
    assert m["Acc-P"] + x["MD-all"] + x["FD-all"] == pytest.approx(100.0, abs=0.02)
    assert x["reasoner_errors"] == 1  # nf's silence came from a failed model call
    assert x["LLM-call-share"] == pytest.approx(33.33)  # 2 of 6 decisions called a large model
    assert x["context_tokens_mean"] == 150.0 and x["context_tokens_total"] == 300  # only 2 reported


def test_breakdowns_by_variant_and_category():
    out = compute_metrics(*case_set())
    v = out["breakdown"]["variant"]
    assert v["positive"]["n"] == 2 and v["positive"]["Set-R"] == pytest.approx(33.33)
    assert v["positive"]["FD"] is None and v["positive"]["SCR"] is None
    assert v["positive"]["Set-P"] == 100.0  # TP 1, no FP among positives
    assert v["state_change"]["FD"] == 50.0 and v["state_change"]["Acc-P"] == 50.0
    assert v["negative"]["Set-P"] == 0.0 and v["negative"]["Set-R"] is None and v["negative"]["Set-F1"] == 0.0
    c = out["breakdown"]["category"]
    assert set(c) == {"food", "shopping"}
    assert c["shopping"]["n"] == 2 and c["shopping"]["Acc-P"] == 50.0  # pos2 wrong, nf right
    assert c["food"]["DIR"] == 50.0  # only pos1 is food: 1 of 2 formations


def test_multi_intention_positive_counts_each_intention():
    inst = model(instance("p", "positive", [intention("i1", "e1", KW), intention("i2", "e2", KW),
                                            intention("i3", "e3", KW)]))
    d = decision(inst, True, "x", ["e1", "e2", "e3"])
    m = compute_metrics([inst], [d], [{"i1": "TP", "i2": "TP", "i3": "FN"}])["metrics"]
    assert m["Set-R"] == pytest.approx(66.67) and m["Set-P"] == 100.0 and m["Set-F1"] == 80.0
    assert m["Acc-P"] == 100.0 and m["Acc-PA"] == 0.0  # spoke, but did not address all three
    assert m["DIR"] == 100.0
    m = compute_metrics([inst], [d], [{"i1": "TP", "i2": "TP", "i3": "TP"}])["metrics"]
    assert m["Acc-PA"] == 100.0 and m["Set-F1"] == 100.0


def test_state_change_with_two_intentions_needs_all_events_and_any_stale_push_is_fp():
    inst = model(instance("s", "state_change", [intention("i1", "e1", KW, state_change="e3"),
                                                intention("i2", "e2", KW, state_change="e3")]))
    m = compute_metrics([inst], [decision(inst, True, "m", ["e1", "e3"])], [{"i1": "TN", "i2": "FP"}])["metrics"]
    assert m["SCR"] == 0.0  # e2 (formation of i2) missing
    assert m["FD"] == 100.0 and m["Acc-P"] == 0.0  # one FP per instance
    m = compute_metrics([inst], [decision(inst, True, "m", ["e1", "e2", "e3"])], [{"i1": "TN", "i2": "TN"}])["metrics"]
    assert m["SCR"] == 100.0 and m["FD"] == 0.0 and m["Acc-P"] == 100.0  # a follow-up is right


def test_nulls_when_nothing_to_count():
    neg = model(instance("n", "negative", [intention("i1", "e1", KW)]))
    m = compute_metrics([neg], [decision(neg, False)], [{"i1": "TN"}])["metrics"]
    assert m["DIR"] is None and m["SCR"] is None
    assert m["Set-P"] is None and m["Set-R"] is None and m["Set-F1"] is None  # TP+FP = TP+FN = 0
    assert m["FD"] == 0.0 and m["Acc-P"] == 100.0
    pos = model(instance("p", "positive", [intention("i1", "e1", KW)]))
    m = compute_metrics([pos], [decision(pos, False)], [{"i1": "FN"}])["metrics"]
    # Never speaking: precision undefined, recall 0, F1 0 (not dropped from a comparison).
    assert m["FD"] is None and m["Set-P"] is None and m["Set-R"] == 0.0 and m["Set-F1"] == 0.0
    assert compute_metrics([], [], [])["metrics"] == {k: None for k in METRIC_KEYS}


def test_retrieval_only_gives_dir_and_scr_only():
    insts, decs, _ = case_set()
    out = compute_metrics(insts, decs, None)
    m = out["metrics"]
    assert m["DIR"] == pytest.approx(66.67) and m["SCR"] == 50.0
    assert all(m[k] is None for k in METRIC_KEYS if k not in ("DIR", "SCR"))


def test_formation_at_decision_event_is_left_out_of_dir():
    one = model(instance("cab", "positive", [intention("i1", "e4", [])]))
    m = compute_metrics([one], [decision(one, True, "hi", [])], [{"i1": "TP"}])["metrics"]
    assert m["DIR"] is None and m["Set-R"] == 100.0


def test_unknown_label_and_misaligned_lists_are_errors():
    pos = model(instance("p", "positive", [intention("i1", "e1", KW)]))
    with pytest.raises(ValueError, match="'maybe'"):
        compute_metrics([pos], [decision(pos, True, "x")], [{"i1": "maybe"}])
    with pytest.raises(ValueError, match="aligned"):
        compute_metrics([pos], [], [])


def test_breakdown_by_an_extra_dotted_key():
    a = instance("a", "positive", [intention("i1", "e1", KW)])
    b = instance("b", "positive", [intention("i1", "e1", KW)])
    a["source"] = {"relation_type": "causal"}
    b["source"] = {"relation_type": "goal"}
    insts = [model(a), model(b), model(instance("c", "positive", [intention("i1", "e1", KW)]))]
    decs = [decision(insts[0], False, None, ["e1"]), decision(insts[1], False, None, ["e2"]),
            decision(insts[2], False, None, ["e1"])]
    bd = compute_metrics(insts, decs, None, group_by=["source.relation_type"])["breakdown"]["source.relation_type"]
    assert bd == {"causal": {**bd["causal"], "DIR": 100.0, "n": 1}, "goal": {**bd["goal"], "DIR": 0.0, "n": 1}}


def test_trigger_skip_shares_over_decision_and_ordinary_moments():
    insts, decs, judged = case_set()
    assert compute_metrics(insts, decs, judged)["extra"]["trigger_ordinary_skip_share"] is None  # trigger off
    decs[1].trigger = "trigger: 2 content word(s) (< 4)"
    for d, (n, k) in zip(decs, [(10, 6), (20, 15), (5, 0), (5, 5), (0, 0), (10, 4)]):
        d.ordinary_moments, d.ordinary_skipped = n, k
    x = compute_metrics(insts, decs, judged)["extra"]
    assert x["trigger_skip_share"] == pytest.approx(16.67)  # 1 of 6 decision moments
    assert x["trigger_ordinary_skip_share"] == 60.0  # 30 of 50 ordinary moments, pooled over timelines


def test_ordinary_events_are_those_no_intention_names():
    from bench.metrics import ordinary_events

    sc = model(instance("sc", "state_change", [intention("i1", "e1", KW, state_change="e3")]))
    nf = model(instance("nf", "no_formation"))
    for inst, special in ((sc, {"e1", "e3", sc.decision_event}), (nf, {nf.decision_event})):
        got = [e.id for e in ordinary_events(inst, inst.events[:-1])]
        assert got == [e.id for e in inst.events[:-1] if e.id not in special] and got
