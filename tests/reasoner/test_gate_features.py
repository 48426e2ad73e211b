"""reasoner.gate.features: the relative columns say how far a candidate stands above the median of
the others, so a voice that lifts every cosine and role score of a timeline alike leaves them be."""
import numpy as np

from bench.generator import generate
from reasoner.gate.features import FEATURES, Featurizer
from reasoner.gate.model import default_embedder


def _intent_by_words(shift: float):
    # a role scorer read from the events themselves: speech marks a likely intention
    def roles(events, vecs):
        return np.array([[min(1.0, 0.2 + 0.5 * bool(e.audio) + shift), 0.1, 0.1] for e in events], dtype=np.float32)
    return roles


def test_relative_columns_are_offsets_from_the_median_and_shift_free():
    inst = next(i for i in generate(8, seed=2, split="train") if i.variant == "positive")
    current = inst.event(inst.decision_event)
    past = [e for e in inst.events if e.dt < current.dt][-6:]
    enc = default_embedder().encode
    col = {name: FEATURES.index(name) for name in ("content_cos", "content_cos_rel", "past_intent", "past_intent_rel")}
    low = Featurizer(enc, roles=_intent_by_words(0.0)).features(past, current)
    high = Featurizer(enc, roles=_intent_by_words(0.25)).features(past, current)
    assert low.shape == (len(past), len(FEATURES))
    for f in (low, high):
        assert np.allclose(f[:, col["content_cos_rel"]], f[:, col["content_cos"]] - np.median(f[:, col["content_cos"]]), atol=1e-5)
    assert not np.allclose(low[:, col["past_intent"]], high[:, col["past_intent"]])
    assert np.allclose(low[:, col["past_intent_rel"]], high[:, col["past_intent_rel"]], atol=1e-5)
    # against another reference set, the absolute columns stay and the relative ones move
    ref = [e for e in inst.events if e.dt < current.dt][:3]
    other = Featurizer(enc, roles=_intent_by_words(0.0)).features(past, current, ref)
    assert np.allclose(other[:, col["content_cos"]], low[:, col["content_cos"]], atol=1e-5)
    assert not np.allclose(other[:, col["content_cos_rel"]], low[:, col["content_cos_rel"]])
    ref_cos = Featurizer(enc, roles=_intent_by_words(0.0)).features(ref, current)[:, col["content_cos"]]
    assert np.allclose(other[:, col["content_cos_rel"]], other[:, col["content_cos"]] - np.median(ref_cos), atol=1e-5)
