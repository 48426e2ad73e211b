"""The synthetic CPMBench generator: valid files, balanced, deterministic, split by seed."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from bench.generator import generate, load_seeds, seeds_for, split_of
from bench.judges.keywords import addresses as judge_addresses
from bench.generator.pools import MIN_DISTRACTORS, load_pools
from bench.generator.seeds import SeedError
from bench.generator.text import fill, keywords_match
from bench.generator.timeline import MAX_EVENTS
from core.formats import CATEGORIES, VARIANTS
from core.timeutil import parse_time

# the categories that have seeds in the train split (any subset of CATEGORIES); N = 4 full rounds of
# them x 4 variants. Both splits have seeds in the same categories (test_splits_are_disjoint_by_seed).
CATS = list(seeds_for("train"))
N = 4 * 4 * len(CATS)


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
    assert Counter(i.category for i in train) == {c: N // len(CATS) for c in CATS}
    cells = Counter((i.category, i.variant) for i in train)
    assert len(cells) == 4 * len(CATS) and set(cells.values()) == {4}
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
    for cat in {s.category for s in seeds}:  # every seeded category can be generated in both splits
        assert {split_of(s.id) for s in seeds if s.category == cat} == {"train", "test"}, cat
    # seed-specific text of a test seed never shows up in a train instance (no leakage via confusers)
    test_texts = {v for s in seeds if split_of(s.id) == "test" for v in s.near_miss.visual + s.opportunity.visual}
    train_texts = {e.visual for i in train for e in i.events}
    assert not any("{" not in t and t in train_texts for t in test_texts)


def test_no_two_instances_read_alike(train, test_split):
    seqs = [tuple((e.visual, e.audio) for e in i.events) for i in train + test_split]
    assert len(set(seqs)) == len(seqs)
    assert len({i.id for i in train + test_split}) == 2 * N


def _template(text: str) -> re.Pattern:
    """The texts a template can be filled to: `{a|b}` one of the alternatives, `{role}` a pooled name
    (spaces may collapse where an alternative is empty)."""
    names = "|".join(map(re.escape, sorted(load_pools().names, key=len, reverse=True)))
    parts: list[str] = []

    def literal(t: str) -> str:
        out = re.sub(r"\x00(\d+)\x00", lambda m: "\x01" + m.group(1) + "\x01", t)
        out = re.escape(out).replace("\\ ", " ").replace(" ", " ?")
        return re.sub(r"\x01(\d+)\x01", lambda m: parts[int(m.group(1))], out)

    def one(m: re.Match) -> str:
        body = m.group(1)
        parts.append(f"(?:{'|'.join(literal(a) for a in body.split('|'))})" if "|" in body else f"(?:{names})")
        return f"\x00{len(parts) - 1}\x00"

    prev = None
    while prev != text:
        prev, text = text, re.sub(r"\{([^{}]*)\}", one, text)
    return re.compile(" ?" + literal(text.strip()) + " ?")


def _is(slot, text: str) -> bool:
    return any(_template(v).fullmatch(text) for v in slot.visual if v.strip())


def test_negatives_end_on_a_near_miss_and_others_on_the_opportunity(train):
    seeds = {s.id: s for s in load_seeds()}
    hard = Counter()
    for inst in train:
        seed = seeds[inst.model_extra["seed"]]
        last = inst.events[-1].visual
        if inst.variant == "negative":
            assert any(_is(slot, last) for slot in [seed.near_miss, *seed.hard_near_misses]), (inst.id, last)
            hard[any(_is(h, last) for h in seed.hard_near_misses)] += 1
        else:
            assert _is(seed.opportunity, last), (inst.id, last)
    # the bundled seeds all carry hard near misses: about 2 negatives in 3 end on one
    assert 0.45 <= hard[True] / sum(hard.values()) <= 0.85, hard


def test_bundled_state_changes_are_told_both_ways(train):
    seeds = {s.id: s for s in load_seeds()}
    told = Counter()
    for inst in train:
        if inst.variant != "state_change":
            continue
        seed = seeds[inst.model_extra["seed"]]
        for n, it in enumerate(inst.intentions):
            text = inst.event(it.state_change).visual
            indirect = _is(seed.intentions[n].indirect_state_change, text)
            assert indirect or _is(seed.intentions[n].state_change, text), (inst.id, text)
            told[indirect] += 1
    assert 0.25 <= told[True] / sum(told.values()) <= 0.75, told


@pytest.fixture(scope="module")
def hard_seeds(tmp_path_factory):
    """Six bundled seeds, each given two hard near misses and an indirect state change per intention
    with texts of their own, so the mix can be read off the generated decision moments."""
    folder = tmp_path_factory.mktemp("hard_seeds")
    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "bench/generator/seeds/food.yaml").read_text())[:6]
    for n, s in enumerate(raw):
        s["hard_near_misses"] = [
            {"kind": "wrong_place", "location": "street", "visual": [f"HARD-A{n} a shop that sells nothing useful."]},
            {"kind": "other_person", "location": "cafe", "visual": [f"HARD-B{n} {{friend}} mentions a need of her own."]}]
        for k, it in enumerate(s["intentions"]):
            it["indirect_state_change"] = {"location": "kitchen", "visual": [f"INDIRECT-{n}-{k} the matter is settled."]}
    (folder / "food.yaml").write_text(yaml.safe_dump(raw))
    return folder


def test_negatives_draw_hard_near_misses_two_times_in_three(hard_seeds):
    insts = generate(4 * 150, seed=4, split="all", seeds_dir=hard_seeds)
    seeds = {s.id: s for s in load_seeds(hard_seeds, require_breadth=True)}
    last = Counter()
    for inst in insts:
        text = inst.events[-1].visual
        if inst.variant != "negative":
            assert not text.startswith("HARD-"), inst.id  # only negatives end on a hard near miss
            continue
        seed = seeds[inst.model_extra["seed"]]
        assert any(_is(x, text) for x in [seed.near_miss, *seed.hard_near_misses]), (inst.id, text)
        last["hard" if text.startswith("HARD-") else "plain"] += 1
        if text.startswith("HARD-"):  # the instance's own seed's hard near miss
            assert text.split()[0][len("HARD-A"):] == str(list(seeds).index(seed.id)), (inst.id, text)
    share = last["hard"] / (last["hard"] + last["plain"])
    assert 0.55 <= share <= 0.78, last
    # both kinds of every seed are used
    used = {e.visual.split()[0] for i in insts for e in i.events[-1:] if e.visual.startswith("HARD-")}
    assert len(used) == 12, used


def test_state_changes_are_told_indirectly_about_half_the_time(hard_seeds):
    insts = [i for i in generate(4 * 150, seed=4, split="all", seeds_dir=hard_seeds) if i.variant == "state_change"]
    told = Counter()
    for inst in insts:
        for it in inst.intentions:
            told["indirect" if inst.event(it.state_change).visual.startswith("INDIRECT-") else "direct"] += 1
    share = told["indirect"] / sum(told.values())
    assert 0.38 <= share <= 0.62, told
    # an indirect change is never a filler elsewhere in the timeline, nor a decision
    for inst in generate(4 * 150, seed=4, split="all", seeds_dir=hard_seeds):
        changes = {it.state_change for it in inst.intentions}
        assert all(e.id in changes for e in inst.events if e.visual.startswith("INDIRECT-")), inst.id


def test_other_seeds_hard_near_misses_fill_timelines_without_naming_their_object(hard_seeds):
    seeds = {s.id: s for s in load_seeds(hard_seeds)}
    borrowed = 0
    for inst in generate(4 * 150, seed=4, split="all", seeds_dir=hard_seeds):
        own = seeds[inst.model_extra["seed"]]
        for e in inst.events[:-1]:
            if e.visual.startswith("HARD-"):
                borrowed += 1
                assert not any(_is(h, e.visual) for h in own.hard_near_misses), (inst.id, e.visual)
                text = f"{e.visual} {e.audio}"
                assert not any(keywords_match(text, it.keywords[:1]) for it in own.intentions), (inst.id, text)
    assert borrowed > 50


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
    assert len(seeds) >= 600
    by_cat = Counter(s.category for s in seeds)
    assert set(by_cat) <= set(CATEGORIES) and len(by_cat) >= 12 and min(by_cat.values()) >= 15, by_cat
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
    assert len(pools.distractors) >= 200 and len(texts) >= 1000
    assert sum(1 for d in pools.distractors if any(a.startswith("[") for a in d.audio)) >= 20  # dialogue


def test_every_persona_has_enough_distractors_for_a_timeline_without_repeats():
    pools = load_pools()
    assert MIN_DISTRACTORS >= MAX_EVENTS
    for p in pools.personas:
        assert sum(set(d.requires) <= p.has for d in pools.distractors) >= MIN_DISTRACTORS, p.text


def test_no_distractor_repeats_within_a_timeline(train, test_split):
    pools = load_pools()
    patterns = [[_template(v) for v in d.visual if v.strip()] for d in pools.distractors]
    extra = generate(4 * 4 * len(CATS), seed=11, split="train")
    n_distractors = 0
    for inst in train + test_split + extra:
        used = Counter()
        for e in inst.events[:-1]:
            hits = [k for k, pats in enumerate(patterns) if any(p.fullmatch(e.visual) for p in pats)]
            used.update(hits[:1])
        n_distractors += sum(used.values())
        assert all(n == 1 for n in used.values()), (inst.id, [pools.distractors[k].visual[0] for k, n in used.items() if n > 1])
        visuals = [e.visual for e in inst.events if e.visual]
        assert len(set(visuals)) == len(visuals), inst.id
    assert n_distractors >= 20 * len(train + test_split + extra)  # the check saw the routine events


def test_distractors_form_no_intention():
    """Routine events carry no plan: none of the words a delayed intention is told with."""
    plan = re.compile(r"\b(remind|remember to|don't forget|need to|needs to|have to|has to|must|should|"
                      r"ran out|run out of|buy|pick up|call back|get back to)\b", re.I)
    for d in load_pools().distractors:
        for t in d.visual + d.audio:
            assert not plan.search(t), t


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
    monday = dict(good, id="food-monday")
    monday["near_miss"] = dict(good["near_miss"], visual=["On Monday the user walks past a bank."])
    (tmp_path / "food.yaml").write_text(yaml.safe_dump([good, monday]))
    with pytest.raises(SeedError, match=r"seed #2 .*food-monday.*weekday \('Monday'"):
        load_seeds(tmp_path)


def test_seed_without_hard_near_misses_or_indirect_change_is_named(tmp_path):
    good = yaml.safe_load((Path(__file__).resolve().parents[2] / "bench/generator/seeds/food.yaml").read_text())[0]
    good["hard_near_misses"] = [
        {"kind": "wrong_place", "location": "street", "visual": "A closed shop."},
        {"kind": "no_chance", "location": "bus", "visual": "An advert seen from a bus at night."}]
    for it in good["intentions"]:
        it["indirect_state_change"] = {"location": "kitchen", "visual": "The fridge door is full again."}
    (tmp_path / "food.yaml").write_text(yaml.safe_dump([good]))
    assert len(load_seeds(tmp_path, require_breadth=True)) == 1
    one_kind = dict(good, id="food-one-kind", hard_near_misses=[dict(good["hard_near_misses"][0])] * 2)
    (tmp_path / "food.yaml").write_text(yaml.safe_dump([good, one_kind]))
    with pytest.raises(SeedError, match=r"food\.yaml: seed #2 .*food-one-kind.*2 hard_near_misses of at least 2 kinds"
                                        r".*has 2 \(wrong_place\)"):
        load_seeds(tmp_path, require_breadth=True)
    assert len(load_seeds(tmp_path, require_breadth=False)) == 2
    none = dict(good, id="food-none")
    del none["hard_near_misses"]
    (tmp_path / "food.yaml").write_text(yaml.safe_dump([none]))
    with pytest.raises(SeedError, match=r"seed #1 .*food-none.*has 0"):
        load_seeds(tmp_path, require_breadth=True)
    direct = dict(good, id="food-direct-only")
    direct["intentions"] = [dict(good["intentions"][0]), {k: v for k, v in good["intentions"][1].items()
                                                          if k != "indirect_state_change"}]
    (tmp_path / "food.yaml").write_text(yaml.safe_dump([direct]))
    with pytest.raises(SeedError, match=r"food-direct-only.*intention 2 has no indirect_state_change"):
        load_seeds(tmp_path, require_breadth=True)


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
    # transit alone: 4 variants x 60 rounds walk every transit seed of the split
    insts = [i for i in generate(4 * 60, seed=2, split=split, categories=["transit"])
             if i.model_extra["seed"] == sid and i.intentions and i.variant != "negative"]
    # a negative's near miss may fall up to 40 min later when the timeline is crowded (README, "Timeline")
    assert insts
    for inst in insts:
        gap = parse_time(inst.events[-1].time) - parse_time(inst.event(inst.intentions[0].formation).time)
        assert 100 * 60 <= gap.total_seconds() <= 126 * 60, (inst.id, gap)
