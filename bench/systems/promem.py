"""This project's memory as a benchmark system: a fresh private store per timeline."""
from __future__ import annotations

import time
from typing import Sequence

from bench.metrics import OrdinaryTally, ordinary_events
from core.formats import Event, Instance
from core.recall import Recalled


class ProMem:
    name = "promem"

    def __init__(self, cfg):
        from memory.api import open_memory

        self.cfg = cfg
        self.open_memory = open_memory
        self.last_timing: dict[str, float] = {}
        self.last_trigger: str | None = None  # why the context trigger skipped the last decision moment
        self.last_ordinary: OrdinaryTally | None = None  # the trigger on the last timeline's ordinary moments

    def recall(self, instance: Instance, past: Sequence[Event], current: Event) -> list[Recalled]:
        # user_id = instance id: each timeline is its own user, so no memory leaks between them.
        t0 = time.perf_counter()
        memory = self.open_memory(self.cfg, None, user_id=instance.id)
        self.last_trigger = self.last_ordinary = None
        try:
            memory.add_many(list(past))
            t1 = time.perf_counter()
            vectors = None
            if self.cfg.memory.trigger.enabled:
                from memory.trigger import check, verdicts_as_of

                verdict, vectors = check(memory, current)
                if not verdict.needed:
                    self.last_trigger = verdict.reason
                ordinary = ordinary_events(instance, past)
                skipped = sum(not v.needed for v in verdicts_as_of(memory, ordinary))
                self.last_ordinary = OrdinaryTally(moments=len(ordinary), skipped=skipped)
            recalled = [] if self.last_trigger else list(memory.retrieve(current, vectors=vectors))
            t2 = time.perf_counter()
        finally:
            memory.close()
        # Building the memory is the wearable's background work; retrieval is the decision-time cost.
        self.last_timing = {"ingest": round((t1 - t0) * 1000, 2), "retrieve": round((t2 - t1) * 1000, 2)}
        return recalled

    def close(self) -> None:
        pass
