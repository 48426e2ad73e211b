from datetime import datetime, timedelta, timezone

from memory.timecues import resolve

TZ = timezone(timedelta(hours=-7))
WED = datetime(2026, 9, 16, 10, 0, tzinfo=TZ)  # a Wednesday morning


def one(text, now=WED):
    got = resolve(text, now)
    assert len(got) == 1, got
    return got[0]


def test_weekday_with_part_of_day_is_that_evening():
    w = one("Let's do it Friday evening.")
    assert (w.start, w.end) == (datetime(2026, 9, 18, 17, tzinfo=TZ), datetime(2026, 9, 18, 22, tzinfo=TZ))
    assert w.start.utcoffset() == timedelta(hours=-7)


def test_next_sunday_and_tomorrow_and_clock_time():
    assert one("the club match is next Sunday").start == datetime(2026, 9, 20, tzinfo=TZ)
    w = one("dentist tomorrow at 3pm")
    assert w.contains(datetime(2026, 9, 17, 14, 30, tzinfo=TZ))
    assert not w.contains(datetime(2026, 9, 17, 16, 0, tzinfo=TZ))


def test_same_weekday_means_next_week_unless_this():
    assert one("on Wednesday").start == datetime(2026, 9, 23, tzinfo=TZ)
    assert one("this Wednesday evening").start == datetime(2026, 9, 16, 17, tzinfo=TZ)


def test_relative_offsets_and_weekend():
    w = one("call me back in two hours")
    assert w.contains(WED + timedelta(hours=2)) and not w.contains(WED + timedelta(hours=4))
    w = one("we could go this weekend")
    assert w.start == datetime(2026, 9, 19, tzinfo=TZ) and w.end == datetime(2026, 9, 21, tzinfo=TZ)


def test_vague_or_past_expressions_make_no_cue():
    assert resolve("Tomato or lentil today?", WED) == []
    assert resolve("this morning was rough", WED.replace(hour=13)) == []
    assert resolve("nothing temporal here", WED) == []


def test_phrases_past_the_calendar_make_no_cue_and_never_raise(caplog):
    # Overflowing phrases are logged and skipped; the ordinary phrase beside them still resolves.
    got = resolve("Let's meet again in 500000 weeks, or in 99999999999 days, or in 3 hours.", WED)
    assert [w.expression for w in got] == ["in 3 hours"]
    assert "in 500000 weeks" in caplog.text and "in 99999999999 days" in caplog.text
    last_day = datetime(9999, 12, 31, 20, 0, tzinfo=TZ)
    assert resolve("See you tomorrow, and next Sunday, and in 2 days.", last_day) == []
    assert resolve("in " + "9" * 5000 + " days", WED) == []  # more digits than int() reads
    first_day = datetime(1, 1, 1, 0, 30, tzinfo=timezone.utc)
    assert [w.expression for w in resolve("in 2 hours", first_day)] == ["in 2 hours"]
