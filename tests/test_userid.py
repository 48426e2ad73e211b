"""User folders: collision-free names, legacy folders kept, and no path built from an id leaves its parent."""
import itertools

import pytest

from core.userid import (BadUserId, check_user_id, inside, legacy_user_dir_name, user_dir, user_dir_name,
                         user_file)


def legacy_collision(limit: int = 2_000_000) -> tuple[str, str]:
    """Two valid ids that shared a folder under the old 32-bit scheme (birthday search, ~80k tries)."""
    seen: dict[str, str] = {}
    prefix = "p" * 40  # the readable prefix is cut at 40 characters: only the hash tells these apart
    for n in itertools.islice(itertools.count(), limit):
        uid = f"{prefix}{n}"
        name = legacy_user_dir_name(uid)
        if name in seen:
            return seen[name], uid
        seen[name] = uid
    raise AssertionError("no collision found")


@pytest.fixture(scope="session")
def colliding_ids():
    a, b = legacy_collision()
    assert a != b and check_user_id(a) is None and check_user_id(b) is None
    return a, b


def test_ids_that_collided_under_the_old_scheme_get_separate_folders(colliding_ids, tmp_path):
    a, b = colliding_ids
    assert legacy_user_dir_name(a) == legacy_user_dir_name(b)
    assert user_dir_name(a) != user_dir_name(b)
    assert user_dir(tmp_path, a) != user_dir(tmp_path, b)


def test_a_legacy_folder_is_renamed_on_first_use(tmp_path):
    old = tmp_path / legacy_user_dir_name("alice")
    old.mkdir()
    (old / "decisions.jsonl").write_text('{"event_id": "e1", "assist": false}\n')
    new = user_dir(tmp_path, "alice")
    assert new.name == user_dir_name("alice") and not old.exists()
    assert (new / "decisions.jsonl").read_text().startswith('{"event_id": "e1"')
    assert user_dir(tmp_path, "alice") == new  # stable afterwards


@pytest.mark.parametrize("bad", ["../x", "..", "a/../../b", "/etc", "a b", "", "a" * 129, "-x", None, 7])
def test_paths_are_only_built_from_valid_ids(bad, tmp_path):
    with pytest.raises(BadUserId):
        user_dir(tmp_path, bad)
    with pytest.raises(BadUserId):
        user_file(tmp_path, "guard-", bad, ".json")
    assert list(tmp_path.iterdir()) == []


def test_a_symlink_cannot_lead_a_user_folder_out_of_the_store(tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "store" / user_dir_name("u1")).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(BadUserId, match="outside"):
        user_dir(tmp_path / "store", "u1")
    assert inside(tmp_path, tmp_path / "a" / "b") == tmp_path / "a" / "b"
