"""bench.message_check: every positive intention is composed from its formation and judged by the keyword
judge; the counts, the word figures and the failures shown agree with the judge on each message."""
import json

from bench.generator import generate
from bench.judges.keywords import addresses
from bench.message_check import check, main
from reasoner.gate.compose import MAX_WORDS, compose_message, word_count


def test_counts_agree_with_the_judge_on_generated_instances():
    insts = generate(64, seed=5, split="train")
    result = check(insts)
    positives = [(inst, it) for inst in insts if inst.variant == "positive" for it in inst.intentions]
    assert result.intentions == len(positives) >= 10
    accepted = 0
    for inst, it in positives:
        msg = compose_message([inst.event(it.formation)], inst.event(inst.decision_event)).message
        accepted += addresses(msg, it.keywords)
    assert result.accepted == accepted == result.intentions - len(result.misses)
    assert result.named >= result.accepted
    assert 0 < result.max_words <= MAX_WORDS and result.mean_words <= result.max_words
    for miss in result.misses:  # each failure shown is one the judge rejects
        assert not addresses(miss.message, miss.keywords) and word_count(miss.message) <= MAX_WORDS


def test_cli_prints_the_summary_and_with_show_the_failures(tmp_path, capsys):
    insts = generate(32, seed=6, split="train")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(inst.dump()) + "\n" for inst in insts))
    assert main([str(data), "--show"]) == 0
    out = capsys.readouterr().out.splitlines()
    result = check(insts)
    assert out[-1] == result.summary() and f"positive intentions {result.intentions};" in out[-1]
    assert len(out) == 1 + 2 * len(result.misses)
    for miss, line in zip(result.misses, out[1::2]):
        assert line.strip() == miss.message
