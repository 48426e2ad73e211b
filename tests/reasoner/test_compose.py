"""The composed message (reasoner/gate/compose.py) on the bundled sample and on generated instances:
one sentence of at most 25 words that says where the user is and when the thing came up, names the
intention's object where the formation event shows it, pastes no caption or transcript, and rests on
(lists as evidence) only the event it was built from."""
import re

import pytest

from bench.generator import generate
from bench.judges.keywords import addresses
from core.formats import Event
from reasoner.gate.compose import (MAX_CAPTION_WORDS, MAX_SPEECH_WORDS, MAX_WORDS, compose_message, compose_now,
                                   place_phrase, word_count)
from tests.support.text import longest_shared_run

WHEN = re.compile(r"\b(yesterday|today|this (morning|afternoon|evening|night)|last night|on \w+day)\b")




def _positives(instances):
    for inst in instances:
        if inst.variant == "positive":
            current = inst.event(inst.decision_event)
            for it in inst.intentions:
                yield inst, it, inst.event(it.formation), current


def _check(formation: Event, current: Event) -> str:
    said = compose_message([formation], current)
    msg = said.message
    assert word_count(msg) <= MAX_WORDS and len(msg.split()) <= MAX_WORDS, msg
    # one sentence: a single full stop, at the end, and no other sentence mark
    assert msg.endswith(".") and not re.search(r"[.!?]", msg[:-1]), msg
    assert WHEN.search(msg), msg
    if place_phrase(current):  # a place with sayable words (not "phone call")
        assert msg.startswith("You're at "), msg
    assert said.evidence == [formation.id]
    assert longest_shared_run(msg, formation.visual or "") <= MAX_CAPTION_WORDS, msg
    assert longest_shared_run(msg, formation.audio or "") <= MAX_SPEECH_WORDS + 1, msg  # +1: a word the caption shares
    assert not re.search(r"\d", msg), msg  # the positives' formations are days, not weeks, old
    return msg


def test_sample_messages_are_one_short_sentence_naming_the_thing(sample_instances):
    n = 0
    for inst, it, formation, current in _positives(sample_instances):
        msg = _check(formation, current)
        assert addresses(msg, it.keywords[:1]), msg  # the object (first keyword group)
        n += 1
    assert n >= 2


@pytest.mark.parametrize("seed", [3])
def test_generated_messages_are_short_and_name_the_object_the_formation_shows(seed):
    insts = generate(96, seed=seed, split="test")
    n = named = shown = 0
    for inst, it, formation, current in _positives(insts):
        msg = _check(formation, current)
        n += 1
        if addresses(f"{formation.visual} {formation.audio}", it.keywords[:1]):
            shown += 1
            named += addresses(msg, it.keywords[:1])
    assert n >= 20
    # the object is named where the formation shows it, bar events whose object sits in a later clause
    # than the one composed (rules alone: 19 of 27 on this set of the 977-seed pack, 2026-12-02)
    assert named >= 0.7 * shown, (named, shown)


def test_two_fired_events_rest_on_the_first_only():
    a = Event(id="a", time="2026-09-17T20:30:00-07:00", location="kitchen", visual="The oat milk carton is empty.")
    b = Event(id="b", time="2026-09-16T09:00:00-07:00", visual="A torn umbrella in the hallway.")
    now = Event(id="n", time="2026-09-18T17:30:00-07:00", location="Fresh Market on Elm Street near the old station",
                visual="Walking past the dairy shelf.")
    said = compose_message([a, b], now)
    assert said.evidence == ["a"] and "oat milk" in said.message and "umbrella" not in said.message
    assert said.message.startswith("You're at Fresh Market on Elm")  # a long place is cut to a few words
    assert "yesterday evening" in said.message and "buy" in said.message


def test_the_now_heads_sentence_is_short_and_rests_on_the_moment():
    now = Event(id="n", time="2026-09-18T17:30:00-07:00",
                visual=" ".join(["A very long caption about a broken zip on a jacket and many other things"] * 4))
    said = compose_now(now)
    assert said.evidence == ["n"] and word_count(said.message) <= MAX_WORDS and len(said.message.split()) <= MAX_WORDS
    assert said.message.startswith("Right now: ") and said.message.endswith("repair it or buy new.")


def test_hesitations_of_a_transcript_are_not_spoken_back():
    said = Event(id="f", time="2026-09-17T08:00:00-07:00", location="home office",
                 visual="Coughing, reading an HR message on the phone.",
                 audio="[user] *cough* need the, uh, the sick note thing for HR.")
    now = Event(id="n", time="2026-09-18T17:30:00-07:00", location="clinic", visual="At the surgery reception.")
    msg = compose_message([said], now).message
    assert "sick note" in msg and not re.search(r"\b(uh|um|erm)\b", msg), msg


def test_words_of_other_languages_are_said_whole():
    said = Event(id="f", time="2026-09-17T20:00:00-03:00", location="casa, cozinha",
                 visual="A kitchen counter with an empty paper sack.",
                 audio="[Bruna] o carvão acabou, tem que comprar mais")
    now = Event(id="n", time="2026-09-18T17:30:00-03:00", location="Calle Castellón, Concepción",
                visual="Walking past a hardware shop.")
    msg = compose_message([said], now).message
    assert msg.startswith("You're at Calle Castellón Concepción - ") and "carvão" in msg, msg
    assert word_count(msg) <= MAX_WORDS


def test_the_thing_is_taken_from_the_clause_that_shows_it_not_the_scene_or_the_chatter():
    # a scene-setting opener, clutter, and a transcript of several speakers with sound tags and fillers
    said = Event(id="f", time="2026-09-17T21:00:00+01:00", location="back garden",
                 visual=("A cluttered garage at night under a bare bulb; shelves of paint pots and a bicycle on "
                         "hooks; the green garden hose lies on the floor, split near the tap, water spraying."),
                 audio="[Tom] (cough) ugh, look at that, the, uh, the hose is split again [Ana] (laughs) typical [user] yeah, yeah")
    now = Event(id="n", time="2026-09-18T17:30:00+01:00", location="garden centre", visual="Walking in the entrance.")
    msg = compose_message([said], now).message
    assert "hose" in msg and "garage" not in msg and "cough" not in msg and "Tom" not in msg, msg
    assert "repair it or buy new" in msg and word_count(msg) <= MAX_WORDS, msg


def test_a_sign_in_another_language_finds_the_thing_said():
    said = Event(id="f", time="2026-09-17T10:00:00-03:00", location="consultorio",
                 visual="A doctor points at an x-ray on the screen.",
                 audio="[Dr.] bueno, no es grave, pero necesita una férula, de las blandas [user] ya, ya")
    now = Event(id="n", time="2026-09-18T17:30:00-03:00", location="farmacia", visual="At the counter.")
    assert "férula" in compose_message([said], now).message


def test_with_no_sign_of_what_to_do_the_message_says_a_plain_fallback():
    said = Event(id="f", time="2026-09-17T10:00:00+01:00", location="hallway",
                 visual="A blue umbrella leaning by the door.", audio="")
    now = Event(id="n", time="2026-09-18T17:30:00+01:00", location="station", visual="Waiting on the platform.")
    msg = compose_message([said], now).message
    assert msg.endswith("; maybe get it sorted.") and "umbrella" in msg, msg
    # the fallback is one plain phrase, not a list of verbs
    assert not re.search(r"\b(buy|replace|return|book|pay)\b", msg), msg
