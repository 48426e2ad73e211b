"""CPU construction: facts from the event's own text, a trained cue encoder, a trained linker."""
from __future__ import annotations

import numpy as np

from core.formats import Event
from core.providers import shared_embedder
from memory.construct import artifacts
from memory.construct.base import Candidate, time_cues
from memory.facts import event_facts
from memory.store import Built, NewCue, NewLink

# Same-topic later events that are not state changes; high, because every link takes a retrieval slot.
DEVELOPMENT_COS = 0.75


class EncoderConstructor:
    def __init__(self, cfg):
        c = cfg.memory.construction
        self.content = shared_embedder(cfg.memory.embedder)
        self.cue = artifacts.cue_encoder(c.cue_encoder, cfg.memory.embedder)
        self.linker = artifacts.linker(c.linker, c.cue_encoder)
        self.threshold = c.link_threshold if c.link_threshold is not None else (
            self.linker.threshold if self.linker else 1.0)

    def extract(self, events: list[Event]) -> list[Built]:
        facts = [event_facts(e) for e in events]
        texts = [e.text() for e in events]
        flat = [f for fs in facts for f in fs]
        # one encode call per model for the whole batch: per-call overhead dominates short texts
        vecs = self.content.encode(texts + flat)
        ev_vecs, fact_vecs = vecs[:len(events)], vecs[len(events):]
        cue_vecs = self.cue.encode(texts)
        intent = self.linker.roles(ev_vecs)[0] if self.linker is not None else None
        out, i = [], 0
        for n, (e, fs) in enumerate(zip(events, facts)):
            b = Built(event=e, ts=e.dt.timestamp(), vec=ev_vecs[n])
            b.facts = [(f, fact_vecs[i + j]) for j, f in enumerate(fs)]
            i += len(fs)
            # the event cue: the situation in the cue space, where later opportunities land near it
            b.cues = [NewCue("event", texts[n], cue_vecs[n])] + time_cues(e)
            if intent is not None and intent[n] >= self.linker.intent_threshold:
                b.intentions = [(texts[n], float(intent[n]))]
            out.append(b)
        return out

    def link(self, built: Built, candidates: list[Candidate]) -> list[NewLink]:
        if not candidates or self.linker is None:
            return []
        earlier = np.vstack([c.vec for c in candidates])
        earlier_cue = np.vstack([c.cue_vec if c.cue_vec is not None else self.cue.encode([c.event.text()])[0]
                                 for c in candidates])
        p = self.linker.probs(earlier, earlier_cue, built.vec, built.cue_vec)
        cos = earlier @ built.vec
        # One link of each kind at most: an event settles one earlier matter, and a classifier out
        # of its domain (a long chat where every turn looks alike) would otherwise link it to all m.
        best = int(np.argmax(p))
        links = []
        if p[best] >= self.threshold:
            links.append(NewLink(candidates[best].event.id, "state_change", float(p[best])))
        rest = [i for i in np.argsort(-cos) if not (links and i == best)]
        if rest and cos[rest[0]] >= DEVELOPMENT_COS:
            links.append(NewLink(candidates[rest[0]].event.id, "development", float(cos[rest[0]])))
        return links
