"""Metadata stores wrapped around a real one, for tests and benchmarks: one that counts the calls made through it,
and one whose writer dies at the flip of a chunked value (its chunks written, its pointer not).

Both delegate every operation to the store they wrap (memory, file, S3 or DynamoDB), so what is stored and read
is that store's own behaviour; they only watch (``CountingStore``) or stop one write (``DiesAtTheFlip``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from spark_samza_source.core.large_values import is_pointer
from spark_samza_source.core.store import JsonValue, MetadataStore, StoreScan

__all__ = ["CountingStore", "DiesAtTheFlip", "WriterDied"]


class _Delegating(MetadataStore):
    def __init__(self, inner: MetadataStore) -> None:
        self.inner = inner
        self.uri = inner.uri
        self.job_name = inner.job_name
        self.atomic_conditionals = inner.atomic_conditionals

    def _called(self, op: str, namespace: str) -> None:
        """Hook: one call of ``op`` on ``namespace`` is about to reach the inner store."""

    def get(self, namespace: str, key: str) -> JsonValue | None:
        self._called("get", namespace)
        return self.inner.get(namespace, key)

    def put(self, namespace: str, key: str, value: JsonValue) -> None:
        self._called("put", namespace)
        self.inner.put(namespace, key, value)

    def put_if_absent(self, namespace: str, key: str, value: JsonValue) -> bool:
        self._called("put_if_absent", namespace)
        return self.inner.put_if_absent(namespace, key, value)

    def delete(self, namespace: str, key: str) -> None:
        self._called("delete", namespace)
        self.inner.delete(namespace, key)

    def delete_many(self, namespace: str, keys: Iterable[str]) -> None:
        self._called("delete_many", namespace)
        self.inner.delete_many(namespace, keys)

    def delete_if_equal(self, namespace: str, key: str, expected: JsonValue) -> bool:
        self._called("delete_if_equal", namespace)
        return self.inner.delete_if_equal(namespace, key, expected)

    def replace_if_equal(self, namespace: str, key: str, expected: JsonValue, value: JsonValue) -> bool:
        self._called("replace_if_equal", namespace)
        return self.inner.replace_if_equal(namespace, key, expected, value)

    def list(self, namespace: str) -> dict[str, JsonValue]:
        self._called("list", namespace)
        return self.inner.list(namespace)

    def scan(self, namespace: str) -> StoreScan:
        self._called("scan", namespace)
        return self.inner.scan(namespace)

    def close(self) -> None:
        self.inner.close()


class CountingStore(_Delegating):
    """Counts the API calls made through it, by (operation, namespace): one listing counts once, whatever number of
    requests the store makes for it (pages of a DynamoDB query, S3's GETs per object)."""

    def __init__(self, inner: MetadataStore) -> None:
        super().__init__(inner)
        self.calls: Counter[tuple[str, str]] = Counter()

    def _called(self, op: str, namespace: str) -> None:
        self.calls[(op, namespace)] += 1

    def total(self) -> int:
        return sum(self.calls.values())


class WriterDied(RuntimeError):
    """The writer of a chunked value stopped after its chunks, before the pointer that publishes them."""


class DiesAtTheFlip(_Delegating):
    """Refuses the put of a chunked value's pointer (raising :class:`WriterDied`) while ``dying`` is set: what a
    driver killed between writing a new version's chunks and flipping its pointer leaves in the store."""

    def __init__(self, inner: MetadataStore) -> None:
        super().__init__(inner)
        self.dying = True

    def put(self, namespace: str, key: str, value: Any) -> None:
        if self.dying and is_pointer(value):
            raise WriterDied(f"died before the flip of {namespace}/{key}")
        super().put(namespace, key, value)
