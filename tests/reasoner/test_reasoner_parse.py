"""Parsing model answers: good ones into decisions, malformed ones into ParseError (-> silence)."""
import pytest

from reasoner.parse import ParseError, parse_output

KNOWN = ["e04", "e10", "e19"]


def test_well_formed_answer():
    raw = ('Reasoning: At e04 the user found the candle box empty. The party-supply shop is the chance.\n'
           'Decision: {"assist": true, "message": "You are passing a party shop - you ran out of birthday candles on Thursday.", "evidence": ["e04"]}')
    p = parse_output(raw, KNOWN)
    assert p.assist is True
    assert p.message.startswith("You are passing a party shop")
    assert p.evidence == ["e04"]
    assert p.reasoning.startswith("At e04 the user found")


def test_silence_with_thinking_block_and_fenced_json():
    raw = ('<think>The candles were resolved by mom at e19 {"assist": true}.</think>\n'
           'Reasoning: resolved.\nDecision:\n```json\n{"assist": false, "message": null, "evidence": []}\n```')
    p = parse_output(raw, KNOWN)
    assert p.assist is False and p.message is None and p.evidence == []
    assert "resolved by mom" in p.reasoning


def test_unknown_evidence_ids_are_dropped_with_a_warning():
    raw = 'Decision: {"assist": true, "message": "Buy candles.", "evidence": ["e04", "e99", "e04"]}'
    p = parse_output(raw, KNOWN)
    assert p.evidence == ["e04"] and any("e99" in w for w in p.warnings)


def test_string_booleans_are_accepted():
    p = parse_output('Decision: {"assist": "false", "message": "", "evidence": []}', KNOWN)
    assert p.assist is False


@pytest.mark.parametrize("raw,why", [
    ("", "empty"),
    ("AMYAMYAMY Código Código", "no decision object"),
    ('Decision: {"assist": true, "message": ', "no decision object"),
    ('Decision: {"assist": "maybe", "message": "x"}', "'assist' must be true or false"),
    ('Decision: {"assist": true, "message": ""}', "message is empty"),
    ('Decision: {"assist": true, "message": 5}', "'message' must be a string"),
    ('Decision: {"assist": true, "message": "x", "evidence": 3}', "'evidence' must be a list"),
    ('Decision: {"message": "x"}', "no decision object"),
])
def test_malformed_answers_raise(raw, why):
    with pytest.raises(ParseError, match=why):
        parse_output(raw, KNOWN)
