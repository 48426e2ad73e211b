"""Filling seed text: `{a|b|c}` picks one alternative, `{role}` is a person's name.

Innermost braces are filled first, so an alternative may hold a role: "{Thanks, {friend}|Cheers}".
"""
from __future__ import annotations

import random
import re

_BRACE = re.compile(r"\{([^{}]*)\}")

ROLES = ("user", "friend", "friend2", "coworker", "boss", "partner", "roommate", "kid", "sibling", "neighbor")


def fill(text: str, roles: dict[str, str], rng: random.Random, where: str = "") -> str:
    def one(m: re.Match) -> str:
        body = m.group(1)
        if "|" in body:
            return rng.choice(body.split("|"))
        if body in roles:
            return roles[body]
        raise ValueError(f"{where}: unknown placeholder {{{body}}} in {text!r}; roles are {', '.join(ROLES)}")

    prev = None
    while prev != text:
        prev, text = text, _BRACE.sub(one, text)
    return re.sub(r"\s{2,}", " ", text).strip()


def placeholders(text: str) -> set[str]:
    """Role names a text uses (alternatives excluded), for checking seeds against ROLES."""
    out = set()
    for body in re.findall(r"\{([^{}|]*)\}", text):
        out.add(body)
    return out


def keywords_match(text: str, groups: list[list[str]]) -> bool:
    """The offline keyword judge of docs/formats.md section 3: every group has a string in the text."""
    return all(any(re.search(rf"(?<!\w){re.escape(s)}(?!\w)", text, re.IGNORECASE) for s in g) for g in groups)
