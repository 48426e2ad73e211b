"""The sample scenario script (scenario.yaml) as typed data, checked on load.

The script is data so that a reader can change the story without touching the renderer;
the checks here catch a broken script (unknown clip ids, an opportunity before its
formation) before anything is rendered.
"""
from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

SCENARIO_PATH = Path(__file__).with_name("scenario.yaml")


class ScenarioError(ValueError):
    pass


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Voice(_Strict):
    voice: str = "en-us"
    speed: int = Field(150, ge=80, le=300)
    pitch: int = Field(50, ge=0, le=99)
    gap: int = Field(0, ge=0, le=20)  # extra pause between words, in 10 ms units (espeak-ng -g)


class Line(_Strict):
    who: str
    say: str


class ClipSpec(_Strict):
    id: str
    day: int = Field(ge=0)
    at: str  # "HH:MM", local time in the profile's timezone
    seconds: float = Field(ge=5, le=15)
    location: str
    backdrop: str
    object: str
    caption: str
    narration: str
    audio: Optional[Literal["track", "wav"]] = None
    speech: list[Line] = []

    @model_validator(mode="after")
    def _audio_iff_speech(self) -> "ClipSpec":
        if bool(self.speech) != bool(self.audio):
            raise ValueError(f"clip {self.id}: give `audio` (track|wav) exactly when the clip has `speech`")
        hh, _, mm = self.at.partition(":")
        if not (hh.isdigit() and mm.isdigit() and int(hh) < 24 and int(mm) < 60):
            raise ValueError(f"clip {self.id}: `at` must be HH:MM, got {self.at!r}")
        return self


class IntentionSpec(_Strict):
    id: str
    category: str
    formation: str
    state_change: Optional[str] = None
    opportunity: str
    gist: str
    keywords: list[list[str]]


class NearMiss(_Strict):
    clip: str
    intention: str
    why: str


class Profile(_Strict):
    user_id: str
    persona: str
    timezone: str


class Scenario(_Strict):
    version: int
    start_date: date
    profile: Profile
    voices: dict[str, Voice]
    backdrops: dict[str, tuple[int, int, int]]
    clips: list[ClipSpec]
    intentions: list[IntentionSpec]
    near_misses: list[NearMiss] = []

    @model_validator(mode="after")
    def _consistent(self) -> "Scenario":
        ids = [c.id for c in self.clips]
        dupes = {i for i in ids if ids.count(i) > 1}
        if dupes:
            raise ValueError(f"duplicate clip ids: {sorted(dupes)}")
        order = {cid: n for n, cid in enumerate(ids)}
        keys = [(c.day, c.at) for c in self.clips]
        if keys != sorted(keys):
            raise ValueError("clips must be listed in time order (day, at)")
        for c in self.clips:
            if c.backdrop not in self.backdrops:
                raise ValueError(f"clip {c.id}: unknown backdrop {c.backdrop!r}")
            for line in c.speech:
                if line.who not in self.voices:
                    raise ValueError(f"clip {c.id}: speaker {line.who!r} has no voice")
        intent_ids = set()
        for it in self.intentions:
            intent_ids.add(it.id)
            for key in ("formation", "state_change", "opportunity"):
                ref = getattr(it, key)
                if ref is not None and ref not in order:
                    raise ValueError(f"intention {it.id}: {key} names unknown clip {ref!r}")
            seq = [it.formation] + ([it.state_change] if it.state_change else []) + [it.opportunity]
            if [order[s] for s in seq] != sorted(order[s] for s in seq):
                raise ValueError(f"intention {it.id}: formation, state_change, opportunity must come in that order")
        for nm in self.near_misses:
            if nm.clip not in order:
                raise ValueError(f"near miss names unknown clip {nm.clip!r}")
            if nm.intention not in intent_ids:
                raise ValueError(f"near miss {nm.clip}: unknown intention {nm.intention!r}")
        return self


def load_scenario(path: str | Path = SCENARIO_PATH) -> Scenario:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return Scenario.model_validate(raw)
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{path}: cannot read scenario: {exc}") from None
    except ValidationError as exc:
        raise ScenarioError(f"{path}: invalid scenario:\n{exc}") from None
