"""Where the tests find the repository and the CPMBench sample fixture (tests/fixtures)."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Two scenarios x the four variants, written by tests/fixtures/make_sample.py.
SAMPLE = REPO / "tests" / "fixtures" / "cpmbench_sample.jsonl"


def pick(instances, variant: str, scenario: int = 0):
    """The sample instance of `variant` from its first (0) or second (1) scenario."""
    return [i for i in instances if i.variant == variant][scenario]
