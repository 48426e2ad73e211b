"""The bench tests reuse the reasoner tests' real fixtures: a `transformers serve` server on
loopback with a tiny random Qwen3, and a gate trained briefly on the sample."""
from tests.reasoner.conftest import qwen_server, sample_instances, tiny_qwen, trained_gate  # noqa: F401
