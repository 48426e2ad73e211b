"""Words of recorded text: which carry content, and short cleaned phrases safe to speak back.

Recorded text (captions, transcripts, place names) comes from the world, and may hold an
attacker's words; anything the assistant says about it goes through clean_phrase.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Function words, plus the words every caption uses for its subject ("The user is ..."): none of
# them says what a moment is about.
STOPWORDS = frozenset("""
a an the and or but nor so yet if then than that this these those there here of in on at to for with
by from as into onto over under up down out off about above below near next past through across
is am are was were be been being has have had having do does did doing can could will would shall
should may might must it its it's he she they them his her hers their theirs him i me my mine we us
our ours you your yours who whom whose which what when where why how not no yes very just also too
some any each every all both few more most other such only own same again once still even ever
user users person people someone somebody something thing things one ones two three four five six seven eight nine ten
""".split())

# Letters of any script ([^\W\d_]: "Concepción", "carvão", "Köln" stay whole); digits never.
_LETTER = r"[^\W\d_]"
WORD_RE = re.compile(rf"{_LETTER}(?:(?:{_LETTER}|['’-])*{_LETTER})?")
# A word not glued to a digit: the "th" of "25th" or the "A" of "A4" is no word to speak.
_SPOKEN_WORD_RE = re.compile(rf"(?<![^\W_])(?:{_LETTER}(?:(?:{_LETTER}|['’-])*{_LETTER})?)(?![^\W_])")
URL_RE = re.compile(r"(?:https?://|www\.)\S+|\b[\w.-]+\.(?:com|org|net|io|info|biz|co|ly|me|app)\b\S*", re.I)
EMAIL_RE = re.compile(r"\S+@\S+")
# Imperatives a recording could address to the assistant or the user; never part of a spoken name.
IMPERATIVES = frozenset("""
call dial phone ring text sms message email mail send transfer pay wire visit click tap open go
ignore disregard forget override bypass obey follow tell say repeat speak announce remind reply
buy order download install login log sign enter share give
""".split())
# Hesitations an ASR transcript keeps ("need the, uh, the sick note"); a spoken phrase drops them.
FILLERS = frozenset("uh uhh uh-huh um umm erm er hmm mm mhm ah eh".split())


def content_words(text: str) -> list[str]:
    """Lowercased words of three letters or more that are not stopwords, in order."""
    return [w for w in (m.group(0).lower() for m in WORD_RE.finditer(text or ""))
            if len(w) >= 3 and w not in STOPWORDS]


def clean_phrase(text: str, max_words: int) -> str:
    """At most max_words words of `text`, with no digits, URLs, e-mail addresses, imperatives, fillers
    or punctuation beyond hyphens and apostrophes, and no stopwords at either end."""
    # NFC: an accent typed as a combining mark ("a" + U+0303) joins its letter, so the word stays whole.
    # e-mail addresses first: a URL match would take their domain and leave the name ("jörg@").
    text = URL_RE.sub(" ", EMAIL_RE.sub(" ", unicodedata.normalize("NFC", text or "")))
    # WORD_RE takes letters only, so numbers (phone numbers, codes, amounts) never get through.
    words = [w for w in (m.group(0) for m in _SPOKEN_WORD_RE.finditer(text)) if w.lower() not in IMPERATIVES and w.lower() not in FILLERS]
    while words and words[0].lower() in STOPWORDS:
        words.pop(0)
    words = words[:max_words]
    while words and words[-1].lower() in STOPWORDS:
        words.pop()
    return " ".join(words)


def user_speech(audio: str) -> str:
    """The wearer's own words when diarization labelled them ("[user] ..."), else the whole transcript."""
    mine = re.findall(r"\[user\]\s*([^\[]+)", audio or "")
    return " ".join(s.strip() for s in mine) if mine else re.sub(r"\[[^\]]+\]\s*", "", audio or "").strip()


@lru_cache(maxsize=4096)
def keyword_pattern(term: str) -> re.Pattern:
    """A CPMBench keyword as the keyword judge matches it (docs/formats.md section 3): case-insensitive,
    at word boundaries. Lookarounds rather than \\b, so terms that start or end with punctuation match too."""
    return re.compile(r"(?<!\w)" + re.escape(term.strip()) + r"(?!\w)", re.IGNORECASE)


def addresses(message: str, keywords: list[list[str]]) -> bool:
    """True when, for every group, the message contains at least one of its strings."""
    return all(any(keyword_pattern(t).search(message) for t in group) for group in keywords)
