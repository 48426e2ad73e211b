"""Event role classifiers (training/roles.py): labels, and out-of-fold scores."""
import numpy as np

from training import data, roles


def _vectors(instances):
    from core.providers.embedder import MiniLMEmbedder

    texts = sorted({e.text() for i in instances for e in i.events})
    return dict(zip(texts, MiniLMEmbedder().encode(texts)))


def test_role_labels_follow_the_intentions(sample_instances):
    for inst in sample_instances:
        forms = {inst.event(it.formation).text() for it in inst.intentions}
        labelled = dict(data.role_examples([inst], "formation"))
        assert {t for t, y in labelled.items() if y} == forms
        opp = dict(data.role_examples([inst], "opportunity"))
        assert sum(opp.values()) == (inst.variant in ("positive", "state_change"))
        assert opp.get(inst.event(inst.decision_event).text(), 0) == (inst.variant in ("positive", "state_change"))


def test_out_of_fold_scores_come_from_classifiers_that_did_not_see_the_fold(sample_instances):
    vec = _vectors(sample_instances)
    names = ("formation", "state_change", "opportunity")
    fold = {inst.id: n % 2 for n, inst in enumerate(sample_instances)}
    oof = roles.roles_out_of_fold(sample_instances, vec, names, lambda i: fold[i.id], C=1.0, seed=0)
    assert set(oof) == set(vec) and all(s.shape == (3,) and ((0 <= s) & (s <= 1)).all() for s in oof.values())
    inside = roles.fit_roles(sample_instances, vec, names, C=1.0, seed=0)
    forms = [inst.event(it.formation).text() for inst in sample_instances for it in inst.intentions]
    in_sample = roles.role_scores(inside, np.vstack([vec[t] for t in forms]))[:, 0]
    out_of_fold = np.array([oof[t][0] for t in forms])
    # trained on them, the classifier is surer of the formations than one that never saw them
    assert in_sample.mean() > out_of_fold.mean()
