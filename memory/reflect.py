"""Scheduled reflection: re-read one day's stored events after the fact and fill what the online pass missed.

Online construction sees each event once, with only a few earlier events to compare it with. With the
whole day at hand, reflection asks two questions, through a language model or the trained linker
(memory.reflect.backend; auto: the model when construction itself uses one, the GPU profile).

Through the model (memory/reflect_llm.py; memory.construction.llm, prompt memory/prompts/reflection.v1.txt):
one call per day lists the day's events and the live intentions as quoted data and asks which events
formed an intention not stored (event, gist, trigger cues) and which intentions a later event of the day
settled. Checked items are stored like the linker's: an intention at its event (score 1.0), its cues as
event cues of that event (in the construction's cue space, only when construction uses the model: the
trained cue encoder keeps one cue vector per event, the event itself, which the linker reads), and a
state-change link from its formation to the settling event. Items naming unknown ids are dropped with a
warning. When the model gives no usable answer (timeout, HTTP error, malformed twice) the day falls back
to the trained linker if the store was built by it (memory.construction.backend encoder with a linker),
else nothing is found for that day; either way a warning names the model, the user and the day, and a
rerun of that day once the model answers fills it (it adds nothing twice).

Through the trained linker (CPU profile):

- Which events formed a delayed intention that was not stored? An event with none stored whose intent
  score reaches memory.reflect.intent_threshold (default: the linker's online threshold; lower finds
  more formations at a lower precision - bench/reflect_gain.py measures it) is stored as one; when a later event of the day already shows it done (the pair model's state change),
  it is stored resolved by that event, so nothing is raised that the day settled.
- Which live intentions did the day resolve? Each event of the day is compared, by the linker's pair
  model, with its m most similar earlier events among the day's and those where a live intention
  formed (so an intention formed days ago competes with the day's events, not with the whole
  history); when the best pair reaches the link threshold (memory.reflect.link_threshold, default the
  construction's) and is a live intention or one found now, it gets its state-change link, which
  resolves it.

Then the next brief (memory/brief.py) is computed for the start of the following day and stored with
the intention state it was computed from; `promem brief` serves it while that state is unchanged.

Everything it writes is keyed (intention by event and text, link by its pair, transitions by their
cause), so a rerun of the same day adds nothing twice.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone

import numpy as np
from pydantic import BaseModel

from core.formats import Event
from memory.brief import Brief, brief_from_store
from memory.store import FoundCue, FoundIntention, FoundLink, Store

log = logging.getLogger(__name__)
LOOKAROUND = timedelta(hours=14)  # the widest UTC offset: a local day lies within its UTC day +- this


class ReflectReport(BaseModel):
    user_id: str
    day: str
    backend: str  # the path that found what was added: llm | trained | none (the model failed, no fallback)
    events: int  # events of the day re-read
    intentions_added: int
    resolved: int  # state-change links added (each resolves the intentions formed at its source)
    cues_added: int  # event cues the model gave for the intentions it found
    brief_at: str  # the moment the precomputed brief is for
    brief_items: int
    warnings: list[str] = []  # the model failed or gave items that were dropped


class NeedsLinker(RuntimeError):
    """Reflection in the CPU profile needs the trained linker (memory.construction.linker)."""


def day_events(store: Store, user: str, day: date) -> list[Event]:
    """The user's stored events whose own local date (in the offset they were recorded with) is `day`."""
    lo = datetime(day.year, day.month, day.day, tzinfo=timezone.utc) - LOOKAROUND
    hi = lo + timedelta(days=1) + 2 * LOOKAROUND
    return [e for e in store.events_between(user, lo.timestamp(), hi.timestamp()) if e.dt.date() == day]


def thresholds(cfg, linker) -> tuple[float, float]:
    """(intent, link) thresholds of reflection."""
    r, c = cfg.memory.reflect, cfg.memory.construction
    intent = r.intent_threshold if r.intent_threshold is not None else linker.intent_threshold
    link = r.link_threshold if r.link_threshold is not None else (
        c.link_threshold if c.link_threshold is not None else linker.threshold)
    return intent, link


def find(store: Store, user: str, events: list[Event], linker, intent_t: float, link_t: float,
         m: int) -> tuple[list[FoundIntention], list[FoundLink]]:
    """What the day's events show that the store lacks (nothing is written here). m: how many earlier
    events each event is compared with, as online (the pair model scores a pair against its rivals)."""
    vecs = store.event_vecs(user, [e.id for e in events], 0)
    cues = store.event_cue_vecs(user, [e.id for e in events], 0)
    events = [e for e in events if e.id in vecs and e.id in cues]
    if not events:
        return [], []
    have = {r.event_id for r in store.intention_states_at(user, [e.id for e in events])}
    intent, _ = linker.roles(np.vstack([vecs[e.id] for e in events]))
    found_int = [FoundIntention(e.id, e.text(), float(intent[n])) for n, e in enumerate(events)
                 if e.id not in have and intent[n] >= intent_t]
    # The pool: the day's events and the earlier events where a live intention formed.
    live = {r.event_id for r in store.live_intentions_before(user, events[-1].dt.timestamp())}
    earlier = store.events(user, [i for i in live if i not in vecs])
    vecs.update(store.event_vecs(user, earlier, 0))
    cues.update(store.event_cue_vecs(user, earlier, 0))
    pool = sorted([e for e in events] + [earlier[i].event for i in earlier if i in vecs and i in cues],
                  key=lambda e: e.dt)
    sources = live | {f.event_id for f in found_int}  # intentions a state change may settle
    linked = {ln.src for ln in store.links_touching(user, sources) if ln.kind == "state_change"}
    found_link: list[FoundLink] = []
    for e in events:
        before = [c for c in pool if c.dt < e.dt]
        if not before or not (sources - linked) & {c.id for c in before}:
            continue
        B = np.vstack([vecs[c.id] for c in before])
        top = np.argsort(-(B @ vecs[e.id]))[:max(1, m)]
        cand = [before[i] for i in top]
        p = linker.probs(B[top], np.vstack([cues[c.id] for c in cand]), vecs[e.id], cues[e.id])
        best = int(np.argmax(p))
        src = cand[best].id
        if p[best] >= link_t and src in sources and src not in linked:
            found_link.append(FoundLink(src, e.id, float(p[best])))
            linked.add(src)
    return found_int, found_link


def precompute_brief(store: Store, user: str, cfg, at: datetime) -> Brief:
    """Compute the brief at `at` and keep it in the store with the intention state it reflects."""
    b = brief_from_store(store, user, cfg, at, use_cache=False)
    b = b.model_copy(update={"computed_at": datetime.now(timezone.utc).isoformat()})
    store.put_brief(user, at.timestamp(), b.budget, store.intention_state(user), time.time(), b.model_dump_json())
    return b


def backend(cfg) -> str:
    """Which path reflects: "llm" or "trained" (memory.reflect.backend, auto resolved)."""
    b = cfg.memory.reflect.backend
    if b == "auto":
        return "llm" if cfg.memory.construction.backend == "llm" else "trained"
    return b


def _linker(cfg, linker):
    from memory.construct import artifacts

    c = cfg.memory.construction
    if linker is not None:
        return linker
    if c.backend != "encoder" or c.linker == "none":
        raise NeedsLinker("reflection uses the trained linker of the CPU profile (memory.construction.backend "
                          "encoder with a linker); set memory.construction.linker to a trained one, or "
                          "memory.reflect.backend: llm")
    return artifacts.linker(c.linker, c.cue_encoder)


def _trained(cfg, store: Store, user: str, events: list[Event], linker) -> Found:
    intent_t, link_t = thresholds(cfg, linker)
    ints, links = find(store, user, events, linker, intent_t, link_t, cfg.memory.construction.link_candidates)
    return Found(intentions=ints, links=links)


def _by_model(cfg, store: Store, user: str, day: date, events: list[Event], llm, cue_embedder) -> Found:
    """Raises reflect_llm.ModelFailed when the model gives no usable answer."""
    from core.providers import build_llm
    from memory import reflect_llm

    end = events[-1].dt.timestamp()
    live = [r for r in store.intention_records(user) if r.status in ("open", "raised")
            and datetime.fromisoformat(r.formed_at).timestamp() <= end]
    if llm is None:
        try:
            llm = build_llm(cfg.memory.construction.llm)
        except (ValueError, ImportError, OSError) as exc:  # no base_url, no client package, no local weights
            raise reflect_llm.ModelFailed(f"no model client: {exc}") from None
    out = reflect_llm.ask(llm, reflect_llm.render_prompt(day, events, live), f"reflection on {day} for {user!r}")
    have = {r.event_id for r in store.intention_states_at(user, [e.id for e in events])}
    f = reflect_llm.check(out, events, live, have)
    cues: list[FoundCue] = []
    if f.cues and cfg.memory.construction.backend == "llm":
        if cue_embedder is None:
            from memory.api import _constructor

            cue_embedder = _constructor(cfg).cue
        vecs = cue_embedder.encode([c.text for c in f.cues])
        cues = [FoundCue(c.event_id, c.text, vecs[n]) for n, c in enumerate(f.cues)]
    return Found(intentions=f.intentions, links=f.links, cues=cues, dropped=f.dropped)


def _model(cfg, llm) -> str:
    return getattr(llm, "model", None) or cfg.memory.construction.llm.model


@dataclass
class Found:
    """What one path found for a day, written by Store.add_found in one transaction."""

    intentions: list[FoundIntention] = field(default_factory=list)
    links: list[FoundLink] = field(default_factory=list)
    cues: list[FoundCue] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # model items left out, and why


def reflect(cfg, store: Store, user: str, day: date, linker=None, llm=None, cue_embedder=None) -> ReflectReport:
    """Reflect on `day` of `user` in a writable store. linker: the trained LinkModel (default: the
    config's); llm: the chat client (default: memory.construction.llm); cue_embedder: the cue space of
    the construction (default: the configured constructor's)."""
    from memory.construct.artifacts import MissingArtifact

    events = day_events(store, user, day)
    path, warnings = backend(cfg), []
    found = Found()
    if path == "llm" and events:
        from memory.reflect_llm import ModelFailed

        try:
            found = _by_model(cfg, store, user, day, events, llm, cue_embedder)
        except ModelFailed as exc:
            c = cfg.memory.construction
            model = _model(cfg, llm)
            way_out = f"rerun `promem reflect --user {user} --day {day}` once the model answers (it adds nothing twice)"
            try:
                found = _trained(cfg, store, user, events, _linker(cfg, linker))
                path, what = "trained", "fell back to the trained linker for this day"
            except (NeedsLinker, MissingArtifact):
                path, what = "none", "nothing was found for this day (no trained linker for this store)"
            warnings.append(f"reflection on {day} for user {user!r}: model {model!r} at "
                            f"{c.llm.base_url or c.llm.backend} gave no usable answer ({exc}); {what}; {way_out}")
            log.warning("%s", warnings[-1])
        for why in found.dropped:
            warnings.append(f"reflection on {day} for user {user!r}: model {_model(cfg, llm)!r}: {why}; "
                            f"dropped, the rest is kept")
            log.warning("%s", warnings[-1])
    elif path == "trained":
        found = _trained(cfg, store, user, events, _linker(cfg, linker))
    added = store.add_found(user, found.intentions, found.links, found.cues)
    if added.intentions or added.links or added.cues:
        log.info("reflection on %s for user %r (%s): %d intention(s), %d state change(s) and %d cue(s) found "
                 "after the fact", day, user, path, added.intentions, added.links, added.cues)
    # the next session starts the following day; its brief is computed now
    tz = events[-1].dt.tzinfo if events else timezone.utc
    at = datetime(day.year, day.month, day.day, tzinfo=tz) + timedelta(days=1)
    b = precompute_brief(store, user, cfg, at)
    return ReflectReport(user_id=user, day=day.isoformat(), backend=path, events=len(events),
                         intentions_added=added.intentions, resolved=added.links, cues_added=added.cues,
                         brief_at=at.isoformat(), brief_items=len(b.items), warnings=warnings)
