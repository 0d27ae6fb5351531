"""The executor side of a samza-kinesis task: what ``SamzaKinesisStreamReader.read`` runs for one input partition.

Apart from the DataSource glue (``source.py``, which imports the driver's coordinator) so that the task path
imports executor modules only (docs/architecture.md §2): the reader, the recorded batch ends, the client, the
store check.

A task that holds several shards reads them concurrently, one thread per shard on a bounded pool (at most the
boto3 client's connection pool, ``max_pool_connections`` = 10, and :data:`MAX_SHARD_THREADS`): each shard is paced
on its own (5 ``GetRecords`` per second, as when read alone), so a task with a backlog on N shards takes about as
long as its slowest shard instead of the sum of all N, as AWS's connector does with one Spark partition per shard.
Concurrency is safe because a task never holds a shard and its parent in the same batch (lineage, docs/
architecture.md §8), and each shard keeps its own batch-end protocol (``stream_and_record``) untouched: rows of
one shard are yielded in order; rows of different shards interleave.  Memory stays bounded: at most
``2 x threads`` batches wait in the hand-over queue, and a reader thread waits while it is full.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...metadata import open_store
from ...source.fault_hooks import SHARD_END_RECORDED, report
from ..client import AwsClientSettings, kinesis_client
from ..input_partition import KinesisTaskPartition, PlannedShardRead
from ..microbatch_ends import batch_ends_for
from ..options import KinesisSourceOptions
from .reader import ShardRead, ShardReadResult, ShardReadSettings
from .recorded_reads import stream_and_record
from .store_reach import check_store_shared_with_driver

__all__ = ["read_task", "MAX_SHARD_THREADS"]

MAX_SHARD_THREADS = 16  # shards one task reads at once (also bounded by the client's max_pool_connections)
_QUEUED_BATCHES_PER_THREAD = 2
_PUT_WAIT_S = 0.1  # how often a reader thread blocked on a full queue checks whether the task was abandoned

_BATCH, _DONE, _FAILED = "batch", "done", "failed"


def read_task(options: KinesisSourceOptions, partition: KinesisTaskPartition) -> Iterator:
    """Read every shard read of ``partition`` (what the driver planned), recording where each shard
    stopped; several shards are read concurrently (see the module documentation).

    The metadata store is opened once per task and checked at once, before any row, to be the driver's
    (``store_reach``): every shard's batch end is recorded in it."""
    if not partition.reads:
        return iter(())
    store = open_store(options.metadata_store, options.job_name)
    check_store_shared_with_driver(store)
    return _read_shards(options, partition, store)


def _read_shards(options: KinesisSourceOptions, partition: KinesisTaskPartition, store: Any) -> Iterator:
    """The rows of every shard read, one shard after another or on a pool (a generator: nothing is read until
    Spark asks for the first batch)."""
    settings = AwsClientSettings.from_settings(options.client_settings())
    client = kinesis_client(settings)
    shard_settings = read_settings(options, settings)
    reads = list(partition.reads)
    threads = min(len(reads), MAX_SHARD_THREADS, max(1, settings.max_pool_connections))
    if threads <= 1:
        for read in reads:
            result = yield from _read_shard(options, partition, client, store, shard_settings, read)
            _shard_done(options, partition, read, result)
        return
    yield from _read_concurrently(options, partition, client, store, shard_settings, reads, threads)


def read_settings(options: KinesisSourceOptions, settings: AwsClientSettings) -> ShardReadSettings:
    """The task's shard read settings, the same for every shard it reads."""
    return ShardReadSettings(max_records=options.max_records_per_shard, max_fetch_time_ms=options.max_fetch_time_ms,
                             fail_on_data_loss=options.fail_on_data_loss, aws_settings=settings)


def _read_shard(options: KinesisSourceOptions, partition: KinesisTaskPartition, client: Any, store: Any,
                shard_settings: ShardReadSettings, planned: PlannedShardRead) -> Generator[Any, None, ShardReadResult]:
    """One shard's rows for this batch (a generator; returns the shard's read result once its end is recorded)."""
    ends = batch_ends_for(store, options.stream, planned.query_id)
    read = ShardRead(options.stream, planned.shard_id, planned.start, partition.task,
                     ending_sequence=planned.ending_sequence, until_arrival_ms=planned.until_arrival_ms,
                     consumer_arn=planned.consumer_arn)
    return (yield from stream_and_record(ends, planned.batch, client, read, shard_settings))


def _shard_done(options: KinesisSourceOptions, partition: KinesisTaskPartition, read: PlannedShardRead, result) -> None:
    """After a shard's end is recorded (on the task's own thread, so a fault hook that raises fails the task)."""
    report(options.fault_hooks, SHARD_END_RECORDED, task=partition.task, shard_id=read.shard_id,
           end=result.end, records=result.records)


def _read_concurrently(options: KinesisSourceOptions, partition: KinesisTaskPartition, client: Any, store: Any,
                       shard_settings: ShardReadSettings, reads: list[PlannedShardRead], threads: int) -> Iterator:
    """Run each shard's read on a pool thread; hand their batches out here, in the order they arrive."""
    handover: queue.Queue = queue.Queue(maxsize=threads * _QUEUED_BATCHES_PER_THREAD)
    abandoned = threading.Event()  # the task failed or its consumer stopped early: reader threads stop

    def put(item: tuple) -> bool:
        while not abandoned.is_set():
            try:
                handover.put(item, timeout=_PUT_WAIT_S)
                return True
            except queue.Full:
                continue
        return False

    def read_one(read: PlannedShardRead) -> None:
        if abandoned.is_set():
            return
        try:
            reading = _read_shard(options, partition, client, store, shard_settings, read)
            while True:
                try:
                    batch = next(reading)
                except StopIteration as finished:
                    put((_DONE, read, finished.value))
                    return
                if not put((_BATCH, batch)):
                    reading.close()
                    return
        except BaseException as err:  # handed to the task's thread, which raises it
            put((_FAILED, err))

    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"kinesis-{partition.task}")
    try:
        for read in reads:
            pool.submit(read_one, read)
        pending = len(reads)
        while pending:
            kind, *rest = handover.get()
            if kind == _BATCH:
                yield rest[0]
            elif kind == _DONE:
                pending -= 1
                _shard_done(options, partition, rest[0], rest[1])
            else:
                raise rest[0]
    finally:
        abandoned.set()
        pool.shutdown(wait=True, cancel_futures=True)
