"""JSON Lines reading never loses the good lines: a malformed or non-UTF-8 line is reported by file
and line, and the lines after it are read."""
from core.formats import Event, read_records
from core.jsonio import LineError, iter_jsonl


def test_a_non_utf8_line_is_reported_and_the_rest_is_read(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"id": "a", "time": "2026-03-02T08:00:00+01:00", "visual": "Caf\xc3\xa9."}\n'
                     b'{"id": "b", "time": "2026-03-02T09:00:00+01:00", "visual": "Caf\xe9 latin-1."}\n'
                     b"\n"
                     b'{"id": "c", "time": "2026-03-02T10:00:00+01:00", "audio": "Fine again."}\r\n')
    got = list(iter_jsonl(path))
    assert [no for no, _ in got] == [1, 2, 4]
    err = got[1][1]
    assert isinstance(err, LineError) and str(err).startswith(f"{path}:2: not UTF-8")
    good, bad = read_records(path, Event)
    assert [e.id for _, e in good] == ["a", "c"] and good[0][1].visual == "Café."
    assert [(b.line, b.message.split(" (")[0]) for b in bad] == [(2, "not UTF-8")]
