"""The recorded micro-batch ends of samza-kinesis: their layout in the metadata store, and the one class both sides
use to read and write them.

Executors record where each shard's read of a micro-batch ended (``executor/recorded_reads.py``: the first attempt
records with ``put_if_absent``, every other attempt reads exactly to that end); the driver turns batch N's recorded
ends into batch N+1's starts (:meth:`BatchEnds.recorded_for`), mirrors them at commit (:meth:`BatchEnds.ends_for`)
and deletes those of committed batches (:meth:`BatchEnds.cleanup_before` after a listing,
:meth:`BatchEnds.delete_recorded` for ends it read already: ``driver/known_ends.py``). Shared, so the driver reads
the record format without loading the executors' read path (reader, fan-out, pyarrow).

Store layout (namespace ``kinesis-batch-ends``): key ``"<batch, 20 digits>/<shard id>"`` (or
``"<batch>/<stream scope>/<shard id>"``), value ``{"end": <ShardPosition JSON>, "task": ..., "recordedAtMs": ...,
"millisBehindLatest": ...}``; ``millisBehindLatest`` is Kinesis' answer to the read's last ``GetRecords`` (0 at
``SHARD_END``, absent when the read made no call), which the driver reports as the query's lag.
Why, and what it needs from the store (atomic put-if-absent): docs/architecture.md §8.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.damage import rule_for_namespace
from ..core.errors import InternalError, MetadataStoreError
from ..core.store import DAMAGE_ERRORS, DamagedRecord, MetadataStore, is_damage
from ..options.namespaces import BATCH_ENDS
from . import errors
from .errors import PositionFormatError
from .positions import ShardPosition

__all__ = ["BatchEnds", "NAMESPACE", "RecordedEnd", "batch_ends_for"]

log = logging.getLogger(__name__)

NAMESPACE = BATCH_ENDS
#: what repairs a damaged batch end (the rule's row in docs/guarantees.md)
BATCH_ENDS_REPAIR = rule_for_namespace(NAMESPACE).repair
_BATCH_DIGITS = 20
_WARNED: set[str] = set()  # store URIs already warned about (BatchEnds is built once per shard read)


@dataclass(frozen=True)
class RecordedEnd:
    """What the first attempt recorded for one shard of one batch: where it ended and how far behind the tip of the
    shard Kinesis said it was there (``MillisBehindLatest``; None when unknown)."""

    end: ShardPosition
    millis_behind_latest: int | None = None
    #: what the read skipped with failOnDataLoss=false (the executor's own words), for the driver's progress
    data_loss: tuple[str, ...] = ()


class BatchEnds:
    """Recorded batch ends of one job (and optionally one stream) in a :class:`MetadataStore`."""

    def __init__(self, store: MetadataStore, *, stream: str | None = None, namespace: str = NAMESPACE) -> None:
        self.store = store
        self.stream = stream
        self.namespace = namespace
        if not store.atomic_conditionals and store.uri not in _WARNED:
            _WARNED.add(store.uri)
            log.warning("metadata store %s has no atomic conditional writes: two attempts of a Kinesis batch that "
                        "run at the same time (speculative execution) could record different ends; use a file:, "
                        "dynamodb:// or s3:// (on a store with conditional writes, such as AWS S3) store", store.uri)

    # ---- keys -----------------------------------------------------------------------------------------------
    def _prefix(self, batch: int) -> str:
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 0:
            raise InternalError(f"batch must be an int >= 0, got {batch!r}")
        return f"{batch:0{_BATCH_DIGITS}d}/" + (f"{self.stream}/" if self.stream else "")

    def key(self, batch: int, shard_id: str) -> str:
        return self._prefix(batch) + shard_id

    def _decode(self, key: str, value: Any) -> ShardPosition:
        try:
            return ShardPosition.from_json(value["end"])
        except (TypeError, KeyError, PositionFormatError) as err:
            raise errors.stored_batch_end_invalid(self.store.uri, f"{self.namespace}/{key}", err, value,
                                                  BATCH_ENDS_REPAIR) from None

    def _damaged(self, key: str, damage: DamagedRecord | Exception) -> MetadataStoreError:
        """The kind's error for a record the store could not read at all."""
        err = damage.error if isinstance(damage, DamagedRecord) else damage
        return errors.stored_batch_end_invalid(self.store.uri, f"{self.namespace}/{key}", err, None,
                                               BATCH_ENDS_REPAIR)

    # ---- operations -----------------------------------------------------------------------------------------
    def record(self, batch: int, shard_id: str, end: ShardPosition, *, task: str | None = None,
               millis_behind_latest: int | None = None, data_loss: tuple[str, ...] = ()) -> ShardPosition:
        """Record ``end`` for (batch, shard) unless an end is recorded already; return the end that holds.

        If another attempt recorded first, its end is returned: the caller must then read exactly to it.
        ``millis_behind_latest`` (Kinesis' ``MillisBehindLatest`` where the read ended) is kept beside the end;
        the first attempt's figure holds, like its end; so does ``data_loss``, what it skipped with
        failOnDataLoss=false, which the driver reports in the query's progress.
        """
        key = self.key(batch, shard_id)
        value = {"end": end.to_json(), "recordedAtMs": int(time.time() * 1000), "task": task}
        if millis_behind_latest is not None:
            value["millisBehindLatest"] = int(millis_behind_latest)
        if data_loss:
            value["dataLoss"] = list(data_loss)
        if self.store.put_if_absent(self.namespace, key, value):
            return end
        existing = self.store.get(self.namespace, key)
        if existing is None:
            raise errors.batch_end_removed(self.store.uri, batch, shard_id)
        winner = self._decode(key, existing)
        if winner != end:
            log.info("batch %d shard %s: another attempt recorded end %s first (this one reached %s)",
                     batch, shard_id, winner, end)
        return winner

    def get(self, batch: int, shard_id: str) -> ShardPosition | None:
        key = self.key(batch, shard_id)
        try:
            value = self.store.get(self.namespace, key)
        except DAMAGE_ERRORS as exc:
            if not is_damage(exc):
                raise
            raise self._damaged(key, exc) from None
        return None if value is None else self._decode(key, value)

    def ends_for(self, batch: int) -> dict[str, ShardPosition]:
        """Every shard end recorded for ``batch``: {shard id: end}."""
        return {shard: rec.end for shard, rec in self.recorded_for(batch).items()}

    def recorded_for(self, batch: int) -> dict[str, RecordedEnd]:
        """Every shard end recorded for ``batch`` with its ``MillisBehindLatest``: {shard id: RecordedEnd}."""
        prefix = self._prefix(batch)
        out = {}
        found = self.store.scan(self.namespace)
        for bad in found.damaged:  # another batch's damaged end is not this batch's: it hides nothing here
            if bad.key is None or self._of_batch(bad.key, prefix):
                raise self._damaged(bad.key if bad.key is not None else bad.location, bad)
        for key, value in found.values.items():
            if self._of_batch(key, prefix):
                out[key[len(prefix):]] = RecordedEnd(self._decode(key, value), _millis(value), _data_loss(value))
        return dict(sorted(out.items()))

    @staticmethod
    def _of_batch(key: str, prefix: str) -> bool:
        """Whether ``key`` is a shard's end under ``prefix`` (not another stream's, when this one has none)."""
        return key.startswith(prefix) and "/" not in key[len(prefix):]

    def cleanup_before(self, batch: int) -> int:
        """Delete the ends recorded for batches < ``batch`` (committed ones); returns how many were deleted."""
        limit = self._prefix(batch)[:_BATCH_DIGITS]
        own = f"{self.stream}/" if self.stream else None
        doomed = []
        found = self.store.scan(self.namespace)
        damaged = {bad.key: bad for bad in found.damaged if bad.key is not None}
        for key in [*found.values, *damaged]:
            head, _, rest = key.partition("/")
            if len(head) != _BATCH_DIGITS or head >= limit:
                continue
            if own is not None:
                if not rest.startswith(own) or "/" in rest[len(own):]:  # another stream, or a nested scope
                    continue
            elif "/" in rest:
                continue
            if key in damaged:  # a committed batch's end: no longer read, but never removed without a word
                log.warning("deleting the damaged batch end at %s (kind: batch ends) with the committed batches' "
                            "ends: %s", damaged[key].location, damaged[key].error)
            doomed.append(key)
        self.store.delete_many(self.namespace, doomed)
        return len(doomed)

    def delete_recorded(self, recorded: Mapping[int, Iterable[str]]) -> int:
        """Delete the ends of {batch: shard ids} (ends the driver read, of batches now committed) in one bulk delete,
        without listing the namespace again; returns how many keys were named."""
        keys = [self.key(batch, shard_id) for batch, shard_ids in sorted(recorded.items()) for shard_id in shard_ids]
        self.store.delete_many(self.namespace, keys)
        return len(keys)


def _millis(value: Any) -> int | None:
    """The recorded ``millisBehindLatest`` (absent in ends recorded before it was kept, or by a read without calls)."""
    millis = value.get("millisBehindLatest") if isinstance(value, dict) else None
    if isinstance(millis, bool) or not isinstance(millis, int) or millis < 0:
        return None
    return millis


def _data_loss(value: Any) -> tuple[str, ...]:
    """The recorded ``dataLoss`` texts; absent (no loss, or an end recorded before they were kept) is none. A report,
    not a position: a value of another shape is left out rather than failing the batch."""
    texts = value.get("dataLoss") if isinstance(value, dict) else None
    if not isinstance(texts, list):
        return ()
    return tuple(text for text in texts if isinstance(text, str))


def batch_ends_for(store: MetadataStore, stream: str, query_id: str | None) -> BatchEnds:
    """Where executors record batch ends for one query, and where the driver reads them: keyed by stream and the
    query id the batch's offset carries (so two runs never read each other's ends)."""
    return BatchEnds(store, stream=f"{stream}/{query_id}" if query_id else stream)
