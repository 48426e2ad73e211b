"""One writer per store folder: an exclusive flock on STORE/writer.lock, held while the store is open.

Two processes appending to one store would each keep their own FAISS index files and
overwrite the other's, and two services would decide the same event twice; the second writer
gets a StoreError naming the store and the process that holds it instead. Readers take no
lock. The kernel drops the lock when its process dies (even by kill -9), so a crash never
leaves the store locked. Within one process the lock is shared (reference-counted): the
service opens one memory per user on the same store.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

LOCK_NAME = "writer.lock"


class StoreError(ValueError):
    """The store cannot be used as asked (busy, read-only, damaged, not a folder); the message names the file."""


_held: dict[str, list] = {}  # lock file (real path) -> [fd, holders in this process]
_mutex = threading.Lock()


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        return f"pid {info['pid']} on {info['host']} since {info['since']}: {info['command']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


class StoreLock:
    def __init__(self, folder: Path):
        self.path = Path(folder) / LOCK_NAME
        self.key = os.path.realpath(self.path)
        self.released = False
        with _mutex:
            if self.key in _held:
                _held[self.key][1] += 1
                return
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise StoreError(f"store {folder}: cannot write {self.path} ({exc.strerror}); a store this user "
                                 f"may not write can only be read (promem recall)") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise StoreError(f"store {folder} is in use by another writer ({_holder(self.path)}); wait for it "
                                 f"to finish, stop it, or use another store") from None
            info = {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(sys.argv)[:300],
                    "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
            _held[self.key] = [fd, 1]

    def release(self) -> None:
        with _mutex:
            if self.released:
                return
            self.released = True
            entry = _held.get(self.key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] == 0:
                del _held[self.key]
                os.close(entry[0])  # closing the only descriptor drops the flock
