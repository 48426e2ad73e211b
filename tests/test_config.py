from pathlib import Path

import pytest

from core.config import DEFAULT_CONFIG, REPO_ROOT, ConfigError, load_config


def test_cpu_profile_is_default_and_offline():
    cfg = load_config(env={})
    assert Path(cfg.source) == DEFAULT_CONFIG
    assert cfg.profile == "cpu"
    assert cfg.perception.captioner.backend == "narration"
    assert cfg.perception.asr.backend == "faster-whisper"
    assert cfg.reasoner.backend == "gate"


def test_gpu_profile_matches_paper_setup():
    cfg = load_config(REPO_ROOT / "configs" / "gpu.yaml", env={})
    assert cfg.perception.captioner.llm.model == "Qwen/Qwen3-VL-32B-Instruct"
    assert (cfg.perception.asr.backend, cfg.perception.asr.model) == ("whisperx", "large-v3")
    r = cfg.memory.retrieval
    assert (r.k, r.k_content, r.k_cue) == (10, 2, 8)
    assert cfg.memory.construction.link_candidates == 8
    assert cfg.reasoner.llm.base_url.startswith("http://")
    # the cascade's dismiss level is its own key, low so that only clear non-moments skip the LLM
    assert (cfg.reasoner.backend, cfg.reasoner.cascade.dismiss_below) == ("cascade", 0.2)


def test_unknown_key_names_key_and_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("memory:\n  retrieval:\n    kk: 3\n")
    with pytest.raises(ConfigError) as exc:
        load_config(p, env={})
    assert "memory.retrieval.kk" in str(exc.value) and str(p) in str(exc.value)


def test_mistyped_value_names_key(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("memory:\n  retrieval:\n    k: ten\n")
    with pytest.raises(ConfigError, match=r"memory\.retrieval\.k"):
        load_config(p, env={})


def test_env_overrides_single_key():
    cfg = load_config(env={"PROMEM_MEMORY__RETRIEVAL__K": "12", "PROMEM_REASONER__LLM__BASE_URL": "http://x/v1"})
    assert cfg.memory.retrieval.k == 12
    assert cfg.reasoner.llm.base_url == "http://x/v1"
    assert cfg.memory.retrieval.k_cue == 8


def test_env_override_with_typo_is_error():
    with pytest.raises(ConfigError, match="PROMEM_MEMORY__RETRIEVAL__KAY"):
        load_config(env={"PROMEM_MEMORY__RETRIEVAL__KAY": "1"})


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml", env={})
    p = tmp_path / "x.yaml"
    p.write_text("a: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p, env={})


@pytest.mark.parametrize("yaml_text, key", [
    ("memory:\n  construction:\n    link_candidates: -5\n", "memory.construction.link_candidates"),
    ("memory:\n  retrieval:\n    k: 0\n", "memory.retrieval.k"),
    ("memory:\n  construction:\n    batch_size: 0\n", "memory.construction.batch_size"),
    ("reasoner:\n  cooldown_hours: -1\n", "reasoner.cooldown_hours"),
    ("reasoner:\n  gate:\n    max_evidence: 0\n", "reasoner.gate.max_evidence"),
    ("serve:\n  max_events: -3\n", "serve.max_events"),
])
def test_counts_and_durations_out_of_range_are_errors_naming_the_key(tmp_path, yaml_text, key):
    p = tmp_path / "neg.yaml"
    p.write_text(yaml_text)
    with pytest.raises(ConfigError, match=rf"key '{key}': Input should be greater than"):
        load_config(p, env={})


def test_recall_and_remember_refuse_counts_below_one(capsys):
    from cli.main import main

    for argv in (["recall", "--event", "{}", "-k", "0"], ["remember", "x.jsonl", "--batch", "-2"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2 and "must be at least 1" in capsys.readouterr().err


def test_recall_takes_the_event_inline_or_from_a_file(tmp_path, capsys):
    from cli.main import main

    store = tmp_path / "store"
    store.mkdir()
    (store / "memory.sqlite").write_bytes(b"")  # an empty file is a (new, empty) SQLite database
    inline = '{"id": "now", "time": "2026-03-02T08:00:00+01:00"}'
    assert main(["recall", "--store", str(store), "--event", inline]) == 2
    assert "promem recall: --event (id 'now'): event needs at least one of 'visual' / 'audio'" in capsys.readouterr().err
    assert main(["recall", "--store", str(store), "--event", str(tmp_path / "missing.json")]) == 2
    assert "not a JSON object, and no readable file" in capsys.readouterr().err
