"""The driver lists a batch's recorded ends once (``kinesis/driver/known_ends.py``): the plan's read serves the commit,
the clean-up deletes what was read by key in one bulk delete, and only a driver's first clean-up (or one after a
failed clean-up) lists the namespace, which is what removes what an earlier driver left."""

from __future__ import annotations

import pytest

from samza_devkit.store_wrappers import CountingStore
from spark_samza_source.core import errors
from spark_samza_source.core.errors import MetadataStoreError
from spark_samza_source.kinesis.driver.known_ends import KnownEnds
from spark_samza_source.kinesis.microbatch_ends import NAMESPACE, batch_ends_for
from spark_samza_source.kinesis.positions import ShardPosition
from spark_samza_source.metadata.memory import MemoryMetadataStore

SHARDS = [f"shardId-{i:012d}" for i in range(5)]


def _store() -> CountingStore:
    return CountingStore(MemoryMetadataStore(job_name="known-ends"))


def _record(ends, batch: int) -> None:
    for i, shard in enumerate(SHARDS):
        ends.record(batch, shard, ShardPosition.at_sequence(str(1000 * batch + i)), task=f"Partition {i}")


def _listings(store: CountingStore) -> int:
    return store.calls[("scan", NAMESPACE)]


def test_a_batch_is_listed_once_for_the_plan_and_the_commit() -> None:
    store = _store()
    ends = batch_ends_for(store, "orders", "q1")
    _record(ends, 1)
    known = KnownEnds()
    planned = known.recorded_for(ends, 1)
    committed = known.recorded_for(ends, 1)
    assert planned == committed == ends.recorded_for(1)
    assert sorted(planned) == SHARDS
    assert _listings(store) == 2  # the two reads through KnownEnds listed once; the check above once more


def test_the_clean_up_deletes_what_was_read_without_listing_again() -> None:
    store = _store()
    ends = batch_ends_for(store, "orders", "q1")
    other_query = batch_ends_for(store, "orders", "q0")
    _record(other_query, 1)  # an earlier run's leftovers: removed by no clean-up of this query's scope
    known = KnownEnds()
    for batch in (1, 2, 3):
        _record(ends, batch)
    known.recorded_for(ends, 1)
    assert known.clean_up_before(ends, 1) == 0  # the first clean-up lists: nothing before batch 1
    first = _listings(store)
    known.recorded_for(ends, 2)
    assert known.clean_up_before(ends, 2) == len(SHARDS)  # batch 1's ends, by key
    assert _listings(store) == first + 1  # the read of batch 2, no listing for the clean-up
    assert store.calls[("delete_many", NAMESPACE)] == 2 and store.calls[("delete", NAMESPACE)] == 0
    assert ends.recorded_for(1) == {} and sorted(ends.recorded_for(2)) == SHARDS
    assert sorted(other_query.recorded_for(1)) == SHARDS


def test_the_first_clean_up_of_a_driver_removes_what_an_earlier_driver_left() -> None:
    store = _store()
    ends = batch_ends_for(store, "orders", "q1")
    for batch in (1, 2, 3):
        _record(ends, batch)
    known = KnownEnds()  # a restarted driver: it read none of batches 1 and 2
    known.recorded_for(ends, 3)
    assert known.clean_up_before(ends, 3) == 2 * len(SHARDS)
    assert ends.recorded_for(1) == {} and ends.recorded_for(2) == {} and sorted(ends.recorded_for(3)) == SHARDS


class _FailingBulkDelete(MemoryMetadataStore):
    fail = True

    def delete_many(self, namespace, keys) -> None:
        if self.fail:
            raise errors.metadata_store_failed("delete_many failed: the store is down")
        super().delete_many(namespace, keys)


def test_a_failed_clean_up_is_retried_with_a_listing() -> None:
    store = _FailingBulkDelete(job_name="known-ends")
    ends = batch_ends_for(store, "orders", "q1")
    for batch in (1, 2):
        _record(ends, batch)
    known = KnownEnds()
    known.recorded_for(ends, 1)
    with pytest.raises(MetadataStoreError):
        known.clean_up_before(ends, 2)
    store.fail = False
    known.recorded_for(ends, 2)
    assert known.clean_up_before(ends, 3) == 2 * len(SHARDS)  # listed again: batch 1's ends were not lost
    assert ends.recorded_for(1) == {} and ends.recorded_for(2) == {}
