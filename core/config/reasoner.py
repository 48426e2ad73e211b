from typing import Optional

from pydantic import Field

from core.config._base import Section
from core.config.models import LLMConfig


class GateConfig(Section):
    path: str = "artifacts/gate"
    # What a message names and the action it suggests: a trained thing reader (`promem train
    # thing-reader`); when there is none, the composer's own rules alone (a warning says so).
    thing_reader: Optional[str] = "artifacts/thing-reader"
    threshold: float = 0.5  # used when the trained gate's meta.json holds no calibrated threshold
    use_calibrated: bool = True  # prefer the threshold calibrated on held-out pairs (meta.json)
    max_candidates: int = Field(12, ge=1)  # past events scored per moment
    max_evidence: int = Field(2, ge=1)  # events a message may rest on
    use_now_head: bool = True  # score the moment alone when memory hands over no past event (if trained)
    # The now head stays silent on a moment whose caption and transcript hold fewer content words
    # (core.text.content_words) than this: "x" or "The user buys a train ticket." says too little to act on.
    now_min_content_words: int = Field(4, ge=0)


class CascadeConfig(Section):
    # Set low: the gate only drops moments that are clearly nothing; the LLM judges the rest.
    dismiss_below: float = 0.5  # moments whose best gate score is below this never reach the LLM


class ReasonerConfig(Section):
    backend: str = "gate"  # gate (on-device, CPU) | cascade (gate then LLM) | llm
    gate: GateConfig = GateConfig()
    cascade: CascadeConfig = CascadeConfig()
    llm: LLMConfig = LLMConfig()
    prompt: str = "reasoner.v1"  # reasoner/prompts/<prompt>.txt
    cooldown_hours: float = Field(12.0, ge=0)
    intention_ttl_hours: float = Field(168.0, ge=0)  # an intention not acted on within this long expires
