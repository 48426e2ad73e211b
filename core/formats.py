"""Typed models of the file formats in docs/formats.md (sections 2-6).

Unknown keys are kept (extra="allow") and written back unchanged; a missing required key
is reported with the file, the line and the key by `read_records`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from core.directives import split_directives
from core.jsonio import LineError, iter_jsonl
from core.timeutil import parse_time

CATEGORIES = ("work", "leisure", "social", "health", "food", "shopping", "transit", "daily_life",
              "travel", "home_repair", "pets", "paperwork", "parenting", "money", "study", "caregiving", "hobbies")
VARIANTS = ("positive", "negative", "no_formation", "state_change")
METRIC_KEYS = ("DIR", "SCR", "FD", "Acc-P", "Set-P", "Set-R", "Set-F1", "Acc-PA")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=False)


def _check_time(v: str) -> str:
    parse_time(v)
    return v


class Event(_Open):
    """Sensory-context event (section 2); also the event of a benchmark timeline (section 3)."""

    id: str
    time: str
    end: Optional[str] = None
    user_id: Optional[str] = None
    location: Optional[str] = None
    visual: Optional[str] = None
    audio: Optional[str] = None

    _t = field_validator("time")(_check_time)

    @field_validator("end")
    @classmethod
    def _end(cls, v: Optional[str]) -> Optional[str]:
        return v if v is None else _check_time(v)

    @model_validator(mode="after")
    def _has_content(self) -> "Event":
        if self.visual is None and self.audio is None:
            raise ValueError("event needs at least one of 'visual' / 'audio'")
        return self

    @model_validator(mode="after")
    def _withhold_directives(self) -> "Event":
        """Sentences addressed to the assistant are moved to the "withheld" key (core/directives.py):
        kept with the event, never read by memory, the reasoner or the composed message."""
        withheld: list[str] = []
        for key in ("location", "visual", "audio"):
            value = getattr(self, key)
            if value:
                kept, gone = split_directives(value)
                if gone:
                    setattr(self, key, kept)
                    withheld += gone
        if withheld:
            extra = self.__pydantic_extra__
            before = extra.get("withheld")
            extra["withheld"] = (before if isinstance(before, list) else []) + withheld
        return self

    @property
    def dt(self):
        return parse_time(self.time)

    def text(self) -> str:
        """The event as one line of text, for embedding and prompts."""
        parts = []
        if self.location:
            parts.append(f"[{self.location}]")
        if self.visual:
            parts.append(self.visual)
        if self.audio:
            parts.append(f'Heard: "{self.audio}"')
        return " ".join(parts)


class Intention(_Open):
    id: str
    formation: str
    state_change: Optional[str] = None
    reference: str
    keywords: list[list[str]]


class Instance(_Open):
    """One CPMBench timeline (section 3)."""

    id: str
    category: Literal[CATEGORIES]  # type: ignore[valid-type]
    variant: Literal[VARIANTS]  # type: ignore[valid-type]
    persona: str
    events: list[Event]
    decision_event: str
    intentions: list[Intention]

    def event(self, event_id: str) -> Event:
        for e in self.events:
            if e.id == event_id:
                return e
        raise KeyError(event_id)


class Decision(_Open):
    """Reasoner / service output (section 4)."""

    event_id: str
    assist: bool
    message: Optional[str] = None
    evidence: list[str] = []
    retrieved: list[str] = []
    timing_ms: dict[str, float] = {}
    # Diagnostics: written only when a reasoner, the guard or the harness set them (see dump).
    llm_called: Optional[bool] = None  # a large model was asked (the bench's LLM-call share)
    context_tokens: Optional[int] = None  # tokens of context the reasoner read
    gate_score: Optional[float] = None  # the gate's best pair score at this moment
    now_score: Optional[float] = None  # the gate's now head, asked when no open past event was left
    resolved: Optional[list[str]] = None  # recalled events dismissed because a state change resolved them
    error: Optional[str] = None  # why the reasoner answered silence instead of deciding ("llm: ...", "parse: ...")
    raw_output: Optional[str] = None  # start of a model answer that could not be parsed
    reasoning: Optional[str] = None  # the model's reasoning trace
    guard: Optional[str] = None  # why the over-proactivity guard silenced or narrowed the decision
    suppressed_message: Optional[str] = None  # the message the guard kept back
    retrieval_only: Optional[bool] = None  # the bench asked no reasoner, only the memory
    trigger: Optional[str] = None  # why the context trigger skipped memory and the reasoner at this event
    # bench only: the timeline's ordinary events before this moment, and how many the trigger skips there
    ordinary_moments: Optional[int] = None
    ordinary_skipped: Optional[int] = None

    @model_validator(mode="after")
    def _message_iff_assist(self) -> "Decision":
        if not self.assist:
            self.message = None
        return self

    def dump(self) -> dict[str, Any]:
        # A diagnostic is written only when it was set, so decisions keep the keys they always had.
        unset = DIAGNOSTICS - self.model_fields_set
        return self.model_dump(mode="json", exclude_none=False, exclude=unset or None)


DIAGNOSTICS = frozenset(("llm_called", "context_tokens", "gate_score", "now_score", "resolved", "error",
                         "raw_output", "reasoning", "guard", "suppressed_message", "retrieval_only",
                         "trigger", "ordinary_moments", "ordinary_skipped"))


class Profile(_Open):
    user_id: str = "u1"
    persona: str = ""
    timezone: Optional[str] = None


M = TypeVar("M", bound=BaseModel)


def describe_validation_error(exc: ValidationError) -> str:
    """One short sentence per problem, naming the key path ("missing key 'time'")."""
    msgs = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "missing":
            msgs.append(f"missing key '{loc}'")
        elif loc:
            msgs.append(f"key '{loc}': {err['msg']}")
        else:
            msgs.append(err["msg"].removeprefix("Value error, "))
    return "; ".join(msgs)


def parse_record(model: type[M], obj: Any, where: str) -> M:
    """Validate one object; raises ValueError whose message starts with `where`."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        ident = obj.get("id")
        tag = f" (id {ident!r})" if isinstance(ident, str) else ""
        raise ValueError(f"{where}{tag}: {describe_validation_error(exc)}") from None


def read_records(path: str | Path, model: type[M]) -> tuple[list[tuple[int, M]], list[LineError]]:
    """Read a JSON Lines file of `model`; bad lines are returned as errors, the rest go on."""
    good: list[tuple[int, M]] = []
    bad: list[LineError] = []
    for no, obj in iter_jsonl(path):
        if isinstance(obj, LineError):
            bad.append(obj)
            continue
        try:
            good.append((no, parse_record(model, obj, f"{path}:{no}")))
        except ValueError as exc:
            bad.append(LineError(str(path), no, str(exc).split(": ", 1)[1]))
    return good, bad
