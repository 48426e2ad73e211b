"""FAISS indexes derived from the store: loaded from disk, caught up or rebuilt from SQLite.

On open, an index whose vector count disagrees with the store's rows after catching up (files
written by two processes at once, a copied store) is rebuilt from SQLite, which holds every vector.

One file per (user, index) holds a JSON header (which store rows it covers) and the
serialised index together, written by temp file + rename: a crash leaves the old file or the
new one, never a header that disagrees with its vectors.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Optional

import faiss
import numpy as np

from memory.store import Store

log = logging.getLogger(__name__)
# One query at a time: OpenMP threads add only synchronisation, and on a busy CPU their spin-waits
# turned a 4 ms flat search at 10,000 memories into 95 ms. Batch jobs may raise it again.
faiss.omp_set_num_threads(1)
MAGIC = b"PROMEMIDX1\n"


def _make(dim: int, cfg, n_hint: int) -> tuple[faiss.Index, str]:
    """The configured index type; IVF needs enough vectors to train, so it starts flat."""
    kind = cfg.type
    if kind == "flat" or (kind == "ivf" and n_hint < 39 * cfg.nlist):
        return faiss.IndexIDMap2(faiss.IndexFlatIP(dim)), "flat"
    if kind == "hnsw":
        base = faiss.IndexHNSWFlat(dim, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        base.hnsw.efSearch = cfg.ef_search
        base.hnsw.efConstruction = max(40, cfg.hnsw_m * 2)
        return faiss.IndexIDMap(base), "hnsw"
    if kind == "ivf":
        quant = faiss.IndexFlatIP(dim)
        base = faiss.IndexIVFFlat(quant, dim, cfg.nlist, faiss.METRIC_INNER_PRODUCT)
        base.nprobe = cfg.nprobe
        return faiss.IndexIDMap(base), "ivf"
    raise ValueError(f"memory.index.type must be flat, ivf or hnsw, got {kind!r}")


class VectorIndex:
    """Inner-product index over one store table (facts or event cues) of one user."""

    def __init__(self, store: Store, user: str, table: str, dim: int, cfg, path: Optional[Path],
                 readonly: bool = False):
        """path: the index file (None: in memory only); readonly: read the file, never write it."""
        self.store, self.user, self.table, self.dim, self.cfg, self.path = store, user, table, dim, cfg, path
        self.readonly = readonly
        self.max_id = 0
        self.index, self.kind = _make(dim, cfg, 0)
        self.dirty = False
        self._open()

    # -- lifecycle ------------------------------------------------------------------------
    def _open(self) -> None:
        if self.path is not None and self.path.exists():
            try:
                self._read()
            except Exception as exc:  # a damaged file is only a cache: rebuild it from the store
                log.warning("index %s unreadable (%s); rebuilding from the store", self.path, exc)
                self.rebuild()
                return
            if self.max_id > self.store.max_id(self.user, self.table):
                log.warning("index %s is ahead of the store; rebuilding", self.path)
                self.rebuild()
                return
        self.catch_up()
        stored = self._stored()
        if self.index.ntotal != stored:
            log.warning("index %s holds %d vectors but the store %d %s of user %r; rebuilding it from the store",
                        self.path, self.index.ntotal, stored, self.table, self.user)
            self.rebuild()

    def _stored(self) -> int:
        return self.store.count(self.user, self.table, "event" if self.table == "cues" else None)

    def _read(self) -> None:
        raw = self.path.read_bytes()
        if not raw.startswith(MAGIC):
            raise ValueError("not a promem index file")
        nl = raw.index(b"\n", len(MAGIC))
        head = json.loads(raw[len(MAGIC):nl])
        if head["dim"] != self.dim:
            raise ValueError(f"dimension {head['dim']} != {self.dim}")
        if head["type"] != self.cfg.type and not (self.cfg.type == "ivf" and head["type"] == "flat"):
            raise ValueError(f"index type {head['type']} but config asks {self.cfg.type}")
        index = faiss.deserialize_index(np.frombuffer(raw[nl + 1:], dtype=np.uint8))
        if index.ntotal != head["count"]:
            raise ValueError("header count disagrees with the vectors")
        self.index, self.max_id, self.kind = index, head["max_id"], head["type"]
        self._tune()

    def _tune(self) -> None:
        base = faiss.downcast_index(self.index.index) if hasattr(self.index, "index") else self.index
        if isinstance(base, faiss.IndexHNSWFlat):
            base.hnsw.efSearch = self.cfg.ef_search
        if isinstance(base, faiss.IndexIVFFlat):
            base.nprobe = self.cfg.nprobe

    def rebuild(self) -> None:
        ids, vecs = self.store.vectors_after(self.user, self.table, 0, self.dim)
        self.index, self.kind = _make(self.dim, self.cfg, len(ids))
        if self.kind == "ivf":
            self.index.train(vecs)
        self.max_id = 0
        self._add(ids, vecs)
        self.dirty = True  # also when it is now empty: the file on disk still holds the old vectors

    def catch_up(self) -> int:
        """Add the store rows this index has not seen (after a crash, or a file written earlier)."""
        ids, vecs = self.store.vectors_after(self.user, self.table, self.max_id, self.dim)
        if self.cfg.type == "ivf" and self.kind == "flat" and self.index.ntotal + len(ids) >= 39 * self.cfg.nlist:
            self.rebuild()
            return len(ids)
        self._add(ids, vecs)
        if len(ids):
            log.debug("index %s/%s caught up %d rows", self.user, self.table, len(ids))
        return len(ids)

    def _add(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        if len(ids):
            self.index.add_with_ids(np.ascontiguousarray(vecs, dtype=np.float32), ids.astype(np.int64))
            self.max_id = int(ids.max())
            self.dirty = True

    def add(self, ids: list[int], vecs: list[np.ndarray]) -> None:
        """Add rows just committed to the store (ids ascending, all above max_id)."""
        if not ids:
            return
        if self.cfg.type == "ivf" and self.kind == "flat" and self.index.ntotal + len(ids) >= 39 * self.cfg.nlist:
            self.rebuild()  # enough vectors to train the clusters now; the store already holds these rows
            return
        self._add(np.asarray(ids, dtype=np.int64), np.vstack(vecs))

    def save(self) -> None:
        if self.path is None or not self.dirty or self.readonly:
            return
        head = json.dumps({"dim": self.dim, "type": self.kind, "count": int(self.index.ntotal),
                           "max_id": self.max_id, "user": self.user, "table": self.table}).encode()
        blob = faiss.serialize_index(self.index)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + head + b"\n")
                fh.write(blob.tobytes())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        self.dirty = False

    # -- queries --------------------------------------------------------------------------
    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def search(self, q: np.ndarray, n: int) -> list[tuple[int, float]]:
        if self.index.ntotal == 0 or n <= 0:
            return []
        scores, ids = self.index.search(np.ascontiguousarray(q.reshape(1, -1), dtype=np.float32),
                                        min(n, self.index.ntotal))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]
