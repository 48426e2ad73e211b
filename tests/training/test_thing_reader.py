"""The thing reader: its labels, a short real fine-tune on the sample instances, the artifact, and
what the composer says with it."""
import logging

import pytest

from core.artifacts import ArtifactError
from core.text import addresses, keyword_pattern
from reasoner.gate.compose import ACTION_PHRASES, MAX_WORDS, compose_message, word_count
from reasoner.gate.thing_reader import load_reader, reader_text
from training.recipes.thing_reader import action_label, examples


def test_the_action_label_is_the_phrase_of_the_first_verb_it_knows():
    assert ACTION_PHRASES[action_label([["milk"], ["buy", "get", "pick up"]], ACTION_PHRASES)] == "maybe buy or get a new one"
    assert ACTION_PHRASES[action_label([["bike"], ["repaired", "fix"]], ACTION_PHRASES)] == "maybe repair it or buy new"
    # "accounts" and "client" name no action; "send" does
    assert ACTION_PHRASES[action_label([["invoice"], ["accounts", "send", "client"]], ACTION_PHRASES)] \
        == "maybe get it done and sent"
    assert action_label([["photo"], ["photograph", "picture"]], ACTION_PHRASES) == -1
    assert action_label([["photo"]], ACTION_PHRASES) == -1


def test_examples_mark_every_keyword_match_once_per_formation_text(sample_instances):
    ex = examples(sample_instances, ACTION_PHRASES)
    texts = [x.text for x in ex]
    assert len(texts) == len(set(texts)) and 0 < len(ex) < sum(len(i.intentions) for i in sample_instances)
    for x in ex:
        marked = {x.text[a:b].lower() for a, b in x.marks}
        for group in x.keywords:
            for term in group:
                if keyword_pattern(term).search(x.text):
                    assert term.lower() in marked, (term, x.text)
    invoice = next(x for x in ex if "invoice" in x.text)
    assert ACTION_PHRASES[invoice.action] == "maybe get it done and sent"


@pytest.fixture(scope="module")
def trained_reader(sample_instances, tmp_path_factory):
    from training.recipes.thing_reader import load_recipe, train

    out = tmp_path_factory.mktemp("reader") / "thing-reader"
    recipe = load_recipe(held_out=0.0)
    recipe.finetune = recipe.finetune.model_copy(update={"epochs": 40, "batch_size": 4, "threads": 1, "lr": 1e-4})
    meta = train(sample_instances, recipe, out, progress=False)
    return out, meta


@pytest.mark.slow
def test_reader_learns_the_marks_and_the_composer_names_the_thing(trained_reader, sample_instances):
    out, meta = trained_reader
    losses = meta.metrics["losses"]
    assert meta.kind == "thing-reader" and losses[-1] < 0.5 * losses[0]
    assert (out / "reader.safetensors").is_file() and (out / "meta.json").is_file()
    reader = load_reader(out)
    assert reader.actions == ACTION_PHRASES
    for inst in sample_instances:
        if inst.variant != "positive":
            continue
        current = inst.event(inst.decision_event)
        for it in inst.intentions:
            formation = inst.event(it.formation)
            reading = reader.read(formation)
            assert reading.text == reader_text(formation) and reading.runs
            assert any(addresses(span, it.keywords[:1]) for span in reading.spans()), reading.spans()
            said = compose_message([formation], current, reader)
            assert said.evidence == [formation.id]
            assert word_count(said.message) <= MAX_WORDS and len(said.message.split()) <= MAX_WORDS
            assert addresses(said.message, it.keywords[:1]), said.message
            assert reading.action in said.message


def test_a_missing_reader_names_the_command(tmp_path):
    with pytest.raises(ArtifactError, match="promem train thing-reader"):
        load_reader(tmp_path / "nothing-here")


def test_the_gate_composes_by_rule_when_the_reader_is_missing(trained_gate, tmp_path, caplog):
    from reasoner.gate.reasoner import GateReasoner
    from tests.support.reasoner_cfg import cfg_with

    cfg = cfg_with(gate={"path": str(trained_gate[0]), "thing_reader": str(tmp_path / "absent")})
    with caplog.at_level(logging.WARNING):
        reasoner = GateReasoner(cfg)
    assert reasoner.reader is None
    assert "promem train thing-reader" in caplog.text and "by rule" in caplog.text
