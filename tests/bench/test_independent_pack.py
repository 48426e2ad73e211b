"""The independent test pack: built deterministically, valid, broad, and kept apart from the generator and training."""
from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from bench.generator.text import ROLES, fill
from bench.judges.keywords import KeywordJudge, addresses
from bench.packs import build
from bench.packs.build import BUILT, SCENARIOS, PackError, build_instances, load_scenarios, to_jsonl
from bench.validate import validate_file
from core.formats import CATEGORIES, VARIANTS, Decision

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "bench" / "generator"
NGRAM = 8

# Function words, fillers, the wearer's speaker label and forms of address; the rest carries content.
STOP = set("""
a about above after again all also am an and any are around as at away back be been before being
below between both but by can could did do does doing done down during each even few for from
further get gets got had has have having he her here hers him his how i if in into is it its just
like me more most my near next no nor not now of off on once one only or other our out over own
same she should so some still such than that the their them then there these they this those
through to too two under until up very was we were what when where which while who why will with
would yes you your uh um er mm eh ehn oh ah ok okay o sha abeg oya come go going see say said know
want need let make take look please thank thanks user sir madam ma señora señor
""".split())


@pytest.fixture(scope="module")
def scenarios():
    return load_scenarios()


@pytest.fixture(scope="module")
def instances(scenarios):
    return build_instances(scenarios)


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W\d_]+", text.lower())


def _content(text: str) -> set[str]:
    # A crude stem (trailing s) so "printer" / "printers" count as one word.
    return {w.rstrip("s") for w in _words(text) if w not in STOP and len(w) > 2}


def test_committed_file_equals_a_fresh_build(instances):
    assert BUILT.read_text(encoding="utf-8") == to_jsonl(instances), \
        "independent.jsonl is stale: run python -m bench.packs.build independent"


def test_build_cli_writes_the_same_file(tmp_path):
    out = tmp_path / "pack.jsonl"
    subprocess.run([sys.executable, "-m", "bench.packs.build", "independent", "-o", str(out)], cwd=ROOT, check=True,
                   capture_output=True)
    assert out.read_bytes() == BUILT.read_bytes()


def test_every_instance_passes_the_validator():
    good, violations = validate_file(BUILT)
    assert violations == []
    assert len(good) == len(BUILT.read_text(encoding="utf-8").splitlines())
    cli = subprocess.run([sys.executable, "-m", "cli.main", "bench", "validate", str(BUILT)], cwd=ROOT,
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert f"{len(good)} valid instance(s), 0 violation(s)" in cli.stdout


def test_size_and_category_spread(scenarios, instances):
    assert len(scenarios) >= 30
    assert Counter(i.variant for i in instances) == {v: len(scenarios) for v in VARIANTS}
    per_cat = Counter(s.category for s in scenarios)
    # the pack was written over the first eight categories; it need not cover every generator category
    assert set(per_cat) <= set(CATEGORIES) and len(per_cat) >= 8, per_cat
    assert min(per_cat.values()) >= 3, per_cat


def test_timelines_are_realistic(instances):
    for inst in instances:
        times = [e.dt for e in inst.events]
        assert 12 <= len(inst.events) <= 30, inst.id
        assert all(a < b for a, b in zip(times, times[1:])), inst.id
        assert (times[-1].date() - times[0].date()).days <= 3, inst.id
        assert inst.decision_event == inst.events[-1].id
        texts = [(e.location, e.visual, e.audio) for e in inst.events]
        assert len(set(texts)) == len(texts), f"{inst.id}: an event repeats"


def test_references_satisfy_their_keywords_and_gold_is_set_per_variant(instances):
    judge = KeywordJudge()
    for inst in instances:
        if inst.variant == "no_formation":
            assert inst.intentions == []
            continue
        for it in inst.intentions:
            assert addresses(it.reference, it.keywords), inst.id
            assert (it.state_change is not None) == (inst.variant == "state_change"), inst.id
        if inst.variant == "positive":
            said = Decision(event_id=inst.decision_event, assist=True, message=inst.intentions[0].reference)
            assert set(judge.judge(inst, said).values()) == {"TP"}, inst.id


def test_variants_differ_only_where_they_should(scenarios, instances):
    by_id = {i.id: i for i in instances}
    for sc in scenarios:
        pos, neg = by_id[f"ind-{sc.id}-positive"], by_id[f"ind-{sc.id}-negative"]
        assert pos.events[-1].visual != neg.events[-1].visual or pos.events[-1].audio != neg.events[-1].audio, sc.id
        assert by_id[f"ind-{sc.id}-no_formation"].events[-1].visual == pos.events[-1].visual


def test_opportunity_shares_no_content_word_with_formation(scenarios):
    repeats = {}
    for sc in scenarios:
        f = sc.formation
        shared = _content(f"{f.where} {f.see} {f.hear}") & _content(f"{sc.opportunity.see} {sc.opportunity.hear}")
        if shared:
            repeats[sc.id] = sorted(shared)
    assert repeats == {}, "opportunities repeat content words of their formation"


def _generator_texts() -> list[str]:
    """Every string of the generator's seeds and pools, each filled a few ways ({a|b}, {role})."""
    raw: list[str] = []

    def walk(node):
        if isinstance(node, str):
            raw.append(node)
        elif isinstance(node, list):
            for x in node:
                walk(x)
        elif isinstance(node, dict):
            for x in node.values():
                walk(x)

    for path in sorted((GEN / "seeds").glob("*.yaml")) + sorted((GEN / "pools").glob("*.yaml")):
        walk(yaml.safe_load(path.read_text(encoding="utf-8")))
    roles = {r: r for r in ROLES}
    out = []
    for text in raw:
        for trial in range(6):
            try:
                out.append(fill(text, roles, random.Random(trial)))
            except ValueError:
                out.append(text)
    return out


def _ngrams(text: str) -> set[tuple[str, ...]]:
    w = _words(text)
    return {tuple(w[i:i + NGRAM]) for i in range(len(w) - NGRAM + 1)}


def test_no_phrase_of_eight_words_is_shared_with_the_generator(instances):
    gen = set().union(*(_ngrams(t) for t in _generator_texts()))
    assert len(gen) > 1000  # the seeds were read
    for inst in instances:
        texts = [inst.persona] + [t for e in inst.events for t in (e.visual, e.audio) if t]
        texts += [it.reference for it in inst.intentions]
        for t in texts:
            shared = _ngrams(t) & gen
            assert not shared, f"{inst.id}: {' '.join(sorted(shared)[0])!r} also appears in the generator's seeds"


def test_the_builder_reads_nothing_of_the_generator():
    source = Path(build.__file__).read_text(encoding="utf-8")
    assert "bench.generator" not in source and "bench/generator" not in source


_PACK_REF = re.compile(r"""packs[./]independent|independent\.jsonl|["']independent["']""")


def test_no_training_or_tuning_code_path_mentions_the_pack():
    hits = []
    for folder in ("training", "reasoner", "configs"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in {".py", ".yaml", ".yml", ".json", ".txt", ".md", ".cfg", ".toml"}:
                if _PACK_REF.search(path.read_text(encoding="utf-8", errors="replace")):
                    hits.append(str(path.relative_to(ROOT)))
    assert hits == [], f"training or tuning code refers to the independent pack: {hits}"


def _one_scenario_yaml(**change) -> str:
    sc = yaml.safe_load(SCENARIOS.read_text(encoding="utf-8"))[0]
    sc.update(change)
    return yaml.safe_dump([sc], allow_unicode=True)


def test_bad_scenarios_are_named_with_the_file_and_the_reason(tmp_path):
    bad = tmp_path / "s.yaml"
    bad.write_text(_one_scenario_yaml(colour="red"), encoding="utf-8")
    with pytest.raises(PackError, match=r"s\.yaml: scenario #1 \(lagos-toner\).*colour"):
        load_scenarios(bad)
    bad.write_text(_one_scenario_yaml(reference="Say something nice."), encoding="utf-8")
    with pytest.raises(PackError, match="fails its own keywords"):
        load_scenarios(bad)
    sc = yaml.safe_load(SCENARIOS.read_text(encoding="utf-8"))[0]
    late = dict(sc["formation"], at="4 23:59")
    bad.write_text(_one_scenario_yaml(formation=late), encoding="utf-8")
    with pytest.raises(PackError, match=r"lagos-toner \(positive\): times must strictly increase"):
        build_instances(load_scenarios(bad))
    out = subprocess.run([sys.executable, "-m", "bench.packs.build", "independent", "--scenarios", str(bad), "-o",
                          str(tmp_path / "x.jsonl")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 1 and "times must strictly increase" in out.stderr
    assert not (tmp_path / "x.jsonl").exists()
