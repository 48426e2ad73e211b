"""The LoRA SFT recipe on a tiny random Qwen3: label mask, training, checkpoint resume, adapter reload."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.artifacts import read_meta
from training.recipes import sft
from training.sft_data import build_examples

from tests.training.conftest import SAMPLE, TINY_RECIPE


@pytest.fixture(scope="module")
def tok(tiny_base):
    return sft.load_tokenizer(str(tiny_base))


@pytest.fixture(scope="module")
def rows(sample_instances, tok):
    examples = build_examples(sample_instances[:2], "gold", distractors=1, seed=0, progress=False)
    return [sft.encode_example(tok, e.messages, e.target, 1024) for e in examples], examples


def test_label_mask_covers_exactly_the_assistant_tokens(tok, rows):
    for row, ex in zip(*rows):
        prompt_ids = tok(tok.apply_chat_template(ex.messages, add_generation_prompt=True, tokenize=False),
                         add_special_tokens=False)["input_ids"]
        n = len(prompt_ids)
        assert row["input_ids"][:n] == prompt_ids  # the prompt exactly as inference sends it:
        served = tok.apply_chat_template(ex.messages, add_generation_prompt=True, return_tensors="pt",
                                         return_dict=True)["input_ids"][0].tolist()  # as TransformersChat does
        assert served == prompt_ids
        assert row["labels"][:n] == [-100] * n
        assert all(t != -100 for t in row["labels"][n:])
        assert tok.decode(row["labels"][n:]) == ex.target + "<|im_end|>"
    assert sft.encode_example(tok, rows[1][0].messages, rows[1][0].target, 50) is None  # too long: skipped


def test_left_padded_batch_gives_each_row_its_unpadded_loss(tiny_base, tok, rows):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_base).eval()
    encoded = rows[0]
    assert len(encoded[0]["input_ids"]) != len(encoded[1]["input_ids"])  # so one row is padded
    with torch.no_grad():
        singles = []
        for r in encoded:
            b = sft.collate([r], tok.pad_token_id)
            n = int((b["labels"][:, 1:] != -100).sum())
            ref = model(input_ids=b["input_ids"], labels=b["labels"]).loss  # transformers' own shifted mean
            mine = sft.assistant_loss(model, b, n)
            assert torch.allclose(mine, ref, atol=1e-5)
            singles.append(float(mine) * n)
        both = sft.collate(encoded, tok.pad_token_id)
        n_all = int((both["labels"][:, 1:] != -100).sum())
        assert float(sft.assistant_loss(model, both, n_all)) == pytest.approx(sum(singles) / n_all, rel=1e-4)


def test_lr_schedule_warms_up_then_decays():
    f = sft.lr_lambda(20, 0.1)
    assert [round(f(s), 3) for s in (0, 1, 2, 11, 19)] == [0.5, 1.0, 1.0, 0.5, 0.056]


def test_each_step_splits_one_global_batch_over_ranks():
    kw = dict(n=10, step=3, steps_per_epoch=3, global_batch=4, seed=0, batch_size=1)
    r0 = sft.step_batches(rank=0, world=2, **kw)
    r1 = sft.step_batches(rank=1, world=2, **kw)
    one = sft.step_batches(rank=0, world=1, **kw)
    assert len(r0) == len(r1) == 2 and sorted(sum(r0 + r1, [])) == sorted(sum(one, []))
    assert sft.step_batches(rank=0, world=2, **kw) == r0  # a pure function of the step: resumes exactly


@pytest.mark.slow
def test_train_resume_save_and_reload_with_peft(tiny_base, tok, rows, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    encoded = rows[0]
    recipe = sft.load_recipe(TINY_RECIPE, base_model=str(tiny_base), epochs=3)
    out = tmp_path / "adapter"
    meta, _ = sft.train(encoded, recipe, out, tok, progress=False, stop_after=1)  # an interruption
    assert not meta.metrics["complete"] and (out / "checkpoints" / "step-000001" / "trainer_state.pt").is_file()
    assert not (out / "adapter_model.safetensors").exists()
    meta, model = sft.train(encoded, recipe, out, tok, progress=False)  # the rerun continues
    m = meta.metrics
    assert m["resumed_from"] == 1 and m["complete"] and m["steps"] == m["total_steps"] == 3
    assert len(m["losses"]) == 3 and m["losses"][-1] < m["losses"][0]  # the loss falls

    ref_meta, ref_model = sft.train(encoded, recipe, tmp_path / "straight", tok, progress=False)
    assert ref_meta.metrics["losses"] == pytest.approx(m["losses"], rel=1e-5)  # resuming changed nothing

    cfg = json.loads((out / "adapter_config.json").read_text())
    assert cfg["r"] == 8 and cfg["lora_alpha"] == 16 and cfg["lora_dropout"] == 0.05
    assert set(cfg["target_modules"]) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    assert cfg["base_model_name_or_path"] == str(tiny_base)
    from safetensors import safe_open

    with safe_open(str(out / "adapter_model.safetensors"), "pt") as f:
        keys = list(f.keys())
    # the PEFT naming vLLM's --lora-modules loader parses; no embedding or head weights ride along
    pattern = re.compile(r"^base_model\.model\.model\.layers\.\d+\.(self_attn|mlp)\.[a-z]+_proj\.lora_[AB]\.weight$")
    assert keys and all(pattern.match(k) for k in keys), keys[:3]
    assert len(keys) == 2 * 7 * 2  # 2 layers x 7 projections x (A, B)
    assert read_meta(out).metrics["steps"] == 3

    reloaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_base), out).eval()
    base = AutoModelForCausalLM.from_pretrained(tiny_base).eval()
    ids = torch.tensor([encoded[0]["input_ids"][-64:]])
    with torch.no_grad():
        trained, again, ref, plain = (m(input_ids=ids).logits for m in (model.eval(), reloaded, ref_model.eval(), base))
    assert torch.equal(trained, again)
    assert torch.allclose(trained, ref, atol=1e-5)
    assert not torch.allclose(trained, plain, atol=1e-4)  # the adapter learned something


@pytest.mark.slow
def test_cli_trains_and_reports_bad_lines(tiny_base, tmp_path, capsys):
    from cli.main import main

    data = tmp_path / "train.jsonl"
    lines = SAMPLE.read_text().splitlines()[:2]
    data.write_text(lines[0] + "\n{not json\n" + lines[1] + "\n")
    out = tmp_path / "cli-adapter"
    argv = ["train", "sft", "--recipe", str(TINY_RECIPE), "--base", str(tiny_base), "--data", str(data),
            "--no-extra-data", "-o", str(out), "--epochs", "1"]
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert "2 examples (0 too long), 1/1 steps" in said and "saved adapter to" in said
    assert (out / "adapter_model.safetensors").is_file()
    assert len((out / "examples.jsonl").read_text().splitlines()) == 3  # key line + 2 examples
    assert main(["train", "sft", "--data", str(tmp_path / "missing.jsonl"), "-o", str(out)]) == 2
    assert "promem bench generate --split train" in capsys.readouterr().err


@pytest.mark.slow
def test_torchrun_two_processes_train_with_ddp(tiny_base, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    out = tmp_path / "ddp-adapter"
    torchrun = Path(sys.executable).with_name("torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    r = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", "-m", "training.recipes.sft",
                        "--recipe", str(TINY_RECIPE), "--base", str(tiny_base), "--data", str(SAMPLE), "--no-extra-data",
                        "--max-instances", "4", "--epochs", "1", "-o", str(out)],
                       capture_output=True, text=True, env=env, timeout=300, cwd=Path(sft.__file__).parents[2])
    assert r.returncode == 0, r.stderr[-3000:]
    meta = read_meta(out)
    assert meta.kind == "sft-adapter" and meta.metrics["world_size"] == 2 and meta.metrics["complete"]
    assert meta.metrics["examples"] == 4
    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_base), out)  # loads


@pytest.mark.slow
def test_prepare_only_builds_retrieval_examples_without_training(tiny_base, sample_instances, tmp_path, monkeypatch,
                                                                capsys):
    from cli.main import main

    # the untuned bundled MiniLM and no linker: the replay needs no trained memory artifact
    monkeypatch.setenv("PROMEM_MEMORY__CONSTRUCTION__CUE_ENCODER", "base")
    monkeypatch.setenv("PROMEM_MEMORY__CONSTRUCTION__LINKER", "none")
    out = tmp_path / "prep"
    argv = ["train", "sft", "--recipe", str(TINY_RECIPE), "--base", str(tiny_base), "--data", str(SAMPLE), "--no-extra-data",
            "--past", "retrieval", "--max-instances", "1", "--prepare-only", "-o", str(out)]
    assert main(argv) == 0
    assert "1 examples (0 longer than max_length)" in capsys.readouterr().out
    rows = [json.loads(x) for x in (out / "examples.jsonl").read_text().splitlines()]
    first = sample_instances[0]  # --max-instances 1: the first instance, a positive one
    assert len(rows) == 2 and rows[1]["id"] == first.id and first.intentions[0].formation in rows[1]["retrieved"]
    assert not (out / "checkpoints").exists() and not (out / "adapter_model.safetensors").exists()
