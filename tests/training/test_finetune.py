"""Fine-tuning MiniLM as a text classifier (training/finetune.py) and the now head built on it:
a few steps on a tiny CAB-format fixture, with the real bundled MiniLM and real torch."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.support.data import REPO

CAB_FIXTURE = REPO / "tests" / "fixtures" / "cab"
TINY = {"epochs": 1, "batch_size": 4, "max_length": 48, "train_layers": 1, "threads": 1, "lr": 1.0e-4}


@pytest.fixture(scope="module")
def cab_tiny():
    from bench.importers.cab import load

    res = load("train", CAB_FIXTURE)
    assert not res.skipped and res.dropped == 1 and len(res.instances) == 16
    return res.instances


@pytest.fixture(scope="module")
def now_head_dir(cab_tiny, tmp_path_factory):
    """A now head fine-tuned for a few steps on the fixture, saved in a gate-like folder: (folder, meta)."""
    from training.finetune import FinetuneSettings
    from training.recipes.gate import load_recipe, train_now

    out = tmp_path_factory.mktemp("now-ft") / "gate"
    recipe = load_recipe(now_model="finetune", now_held_out=0.25, now_finetune=FinetuneSettings(**TINY))
    meta = train_now(cab_tiny, recipe, None, out, progress=False)
    return out, meta


@pytest.mark.slow
def test_fine_tuned_now_head_saves_small_fp16_and_reloads(now_head_dir, cab_tiny):
    from safetensors import safe_open

    from core.text_classifier import WEIGHTS
    from reasoner.gate.now_head import FOLDER, NOW_VERSION, FinetunedNowHead, NowHead

    out, meta = now_head_dir
    assert meta.kind == "now-head" and meta.version == NOW_VERSION and meta.metrics["model"] == "finetune"
    assert meta.metrics["steps"] == meta.metrics["planned_steps"] == 3 and not meta.metrics["stopped_by_budget"]
    assert meta.metrics["held_out"]["instances"] == 4 and 0.0 <= meta.threshold <= 1.0
    assert meta.recipe["now_finetune"]["train_layers"] == 1
    f = out / FOLDER / WEIGHTS
    with safe_open(str(f), framework="pt") as h:
        names = list(h.keys())
        assert {str(h.get_tensor(n).dtype) for n in names} == {"torch.float16"}
        assert h.metadata()["base"] == "minilm"
    # only the tuned top layer and the head are saved: the frozen embeddings come from the package
    assert "head.weight" in names and not any("embeddings" in n or "layer.0." in n for n in names)
    assert f.stat().st_size < 5_000_000
    head = NowHead.load(out, meta, None)
    assert isinstance(head, FinetunedNowHead) and head.threshold == meta.threshold
    events = [i.event(i.decision_event) for i in cab_tiny[:3]]
    scores = head.score_many(events)
    assert scores.shape == (3,) and all(0.0 <= s <= 1.0 for s in scores)
    assert head.score(events[0]) == pytest.approx(float(scores[0]), abs=1e-5)


@pytest.mark.slow
def test_stale_or_missing_now_head_names_the_path_and_the_way_out(now_head_dir, tmp_path):
    import shutil

    from core.text_classifier import WEIGHTS
    from reasoner.gate.now_head import FOLDER, NowHead, NowHeadUnusable

    out, meta = now_head_dir
    with pytest.raises(NowHeadUnusable, match=r"version 2, this code reads version 3.*promem train gate --now-only"):
        NowHead.load(out, meta.model_copy(update={"version": 2}), None)
    gone = tmp_path / "gate"
    (gone / FOLDER).mkdir(parents=True)
    with pytest.raises(NowHeadUnusable, match=rf"{gone / FOLDER / WEIGHTS} is missing.*--now-only"):
        NowHead.load(gone, meta, None)
    shutil.copy(out / FOLDER / WEIGHTS, gone / FOLDER / WEIGHTS)
    (gone / FOLDER / WEIGHTS).write_bytes((gone / FOLDER / WEIGHTS).read_bytes()[:100])
    with pytest.raises(NowHeadUnusable, match=rf"gate at {gone}.*--now-only"):
        NowHead.load(gone, meta, None)
    assert NowHead.load(gone, None, None) is None  # a gate trained without CAB data has no now head


@pytest.mark.slow
def test_budget_stops_training_cleanly_and_says_so(caplog):
    from training.finetune import Example, FinetuneSettings, fit

    train = [Example("The user asks where the station is.", 1), Example("The user eats lunch.", 0)] * 4
    settings = FinetuneSettings(**{**TINY, "epochs": 3, "budget_s": 0.01})
    with caplog.at_level(logging.WARNING, logger="training.finetune"):
        res = fit(train, settings, held_out=train[:2], progress=False)
    assert res.stopped_by_budget and res.steps < res.planned_steps == 6
    assert "wall-time budget of 0 s reached: stopped after 0 of 6 steps" in caplog.text
    assert res.held_out_scores.shape == (2,)  # the model as it stands still scores


@pytest.mark.slow
def test_text_pairs_train_and_score_as_one_sequence_pair(tmp_path):
    from core.text_classifier import TextClassifier
    from training.finetune import Example, FinetuneSettings, fit

    past, now = "The user ran out of oat milk.", "The user walks past a grocery store."
    train = [Example(past, 1, now), Example(past, 0, "The user is at the dentist.")] * 2
    res = fit(train, FinetuneSettings(**TINY), progress=False)
    assert res.steps == 1 and res.losses
    res.model.save(tmp_path)
    again = TextClassifier.load(tmp_path)
    a, b = res.model.score([past], [now]), again.score([past], [now])
    assert abs(float(a[0]) - float(b[0])) < 5e-3  # fp16 weights, float32 compute
    with pytest.raises(ValueError, match="mix single texts and text pairs"):
        fit([Example(past, 1), Example(past, 0, now)], FinetuneSettings(**TINY), progress=False)


def test_recipe_selects_the_now_model_and_rejects_unknown_ones():
    from training.errors import TrainingError
    from training.recipes.gate import load_recipe

    recipe = load_recipe()
    assert recipe.now_model in ("finetune", "logistic") and recipe.now_finetune.base == "minilm"
    with pytest.raises(TrainingError, match="now_model"):
        load_recipe(now_model="svm")
    with pytest.raises(TrainingError, match="now_finetune"):
        load_recipe(now_finetune={"epochs": 1, "learning_rate": 3})
