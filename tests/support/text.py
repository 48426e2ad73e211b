"""Text checks shared by the message tests."""
import re

WORD = re.compile(r"[a-z0-9][a-z0-9'’-]*")


def longest_shared_run(msg: str, source: str, word: re.Pattern = WORD) -> int:
    """The longest run of consecutive words of `source` that `msg` repeats."""
    a, b = word.findall(msg.lower()), word.findall(source.lower())
    best = 0
    for i in range(len(a)):
        for j in range(len(b)):
            k = 0
            while i + k < len(a) and j + k < len(b) and a[i + k] == b[j + k]:
                k += 1
            best = max(best, k)
    return best
