"""The voices training pack: built deterministically from its own scenarios, valid, and sharing no
phrase or scenario with the independent test pack it must not leak into."""
from __future__ import annotations

import argparse
import logging
import re
from collections import Counter

import pytest

from bench.packs.build import build_instances, built_path, load_scenarios, scenarios_path, to_jsonl
from bench.validate import validate_file
from core.config import load_config, resolve_path
from core.formats import CATEGORIES, VARIANTS
from training.data import group_key, scenario_folds
from training.recipe import training_data

NGRAM = 8


@pytest.fixture(scope="module")
def instances():
    return build_instances(load_scenarios(scenarios_path("voices")), "voices")


def test_committed_file_equals_a_fresh_build_and_validates(instances):
    built = built_path("voices")
    assert built.read_text(encoding="utf-8") == to_jsonl(instances), \
        "voices.jsonl is stale: run python -m bench.packs.build voices"
    good, violations = validate_file(built)
    assert violations == [] and len(good) == len(instances)
    assert all(i.id.startswith("voc-") and i.model_extra["pack"] == "voices" for i in instances)


def test_every_category_has_scenarios_and_all_four_variants(instances):
    scenarios = {i.model_extra["scenario"] for i in instances}
    assert Counter(i.variant for i in instances) == {v: len(scenarios) for v in VARIANTS}
    per_cat = Counter(i.category for i in instances if i.variant == "positive")
    assert set(per_cat) == set(CATEGORIES[:8]) and min(per_cat.values()) >= 3, per_cat


def _ngrams(text: str) -> set[tuple[str, ...]]:
    w = re.findall(r"[^\W\d_]+", text.lower())
    return {tuple(w[i:i + NGRAM]) for i in range(len(w) - NGRAM + 1)}


def _texts(insts) -> list[str]:
    return [t for i in insts for e in i.events for t in (e.visual, e.audio) if t] + [i.persona for i in insts]


def test_shares_no_scenario_and_no_eight_word_phrase_with_the_independent_pack(instances):
    independent = build_instances(load_scenarios(scenarios_path("independent")), "independent")
    ind_grams = set().union(*(_ngrams(t) for t in _texts(independent)))
    assert len(ind_grams) > 1000
    shared = {t for t in _texts(instances) if _ngrams(t) & ind_grams}
    assert shared == set(), f"voices texts repeat phrases of the independent pack: {sorted(shared)[:3]}"
    ids = {i.model_extra["scenario"] for i in independent}
    assert ids.isdisjoint(i.model_extra["scenario"] for i in instances)


def test_variants_of_one_scenario_stay_in_one_fold(instances):
    keys = {group_key(i) for i in instances}
    assert len(keys) == len(instances) // len(VARIANTS)
    fold = scenario_folds(instances, 4, 0)
    for key in keys:
        assert len({fold[i.id] for i in instances if group_key(i) == key}) == 1


def test_the_default_profile_trains_on_the_pack_too(tmp_path, caplog):
    cfg = load_config()
    assert [resolve_path(p) for p in cfg.training.extra_data] == [built_path("voices")]
    gen = tmp_path / "train.jsonl"
    gen.write_text(to_jsonl(build_instances(load_scenarios(scenarios_path("independent")), "independent")[:8]),
                   encoding="utf-8")
    td = training_data(argparse.Namespace(data=str(gen)), cfg, limit=4)
    assert len(td.instances) == 4 + len(built_path("voices").read_text(encoding="utf-8").splitlines())
    assert str(built_path("voices")) in td.source
    cfg.training.extra_data = [str(tmp_path / "missing.jsonl")]
    with caplog.at_level(logging.WARNING):
        td = training_data(argparse.Namespace(data=str(gen)), cfg)
    assert len(td.instances) == 8 and "missing.jsonl" in caplog.text
