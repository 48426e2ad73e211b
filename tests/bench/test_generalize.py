"""`promem bench generalize`: the generator's category filter, the folds, and one tiny real run
(a gate trained per fold, two baselines) that is then resumed."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from bench import generalize as gen
from bench.judges import build_judge
from bench.generator import generate, load_seeds, seed_categories
from core.config import load_config
from core.formats import CATEGORIES, METRIC_KEYS
from tests.support.data import REPO

SEED_CATEGORY = {s.id: s.category for s in load_seeds()}


def test_category_filter_keeps_only_those_seeds_and_is_identity_without_filter():
    picked = ["food", "transit"]
    insts = generate(24, seed=3, split="train", categories=picked)
    assert {i.category for i in insts} == set(picked)
    assert {SEED_CATEGORY[i.model_extra["seed"]] for i in insts} == set(picked)
    # no filter and a filter naming every category give the same bytes
    plain = [json.dumps(i.dump()) for i in generate(40, seed=3, split="test")]
    every = [json.dumps(i.dump()) for i in generate(40, seed=3, split="test", categories=list(CATEGORIES))]
    assert plain == every
    # "all": both splits' seeds of a category (4 * 60 instances walk every one of its seeds)
    both = {i.model_extra["seed"] for i in generate(4 * 60, seed=1, split="all", categories=["work"])}
    only_train = {i.model_extra["seed"] for i in generate(4 * 60, seed=1, split="train", categories=["work"])}
    assert only_train < both and {SEED_CATEGORY[s] for s in both} == {"work"}
    with pytest.raises(ValueError, match="unknown category"):
        generate(4, categories=["astronomy"])


def test_folds_partition_the_seed_categories():
    cats = seed_categories()
    assert cats == [c for c in CATEGORIES if c in set(SEED_CATEGORY.values())]
    loco = gen.plan_folds(cats)
    assert [f.held_out for f in loco] == [[c] for c in cats]
    grouped = gen.plan_folds(cats, 3)
    assert sorted(c for f in grouped for c in f.held_out) == sorted(cats)
    for f in grouped:
        assert set(f.held_out).isdisjoint(f.train_categories) and set(f.held_out) | set(f.train_categories) == set(cats)
    for bad in (1, len(cats) + 1):
        with pytest.raises(gen.GeneralizeError, match="--folds"):
            gen.plan_folds(cats, bad)


def test_fold_training_data_holds_no_seed_of_its_held_out_categories():
    plan = gen.plan_folds(seed_categories(), 4)[1]
    train, test = gen.fold_data(plan, gen.Settings(n_train=48, n_test=8, seed=2))
    train_seeds = {i.model_extra["seed"] for i in train}
    test_seeds = {i.model_extra["seed"] for i in test}
    assert train_seeds and test_seeds and not train_seeds & test_seeds
    assert {SEED_CATEGORY[s] for s in train_seeds} <= set(plan.train_categories)
    assert {SEED_CATEGORY[s] for s in test_seeds} == set(plan.held_out)
    assert len(test) == 8 * len(plan.held_out)
    # the distractors of training timelines come from the training categories too: no held-out seed's words
    held_texts = {ev.text() for i in test for ev in i.events if ev.id == i.decision_event}
    assert not held_texts & {ev.text() for i in train for ev in i.events}


def test_hand_written_training_timelines_join_only_their_fold_s_training_categories():
    extra = gen.extra_training(load_config())
    assert {i.model_extra["pack"] for i in extra} == {"voices"} and len({i.category for i in extra}) == 8
    plan = gen.plan_folds(seed_categories(), 4)[1]
    train, _ = gen.fold_data(plan, gen.Settings(n_train=16, n_test=4, seed=2), extra)
    joined = [i for i in train if i.model_extra.get("pack") == "voices"]
    assert joined and {i.category for i in joined} <= set(plan.train_categories)
    assert len(joined) == sum(i.category in plan.train_categories for i in extra)


# -- one tiny real run ------------------------------------------------------------------------------
SYSTEMS = ["rag-bm25", "no-memory"]


def _small_gate_setup(folder, trees: int):
    """A small gate recipe (no CAB) written to folder/gate.yaml, and a config with cue encoder "base"
    and no linker: the gate and the thing reader are the models trained per fold."""
    recipe = yaml.safe_load((REPO / "training" / "configs" / "gate.yaml").read_text())
    recipe.update(trees=trees, folds=0, now_data=None)
    (folder / "gate.yaml").write_text(yaml.safe_dump(recipe))
    cfg = load_config()
    cfg.training.extra_data = []  # generated timelines only: a tiny run
    cfg.memory.construction.cue_encoder = "base"
    cfg.memory.construction.linker = "none"
    return cfg


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Two folds, 16 training timelines each, a small gate recipe (no CAB), cue encoder "base" and
    no linker: the gate and the thing reader are the models trained per fold."""
    root = tmp_path_factory.mktemp("generalize")
    cfg = _small_gate_setup(root, trees=30)
    s = gen.Settings(folds=2, n_train=16, n_test=4, seed=0, systems=SYSTEMS, recipes={"gate": str(root / "gate.yaml")})
    out = root / "out"
    report = gen.run(cfg, s, out, progress=False)
    return cfg, s, out, report


def test_each_fold_trains_its_own_gate_and_the_systems_use_it(tiny):
    from bench.harness import config_hash
    from training.data import data_hash

    cfg, s, out, report = tiny
    assert len(report.folds) == 2 and not any(f.errors for f in report.folds)
    hashes = set()
    for f in report.folds:
        fold_dir = out / "folds" / "+".join(f.held_out)
        assert {SEED_CATEGORY[x] for x in f.train_seeds} <= set(f.train_categories)
        assert {SEED_CATEGORY[x] for x in f.test_seeds} <= set(f.held_out)
        gate = f.models["gate"]
        assert f.retrained == ["gate", "thing-reader"] and set(f.models) == {"gate", "thing-reader"}
        assert gate.data_hash == data_hash(fold_dir / "train.jsonl") == f.models["thing-reader"].data_hash
        assert gate.metrics["train_instances"] == 16 and gate.recipe["trees"] == 30
        # the decisions were made under the fold's config, whose gate is the fold's artifact
        fcfg = gen.fold_config(cfg, gen.fold_models(cfg, fold_dir / "artifacts"), fold_dir, out / "cache")
        assert fcfg.reasoner.gate.path == str(fold_dir / "artifacts" / "gate")
        assert fcfg.reasoner.gate.thing_reader == str(fold_dir / "artifacts" / "thing-reader")
        h = config_hash(fcfg, False)
        assert len(list((out / "cache" / "runs" / "rag-bm25" / h).glob("*.json"))) == f.n_test == s.n_test * len(f.held_out)
        hashes.add(h)
        for system in SYSTEMS:
            result = json.loads((fold_dir / f"RESULT.{system}.json").read_text())
            assert result["metrics"] == f.results[system].metrics
            assert all("gate_score" in row["decision"] for row in result["instances"])
    assert len(hashes) == 2  # two folds, two gates


def test_report_has_per_fold_and_mean_rows_and_wall_time(tiny):
    _, s, out, report = tiny
    data = json.loads((out / gen.REPORT_JSON).read_text())
    assert data["wall_s"] > 0 and data["folds_wall_s"] > 0 and data["settings"]["systems"] == SYSTEMS
    assert [f["held_out"] for f in data["folds"]] == [f.held_out for f in report.folds]
    for system in SYSTEMS:
        folds = [f["results"][system]["metrics"] for f in data["folds"]]
        for k in METRIC_KEYS:
            vals = [m[k] for m in folds if m[k] is not None]
            assert data["mean"][system][k] == (round(sum(vals) / len(vals), 1) if vals else None)
        assert data["worst_fd"][system] == max(m["FD"] for m in folds)
    md = (out / gen.REPORT_MD).read_text()
    for f in report.folds:
        for system in SYSTEMS:
            assert f"| {f.fold + 1} | {'+'.join(f.held_out)} | {system} | {f.n_test} |" in md
    for system in SYSTEMS:
        assert f"| mean | all | {system} |" in md


def test_rerun_skips_finished_folds_and_keeps_trained_models(tiny, monkeypatch):
    import bench.harness
    from training.recipes import gate, thing_reader

    cfg, s, out, first = tiny

    def must_not_run(*a, **k):
        raise AssertionError("a finished fold was trained or evaluated again")

    monkeypatch.setattr(gate, "train", must_not_run)
    monkeypatch.setattr(thing_reader, "train", must_not_run)
    monkeypatch.setattr(bench.harness, "run_benchmark", must_not_run)
    again = gen.run(cfg, s, out, progress=False)
    assert [f.model_dump() for f in again.folds] == [f.model_dump() for f in first.folds]

    # a fold whose record is lost is evaluated again, from its models as they are (no retraining)
    monkeypatch.undo()
    monkeypatch.setattr(gate, "train", must_not_run)
    monkeypatch.setattr(thing_reader, "train", must_not_run)
    lost = out / "folds" / "+".join(first.folds[1].held_out) / gen.FOLD_FILE
    lost.unlink()
    third = gen.run(cfg, s, out, progress=False)
    assert lost.is_file() and third.folds[1].retrained == []
    # the harness's cache gives the same decisions
    assert {k: v.metrics for k, v in third.folds[1].results.items()} == \
        {k: v.metrics for k, v in first.folds[1].results.items()}
    assert third.folds[0].model_dump() == first.folds[0].model_dump()


def test_cli_refuses_bad_folds_and_unknown_systems(tmp_path):
    env_py = [sys.executable, "-m", "cli.main", "bench", "generalize", "-o", str(tmp_path / "o")]
    r = subprocess.run(env_py + ["--folds", "1", "--systems", "no-memory"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 2 and "--folds must be between 2" in r.stderr
    r = subprocess.run(env_py + ["--systems", "no-such"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 2 and "unknown system 'no-such'" in r.stderr
    assert not (tmp_path / "o" / "folds").exists()


def test_a_fold_reruns_missing_systems_and_those_with_failed_instances():
    fig = dict(metrics={k: 50.0 for k in METRIC_KEYS}, instances=8, wall_s=1.0)
    fold = gen.FoldResult(fold=0, held_out=["work"], train_categories=["food"], key="k", n_train=4, n_test=8,
                          train_seeds=[], test_seeds=[],
                          results={"rag-bm25": gen.SystemFigures(failed=0, **fig),
                                   "no-memory": gen.SystemFigures(failed=2, **fig)})
    assert gen._to_run(fold, ["rag-bm25", "no-memory", "promem"]) == ["no-memory", "promem"]
    assert gen._to_run(fold, ["rag-bm25"]) == []


def test_trigger_pseudo_system_runs_promem_with_the_trigger_on_the_same_fold_models(tmp_path):
    """promem+trigger beside promem: one fold model set, two decision caches (trigger off / on), the
    trigger's skip shares in its figures and in the report's trigger table."""
    from bench.harness import config_hash

    cfg = _small_gate_setup(tmp_path, trees=20)
    systems = ["promem", gen.TRIGGER_SYSTEM]
    s = gen.Settings(folds=6, n_train=16, n_test=2, seed=0, systems=systems, recipes={"gate": str(tmp_path / "gate.yaml")})
    out = tmp_path / "out"
    plan = gen.plan_folds(seed_categories(), 6)[0]
    fold = gen.run_fold(plan, s, cfg, out, build_judge(cfg, "keywords"), gen.load_recipes(s), progress=False)
    assert not fold.errors and fold.retrained == ["gate", "thing-reader"] and set(fold.results) == set(systems)
    off, on = fold.results["promem"], fold.results[gen.TRIGGER_SYSTEM]
    assert off.instances == on.instances == fold.n_test
    assert off.extra_metrics["trigger_skip_share"] == 0 and off.extra_metrics["trigger_ordinary_skip_share"] is None
    assert on.extra_metrics["trigger_ordinary_skip_share"] is not None
    fold_dir = out / "folds" / plan.name
    fcfg = gen.fold_config(cfg, gen.fold_models(cfg, fold_dir / "artifacts"), fold_dir, out / "cache")
    name, tcfg = gen.system_run(gen.TRIGGER_SYSTEM, fcfg)
    assert name == "promem" and tcfg.memory.trigger.enabled and not fcfg.memory.trigger.enabled
    for c in (fcfg, tcfg):  # each run cached under its own config
        assert len(list((out / "cache" / "runs" / "promem" / config_hash(c, False)).glob("*.json"))) == fold.n_test
    rows = json.loads((fold_dir / f"RESULT.{gen.TRIGGER_SYSTEM}.json").read_text())["instances"]
    skipped = [r for r in rows if r["decision"].get("trigger")]
    assert all(not r["decision"]["assist"] and r["decision"]["retrieved"] == [] for r in skipped)
    assert all(r["decision"]["ordinary_moments"] >= r["decision"]["ordinary_skipped"] >= 0 for r in rows)
    report = gen.Report(settings=s, config=cfg.source, categories=seed_categories(), folds=[fold],
                        mean=gen.summarize([fold], systems)[0], worst_fd=gen.summarize([fold], systems)[1],
                        wall_s=1.0, folds_wall_s=1.0, date="2026-12-01T00:00:00Z")
    md = gen.render(report)
    assert "## Context trigger" in md and f"| mean | all | {gen.TRIGGER_SYSTEM} |" in md
