"""Where the tests find the repository and the shared CPMBench sample (../shared beside the checkout)."""
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO.parent / "shared" / "examples" / "cpmbench_sample.jsonl"
if not SAMPLE.is_file() and os.environ.get("PROMEM_SAMPLE"):
    SAMPLE = Path(os.environ["PROMEM_SAMPLE"])
