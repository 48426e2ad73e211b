"""Store + indexes + retrieval through the public API (real SQLite, real FAISS, real MiniLM)."""
from __future__ import annotations

import shutil

import pytest

from core.formats import Event
from memory.api import open_memory, user_dir_name
from memory.construct.artifacts import MissingArtifact
from tests.support.data import pick


def past(inst):
    return [e for e in inst.events if e.id != inst.decision_event]


def test_state_change_brings_formation_and_change_in_time_order(cfg, instances):
    for inst in instances:
        if inst.variant != "state_change":
            continue
        it = inst.intentions[0]
        with open_memory(cfg, None, "u1") as mem:
            mem.add_many(past(inst))
            got = mem.retrieve(inst.event(inst.decision_event))
        ids = [r.event.id for r in got]
        assert it.formation in ids and it.state_change in ids, (inst.id, ids)
        form = next(r for r in got if r.event.id == it.formation)
        assert any(ln.event_id == it.state_change and ln.kind == "state_change" for ln in form.links)
        assert len(ids) == len(set(ids)) <= cfg.memory.retrieval.k
        times = [r.event.dt for r in got]
        assert times == sorted(times)
        dec = inst.event(inst.decision_event)
        assert all(t < dec.dt for t in times)
        assert {r.path for r in got} <= {"content", "cue", "time", "link"}


def test_only_past_events_even_when_memory_holds_later_ones(cfg, instances):
    inst = pick(instances, "state_change", 1)
    with open_memory(cfg, None, "u1") as mem:
        mem.add_many(inst.events)  # the whole timeline, decision moment included
        mid = inst.event(inst.intentions[0].state_change)
        got = mem.retrieve(mid)
    assert got and all(r.event.dt < mid.dt for r in got)
    # the state change is in the future of this moment: no link may reveal it
    assert all(ln.event_id != mid.id for r in got for ln in r.links)


def test_add_is_idempotent_by_event_id(cfg, instances, tmp_path):
    inst = instances[0]
    with open_memory(cfg, tmp_path, "u1") as mem:
        assert mem.add_many(past(inst)) == len(past(inst))
        before = mem.check()
        assert mem.add_many(past(inst)) == 0
        mem.add(past(inst)[0])
        assert mem.check() == before
    with open_memory(cfg, tmp_path, "u1") as mem:
        assert mem.add_many(past(inst)) == 0
        assert mem.check() == before


def test_users_never_see_each_other(cfg, instances, tmp_path):
    a, b = pick(instances, "state_change", 0), pick(instances, "positive", 1)
    with open_memory(cfg, tmp_path, "alice") as m:
        m.add_many(past(a))
    with open_memory(cfg, tmp_path, "bob") as m:
        m.add_many(past(b))
    # alice asks with bob's decision moment (and ids that exist in both timelines): only alice's events
    with open_memory(cfg, tmp_path, "alice") as m:
        got = m.retrieve(b.event(b.decision_event).model_copy(update={"time": "2027-01-01T00:00:00+00:00"}), k=50)
        alice_texts = {e.text() for e in a.events}
        assert got and all(r.event.text() in alice_texts for r in got)
        assert m.check()["events"] == len(past(a))
    with open_memory(cfg, tmp_path, "carol") as m:
        assert m.retrieve(a.event(a.decision_event)) == []
    with pytest.raises(ValueError, match="belongs to user"):
        with open_memory(cfg, tmp_path, "bob") as m:
            m.add(Event(id="x1", time="2026-01-01T00:00:00Z", visual="hi there", user_id="alice"))


def consistent(mem):
    c = mem.check()
    return c["content_index"] == c["facts"] and c["cue_index"] == c["event_cues"]


def test_index_rebuilt_when_missing_behind_or_damaged(cfg, instances, tmp_path):
    inst = pick(instances, "state_change", 0)
    events = past(inst)
    idx = tmp_path / "index" / user_dir_name("u1")
    with open_memory(cfg, tmp_path, "u1") as mem:
        mem.add_many(events[:10])
    old = {p.name: p.read_bytes() for p in idx.iterdir()}
    with open_memory(cfg, tmp_path, "u1") as mem:
        mem.add_many(events[10:])
        want = [r.event.id for r in mem.retrieve(inst.event(inst.decision_event))]
        full = mem.check()
    for name, raw in old.items():  # an index file from before the last batch: behind the store
        (idx / name).write_bytes(raw)
    with open_memory(cfg, tmp_path, "u1") as mem:
        assert consistent(mem) and mem.check() == full
        assert [r.event.id for r in mem.retrieve(inst.event(inst.decision_event))] == want
    shutil.rmtree(idx)  # missing
    with open_memory(cfg, tmp_path, "u1") as mem:
        assert consistent(mem) and mem.check() == full
    (idx / "content.faiss").write_bytes(b"garbage")  # damaged
    with open_memory(cfg, tmp_path, "u1") as mem:
        assert consistent(mem) and mem.check() == full
        assert [r.event.id for r in mem.retrieve(inst.event(inst.decision_event))] == want


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_other_index_types(cfg, instances, tmp_path, kind):
    cfg.memory.index.type = kind
    cfg.memory.index.nlist = 1  # ivf trains once 39 x nlist vectors exist
    inst = pick(instances, "state_change", 1)
    other = [e.model_copy(update={"id": "x" + e.id}) for e in past(pick(instances, "positive", 0))]
    with open_memory(cfg, tmp_path, "u1") as mem:
        mem.add_many(past(inst))
        mem.add_many(other)  # over 39 x nlist vectors: ivf trains its clusters here
        assert mem.content.kind == kind
        got = [r.event.id for r in mem.retrieve(inst.event(inst.decision_event))]
    with open_memory(cfg, tmp_path, "u1") as mem:
        assert consistent(mem) and mem.content.kind == kind
        assert [r.event.id for r in mem.retrieve(inst.event(inst.decision_event))] == got
    assert inst.intentions[0].formation in got


def test_missing_artifact_is_a_clear_error(cfg, tmp_path):
    cfg.memory.construction.cue_encoder = str(tmp_path / "nowhere")
    with pytest.raises(MissingArtifact, match="promem train cue-encoder"):
        open_memory(cfg, None, "u1")


def test_training_writes_versioned_artifacts(artifacts):
    from core.artifacts import read_meta

    for name in ("cue-encoder", "linker"):
        meta = read_meta(artifacts / name)
        assert meta.kind == name and meta.version >= 1 and meta.data_hash and meta.metrics
    assert (artifacts / "cue-encoder" / "model").is_dir()
    assert (artifacts / "linker" / "linker.joblib").is_file()


def test_cue_encoder_reads_long_events_whole(artifacts, tmp_path):
    """Trained on short inputs, it still reads a conversation as far as the bundled MiniLM does:
    two events that differ only after token 96 get different cue vectors."""
    import json
    import shutil

    from core.config import EmbedderConfig
    from core.providers import build_embedder
    from memory.construct.artifacts import MissingArtifact, cue_encoder

    cue = cue_encoder(str(artifacts / "cue-encoder"), EmbedderConfig(cache_size=0))
    assert cue.model.max_seq_length == build_embedder(EmbedderConfig()).model.max_seq_length == 256
    head = "[Ann] " + " ".join(f"we talked about item {n} for a while." for n in range(20))
    a, b = cue.encode([head + " I never lift anything heavy since my surgery.", head + " Let us get pizza."])
    assert float(a @ b) < 0.999

    old = tmp_path / "cue-encoder"
    shutil.copytree(artifacts / "cue-encoder", old)
    meta = json.loads((old / "meta.json").read_text()) | {"version": 1}
    (old / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(MissingArtifact, match="version 1.*promem train cue-encoder"):
        cue_encoder(str(old), EmbedderConfig())

    # `make demo` trains again what an outdated encoder fed, not only the encoder
    from cli.demo import stale_reason

    assert stale_reason("cue-encoder", old, str(old)).startswith("it is version 1")
    assert stale_reason("linker", artifacts / "linker", str(artifacts / "cue-encoder")) is None
    assert stale_reason("linker", artifacts / "linker", str(old)) == "it was trained with another cue encoder"
    assert stale_reason("gate", tmp_path / "no-gate", str(old)) == "not trained yet"


def test_linker_is_tied_to_its_cue_encoder(artifacts, tmp_path, caplog):
    import json
    import shutil

    from memory.construct.artifacts import MissingArtifact, cue_fingerprint, linker

    from core.artifacts import read_meta

    meta = read_meta(artifacts / "linker")
    assert meta.cue_encoder == str(artifacts / "cue-encoder")
    assert meta.cue_encoder_fingerprint == cue_fingerprint(str(artifacts / "cue-encoder"))
    with caplog.at_level("WARNING"):
        linker(str(artifacts / "linker"), str(artifacts / "cue-encoder"))
        assert "another cue encoder" not in caplog.text
        linker(str(artifacts / "linker"), "base")
    assert "trained with another cue encoder" in caplog.text and "promem train linker" in caplog.text

    # an artifact of the earlier linker format is refused with the command that replaces it
    import joblib

    old = tmp_path / "linker"
    shutil.copytree(artifacts / "linker", old)
    joblib.dump({"state_change": None, "threshold": 0.9, "version": 1}, old / "linker.joblib")
    with pytest.raises(MissingArtifact, match="version 1.*promem train linker"):
        linker(str(old))


def test_link_threshold_is_judged_on_whole_timelines(artifacts, instances):
    """The linker's threshold is chosen on the links construction would make: every event against
    its m most similar earlier events, the likeliest one linked."""
    from core.config import EmbedderConfig
    from core.providers import build_embedder
    from memory.construct.artifacts import cue_encoder, linker
    from training.recipes.linker import _link_prf, timeline_links

    model = linker(str(artifacts / "linker"))
    texts = sorted({e.text() for i in instances for e in i.events})
    vec = dict(zip(texts, build_embedder(EmbedderConfig()).encode(texts)))
    cue = dict(zip(texts, cue_encoder(str(artifacts / "cue-encoder"), EmbedderConfig()).encode(texts)))
    probs, hits, n_gold = timeline_links(model, instances, vec, cue, m=8)
    assert len(probs) == len(hits) == sum(len(i.events) - 1 for i in instances)
    assert n_gold == sum(1 for i in instances for it in i.intentions if it.state_change) > 0
    # trained on these very timelines, it finds their state changes among the candidates
    assert 0 < hits.sum() <= n_gold
    p_all, r_all, _ = _link_prf(probs, hits, n_gold, 0.0)
    p_hi, r_hi, _ = _link_prf(probs, hits, n_gold, 0.99)
    assert r_all == hits.sum() / n_gold and r_hi <= r_all and p_all < 0.5  # linking every event is mostly wrong


def test_linker_trains_on_the_pairs_construction_scores(instances):
    """Every event against its m most similar earlier events, once per pair of texts; the gold
    state changes are the positives, also when a formation is not among the m."""
    from core.config import EmbedderConfig
    from core.providers import build_embedder
    from training.recipes.linker import replay_examples

    texts = sorted({e.text() for i in instances for e in i.events})
    vec = dict(zip(texts, build_embedder(EmbedderConfig()).encode(texts)))
    pairs = replay_examples(instances, vec, m=2)
    gold = {(i.event(it.formation).text(), i.event(it.state_change).text())
            for i in instances for it in i.intentions if it.state_change}
    assert {(p.earlier, p.later) for p in pairs if p.label} == gold
    assert len({(p.earlier, p.later) for p in pairs}) == len(pairs)
    assert len(pairs) <= sum(2 * (len(i.events) - 1) for i in instances) + len(gold)


def test_linker_sees_in_training_what_construction_shows_it(artifacts, instances):
    """The pair features of training (how far a pair stands out from the later event's m
    candidates included) are those construction computes, so the probabilities agree."""
    import json

    import numpy as np

    from core.config import EmbedderConfig
    from core.providers import build_embedder
    from memory.construct.artifacts import cue_encoder, linker
    from training.recipes.linker import _pair_xy, candidate_means, replay_examples

    model = linker(str(artifacts / "linker"))
    texts = sorted({e.text() for i in instances for e in i.events})
    vec = dict(zip(texts, build_embedder(EmbedderConfig()).encode(texts)))
    cue = dict(zip(texts, cue_encoder(str(artifacts / "cue-encoder"), EmbedderConfig()).encode(texts)))
    inst = instances[0]
    evs = sorted(inst.events, key=lambda e: e.dt)
    V = np.vstack([vec[e.text()] for e in evs])
    C = np.vstack([cue[e.text()] for e in evs])
    cand = np.argsort(-(V[:-1] @ V[-1]))[:3]
    at_construction = model.probs(V[cand], C[cand], V[-1], C[-1])

    pairs = [p for p in replay_examples([inst], vec, m=3) if p.later == evs[-1].text()]
    intent, change = model.roles(np.vstack([vec[t] for t in texts]))
    role_of = {t: (i, c) for t, i, c in zip(texts, intent, change)}
    X, _ = _pair_xy(pairs, vec, cue, role_of, candidate_means([inst], vec, cue, m=3))
    in_training = model.state_change.predict_proba(X)[:, 1]
    assert [p.earlier for p in pairs] == [evs[c].text() for c in cand]
    assert np.allclose(in_training, at_construction, atol=1e-5)
    meta = json.loads((artifacts / "linker" / "meta.json").read_text())
    assert model.intent_threshold == meta["metrics"]["intent_threshold"]


def _chatty_timeline(n: int = 30) -> list[Event]:
    """A long chat where every turn looks alike: the linker's worst case (cf. LoCoMo-Plus)."""
    topics = ["the garden", "a new job", "the kids' school", "a trip to Rome", "the dog", "a cooking class"]
    return [Event(id=f"c{i:03d}", time=f"2026-03-{1 + i // 3:02d}T1{i % 3}:00:00+00:00",
                  visual="A conversation with Melanie.",
                  audio=f"[Caroline] I keep thinking about {topics[i % len(topics)]}, it was on my mind again. "
                        f"[Melanie] Tell me more about {topics[(i + 1) % len(topics)]}.")
            for i in range(n)]


def test_links_never_crowd_out_the_cue_hits(cfg):
    events = _chatty_timeline()
    with open_memory(cfg, None, "u1") as mem:
        mem.add_many(events[:-1])
        links = mem.store.links_touching("u1", [e.id for e in events])
        got = mem.retrieve(events[-1])
    # each new event links to at most one earlier event per kind, however alike the chat is
    per_event: dict = {}
    for ln in links:
        per_event.setdefault((ln.dst, ln.kind), []).append(ln.src)
    assert all(len(v) == 1 for v in per_event.values()), per_event
    rc = cfg.memory.retrieval
    assert len(got) == rc.k
    assert sum(r.path == "link" for r in got) <= rc.k_links
    assert sum(r.path == "cue" for r in got) >= rc.k - rc.k_content - rc.k_links


def test_embedder_cache_gives_the_same_vectors_and_stays_bounded():
    import numpy as np

    from core.providers.embedder import MiniLMEmbedder

    texts = [f"The user put item {i} in the basket." for i in range(6)]
    plain = MiniLMEmbedder(cache_size=0).encode(texts)
    cached = MiniLMEmbedder(cache_size=4)
    first = cached.encode(texts[:3])
    again = cached.encode(texts)  # three hits, three misses, in a mixed order
    assert np.allclose(first, plain[:3], atol=1e-5) and np.allclose(again, plain, atol=1e-5)
    assert len(cached._vecs) == 4 and list(cached._vecs) == texts[2:]
