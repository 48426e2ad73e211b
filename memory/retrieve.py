"""Retrieval at a decision moment: content + cue + time cues, expanded along links, in time order.

Only events strictly before the current one are returned. The budget k is shared: a recalled
event brings its linked event right after it (a formation brings its state change, and a
state change its formation), so that what resolved an intention is never cut off from it;
at most k_links slots go to links, so that they never crowd out what the cues found.
"""
from __future__ import annotations

from core.formats import Event
from core.recall import Link, Recalled
from memory.timecues import MAX_WINDOW


def _best_events(mem, index, table: str, q, n_rows: int, t: float, current_id: str, skip: set[str], n: int):
    """Up to n distinct past events from an index search: [(event_id, score, text)] best first."""
    hits = index.search(q, n_rows)
    rows = mem.store.rows(mem.user, table, [i for i, _ in hits])
    out, seen = [], set(skip)
    for rid, score in hits:
        if rid not in rows:
            continue
        row = rows[rid]
        ev = row.event_id
        if row.ts >= t or ev == current_id or ev in seen:
            continue
        seen.add(ev)
        out.append((ev, score, row.text))
        if len(out) >= n:
            break
    return out


def _linked(links, ev: str, chosen) -> list[tuple[str, float, str]]:
    """Events linked to ev and not yet chosen, state changes first: without a cap, a chatty
    timeline whose events all resemble each other links everything to everything and the
    links crowd the cue hits out of the budget."""
    out = []
    for ln in links:
        other = ln.dst if ln.src == ev else ln.src if ln.dst == ev else None
        if other and other not in chosen:
            note = f"{ln.kind} of {ev}" if ln.src == ev else f"{ev} is its {ln.kind}"
            out.append((ln.kind != "state_change", -ln.score, other, note))
    return [(o, -neg, note) for _, neg, o, note in sorted(out)]


def query_vectors(mem, current: Event):
    con = mem.constructor
    text = current.text()
    q_content = con.content.encode([text])[0]
    return q_content, (q_content if con.cue is con.content else con.cue.encode([text])[0])


def retrieve(mem, current: Event, k: int | None = None, vectors=None) -> list[Recalled]:
    rc = mem.cfg.memory.retrieval
    k = rc.k if k is None else k
    if k <= 0:
        return []
    t = current.dt.timestamp()
    q_content, q_cue = vectors if vectors is not None else query_vectors(mem, current)

    ranked: list[tuple[str, float, str, str]] = []  # (event_id, score, path, fact) by priority
    content = _best_events(mem, mem.content, "facts", q_content, rc.k_content * 4 + 8, t, current.id, set(), rc.k_content)
    ranked += [(ev, s, "content", f) for ev, s, f in content]
    taken = {ev for ev, *_ in ranked}
    if rc.time_cues:
        n_time = 0
        for row in mem.store.time_cues_at(mem.user, t, MAX_WINDOW.total_seconds()):
            ev = row.event_id
            if n_time < rc.k_time and row.ts < t and ev != current.id and ev not in taken:
                n_time += 1
                ranked.append((ev, 1.0, "time", row.text))
                taken.add(ev)
    cue = _best_events(mem, mem.cues, "cues", q_cue, max(rc.cue_candidates, rc.k_cue), t, current.id, taken,
                       max(rc.k_cue, rc.cue_candidates) if rc.intent_weight else rc.k_cue)
    if rc.intent_weight and cue:
        open_ = {it.event_id: it.score for it in mem.store.intentions(mem.user) if it.status == "open"}
        cue = sorted(cue, key=lambda h: -(h[1] + rc.intent_weight * open_.get(h[0], 0.0)))[:rc.k_cue]
    ranked += [(ev, s, "cue", f) for ev, s, f in cue]

    links = mem.store.links_touching(mem.user, [ev for ev, *_ in ranked])
    chosen: dict[str, tuple[float, str, str]] = {}
    n_links = 0
    for ev, score, path, fact in ranked:
        if len(chosen) >= k:
            break
        if ev not in chosen:
            chosen[ev] = (score, path, fact)
        if not rc.expand_links:
            continue
        for other, lscore, note in _linked(links, ev, chosen)[:rc.links_per_event]:
            if len(chosen) < k and n_links < rc.k_links:
                chosen[other] = (lscore, "link", note)
                n_links += 1

    all_links = mem.store.links_touching(mem.user, chosen)
    events = mem.store.events(mem.user, list(chosen) + [ln.dst for ln in all_links])
    out = []
    for ev, (score, path, fact) in chosen.items():
        if ev not in events or events[ev].ts >= t:
            continue
        # only developments that had happened by now: the reasoner must not see the future
        later = [Link(ln.dst, ln.kind, float(ln.score)) for ln in all_links
                 if ln.src == ev and ln.dst in events and events[ln.dst].ts < t]
        out.append(Recalled(event=events[ev].event, score=float(score), path=path, fact=fact, links=later))
    out.sort(key=lambda r: (events[r.event.id].ts, r.event.id))
    return out
