"""Token counts for the reasoner's prompts: core/tokens.py, which memory's prompt budgets share."""
from core.tokens import count_message_tokens, count_tokens

__all__ = ["count_message_tokens", "count_tokens"]
