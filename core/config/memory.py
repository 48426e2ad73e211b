from typing import Literal, Optional

from pydantic import Field

from core.config._base import Section
from core.config.models import EmbedderConfig, LLMConfig


class RetrievalConfig(Section):
    k: int = Field(10, ge=1)
    k_content: int = Field(2, ge=0)
    k_cue: int = Field(8, ge=0)
    expand_links: bool = True
    links_per_event: int = Field(1, ge=0)  # linked events each recalled event brings along, state changes first
    k_links: int = Field(2, ge=0)  # of the k slots, at most this many go to linked events (the best-ranked hits' first)
    time_cues: bool = True  # time cues whose window contains the current time are recalled
    k_time: int = Field(2, ge=0)  # at most this many by time cue, narrowest window first ("Friday 5 pm" before "next week")
    cue_candidates: int = Field(32, ge=1)  # cue-index hits examined before de-duplicating by event
    intent_weight: float = 0.0  # boosts cue hits on events the linker's intention detector flags


class ConstructionConfig(Section):
    backend: str = "encoder"  # encoder = trained cue encoder + linker (CPU); llm = cue/link prompts
    llm: LLMConfig = LLMConfig()
    cue_encoder: str = "artifacts/cue-encoder"  # "base" = the untuned bundled MiniLM (ablation)
    linker: str = "artifacts/linker"  # "none" = no links (ablation)
    link_candidates: int = Field(8, ge=0)  # m
    link_threshold: Optional[float] = None  # None = the threshold chosen at training (meta.json)
    batch_size: int = Field(32, ge=1)  # events embedded and committed together


class IndexConfig(Section):
    type: str = "flat"  # flat | ivf | hnsw
    nlist: int = Field(1024, ge=1)  # ivf: clusters (trained once the store holds 39 x nlist vectors; flat until then)
    nprobe: int = Field(16, ge=1)
    hnsw_m: int = Field(32, ge=2)
    ef_search: int = Field(64, ge=1)


class IntentionsConfig(Section):
    """Delayed intentions as records (memory/intentions.py) and the session-start brief (memory/brief.py)."""

    expire_hours: Optional[float] = Field(None, ge=0)  # open or raised this long after forming -> expired; None: reasoner.intention_ttl_hours
    decline_window_minutes: float = Field(10.0, ge=0)  # a "no thanks" this soon after an assist dismisses what it raised
    brief_tokens: int = Field(200, ge=1)  # default token budget of a brief
    brief_near_hours: float = Field(12.0, gt=0)  # a time window this close to the brief's moment counts as near


class ReflectConfig(Section):
    """Scheduled reflection over a day's events (memory/reflect.py, `promem reflect`)."""

    # llm: memory.construction.llm reads the day (memory/reflect_llm.py); trained: the construction's
    # linker; auto: llm when construction itself uses a language model (backend llm), else trained
    backend: Literal["auto", "trained", "llm"] = "auto"
    intent_threshold: Optional[float] = Field(None, ge=0, le=1)  # None: the linker's own (the online one)
    link_threshold: Optional[float] = Field(None, ge=0, le=1)  # state changes found after the fact; None: construction's
    brief_cache_hours: float = Field(12.0, ge=0)  # a precomputed brief serves `promem brief` this long after its moment


class TriggerConfig(Section):
    """Context trigger (memory/trigger.py): per event, whether memory retrieval and the reasoner are needed."""

    enabled: bool = False
    min_content_words: int = Field(4, ge=0)  # fewer content words in caption and transcript: skipped
    # thresholds from `python -m bench.trigger_fit` (training data only, cross-fitted by category)
    min_similarity: float = Field(0.40, ge=-1, le=1)  # cue-space cosine to the nearest open intention's event
    min_cue_score: float = Field(0.38, ge=-1, le=1)  # or to the nearest earlier event of any kind (a missed formation)


class MemoryConfig(Section):
    embedder: EmbedderConfig = EmbedderConfig()
    construction: ConstructionConfig = ConstructionConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    index: IndexConfig = IndexConfig()
    intentions: IntentionsConfig = IntentionsConfig()
    reflect: ReflectConfig = ReflectConfig()
    trigger: TriggerConfig = TriggerConfig()
    store: str = "runs/memory"
