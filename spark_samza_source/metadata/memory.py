"""``memory:`` store: a process-local dict, for unit tests of the pure core.

Values are stored as JSON text so a caller can never mutate a stored value through an alias, exactly as with
a real store. A lock makes the conditional operations atomic across threads.
"""

from __future__ import annotations

import json
import threading

from ..core.store import JsonValue, MetadataStore, validate_job_name, validate_namespace

_SHARED: dict[str, dict[tuple[str, str, str], str]] = {}
_SHARED_LOCK = threading.Lock()


class MemoryMetadataStore(MetadataStore):
    """In-memory store. Instances opened with the same ``name`` share data (like two clients of one server)."""

    def __init__(self, job_name: str, name: str = "") -> None:
        self.job_name = validate_job_name(job_name)
        self.uri = f"memory:{name}"
        with _SHARED_LOCK:
            self._data = _SHARED.setdefault(name, {})
        self._lock = _SHARED_LOCK

    def _k(self, namespace: str, key: str) -> tuple[str, str, str]:
        return (self.job_name, validate_namespace(namespace), str(key))

    def get(self, namespace: str, key: str) -> JsonValue | None:
        with self._lock:
            raw = self._data.get(self._k(namespace, key))
        return None if raw is None else json.loads(raw)

    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        raw = json.dumps(value, sort_keys=True, allow_nan=False)
        with self._lock:
            self._data[self._k(namespace, key)] = raw

    def put_if_absent(self, namespace: str, key: str, value: JsonValue) -> bool:
        raw = json.dumps(value, sort_keys=True, allow_nan=False)
        with self._lock:
            k = self._k(namespace, key)
            if k in self._data:
                return False
            self._data[k] = raw
            return True

    def delete(self, namespace: str, key: str) -> None:
        with self._lock:
            self._data.pop(self._k(namespace, key), None)

    def delete_if_equal(self, namespace: str, key: str, expected: JsonValue) -> bool:
        with self._lock:
            k = self._k(namespace, key)
            raw = self._data.get(k)
            if raw is None or json.loads(raw) != expected:
                return False
            del self._data[k]
            return True

    def replace_if_equal(self, namespace: str, key: str, expected: JsonValue, value: JsonValue) -> bool:
        new = json.dumps(value, sort_keys=True, allow_nan=False)
        with self._lock:
            k = self._k(namespace, key)
            raw = self._data.get(k)
            if raw is None or json.loads(raw) != expected:
                return False
            self._data[k] = new
            return True

    def list(self, namespace: str) -> dict[str, JsonValue]:
        validate_namespace(namespace)
        with self._lock:
            items = [(k[2], v) for k, v in self._data.items() if k[0] == self.job_name and k[1] == namespace]
        return {key: json.loads(raw) for key, raw in sorted(items)}
