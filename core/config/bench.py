from core.config._base import Section
from core.config.models import LLMConfig


class BenchConfig(Section):
    judge: str = "keywords"  # keywords | llm
    judge_llm: LLMConfig = LLMConfig()
    cache_dir: str = ".cache/bench"
    context_tokens: int = 4096  # full-context baseline budget
    workers: int = 1  # processes for `promem bench run` (each loads its own models)
