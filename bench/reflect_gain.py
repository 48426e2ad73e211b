"""Does scheduled reflection recover what first-pass construction missed? (memory/reflect.py)

Per timeline, three fresh private memories of the events before the decision event, in the CPU profile:
- online:  the trained constructor as configured;
- missed:  the same with its intention and state-change detection switched off (thresholds out of
           reach), a first pass that missed every cue it could miss;
- reflect: "missed", then `reflect` on each day of the timeline.
Reported per condition: DIR and SCR (retrieval-only, bench/metrics.py), and on the intention records
themselves: formation recall (gold formations with a record), record precision (records at a gold
formation) and resolution recall (gold state changes whose intention is resolved by that event).

    python -m bench.reflect_gain DATA.jsonl -c configs/cpu.yaml [--limit N] [-o OUT.json]

Set-F1 needs the reasoner and a judge per condition; this script measures retrieval and records only.
The first pass is the CPU constructor made deaf, so it measures the trained path (memory.reflect.backend
trained or auto); the model path needs a served model and is tested in tests/memory/test_reflect_llm.py.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Sequence

from core.formats import Instance, read_records

CONDITIONS = ("online", "missed", "reflect")
UNREACHABLE = 1.01  # no probability reaches it


def deaf(constructor, intents: bool = True, links: bool = True):
    """A copy of the CPU constructor whose intention and/or state-change detection never fire."""
    import copy

    c = copy.copy(constructor)  # shares the loaded models; only the thresholds differ
    if intents:
        c.linker = dataclasses.replace(c.linker, intent_threshold=UNREACHABLE)
    if links:
        c.threshold = UNREACHABLE
    return c


def run_condition(cfg, inst: Instance, condition: str, online, missed) -> dict:
    from bench.metrics import retrieval_counts
    from memory.api import open_memory
    from memory.reflect import reflect

    current = inst.event(inst.decision_event)
    past = [e for e in inst.events if e.dt < current.dt and e.id != current.id]
    mem = open_memory(cfg, None, inst.id, constructor=online if condition == "online" else missed)
    try:
        mem.add_many(past)
        if condition == "reflect":
            for day in sorted({e.dt.date() for e in past}):
                reflect(cfg, mem.store, inst.id, day)
            mem.cues.catch_up()  # event cues a model added after the fact reach the open cue index
        recalled = mem.retrieve(current)
        recs = mem.store.intention_records(inst.id)
    finally:
        mem.close()
    counts = retrieval_counts(inst, {"retrieved": [r.event.id for r in recalled]})
    gold = {it.formation for it in inst.intentions if it.formation != current.id}
    at = {r.evidence[0]: r for r in recs}
    changes = [it for it in inst.intentions if it.state_change and it.formation in at]
    resolved = sum(1 for it in changes if at[it.formation].status == "resolved"
                   and at[it.formation].transitions[-1].event_id == it.state_change)
    return {**counts, "gold": len(gold), "found": len(gold & set(at)), "records": len(at),
            "records_gold": len(set(at) & gold), "sc_n": sum(1 for it in inst.intentions if it.state_change),
            "sc_hit": resolved}


def summarise(rows: Sequence[dict]) -> dict:
    def s(k):
        return sum(r[k] for r in rows)

    def pct(a, b):
        return None if b == 0 else round(100.0 * a / b, 2)

    return {"DIR": pct(s("dir_hit"), s("dir_n")), "SCR": pct(s("scr_hit"), s("scr_n")),
            "formation_recall": pct(s("found"), s("gold")), "record_precision": pct(s("records_gold"), s("records")),
            "resolution_recall": pct(s("sc_hit"), s("sc_n")), "records": s("records"), "n": len(rows)}


def main(argv: Sequence[str] | None = None) -> int:
    from core.config import load_config
    from memory.api import _constructor

    ap = argparse.ArgumentParser(prog="python -m bench.reflect_gain", description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="CPMBench JSON Lines (e.g. from `promem bench generate --split test`)")
    ap.add_argument("-c", "--config", default=None, help="profile YAML (default: configs/cpu.yaml)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N timelines")
    ap.add_argument("-o", "--output", help="write the summary as JSON here too")
    args = ap.parse_args(argv)
    cfg = load_config(args.config) if args.config else load_config()
    good, bad = read_records(args.data, Instance)
    for b in bad:
        print(f"skipped: {b}", file=sys.stderr)
    instances = [i for _, i in good][:args.limit]
    online = _constructor(cfg)
    if getattr(online, "linker", None) is None:
        print("reflect_gain: needs the CPU profile's trained linker (memory.construction.linker)", file=sys.stderr)
        return 2
    missed = deaf(online)
    rows = {c: [run_condition(cfg, inst, c, online, missed) for inst in instances] for c in CONDITIONS}
    out = {"data": args.data, "intent_threshold": cfg.memory.reflect.intent_threshold,
           **{c: summarise(rows[c]) for c in CONDITIONS}}
    print(json.dumps(out, indent=1))
    if args.output:
        Path(args.output).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
