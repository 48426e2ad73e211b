"""bench.score_auc: the AUC of the gate's score, read from a real result file of the harness."""
import json

import pytest

from bench.score_auc import auc, main, score_auc


def test_auc_counts_pairs_and_ties():
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.1], [0.9]) == 0.0
    assert auc([0.5], [0.5, 0.4]) == pytest.approx(0.75)
    assert auc([], [0.3]) is None


def test_reads_a_result_file_by_variant(tmp_path, capsys):
    rows = [("positive", 0.9), ("positive", 0.6), ("negative", 0.7), ("no_formation", 0.2),
            ("state_change", None)]
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"instances": [
        {"id": f"i{n}", "variant": v, "decision": {"event_id": "e1", "assist": False, "gate_score": s}}
        for n, (v, s) in enumerate(rows)]}))
    got = score_auc(path)
    # positives 0.9, 0.6 against 0.7, 0.2, 0.0 (unscored): 5 of 6 pairs won
    assert got.all_silent == pytest.approx(5 / 6)
    assert got.by_variant == {"negative": 0.5, "no_formation": 1.0, "state_change": 1.0}
    assert main([str(path)]) == 0
    assert capsys.readouterr().out.strip() == got.line()
