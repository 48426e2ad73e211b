"""The gate: training on a tiny set (loss falls, artifact + meta.json), scoring, composed messages."""
import json
import re

import pytest

from core.recall import Link, Recalled
from reasoner.api import build_reasoner
from reasoner.gate.compose import compose_message, when_phrase
from training.data import build_pairs, split
from training.recipes.gate import calibrate

from tests.support.reasoner_cfg import cfg_with


def _keywords_hit(text, groups):
    return all(any(re.search(rf"\b{re.escape(w)}\b", text, re.I) for w in g) for g in groups)


def test_pairs_cover_every_variant(sample_instances):
    pairs = build_pairs(sample_instances, seed=0, distractors=2)
    kinds = {(p.kind, p.label) for p in pairs}
    assert {("formation", 1), ("near_miss", 0), ("distractor", 0), ("state_change_event", 0),
            ("other_moment", 0), ("between", 0), ("routine", 0)} <= kinds
    for p in pairs:
        assert p.past.dt < p.current.dt or p.kind == "other_moment"


def test_split_keeps_a_scenario_on_one_side(sample_instances):
    train, held = split(sample_instances, 0.5, seed=0)
    assert not {i.persona for i in train} & {i.persona for i in held}
    assert len(train) + len(held) == len(sample_instances)


def test_calibration_respects_the_false_detection_target():
    scores = [("positive", 0.9), ("positive", 0.6), ("negative", 0.7), ("no_formation", 0.2), ("state_change", 0.1)]
    t, fig = calibrate(scores, fd_target=0.0)
    assert 0.7 < t <= 0.9 and fig["fd"] == 0.0
    # ordinary moments (no opportunity for anything) bound it too: one scored 0.95 of two is 50%
    t, fig = calibrate(scores, fd_target=0.0, ordinary=[0.95, 0.3], ordinary_fd_target=0.0)
    assert t > 0.95 and fig["ordinary_fd"] == 0.0 and fig["recall"] == 0.0
    t, fig = calibrate(scores, fd_target=0.0, ordinary=[0.95, 0.3], ordinary_fd_target=0.5)
    assert 0.7 < t <= 0.9 and fig["ordinary_fd"] == 50.0 and fig["ordinary_moments"] == 2


@pytest.mark.slow
def test_gate_training_loss_falls_and_artifact_reloads(trained_gate, sample_instances):
    from core.artifacts import read_meta

    out, meta = trained_gate
    losses = meta.metrics["losses"]
    assert meta.metrics["trees"] == 60 and len(losses) > 10
    assert losses[-1] < 0.6 * losses[0] and all(b <= a + 1e-6 for a, b in zip(losses, losses[1:]))
    saved = read_meta(out)
    assert saved == meta and saved.kind == "gate" and saved.metrics["calibrated"] is True
    assert 0.0 < saved.threshold <= 1.0 and (out / "model.joblib").is_file()
    # the threshold was chosen on every instance, each scored by a fold's gate that never saw its seed
    cross_fit = saved.metrics["cross_fit"]
    assert saved.metrics["folds"] == 2 and cross_fit["instances"] == len(sample_instances)
    assert cross_fit["ordinary_moments"] > 0
    # the cue encoder named in the meta is loaded again with the gate
    from reasoner.gate.features import FEATURES
    from reasoner.gate.model import GateModel

    assert saved.cue_encoder == "base" and saved.metrics["features"] == list(FEATURES)
    gate = GateModel.load(out)
    assert gate.cue is not None and gate.featurizer.cue_encode is not None
    assert saved.metrics["intent_model"] == "logistic" and gate.intent is None  # the default formation role
    assert len(gate.role_models) == 3 and gate.score(sample_instances[0].events[:3], sample_instances[0].events[3]).shape == (3,)


@pytest.mark.slow
def test_the_fine_tuned_intent_reader_stands_in_for_the_formation_role(sample_instances, tmp_path):
    import shutil

    import numpy as np

    from reasoner.gate.features import event_line
    from reasoner.gate.model import GateModel, GateNotTrained
    from training.finetune import FinetuneSettings
    from training.recipes.gate import load_recipe, train

    out = tmp_path / "gate"
    recipe = load_recipe(trees=30, folds=2, threads=1, now_data=None, intent_model="finetune",
                         intent_finetune=FinetuneSettings(epochs=1, batch_size=8, max_length=64, train_layers=1))
    meta = train(sample_instances, recipe, out, progress=False, cue_spec="base")
    assert meta.metrics["intent_model"] == "finetune" and (out / "intent" / "classifier.safetensors").is_file()
    intent = meta.metrics["intent"]
    assert intent["steps"] > 0 and intent["out_of_fold_auc"] is not None
    gate = GateModel.load(out)
    events = sample_instances[0].events[:4]
    vecs = np.stack(gate.featurizer.embed(events))
    roles = gate.roles(events, vecs)
    assert np.allclose(roles[:, 0], gate.intent.model.score([event_line(e) for e in events]), atol=1e-5)
    assert gate.intent.score(events[:1])[0] == roles[0, 0]  # scored once, kept by text
    # a gate whose reader's weights are gone is a clear error naming the way out
    broken = out.parent / "broken-gate"
    shutil.copytree(out, broken)
    shutil.rmtree(broken / "intent")
    with pytest.raises(GateNotTrained, match="intent reader.*promem train gate"):
        GateModel.load(broken)


@pytest.mark.slow
def test_a_bagged_gate_averages_members_drawn_from_other_folds_and_pairs(sample_instances, tmp_path):
    import numpy as np

    from reasoner.gate.model import GateModel, MeanOfModels
    from training.recipes.gate import load_recipe, train

    out = tmp_path / "gate"
    meta = train(sample_instances, load_recipe(trees=30, folds=2, threads=1, now_data=None, bag=3), out,
                 progress=False, cue_spec="base")
    assert meta.metrics["bag"] == 3 and meta.metrics["cross_fit"]["instances"] == len(sample_instances)
    gate = GateModel.load(out)
    assert isinstance(gate.pair_model, MeanOfModels) and len(gate.pair_model.models) == 3
    inst = sample_instances[0]
    feats = gate.featurizer.features(inst.events[:5], inst.events[5])
    each = np.stack([m.predict_proba(feats)[:, 1] for m in gate.pair_model.models])
    assert np.allclose(gate.score(inst.events[:5], inst.events[5]), each.mean(axis=0))
    assert not np.allclose(each[0], each[1])  # members differ: their own folds and sampled pairs


@pytest.mark.slow
def test_gate_and_memory_share_one_cue_encoder(trained_gate):
    """Both put the current event in the cue space at every decision: one instance, one cache."""
    from memory.construct.artifacts import cue_encoder
    from reasoner.gate.reasoner import GateScorer

    cfg = cfg_with(gate={"path": str(trained_gate[0])})
    scorer = GateScorer(cfg)
    assert scorer.model.cue is cue_encoder("base", cfg.memory.embedder)


@pytest.mark.slow
def test_gate_reads_the_vectors_memory_computed_when_the_event_came_in(trained_gate, sample_instances):
    """Memory embeds every event's text() when it arrives; deciding, the gate embeds nothing again."""
    from memory.construct.encoder import EncoderConstructor
    from reasoner.gate.reasoner import GateScorer

    cfg = cfg_with(gate={"path": str(trained_gate[0])})
    data = cfg.model_dump()
    data["memory"]["construction"].update(cue_encoder="base", linker="none")
    cfg = type(cfg).model_validate(data)
    memory = EncoderConstructor(cfg)
    scorer = GateScorer(cfg)
    assert scorer.model.embedder is memory.content
    inst = next(i for i in sample_instances if i.variant == "positive")
    events = sorted(inst.events, key=lambda e: e.dt)
    memory.extract(events)  # what ingest does as they come in
    computed = []
    real = memory.content._encode
    memory.content._encode = lambda texts: computed.extend(texts) or real(texts)
    try:
        past = [Recalled(event=e, score=1.0, path="content") for e in events[-9:-1]]  # what recall hands over
        assert len(scorer.score(past, events[-1]).scores) == len(past)
    finally:
        memory.content._encode = real
    assert computed == []


@pytest.mark.slow
def test_gate_reasoner_decides_with_contract_fields(trained_gate, sample_instances):
    out, _ = trained_gate
    cfg = cfg_with(backend="gate", gate={"path": str(out), "use_calibrated": False, "threshold": 0.0})
    reasoner = build_reasoner(cfg)
    inst = next(i for i in sample_instances if i.variant == "positive")
    current = inst.event(inst.decision_event)
    past = [Recalled(e, 0.5, "content") for e in reversed(inst.events[:-1])][:6]
    d = reasoner.decide(inst.persona, past, current)
    assert d.retrieved == [r.event.id for r in past]  # order as given
    assert d.assist is True and set(d.evidence) <= set(d.retrieved) and d.message
    assert d.llm_called is False and d.context_tokens > 50
    # The same moment with an impossible threshold stays silent.
    silent = build_reasoner(cfg_with(gate={"path": str(out), "use_calibrated": False, "threshold": 1.01}))
    s = silent.decide(inst.persona, past, current)
    assert s.assist is False and s.message is None and s.evidence == []


@pytest.mark.slow
def test_gate_ranks_the_formation_first_on_training_moments(trained_gate, sample_instances):
    from reasoner.gate.model import GateModel

    gate = GateModel.load(trained_gate[0])
    for inst in sample_instances:
        if inst.variant != "positive":
            continue
        current = inst.event(inst.decision_event)
        past = inst.events[:-1]
        scores = gate.score(past, current)
        assert past[int(scores.argmax())].id == inst.intentions[0].formation


@pytest.mark.slow
def test_state_change_link_dismisses_the_intention(trained_gate, sample_instances):
    inst = next(i for i in sample_instances if i.variant == "state_change")
    it = inst.intentions[0]
    formation, sc = inst.event(it.formation), inst.event(it.state_change)
    current = inst.event(inst.decision_event)
    cfg = cfg_with(gate={"path": str(trained_gate[0]), "use_calibrated": False, "threshold": 0.0})
    reasoner = build_reasoner(cfg)
    linked = [Recalled(formation, 0.9, "cue", links=[Link(sc.id, "state_change")]), Recalled(sc, 0.8, "link")]
    d = reasoner.decide("", linked, current)
    assert d.assist is False and sorted(d.resolved) == sorted([formation.id, sc.id])
    unlinked = [Recalled(formation, 0.9, "cue"), Recalled(sc, 0.8, "link")]
    assert reasoner.decide("", unlinked, current).assist is True  # threshold 0: only the link kept it silent


def test_composed_message_names_what_when_and_why_now(sample_instances):
    for inst in sample_instances:
        if inst.variant != "positive":
            continue
        it = inst.intentions[0]
        current = inst.event(inst.decision_event)
        msg = compose_message([inst.event(it.formation)], current).message
        assert _keywords_hit(msg, it.keywords), msg
        assert current.location in msg
        assert re.search(r"yesterday|today|this|last night|on \w+day", msg)


def test_when_phrase():
    from core.timeutil import parse_time

    now = parse_time("2026-09-18T17:30:00-07:00")
    assert when_phrase(parse_time("2026-09-17T20:30:00-07:00"), now) == "yesterday evening"
    assert when_phrase(parse_time("2026-09-14T09:00:00-07:00"), now) == "on Monday morning"
    assert when_phrase(parse_time("2026-09-18T09:00:00-07:00"), now) == "this morning"


def test_untrained_gate_is_a_clear_error(tmp_path):
    from reasoner.gate.model import GateNotTrained

    with pytest.raises(GateNotTrained, match="promem train gate"):
        build_reasoner(cfg_with(gate={"path": str(tmp_path / "nothing")}))
    # an artifact of the earlier format (an MLP, no version in meta.json) is refused the same way
    old = tmp_path / "old"
    old.mkdir()
    (old / "meta.json").write_text(json.dumps({"in_dim": 1159, "hidden": 64, "threshold": 0.9}))
    (old / "model.joblib").write_bytes(b"")
    with pytest.raises(GateNotTrained, match="version 1.*promem train gate"):
        build_reasoner(cfg_with(gate={"path": str(old)}))


def test_now_calibration_picks_the_most_accurate_threshold():
    from training.recipes.gate import calibrate_now

    t, fig = calibrate_now([1, 1, 0, 0, 1], [0.9, 0.7, 0.6, 0.2, 0.3])
    assert 0.6 < t <= 0.7 and fig["acc_p"] == 80.0 and fig["md_all"] == 20.0 and fig["fd_all"] == 0.0


@pytest.mark.slow
def test_now_head_speaks_only_when_memory_hands_over_nothing(trained_gate, sample_instances, tmp_path):
    import shutil

    from core.artifacts import clear_models, read_meta, write_meta
    from reasoner.gate.features import Featurizer
    from reasoner.gate.model import default_embedder
    from training.recipes.gate import load_recipe, train_now

    out = tmp_path / "gate"
    shutil.copytree(trained_gate[0], out)
    now = train_now(sample_instances, load_recipe(now_model="logistic", now_epochs=50, now_held_out=0.25),
                    Featurizer(default_embedder().encode), out, progress=False)
    assert now.metrics["losses"][1] < now.metrics["losses"][0] and (out / "now.pt").is_file()
    inst = next(i for i in sample_instances if i.variant == "positive")
    current = inst.event(inst.decision_event)
    for threshold, speaks in ((0.0, True), (1.01, False)):
        meta = read_meta(out)
        meta.now = now.model_copy(update={"threshold": threshold})
        write_meta(out, meta)
        clear_models()  # rewritten within a clock tick, the file's time may not tell
        reasoner = build_reasoner(cfg_with(gate={"path": str(out), "use_calibrated": False, "threshold": 1.01}))
        d = reasoner.decide(inst.persona, [], current)
        assert d.assist is speaks and 0.0 <= d.now_score <= 1.0
        if speaks:
            assert d.evidence == [current.id] and current.location in d.message
        # With a past to weigh, the pair gate alone decides: the now head is not asked.
        with_past = reasoner.decide(inst.persona, [Recalled(inst.events[0], 0.5, "content")], current)
        assert with_past.assist is False and with_past.now_score is None
    off = build_reasoner(cfg_with(gate={"path": str(out), "use_now_head": False}))
    assert off.decide(inst.persona, [], current).assist is False


@pytest.fixture(scope="module")
def now_gate(trained_gate, sample_instances, tmp_path_factory):
    """The trained gate plus a fine-tuned now head trained for a few steps on the sample: (folder, now meta)."""
    import shutil

    from training.finetune import FinetuneSettings
    from training.recipes.gate import load_recipe, train_now

    out = tmp_path_factory.mktemp("now-gate") / "gate"
    shutil.copytree(trained_gate[0], out)
    recipe = load_recipe(now_model="finetune", now_held_out=0.25,
                         now_finetune=FinetuneSettings(epochs=2, batch_size=4, max_length=64, train_layers=1))
    now = train_now(sample_instances, recipe, None, out, progress=False)
    assert now.metrics["model"] == "finetune" and (out / "now" / "classifier.safetensors").is_file()
    return out, now


@pytest.mark.slow
def test_the_now_head_stays_silent_on_moments_without_content(now_gate):
    from core.artifacts import clear_models, read_meta, write_meta
    from core.formats import Event

    out, now = now_gate
    trivial = [Event(id="t1", time="2026-09-18T09:00:00Z", visual="x"),
               Event(id="t2", time="2026-09-18T09:00:00Z", visual="The user buys a train ticket.")]
    cab_like = Event(id="c1", time="2026-09-18T09:00:00Z",
                     visual="The user is standing at a trailhead with a map board showing various hiking paths. "
                            "Several people are gearing up nearby with backpacks and water bottles.",
                     audio="This loop trail looks amazing. We should definitely try it next Saturday.")
    def with_now_threshold(threshold):
        meta = read_meta(out)
        write_meta(out, meta.model_copy(update={"now": now.model_copy(update={"threshold": threshold})}))
        clear_models()

    with_now_threshold(0.5)
    head = build_reasoner(cfg_with(gate={"path": str(out)})).scorer.model.now
    # A threshold at which the head alone would speak at all three moments.
    with_now_threshold(min(head.score(e) for e in [*trivial, cab_like]))
    reasoner = build_reasoner(cfg_with(gate={"path": str(out), "use_calibrated": False, "threshold": 1.01}))
    for e in trivial:
        d = reasoner.decide("", [], e)
        assert d.assist is False and d.message is None, (e.visual, d)
    d = reasoner.decide("", [], cab_like)
    assert d.assist is True and d.evidence == ["c1"]
    lax = build_reasoner(cfg_with(gate={"path": str(out), "use_calibrated": False, "threshold": 1.01,
                                        "now_min_content_words": 0}))
    assert all(lax.decide("", [], e).assist for e in trivial)  # the rule, not the head, keeps them silent
