from core.config._base import Section


class TrainingConfig(Section):
    artifacts: str = "artifacts"
    train_data: str = "runs/bench/train.jsonl"
    # Hand-written timelines in other voices than the generator's, joined to train_data by every
    # recipe (a missing file is a warning): without them the models learn the generator's phrasing.
    extra_data: list[str] = ["bench/packs/voices/voices.jsonl"]
    train_instances: int = 400
    seed: int = 0
