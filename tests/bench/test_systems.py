import pytest

from bench import systems as systems_mod
from bench.systems import SystemUnavailable, build_system, system_names
from core.config import load_config
from tests.bench.helpers import ev, instance, intention, model

EVENTS = [
    ev("e1", 7, "Making coffee in the kitchen; the kettle clicks off."),
    ev("e2", 8, "The fridge is open: the oat milk carton is empty and goes in the recycling.", "[user] Out of oat milk."),
    ev("e3", 9, "Riding a bike along the river path."),
    ev("e4", 10, "A colleague talks about the quarterly budget review."),
    ev("e5", 12, "Lunch: a sandwich at the desk."),
    ev("e6", 18, "Passing the grocery store on the way home; oat milk is on sale in the window.", location="street"),
]


@pytest.fixture(scope="module")
def cfg():
    c = load_config()
    c.memory.retrieval.k = 2
    return c


def inst():
    return model(instance("x", "positive", [intention("i1", "e2", [["oat milk"]])], events=EVENTS))


def test_registry_lists_the_baselines():
    assert {"no-memory", "full-context", "rag-bm25", "rag-embed"} <= set(system_names())


def test_no_memory_gives_nothing(cfg):
    i = inst()
    assert build_system("no-memory", cfg).recall(i, i.events[:-1], i.events[-1]) == []


def test_bm25_top_k_in_time_order(cfg):
    i = inst()
    got = build_system("rag-bm25", cfg).recall(i, i.events[:-1], i.events[-1])
    assert len(got) == 2
    assert got[0].event.dt <= got[1].event.dt
    assert "e2" in [r.event.id for r in got]  # shares "oat milk" with the moment
    assert all(r.path == "bm25" for r in got)


def test_bm25_with_no_past_and_fewer_events_than_k(cfg):
    i = inst()
    sys_ = build_system("rag-bm25", cfg)
    assert sys_.recall(i, [], i.events[-1]) == []
    assert [r.event.id for r in sys_.recall(i, i.events[:1], i.events[-1])] == ["e1"]


@pytest.mark.slow  # loads MiniLM (a few seconds)
def test_rag_embed_finds_the_semantic_match(cfg):
    i = inst()
    current = model(instance("y", "positive", [intention("i1", "e2", [["milk"]])], events=EVENTS[:-1] + [
        ev("e6", 18, "Walking down the dairy aisle of a supermarket.", location="supermarket")])).events[-1]
    got = build_system("rag-embed", cfg).recall(i, i.events[:-1], current)
    assert len(got) == 2 and got[0].event.dt <= got[1].event.dt
    assert "e2" in [r.event.id for r in got]
    assert all(-1.0 <= r.score <= 1.0 and r.path == "embed" for r in got)


def test_full_context_keeps_the_most_recent_within_budget(cfg):
    from core.tokens import count_tokens

    i = inst()
    past, current = i.events[:-1], i.events[-1]
    everything = build_system("full-context", cfg).recall(i, past, current)
    assert [r.event.id for r in everything] == [e.id for e in past]
    small = cfg.model_copy(deep=True)
    small.bench.context_tokens = count_tokens(current.text()) + count_tokens(past[-1].text()) + count_tokens(past[-2].text())
    got = build_system("full-context", small).recall(i, past, current)
    assert [r.event.id for r in got] == ["e4", "e5"]


def test_promem_absent_gives_a_clear_message(cfg, monkeypatch):
    monkeypatch.setattr(systems_mod, "system_names", lambda: ["no-memory"])
    with pytest.raises(SystemUnavailable, match="memory/api.py"):
        build_system("promem", cfg)
    with pytest.raises(SystemUnavailable, match="unknown system 'nope'"):
        build_system("nope", cfg)
