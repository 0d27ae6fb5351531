"""Per-batch, per-shard end positions in the metadata store: how a Kinesis batch gets a deterministic end.

The driver's offset for batch N carries the start positions; the end of each shard is decided by the first task
attempt that reads it (DESIGN §8).  That attempt records the end it reached with ``put_if_absent``; any other
attempt of the same batch -- a retry after a failure, a speculative copy, a replay after a driver restart -- finds
the recorded end and reads exactly up to it.  The next ``latestOffset`` turns the recorded ends of batch N into the
starts of batch N+1 (:meth:`BatchEnds.ends_for`).

Executor flow for one shard (:func:`read_and_record` implements it; ``read()`` calls it for each shard of its task
and yields ``result.batches``)::

    recorded = ends.get(batch, shard)                         # an earlier attempt's end, if any
    result = read_shard(..., recorded_end=recorded)           # exactly to it, or up to the limits
    if recorded is None:
        winner = ends.record(batch, shard, result.end)        # put-if-absent: first attempt wins
        if winner != result.end:                              # a concurrent attempt recorded first
            result = read_shard(..., recorded_end=winner)     # re-read exactly to the winner's end
    yield from result.batches                                 # rows only after the end is recorded

Rows of a shard are yielded only after its end is recorded, so every attempt that yields anything yields the
rows from the start up to the one recorded end.  Rows of an attempt that fails later are discarded by Spark.

Store layout (namespace ``kinesis-batch-ends``; keys sort by batch)::

    key   = "<batch, 20 digits>/<shard id>"          (or "<batch>/<stream>/<shard id>" with ``stream``; the
                                                     stream scope may itself contain '/', e.g. "clicks/<query id>")
    value = {"end": <ShardPosition JSON>, "task": "<task>", "recordedAtMs": <epoch ms>}

On an object store without conditional writes (``atomic_conditionals = False``: S3, GCS through pyarrow) two
racing attempts can both believe they won; use a ``file:`` (shared file system) or ``dynamodb:`` store when
speculative execution is on.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..core.errors import MetadataStoreError
from ..metadata.base import MetadataStore
from .positions import PositionFormatError, ShardPosition
from .reader import ShardReadResult, read_shard

__all__ = ["BatchEnds", "NAMESPACE", "read_and_record"]

log = logging.getLogger(__name__)

NAMESPACE = "kinesis-batch-ends"
_BATCH_DIGITS = 20
_WARNED: set[str] = set()  # store URIs already warned about (BatchEnds is built once per shard read)


class BatchEnds:
    """Recorded batch ends of one job (and optionally one stream) in a :class:`MetadataStore`."""

    def __init__(self, store: MetadataStore, *, stream: str | None = None, namespace: str = NAMESPACE) -> None:
        self.store = store
        self.stream = stream
        self.namespace = namespace
        if not store.atomic_conditionals and store.uri not in _WARNED:
            _WARNED.add(store.uri)
            log.warning("metadata store %s has no atomic conditional writes: two attempts of a Kinesis batch that "
                        "run at the same time (speculative execution) could record different ends; use a file: "
                        "or dynamodb: store", store.uri)

    # ---- keys -----------------------------------------------------------------------------------------------
    def _prefix(self, batch: int) -> str:
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 0:
            raise ValueError(f"batch must be an int >= 0, got {batch!r}")
        return f"{batch:0{_BATCH_DIGITS}d}/" + (f"{self.stream}/" if self.stream else "")

    def key(self, batch: int, shard_id: str) -> str:
        return self._prefix(batch) + shard_id

    def _decode(self, key: str, value: Any) -> ShardPosition:
        try:
            return ShardPosition.from_json(value["end"])
        except (TypeError, KeyError, PositionFormatError) as err:
            raise MetadataStoreError(f"metadata store {self.store.uri}: the batch end under "
                                     f"{self.namespace}/{key} is not valid ({err}): {value!r:.200}") from None

    # ---- operations -----------------------------------------------------------------------------------------
    def record(self, batch: int, shard_id: str, end: ShardPosition, *, task: str | None = None) -> ShardPosition:
        """Record ``end`` for (batch, shard) unless an end is recorded already; return the end that holds.

        If another attempt recorded first, its end is returned: the caller must then read exactly to it.
        """
        key = self.key(batch, shard_id)
        value = {"end": end.to_json(), "recordedAtMs": int(time.time() * 1000), "task": task}
        if self.store.put_if_absent(self.namespace, key, value):
            return end
        existing = self.store.get(self.namespace, key)
        if existing is None:
            raise MetadataStoreError(f"metadata store {self.store.uri}: the end of batch {batch} for shard {shard_id} "
                                     "was recorded by another attempt and then removed (cleanup of a batch that is "
                                     "still running?)")
        winner = self._decode(key, existing)
        if winner != end:
            log.info("batch %d shard %s: another attempt recorded end %s first (this one reached %s)",
                     batch, shard_id, winner, end)
        return winner

    def get(self, batch: int, shard_id: str) -> ShardPosition | None:
        key = self.key(batch, shard_id)
        value = self.store.get(self.namespace, key)
        return None if value is None else self._decode(key, value)

    def ends_for(self, batch: int) -> dict[str, ShardPosition]:
        """Every shard end recorded for ``batch``: {shard id: end}."""
        prefix = self._prefix(batch)
        out = {}
        for key, value in self.store.list(self.namespace).items():
            if key.startswith(prefix):
                rest = key[len(prefix):]
                if "/" not in rest:  # another stream's key when this one has no stream
                    out[rest] = self._decode(key, value)
        return dict(sorted(out.items()))

    def cleanup_before(self, batch: int) -> int:
        """Delete the ends recorded for batches < ``batch`` (committed ones); returns how many were deleted."""
        limit = self._prefix(batch)[:_BATCH_DIGITS]
        own = f"{self.stream}/" if self.stream else None
        deleted = 0
        for key in self.store.list(self.namespace):
            head, _, rest = key.partition("/")
            if len(head) != _BATCH_DIGITS or head >= limit:
                continue
            if own is not None:
                if not rest.startswith(own) or "/" in rest[len(own):]:  # another stream, or a nested scope
                    continue
            elif "/" in rest:
                continue
            self.store.delete(self.namespace, key)
            deleted += 1
        return deleted


def read_and_record(ends: BatchEnds, batch: int, client: Any, stream: str, shard_id: str, start: ShardPosition,
                    *, task: str, **read_options: Any) -> ShardReadResult:
    """Read one shard of one batch so that every attempt of the batch yields the same rows (see the module doc).

    ``read_options`` go to :func:`read_shard` (``ending_sequence``, ``max_records``, ``max_fetch_time_ms``,
    ``fail_on_data_loss``, ``hash_range`` ...).  The returned result's rows may be yielded: its end is recorded.
    """
    recorded = ends.get(batch, shard_id)
    result = read_shard(client, stream, shard_id, start, task=task, recorded_end=recorded, **read_options)
    if recorded is not None:
        return result
    winner = ends.record(batch, shard_id, result.end, task=task)
    if winner != result.end:
        result = read_shard(client, stream, shard_id, start, task=task, recorded_end=winner, **read_options)
    return result
