"""Request validation of the service, without a server: every bad event is named with its key."""
import pytest

from serve.app import parse_events
from serve.sessions import check_user_id

OK = {"id": "e1", "time": "2026-09-17T08:00:00Z", "visual": "v"}


def test_events_get_the_path_user_and_keep_unknown_keys():
    evs = parse_events([OK, {**OK, "id": "e2", "user_id": "u1", "heart_rate": 71}], "u1", 10)
    assert [e.user_id for e in evs] == ["u1", "u1"] and evs[1].model_extra["heart_rate"] == 71


def test_all_problems_of_a_batch_are_reported_together():
    with pytest.raises(ValueError) as err:
        parse_events([OK, {"id": "e2", "visual": "v"}, {"id": "e3", "time": "2026-09-17T08:00:00Z"}], "u1", 10)
    msg = str(err.value)
    assert "event 1 (id 'e2'): missing key 'time'" in msg and "event 2 (id 'e3')" in msg and "event 0" not in msg


def test_too_many_events_in_one_request():
    with pytest.raises(ValueError, match="3 events in one request; at most 2"):
        parse_events([OK, OK, OK], "u1", 2)


@pytest.mark.parametrize("user, ok", [("u1", True), ("alice@example.org", True), ("a" * 128, True),
                                      ("", False), ("../x", False), ("a b", False), ("a" * 129, False)])
def test_user_ids(user, ok):
    assert (check_user_id(user) is None) is ok
