"""Walk a clip folder (docs/formats.md section 1): clips, their sidecars and audio, profiles, start times."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any, Optional
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.formats import Profile

VIDEO_EXTS = (".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v")
AUDIO_EXTS = (".wav", ".mp3", ".m4a", ".flac", ".ogg", ".opus", ".aac")
SIDECAR_KEYS = ("start", "location", "narration", "transcript")

# Both file-name styles of section 1; the separator between date and time varies by device.
_NAME_PATTERNS = (
    (re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2})-(\d{2})-(\d{2})"), "iso"),
    (re.compile(r"(?<!\d)(\d{4})(\d{2})(\d{2})_(\d{2})(\d{2})(\d{2})(?!\d)"), "compact"),
)


class ClipFolderError(ValueError):
    """The folder as a whole cannot be read (missing, unreadable profile): nothing is processed."""


class ClipError(ValueError):
    """One clip cannot be turned into an event; the others go on."""


@dataclass
class Clip:
    path: Path
    rel: str  # path relative to the clip folder, POSIX separators: the stable name of the clip
    profile: Profile
    tz: tzinfo
    sidecar_path: Optional[Path] = None
    audio_path: Optional[Path] = None
    sidecar: dict[str, Any] = field(default_factory=dict)
    name_error: Optional[str] = None  # why this clip cannot become an event whatever it holds


    def load_sidecar(self) -> dict[str, Any]:
        """Parse the sidecar once; a malformed one fails the clip (fixing it and rerunning redoes it)."""
        if self.sidecar_path is None or self.sidecar:
            return self.sidecar
        try:
            data = json.loads(self.sidecar_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ClipError(f"sidecar {self.sidecar_path.name}: malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ClipError(f"sidecar {self.sidecar_path.name}: unreadable: {exc}") from None
        if not isinstance(data, dict):
            raise ClipError(f"sidecar {self.sidecar_path.name}: expected a JSON object, got {type(data).__name__}")
        for key in SIDECAR_KEYS:
            if key in data and data[key] is not None and not isinstance(data[key], str):
                raise ClipError(f"sidecar {self.sidecar_path.name}: key '{key}' must be a string")
        self.sidecar = data
        return data


def local_tz() -> tzinfo:
    return datetime.now().astimezone().tzinfo or timezone.utc


def _load_profile(path: Path, default_user: str) -> Profile:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ClipFolderError(f"{path}: malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except OSError as exc:
        raise ClipFolderError(f"{path}: unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise ClipFolderError(f"{path}: expected a JSON object")
    try:
        return Profile.model_validate({"user_id": default_user, **data})
    except Exception as exc:
        raise ClipFolderError(f"{path}: {exc}") from None


def _tz_of(profile: Profile, where: Path) -> tzinfo:
    if not profile.timezone:
        return local_tz()
    try:
        return ZoneInfo(profile.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ClipFolderError(f"{where}: unknown timezone {profile.timezone!r} (use an IANA name such as 'Europe/Berlin')") from None


def discover(root: str | Path, default_user: str = "u1") -> list[Clip]:
    """All clips under root, sorted by relative path (start-time order needs the media; see start_time).

    A profile.json applies to its folder and every sub-folder below it; the nearest one wins, so one
    folder per user keeps users apart even when they share a parent.
    """
    root = Path(root)
    if not root.is_dir():
        raise ClipFolderError(f"clip folder not found: {root}")
    profiles: dict[Path, tuple[Profile, tzinfo]] = {}

    def profile_for(folder: Path) -> tuple[Profile, tzinfo]:
        if folder in profiles:
            return profiles[folder]
        pfile = folder / "profile.json"
        if pfile.is_file():
            prof = _load_profile(pfile, default_user)
            result = (prof, _tz_of(prof, pfile))
        elif folder == root:
            prof = Profile(user_id=default_user)
            result = (prof, local_tz())
        else:
            result = profile_for(folder.parent)
        profiles[folder] = result
        return result

    clips = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix.lower() not in VIDEO_EXTS or path.name.startswith("."):
            continue
        prof, tz = profile_for(path.parent)
        sidecar = path.with_suffix(".json")
        audio = next((path.with_suffix(ext) for ext in AUDIO_EXTS if path.with_suffix(ext).is_file()), None)
        rel, name_error = _readable_name(path.relative_to(root).as_posix())
        clips.append(Clip(path=path, rel=rel, profile=prof, tz=tz, name_error=name_error,
                          sidecar_path=sidecar if sidecar.is_file() else None, audio_path=audio))
    return clips


def _readable_name(rel: str) -> tuple[str, Optional[str]]:
    """(name to show, why it cannot be an event id). A name that is not UTF-8 reaches Python with
    surrogate escapes, which no JSON Lines file can hold: it is shown with its bytes escaped."""
    try:
        rel.encode("utf-8")
        return rel, None
    except UnicodeEncodeError:
        shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        return shown, f"file name is not valid UTF-8 ({shown}); rename the clip and its sidecar to UTF-8 names"


def time_from_name(name: str) -> Optional[datetime]:
    for pattern, _ in _NAME_PATTERNS:
        m = pattern.search(name)
        if m:
            try:
                return datetime(*(int(g) for g in m.groups()))
            except ValueError:
                continue  # e.g. month 13: not a timestamp after all
    return None


def _parse_any(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)


def start_time(clip: Clip, creation_time: Optional[str]) -> tuple[datetime, str]:
    """The clip's start and which rule gave it (section 1 order: sidecar, file name, container, mtime).

    Naive times (a sidecar without offset, a file name) are wall-clock times of the profile's timezone,
    else of this machine's; the result is always aware and expressed in that timezone.
    """
    side = clip.load_sidecar().get("start")
    if side:
        try:
            dt = _parse_any(side)
        except ValueError:
            raise ClipError(f"sidecar {clip.sidecar_path.name}: 'start' is not an ISO-8601 time: {side!r}") from None
        return _localize(dt, clip.tz), "sidecar"
    dt = time_from_name(clip.path.stem)
    if dt is not None:
        return _localize(dt, clip.tz), "file name"
    if creation_time:
        try:
            dt = _parse_any(creation_time)
            # Containers store creation time in UTC (QuickTime/MP4 spec); a naive one is UTC too.
            return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).astimezone(clip.tz), "container"
        except ValueError:
            pass
    mtime = datetime.fromtimestamp(clip.path.stat().st_mtime, tz=timezone.utc)
    return mtime.astimezone(clip.tz), "file mtime"


def _localize(dt: datetime, tz: tzinfo) -> datetime:
    if dt.tzinfo is None:
        return dt.replace(tzinfo=tz)
    return dt
