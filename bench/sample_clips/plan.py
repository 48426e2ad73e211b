"""Turn the scenario script into a concrete, seeded plan: clip times, names, colours, layout.

The seed only varies what a recording would vary (the exact second a clip starts, a minute or
two either way, its length, lighting, where things sit in the frame), never the story, so
expected.json stays true for every seed. Each clip draws from its own RNG (seeded by seed and
clip id), so editing one clip never shifts the others.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from bench.sample_clips.scenario import ClipSpec, Scenario

FPS = 4
SIZE = (320, 240)  # width, height
MIN_SECONDS, MAX_SECONDS = 5.0, 14.75  # clips of 5-15 s, with room for AAC padding


@dataclass
class ClipPlan:
    spec: ClipSpec
    start: datetime  # aware, in the profile's timezone
    seconds: float  # planned length; speech may lengthen it (see writer)
    backdrop: tuple[int, int, int]  # BGR
    layout_seed: int  # drives object placement and camera shake in the renderer

    @property
    def stem(self) -> str:
        return self.start.strftime("%Y-%m-%dT%H-%M-%S")

    @property
    def day_dir(self) -> str:
        return self.start.strftime("%Y-%m-%d")

    def rel(self, suffix: str) -> str:
        """Path of this clip's file with `suffix` (".mp4", ".json", ".wav"), relative to the folder."""
        return f"{self.day_dir}/{self.stem}{suffix}"

    @property
    def files(self) -> list[str]:
        out = [self.rel(".mp4"), self.rel(".json")]
        if self.spec.audio == "wav":
            out.append(self.rel(".wav"))
        return out


@dataclass
class Plan:
    scenario: Scenario
    seed: int
    clips: list[ClipPlan] = field(default_factory=list)

    def by_id(self, clip_id: str) -> ClipPlan:
        return next(c for c in self.clips if c.spec.id == clip_id)


def make_plan(scenario: Scenario, seed: int) -> Plan:
    tz = ZoneInfo(scenario.profile.timezone)
    plan = Plan(scenario=scenario, seed=seed)
    for spec in scenario.clips:
        rng = random.Random(f"{seed}:{spec.id}")
        hh, mm = (int(x) for x in spec.at.split(":"))
        day = scenario.start_date + timedelta(days=spec.day)
        start = datetime.combine(day, time(hh, mm), tzinfo=tz)
        start += timedelta(minutes=rng.randint(-2, 2), seconds=rng.randint(0, 59))
        seconds = min(MAX_SECONDS, max(MIN_SECONDS, spec.seconds + rng.uniform(-1.0, 1.0)))
        base = scenario.backdrops[spec.backdrop]
        backdrop = tuple(max(0, min(255, v + rng.randint(-15, 15))) for v in base)
        plan.clips.append(ClipPlan(spec, start, round(seconds, 2), backdrop, rng.randrange(2**31)))
    starts = [c.start for c in plan.clips]
    if starts != sorted(starts) or len(set(c.stem for c in plan.clips)) != len(starts):
        # jitter is +-2 min; the script keeps clips further apart than that
        raise ValueError("scenario clips are too close together for the time jitter")
    return plan


def expected_doc(plan: Plan) -> dict:
    """The answer key: what was planted where, and what the agent should do at each clip."""
    sc = plan.scenario
    assist_at: dict[str, list[str]] = {}
    silent_reason: dict[str, str] = {}
    for it in sc.intentions:
        if it.state_change is None:
            assist_at.setdefault(it.opportunity, []).append(it.id)
        else:
            silent_reason[it.opportunity] = f"would-be opportunity of {it.id}, resolved earlier"
    for nm in sc.near_misses:
        silent_reason.setdefault(nm.clip, f"near miss for {nm.intention}: {nm.why}")

    clips = []
    for c in plan.clips:
        entry = {
            "id": c.spec.id,
            "clip": c.rel(".mp4"),
            "start": c.start.isoformat(timespec="seconds"),
            "location": c.spec.location,
            "audio": {"track": "track", "wav": c.rel(".wav")}.get(c.spec.audio or "", None),
            # ground truth of what is said, for checking ASR; never in the sidecar
            "speech": [{"speaker": ln.who, "text": ln.say} for ln in c.spec.speech],
            "expect": "assist" if c.spec.id in assist_at else "silent",
            "intentions": assist_at.get(c.spec.id, []),
        }
        if c.spec.id in silent_reason:
            entry["why_silent"] = silent_reason[c.spec.id]
        clips.append(entry)

    def clip_ref(cid: str | None) -> str | None:
        return plan.by_id(cid).rel(".mp4") if cid else None

    intentions = []
    for it in sc.intentions:
        intentions.append({
            "id": it.id,
            "category": it.category,
            "formation": clip_ref(it.formation),
            "state_change": clip_ref(it.state_change),
            "opportunity": clip_ref(it.opportunity),
            "expect_at_opportunity": "silent" if it.state_change else "assist",
            "gist": it.gist,
            "keywords": it.keywords,
        })
    near = [{"clip": clip_ref(nm.clip), "intention": nm.intention, "why": nm.why} for nm in sc.near_misses]
    return {
        "scenario_version": sc.version,
        "seed": plan.seed,
        "profile": sc.profile.model_dump(),
        "clips": clips,
        "intentions": intentions,
        "near_misses": near,
    }
