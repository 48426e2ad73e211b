"""SFT examples: the reasoner's own prompt in, a trace + decision that reasoner/parse.py reads out."""
import pytest

from bench.judges.keywords import addresses
from core.config import load_config
from reasoner.parse import parse_output
from reasoner.render import render_messages
from training.sft_data import build_examples, gold_past, target_for


def test_targets_parse_to_the_right_decision(sample_instances):
    examples = build_examples(sample_instances, "gold", distractors=3, seed=0, progress=False)
    assert [e.id for e in examples] == [i.id for i in sample_instances]
    for inst, ex in zip(sample_instances, examples):
        parsed = parse_output(ex.target, known_ids=ex.retrieved)
        assert not parsed.warnings
        assert ex.target.startswith("Reasoning: ") and "\nDecision: {" in ex.target
        if inst.variant == "positive":
            assert parsed.assist is True
            for it in inst.intentions:  # the message names the intention, as the keyword judge checks
                assert addresses(parsed.message, it.keywords), (inst.id, parsed.message)
            assert parsed.evidence == [it.formation for it in inst.intentions]
        else:
            assert parsed.assist is False and parsed.message is None and parsed.evidence == []


def test_prompt_is_the_reasoners_own_with_gold_and_distractors_in_time_order(sample_instances):
    import random

    inst = next(i for i in sample_instances if i.variant == "state_change")
    it = inst.intentions[0]
    ex = build_examples([inst], "gold", distractors=2, seed=5, progress=False)[0]
    past = gold_past(inst, random.Random(5), 2)
    current = inst.event(inst.decision_event)
    assert ex.messages == render_messages(inst.persona, past, current)
    assert it.formation in ex.retrieved and it.state_change in ex.retrieved and len(ex.retrieved) == 4
    assert current.id not in ex.retrieved
    times = [inst.event(i).dt for i in ex.retrieved]
    assert times == sorted(times)
    user = ex.messages[1]["content"]
    # the formation carries its state-change link, as a retrieval with expand_links shows it
    assert '"later": [{"event": "%s", "kind": "state_change"}]' % it.state_change in user
    assert it.state_change in target_for(inst, past)


def test_unknown_past_mode_and_retrieval_without_config_are_clear_errors(sample_instances):
    with pytest.raises(ValueError, match="past must be one of"):
        build_examples(sample_instances[:1], "everything", progress=False)
    with pytest.raises(ValueError, match="needs the config"):
        build_examples(sample_instances[:1], "retrieval", progress=False)


@pytest.mark.slow
def test_retrieval_mode_replays_into_a_private_memory(sample_instances):
    cfg = load_config(env={})
    # The untuned bundled MiniLM and no linker: retrieval needs no trained artifacts here.
    cfg.memory.construction.cue_encoder = "base"
    cfg.memory.construction.linker = "none"
    inst = next(i for i in sample_instances if i.variant == "positive")
    ex = build_examples([inst], "retrieval", cfg=cfg, progress=False)[0]
    assert inst.intentions[0].formation in ex.retrieved  # present, retrieved or added as missed gold
    assert inst.decision_event not in ex.retrieved
    assert 1 < len(ex.retrieved) <= cfg.memory.retrieval.k + 1
    assert parse_output(ex.target, ex.retrieved).assist is True
