from core.config._base import Section


class TrainingConfig(Section):
    artifacts: str = "artifacts"
    train_data: str = "runs/bench/train.jsonl"
    train_instances: int = 400
    seed: int = 0
