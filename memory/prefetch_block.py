"""prefetch(user_id, prompt): a "## Recalled memories" block to put in a chat prompt before the turn.

Memory must never break the caller's turn: any failure (a bad user id, a missing or damaged store,
a missing model, an error inside) is logged with its reason and gives an empty block. Tokens are
counted with core/tokens.py (Qwen's tokenizer when installed, else about 4 characters a token),
on the whole block, so the block never exceeds the budget.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional, Sequence

from core.tokens import count_tokens
from core.userid import require_user_id

log = logging.getLogger(__name__)
HEADER = "## Recalled memories"
ELLIPSIS = "..."


def _line(item) -> tuple[str, list[str]]:
    """(prefix, words of the text): "- 2026-03-02 08:15: " and the memory's words."""
    when = item.time[:16].replace("T", " ")
    return f"- {when}: ", item.text.split()


def _cut(block: str, prefix: str, words: list[str], budget: int, count: Callable[[str], int]) -> Optional[str]:
    """The longest start of the item (at least one word) that fits with ELLIPSIS, or None."""
    lo, hi, best = 1, len(words) - 1, None
    while lo <= hi:  # the token count grows with the number of words kept
        mid = (lo + hi) // 2
        line = prefix + " ".join(words[:mid]) + ELLIPSIS
        if count(block + "\n" + line) <= budget:
            best, lo = line, mid + 1
        else:
            hi = mid - 1
    return best


def render_block(items: Sequence, token_budget: int, count: Callable[[str], int] = count_tokens) -> str:
    """The block for `items` (best first): the same text once, whole items while they fit, then the
    first one that does not fit cut to the budget and ending in "..."; "" when none fits."""
    block, seen, n = HEADER, set(), 0
    if count(block) > token_budget:
        return ""
    for item in items:
        key = " ".join(item.text.split()).casefold()
        if not key or key in seen:
            continue
        seen.add(key)
        prefix, words = _line(item)
        whole = block + "\n" + prefix + " ".join(words)
        if count(whole) <= token_budget:
            block, n = whole, n + 1
            continue
        cut = _cut(block, prefix, words, token_budget, count)
        if cut is not None:
            block, n = block + "\n" + cut, n + 1
        break
    return block if n else ""


def prefetch(user_id: str, prompt: str, limit: int = 5, token_budget: int = 512, memory=None) -> str:
    """What the user's memory recalls for `prompt`, as a prompt block within `token_budget` tokens;
    "" when nothing is recalled or memory failed. memory: a memory.Memory (default: Memory() on the
    default profile and its store)."""
    try:
        require_user_id(user_id)
        if memory is None:
            from memory.library import Memory

            memory = Memory()
        return render_block(memory.search(prompt, user_id=user_id, limit=limit), token_budget)
    except Exception as exc:  # the caller's turn goes on without memories
        log.warning("prefetch for user %.80r: no memories recalled (%s: %s)", user_id, type(exc).__name__, exc)
        return ""
