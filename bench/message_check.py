"""How often the composed message names what the keyword judge looks for, with no model in the loop.

For every intention of every positive instance, the message is composed from its formation event
alone (as if the gate spoke at the decision event and rested on the right past) and judged by
bench.judges.keywords.addresses. This isolates the composer from retrieval and the gate.

    python -m bench.message_check runs/msg/train.jsonl [--show]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from bench.judges.keywords import addresses
from core.formats import Instance
from reasoner.gate.compose import compose_message, word_count
from training.data import load_instances


@dataclass(frozen=True)
class Miss:
    instance: str
    intention: str
    keywords: list[list[str]]
    message: str


@dataclass
class MessageCheck:
    intentions: int = 0
    accepted: int = 0
    named: int = 0  # the thing (first keyword group) is named, whatever the rest
    max_words: int = 0
    total_words: int = 0
    misses: list[Miss] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.accepted / self.intentions if self.intentions else 0.0

    @property
    def mean_words(self) -> float:
        return self.total_words / self.intentions if self.intentions else 0.0

    def summary(self) -> str:
        return (f"positive intentions {self.intentions}; accepted {self.accepted} ({100 * self.share:.1f}%); "
                f"thing named {self.named}; words max {self.max_words}, mean {self.mean_words:.1f}")


def check(instances: Iterable[Instance], reader=None) -> MessageCheck:
    """reader: a trained thing reader for the composer (reasoner.gate.thing_reader), else rules alone."""
    out = MessageCheck()
    for inst in instances:
        if inst.variant != "positive":
            continue
        current = inst.event(inst.decision_event)
        for it in inst.intentions:
            msg = compose_message([inst.event(it.formation)], current, reader).message
            n = word_count(msg)
            out.intentions += 1
            out.max_words = max(out.max_words, n)
            out.total_words += n
            out.named += addresses(msg, it.keywords[:1])
            if addresses(msg, it.keywords):
                out.accepted += 1
            else:
                out.misses.append(Miss(inst.id, it.id, it.keywords, msg))
    return out


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.message_check", description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, help="CPMBench JSONL (e.g. from `promem bench generate`)")
    ap.add_argument("--reader", type=Path, help="a trained thing reader folder (default: the composer's rules alone)")
    ap.add_argument("--show", action="store_true", help="print each failure: its keywords and message")
    args = ap.parse_args(argv)
    reader = None
    if args.reader:
        from reasoner.gate.thing_reader import load_reader

        reader = load_reader(args.reader)
    result = check(load_instances(args.data), reader)
    if args.show:
        for m in result.misses:
            print(f"{m.instance} {m.intention} {m.keywords}\n    {m.message}")
    print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
