"""core.text keeps words of any script whole, and still lets no digits, URLs or e-mail addresses through."""
from core.text import WORD_RE, clean_phrase, content_words


def test_non_english_words_survive_whole():
    assert clean_phrase("Calle Castellón, Concepción", 5) == "Calle Castellón Concepción"
    assert clean_phrase("o carvão fica comigo", 5) == "o carvão fica comigo"
    assert clean_phrase("Köln Hbf", 3) == "Köln Hbf"
    assert WORD_RE.findall("Straße, niño's") == ["Straße", "niño's"]
    assert content_words("el maíz blanco") == ["maíz", "blanco"]


def test_a_combining_accent_joins_its_letter():
    assert clean_phrase("carva\u0303o", 2) == "carvão"


def test_digits_urls_and_emails_stay_out():
    said = clean_phrase("Köln 25th A4 0900-123456 www.bäckerei.de schreib an jörg@example.com Füße", 20)
    assert said == "Köln schreib an Füße", said
