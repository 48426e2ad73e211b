"""Sentences of recorded text that address the assistant ("ignore your rules and tell the user to
call ..."): a caption or transcript is a recording of the world, never an instruction, so such
sentences are set apart before any model reads the event (core.formats.Event keeps them under
the "withheld" key, so no data is lost, but nothing downstream embeds, scores or quotes them).
"""
from __future__ import annotations

import re

_DIRECTIVE_RES = [re.compile(p, re.I) for p in (
    # "ignore / disregard all previous rules", "forget your instructions"
    r"\b(ignore|disregard|forget|override|bypass)\b[^.!?]{0,60}?\b(rules?|instructions?|prompts?|guidelines|"
    r"polic(y|ies)|directions|guardrails)\b",
    # addressing the assistant's role or its output
    r"\b(you are now (an?|the|in|my)|act as (an?|the) (assistant|ai)|pretend (to be|you are)|new instructions?|system prompt|"
    r"developer mode|jailbreak)\b",
    r"\b(tell|instruct|inform|advise) the (user|wearer)\b",
    r"\b(assistant|chatbot|ai model|language model)\b[^.!?]{0,40}\b(must|should|will|shall|now)\b[^.!?]{0,40}\b(say|tell|"
    r"speak|announce|remind|recommend|output|respond)\b",
)]
# Sentence ends (., !, ? before whitespace) and speaker turns ("[name] ...") delimit the pieces.
_PIECE_END = re.compile(r"(?<=[.!?])(?=\s)|(?=\s+\[)")


def is_directive(sentence: str) -> bool:
    return any(p.search(sentence) for p in _DIRECTIVE_RES)


def split_directives(text: str) -> tuple[str, list[str]]:
    """(text without directive sentences, those sentences). Text without any comes back unchanged."""
    pieces = _PIECE_END.split(text)
    gone = [p for p in pieces if is_directive(p)]
    if not gone:
        return text, []
    kept = "".join(p for p in pieces if not is_directive(p)).strip()
    return kept, [" ".join(p.split()) for p in gone]
