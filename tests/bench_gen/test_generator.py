"""The synthetic CPMBench generator: valid files, balanced, deterministic, split by seed."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from bench.generator import generate, load_seeds, split_of
from bench.judges.keywords import addresses as judge_addresses
from bench.generator.pools import load_pools
from bench.generator.seeds import SeedError
from bench.generator.text import fill, keywords_match
from core.formats import CATEGORIES, VARIANTS
from core.timeutil import parse_time

N = 128  # 4 full rounds of 8 categories x 4 variants


@pytest.fixture(scope="module")
def train():
    return generate(N, seed=7, split="train")


@pytest.fixture(scope="module")
def test_split():
    return generate(N, seed=7, split="test")


def _validate(path: Path):
    from bench.validate import validate_file

    return validate_file(path)


def _write(instances, path: Path) -> Path:
    path.write_text("".join(json.dumps(i.dump()) + "\n" for i in instances), encoding="utf-8")
    return path


def test_files_validate_with_every_rule(train, test_split, tmp_path):
    for name, insts in (("train", train), ("test", test_split)):
        good, violations = _validate(_write(insts, tmp_path / f"{name}.jsonl"))
        assert violations == [], "\n".join(map(str, violations[:5]))
        assert len(good) == N


def test_timeline_shape(train):
    for inst in train:
        assert 20 <= len(inst.events) <= 60, inst.id
        times = [parse_time(e.time) for e in inst.events]
        assert all(a < b for a, b in zip(times, times[1:])), inst.id
        assert len({t.utcoffset() for t in times}) == 1
        assert 1 <= (times[-1].date() - times[0].date()).days + 1 <= 5, inst.id
        assert inst.decision_event == inst.events[-1].id
        assert len({e.id for e in inst.events}) == len(inst.events)
        ids = [e.id for e in inst.events]
        for it in inst.intentions:
            assert ids.index(it.formation) < ids.index(inst.decision_event)
            if inst.variant == "state_change":
                assert ids.index(it.formation) < ids.index(it.state_change) < ids.index(inst.decision_event)
            else:
                assert it.state_change is None
            assert keywords_match(it.reference, it.keywords), (inst.id, it.reference)
            assert judge_addresses(it.reference, it.keywords), (inst.id, it.reference)  # the bench's own judge
        if inst.variant == "no_formation":
            assert inst.intentions == []
        else:
            assert inst.intentions


def test_variant_and_category_balance(train):
    assert Counter(i.variant for i in train) == {v: N // 4 for v in VARIANTS}
    assert Counter(i.category for i in train) == {c: N // 8 for c in CATEGORIES}
    cells = Counter((i.category, i.variant) for i in train)
    assert set(cells.values()) == {N // 32}
    # any n is balanced to within one instance per variant
    odd = Counter(i.variant for i in generate(37, seed=1, split="train"))
    assert max(odd.values()) - min(odd.values()) <= 1


def test_deterministic_and_seed_sensitive(train):
    again = generate(N, seed=7, split="train")
    assert [i.dump() for i in again] == [i.dump() for i in train]
    other = generate(N, seed=8, split="train")
    assert [i.dump() for i in other] != [i.dump() for i in train]
    # instance i does not depend on how many are generated
    assert [i.dump() for i in generate(10, seed=7, split="train")] == [i.dump() for i in train[:10]]


def test_splits_are_disjoint_by_seed(train, test_split):
    seeds = load_seeds()
    train_seeds = {i.model_extra["seed"] for i in train}
    test_seeds = {i.model_extra["seed"] for i in test_split}
    assert train_seeds and test_seeds and not train_seeds & test_seeds
    assert all(split_of(s) == "train" for s in train_seeds)
    assert all(split_of(s) == "test" for s in test_seeds)
    for cat in CATEGORIES:  # every category can be generated in both splits
        assert {split_of(s.id) for s in seeds if s.category == cat} == {"train", "test"}, cat
    # seed-specific text of a test seed never shows up in a train instance (no leakage via confusers)
    test_texts = {v for s in seeds if split_of(s.id) == "test" for v in s.near_miss.visual + s.opportunity.visual}
    train_texts = {e.visual for i in train for e in i.events}
    assert not any("{" not in t and t in train_texts for t in test_texts)


def test_no_two_instances_read_alike(train, test_split):
    seqs = [tuple((e.visual, e.audio) for e in i.events) for i in train + test_split]
    assert len(set(seqs)) == len(seqs)
    assert len({i.id for i in train + test_split}) == 2 * N


def test_negatives_end_on_the_near_miss_and_others_on_the_opportunity(train):
    seeds = {s.id: s for s in load_seeds()}
    for inst in train:
        seed = seeds[inst.model_extra["seed"]]
        last = inst.events[-1]
        slot = seed.near_miss if inst.variant == "negative" else seed.opportunity
        # filled text differs from the template only inside {...}; compare the fixed prefix
        prefixes = [v.split("{")[0][:15] for v in slot.visual]
        assert any(last.visual.startswith(p) for p in prefixes), (inst.id, last.visual)


def _content_words(texts: list[str]) -> set[str]:
    import re

    stop = set("""the a an and or of to in on at is it its with for from by as be are was this that there these
    those into out up down over under past next near not no you your me my we our they their he she his her
    them user one two some all any just still only more very again now then than but about while after""".split())
    text = re.sub(r"\{[^{}]*\}", " ", " ".join(texts)).lower()
    return {w for w in re.findall(r"[a-z]+", text) if w not in stop and len(w) > 2}


def test_seed_library_rules():
    import statistics

    seeds = load_seeds()
    assert len(seeds) >= 150
    by_cat = Counter(s.category for s in seeds)
    assert set(by_cat) == set(CATEGORIES) and min(by_cat.values()) >= 15, by_cat
    two = sum(len(s.intentions) >= 2 for s in seeds) / len(seeds)
    assert 0.2 <= two <= 0.35, two  # about a quarter carry two intentions
    test_share = sum(split_of(s.id) == "test" for s in seeds) / len(seeds)
    assert 0.2 <= test_share <= 0.4, test_share
    # formation and opportunity share few words: linking them needs world knowledge, not lexical match
    overlaps = []
    for s in seeds:
        opp = _content_words(s.opportunity.visual + s.opportunity.audio)
        for it in s.intentions:
            form = _content_words(it.formation.visual + it.formation.audio)
            overlaps.append(len(form & opp) / max(1, len(opp)))
    assert statistics.median(overlaps) <= 0.15, statistics.median(overlaps)
    # near misses are not the opportunity
    assert all(set(s.near_miss.visual).isdisjoint(s.opportunity.visual) for s in seeds)


def test_distractor_pool_is_varied():
    import random

    pools = load_pools()
    rng = random.Random(0)
    roles = {r: r.capitalize() for r in ("user", "friend", "friend2", "coworker", "boss", "partner", "roommate",
                                         "kid", "sibling", "neighbor")}
    texts = set()
    for _ in range(30):
        for d in pools.distractors:
            texts.add(fill(rng.choice(d.visual), roles, rng) + " | " + fill(rng.choice(d.audio), roles, rng))
    assert len(pools.distractors) >= 100 and len(texts) >= 500
    assert sum(1 for d in pools.distractors if any(a.startswith("[") for a in d.audio)) >= 20  # dialogue


def test_bad_seed_is_named(tmp_path):
    good = yaml.safe_load((Path(__file__).resolve().parents[2] / "bench/generator/seeds/food.yaml").read_text())[0]
    bad = dict(good, id="food-bad")
    bad["intentions"] = [dict(good["intentions"][0], keywords=[["nonexistent phrase"]])]
    (tmp_path / "food.yaml").write_text(yaml.safe_dump([good, bad]))
    with pytest.raises(SeedError, match=r"food\.yaml: seed #2 .*food-bad.*fails its keywords"):
        load_seeds(tmp_path)
    (tmp_path / "food.yaml").write_text(yaml.safe_dump([good, dict(good, colour="red")]))
    with pytest.raises(SeedError, match="colour"):
        load_seeds(tmp_path)
    (tmp_path / "food.yaml").write_text(yaml.safe_dump([good, good]))
    with pytest.raises(SeedError, match="duplicate seed id"):
        load_seeds(tmp_path)


def test_cli_writes_a_valid_file(tmp_path):
    out = tmp_path / "g.jsonl"
    r = subprocess.run([sys.executable, "-m", "cli.main", "bench", "generate", "-o", str(out), "--n", "16",
                        "--seed", "3", "--split", "test"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "wrote 16 test instances" in r.stdout
    good, violations = _validate(out)
    assert len(good) == 16 and not violations


def test_filler_never_offers_a_stray_chance_to_act(train, test_split):
    """Between formation and decision only the seed's own events name the intention's object."""
    for inst in train + test_split:
        if not inst.intentions:
            continue
        own = {inst.decision_event} | {i.formation for i in inst.intentions} | {i.state_change for i in inst.intentions}
        first = min(e for e, ev in enumerate(inst.events) if ev.id in {i.formation for i in inst.intentions})
        for ev in inst.events[first:]:
            if ev.id in own:
                continue
            text = f"{ev.visual} {ev.audio}"
            for it in inst.intentions:
                assert not keywords_match(text, it.keywords[:1]), (inst.id, ev.id, text, it.keywords[0])


def test_clock_bound_seed_keeps_its_minutes():
    """gap_minutes ties the decision to the formation's clock (the parking meter's two hours)."""
    sid = "transit-parking-meter-expiry"
    split = split_of(sid)
    insts = [i for i in generate(32 * 20, seed=2, split=split) if i.model_extra["seed"] == sid and i.intentions]
    assert insts
    for inst in insts:
        gap = parse_time(inst.events[-1].time) - parse_time(inst.event(inst.intentions[0].formation).time)
        assert 100 * 60 <= gap.total_seconds() <= 126 * 60, (inst.id, gap)
