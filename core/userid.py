"""User ids, and the per-user folders derived from them.

Every path built from a user id (which comes from input data: a URL, a profile.json, an event)
goes through user_dir() or user_file(), which take only a valid id and check that the result
stays inside its parent folder.
"""
from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Optional

log = logging.getLogger(__name__)
USER_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$")


class BadUserId(ValueError):
    pass


def check_user_id(user_id: object) -> Optional[str]:
    """Why a user id is not acceptable, or None."""
    if not isinstance(user_id, str) or not USER_ID_RE.match(user_id):
        return ("user id must be 1-128 characters of letters, digits and _ . @ : -, "
                f"starting with a letter or digit; got {user_id!r}")
    return None


def require_user_id(user_id: object) -> str:
    if why := check_user_id(user_id):
        raise BadUserId(why)
    return user_id  # type: ignore[return-value]


def user_dir_name(user_id: str) -> str:
    """A folder name per user: a readable prefix, then the full SHA-256 of the id, so no two ids share one."""
    slug = re.sub(r"[^A-Za-z0-9_.-]", "_", user_id)[:40]
    return f"{slug}-{hashlib.sha256(user_id.encode()).hexdigest()}"


def legacy_user_dir_name(user_id: str) -> str:
    """The folder name of stores written before full-length digests (32 bits of SHA-1: ids could collide)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]", "_", user_id)[:40]
    return f"{slug}-{hashlib.sha1(user_id.encode()).hexdigest()[:8]}"


def inside(parent: Path, child: Path) -> Path:
    """child, after checking that it resolves to a path inside parent (no "..", no symlink out)."""
    root = Path(parent).resolve()
    real = Path(child).resolve()
    if real != root and not real.is_relative_to(root):
        raise BadUserId(f"{child} would lie outside {parent}")
    return Path(child)


def user_dir(parent: Path, user_id: str) -> Path:
    """parent/<user folder>. A folder under the legacy name is renamed to the new one on first use, so
    existing stores keep their users' files."""
    require_user_id(user_id)
    parent = Path(parent)
    new = inside(parent, parent / user_dir_name(user_id))
    old = parent / legacy_user_dir_name(user_id)
    if not new.exists() and old.is_dir():
        try:
            old.rename(new)
            log.info("moved %s to %s (collision-free user folder)", old, new)
        except OSError as exc:  # a read-only store: read the old folder in place
            log.warning("cannot rename %s to %s (%s); using it in place", old, new, exc)
            return old
    return new


def user_file(parent: Path, prefix: str, user_id: str, suffix: str) -> Path:
    """parent/<prefix><user id><suffix> for a valid id, checked to stay inside parent."""
    require_user_id(user_id)
    return inside(parent, Path(parent) / f"{prefix}{user_id}{suffix}")
