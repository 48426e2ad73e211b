"""SFT closes the loop: an adapter trained by the recipe, loaded by the reasoner's transformers +
peft backend, makes the reasoner answer in the format reasoner/parse.py reads.

A tiny random Qwen3 cannot learn the task, but it can memorise one example: after 100 steps the
greedy answer to that prompt is the target (every target token wins by >= 0.25 logits, far
above float noise), which proves that training and serving see the same prompt, template and
end-of-turn token.
"""
import random

import pytest

from training.recipes import sft
from training.sft_data import build_examples, gold_past

from tests.support.reasoner_cfg import cfg_with
from tests.training.conftest import TINY_RECIPE

pytestmark = pytest.mark.slow


def test_trained_adapter_makes_the_llm_reasoner_speak(tiny_base, sample_instances, tmp_path):
    from reasoner.api import build_reasoner

    inst = sample_instances[0]
    assert inst.variant == "positive"
    ex = build_examples([inst], "gold", distractors=1, seed=0, progress=False)[0]
    tok = sft.load_tokenizer(str(tiny_base))
    rows = [sft.encode_example(tok, ex.messages, ex.target, 2048)]
    recipe = sft.load_recipe(TINY_RECIPE, base_model=str(tiny_base), epochs=100, lr=1e-2, grad_accum=1,
                             save_every=1000, lora_dropout=0.0, warmup=0.05)
    out = tmp_path / "adapter"
    meta, _ = sft.train(rows, recipe, out, tok, progress=False)
    assert meta.metrics["complete"] and meta.metrics["loss_last"] < meta.metrics["loss_first"]

    cfg = cfg_with(backend="llm", llm={"backend": "transformers", "model": str(tiny_base), "adapter": str(out),
                                       "max_tokens": 120})
    past = gold_past(inst, random.Random(0), 1)  # the same past the example was built from
    d = build_reasoner(cfg).decide(inst.persona, past, inst.event(inst.decision_event))
    assert d.error is None, d.raw_output
    assert d.assist is True and d.message == inst.intentions[0].reference
    assert d.evidence == [inst.intentions[0].formation] and d.retrieved == ex.retrieved
