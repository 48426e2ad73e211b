"""The artifact contract (core/artifacts.py): the metadata record written and read back, files of
the earlier flat layout read into it, the one staleness check the loaders and `promem demo`
share, and the model cache's keying rule."""
import json
import os

import pytest

from core.artifacts import ArtifactMeta, cached_model, read_meta, stale_reason, write_meta


def test_record_round_trip(tmp_path):
    now = ArtifactMeta(kind="now-head", version=2, threshold=0.7, metrics={"in_dim": 386, "hidden": 0})
    meta = ArtifactMeta(kind="gate", version=2, data="runs/x/train.jsonl", data_hash="ab12", base="MiniLM",
                        cue_encoder="artifacts/cue-encoder", cue_encoder_fingerprint="f00d", threshold=0.42,
                        seconds=12.5, recipe={"trees": 200}, metrics={"cross_fit": {"f1": 80.0}}, now=now)
    write_meta(tmp_path, meta)
    assert read_meta(tmp_path) == meta
    on_disk = json.loads((tmp_path / "meta.json").read_text())
    assert on_disk["kind"] == "gate" and on_disk["now"]["threshold"] == 0.7 and on_disk["metrics"]["cross_fit"]["f1"] == 80.0
    assert read_meta(tmp_path / "absent") is None


def test_earlier_flat_layout_is_read_into_the_record(tmp_path):
    gate = {"version": 2, "cue_encoder": "base", "cue_encoder_fingerprint": None, "kind": "gate-gbm-roles+cue",
            "base": "all-MiniLM-L6-v2", "threshold": 0.61, "calibrated": True, "cross_fit": {"f1": 70.0},
            "train_seconds": 99.0, "recipe": {"trees": 200}, "losses": [0.6, 0.2],
            "now": {"in_dim": 386, "hidden": 0, "threshold": 0.8, "held_out": {"acc_p": 70.0}, "train_seconds": 3.0}}
    (tmp_path / "meta.json").write_text(json.dumps(gate))
    m = read_meta(tmp_path)
    assert (m.kind, m.version, m.threshold, m.seconds, m.cue_encoder) == ("gate", 2, 0.61, 99.0, "base")
    assert m.metrics["calibrated"] is True and m.metrics["losses"] == [0.6, 0.2] and m.metrics["model"] == "gate-gbm-roles+cue"
    assert m.now.kind == "now-head" and m.now.threshold == 0.8 and m.now.metrics["in_dim"] == 386
    linker = {"name": "linker", "version": 3, "data": "d.jsonl", "data_hash": "h", "embedder": "minilm",
              "cue_encoder": "a/cue", "cue_encoder_fingerprint": "x", "threshold": 0.5, "seconds": 4.0,
              "recipe": {}, "pairs": {"train": 10, "train_positives": 2}, "metrics": {"state_change_f1": 0.7}}
    (tmp_path / "meta.json").write_text(json.dumps(linker))
    m = read_meta(tmp_path)
    assert (m.kind, m.base, m.cue_encoder_fingerprint) == ("linker", "minilm", "x")
    assert m.metrics == {"state_change_f1": 0.7, "pairs": {"train": 10, "train_positives": 2}}


def test_stale_reason_is_the_loaders_check(tmp_path):
    from cli.demo import stale_reason as demo_reason
    from reasoner.gate.model import VERSION, GateModel, GateNotTrained

    gate = tmp_path / "gate"
    assert stale_reason(gate, VERSION) == demo_reason("gate", gate, "base") == "not trained yet"
    gate.mkdir()
    (gate / "meta.json").write_text("{not json")
    assert stale_reason(gate, VERSION).startswith("its meta.json is unreadable")
    with pytest.raises(GateNotTrained, match="unreadable.*`promem train gate` again"):
        GateModel.load(gate)
    # an MLP gate of the first format (no version in its meta.json): version 1, refused by both
    (gate / "meta.json").write_text(json.dumps({"in_dim": 1159, "hidden": 64, "threshold": 0.9}))
    why = stale_reason(gate, VERSION)
    assert why == demo_reason("gate", gate, "base") == f"it is version 1, this code reads version {VERSION}"
    with pytest.raises(GateNotTrained, match=f"{why}: run `promem train gate` again"):
        GateModel.load(gate)


def test_stale_reason_sees_another_cue_encoder(tmp_path):
    from core.artifacts import cue_fingerprint

    cue = tmp_path / "cue"
    write_meta(cue, ArtifactMeta(kind="cue-encoder", version=2, seconds=1.0))
    linker = tmp_path / "linker"
    write_meta(linker, ArtifactMeta(kind="linker", version=3, cue_encoder=str(cue),
                                    cue_encoder_fingerprint=cue_fingerprint(str(cue))))
    assert stale_reason(linker, 3, str(cue)) is None
    assert stale_reason(linker, 3, "base") == "it was trained with another cue encoder"
    write_meta(cue, ArtifactMeta(kind="cue-encoder", version=2, seconds=2.0))  # trained again
    assert stale_reason(linker, 3, str(cue)) == "it was trained with another cue encoder"
    assert stale_reason(linker, 3) is None  # without a cue encoder to compare, only the version counts
    # a model trained on the untuned encoder is not tied to any artifact
    write_meta(linker, ArtifactMeta(kind="linker", version=3, cue_encoder="base"))
    assert stale_reason(linker, 3, "base") is None and stale_reason(linker, 3, str(cue)) is not None


def test_model_cache_reloads_what_was_written_again(tmp_path):
    write_meta(tmp_path, ArtifactMeta(kind="linker", version=3))
    built = []

    def build():
        built.append(object())
        return built[-1]

    a = cached_model("test-kind", tmp_path, "s", build)
    assert cached_model("test-kind", tmp_path, "s", build) is a and len(built) == 1
    assert cached_model("test-kind", tmp_path, "other settings", build) is not a  # settings are part of the key
    st = (tmp_path / "meta.json").stat()
    os.utime(tmp_path / "meta.json", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # retrained in place
    assert cached_model("test-kind", tmp_path, "s", build) is not a and len(built) == 3
