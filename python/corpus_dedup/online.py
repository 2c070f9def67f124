"""Dedup online from Python: `Index` decides in this process over the index nightly runs keep
(the same decisions, journal and lock as `corpus-dedup serve`); `Client` asks a running server.

    index = corpus_dedup.Index("dedup/index")
    index.add(["page-1"], ["some text"])     # [{"id": "page-1", "duplicate": False, "added": True, ...}]
    index.check(["some text, barely edited"])  # [{"duplicate": True, "duplicate_of": "page-1", ...}]

    client = corpus_dedup.Client("http://127.0.0.1:8700", token=None)
    client.add(["page-2"], ["other text"]); client.stats()
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional, Sequence

from corpus_dedup import _native
from corpus_dedup._native import ConfigError, Error


class Index:
    """The index directory `path` (local), opened for checks and adds in this process. It takes
    the index's server lock: no `corpus-dedup serve` may use the same index meanwhile."""

    def __init__(self, path: str) -> None:
        self._native = _native.NativeIndex(path)

    def check(self, texts: Sequence[str], ids: Optional[Sequence[Optional[str]]] = None,
              partitions: Optional[Sequence[Optional[str]]] = None) -> List[Dict[str, Any]]:
        """Whether each text is a near-duplicate of a retained document; nothing is retained.
        An index built with `--partition-by` needs each text's value there (`partitions`)."""
        ids = list(ids) if ids is not None else [None] * len(texts)
        return json.loads(self._native.check(ids, list(texts), _listed(partitions)))

    def add(self, ids: Sequence[str], texts: Sequence[str],
            partitions: Optional[Sequence[Optional[str]]] = None) -> List[Dict[str, Any]]:
        """The same check, then each text that duplicates nothing is retained, durably, in order."""
        return json.loads(self._native.add(list(ids), list(texts), _listed(partitions)))

    def remove(self, id: str) -> bool:
        """The retained document `id` matches nothing from now on; False when none has it."""
        return self._native.remove(id)

    def stats(self) -> Dict[str, Any]:
        """Documents retained, requests, latency percentiles (what `GET /stats` gives)."""
        return json.loads(self._native.stats())


class Client:
    """A running `corpus-dedup serve` at `url`, with its bearer `token` if it has one."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token is not None:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            message = json.loads(e.read() or b"{}").get("error", str(e))
            kind = ConfigError if 400 <= e.code < 500 else Error
            raise kind(f"{method} {path}: {e.code}: {message}") from None

    def check(self, texts: Sequence[str], ids: Optional[Sequence[Optional[str]]] = None,
              partitions: Optional[Sequence[Optional[str]]] = None) -> List[Dict[str, Any]]:
        ids = list(ids) if ids is not None else [None] * len(texts)
        return self._call("POST", "/check", _items(ids, texts, partitions))

    def add(self, ids: Sequence[str], texts: Sequence[str],
            partitions: Optional[Sequence[Optional[str]]] = None) -> List[Dict[str, Any]]:
        return self._call("POST", "/add", _items(list(ids), texts, partitions))

    def remove(self, id: str) -> bool:
        try:
            return bool(self._call("DELETE", "/documents/" + urllib.request.quote(id, safe=""))["removed"])
        except ConfigError as e:
            if ": 404:" in str(e):
                return False
            raise

    def stats(self) -> Dict[str, Any]:
        return self._call("GET", "/stats")


def _listed(partitions: Optional[Sequence[Optional[str]]]) -> Optional[List[Optional[str]]]:
    return list(partitions) if partitions is not None else None


def _items(ids: List[Optional[str]], texts: Sequence[str],
           partitions: Optional[Sequence[Optional[str]]]) -> List[Dict[str, Any]]:
    """Request items; `"partition"` only when values are given (an index with `--partition-by`)."""
    items: List[Dict[str, Any]] = [{"id": i, "text": t} for i, t in zip(ids, texts)]
    if partitions is not None:
        for item, p in zip(items, partitions):
            item["partition"] = p
    return items
