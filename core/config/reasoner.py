from core.config._base import Section
from core.config.models import LLMConfig


class GateConfig(Section):
    path: str = "artifacts/gate"
    threshold: float = 0.5


class ReasonerConfig(Section):
    backend: str = "gate"  # gate (on-device, CPU) | cascade (gate then LLM) | llm
    gate: GateConfig = GateConfig()
    llm: LLMConfig = LLMConfig()
    cooldown_hours: float = 12.0
