"""Many shards per task: 8 shards with a backlog read by 2 samza-kinesis tasks (``read_task``, 4 shards each, in 2
spawned processes as on ``local[2]``), against the slowest single shard read alone and against the same tasks
reading their shards one after the other (the behaviour before tasks read shards concurrently).

Why this shape: AWS's own connector gives every shard its own Spark partition, so a batch takes as long as its
slowest shard; a Samza task holds several shards, and if it read them in turn a batch would take their sum.
Target: task time <= 1.3x the slowest single shard's read.

Per-shard limits as on AWS: 5 ``GetRecords`` per second (the reader's pacing) and 2 MB/s, here 1,000-byte records
in pages of 400 (400 KB per call x 5 calls/s = 2 MB/s; the reader's page size is set in the task's real
``ShardReadSettings`` (``task.read_settings``), the only change).  moto answers such a page in milliseconds, so,
as on Kinesis, the per-shard pacing and not the server bounds a shard's read.  moto runs every call under one
lock on one core, so with full 10,000-record pages the server would be the bottleneck for any client
(``--page 10000`` shows it).

Used by ``kinesis_source.py --only tasks``; the figures are wall times of one batch (``read_task`` until its last
row and recorded end), best of ``--repeat``; the ratio is taken within each run (same load), the best kept.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import time
from pathlib import Path

from bench_report import load, record, say

SHARDS = 8
TASKS = 2
RECORD_BYTES = 1_000
PAGE = 400  # records per GetRecords: 400 KB per call, x 5 calls/s = the 2 MB/s per-shard budget
PER_SHARD = 4_000  # 10 calls per shard: ~2 s of pacing alone
TARGET = 1.3


def _task_worker(endpoint: str, stream: str, store: str, shard_ids: list[str], batch: int, page: int,
                 serial: bool, barrier, results) -> None:
    """One task (one process): read_task over ``shard_ids`` for ``batch``; wall time from the barrier."""
    from spark_samza_source.kinesis.executor import task as kinesis_task
    from spark_samza_source.kinesis.input_partition import KinesisTaskPartition, PlannedShardRead
    from spark_samza_source.kinesis.options import KinesisSourceOptions
    from spark_samza_source.kinesis.positions import ShardPosition

    task_settings = kinesis_task.read_settings
    kinesis_task.read_settings = lambda options, aws: dataclasses.replace(task_settings(options, aws),
                                                                          records_per_call=page)
    if serial:
        kinesis_task.MAX_SHARD_THREADS = 1  # the task as it was: one shard after the other
    options = KinesisSourceOptions.parse({
        "streamName": stream, "endpointUrl": endpoint, "region": "us-east-1", "job.name": "bench-tasks",
        "metadata.store": store, "maxRecordsPerShard": str(PER_SHARD),
    })
    partition = KinesisTaskPartition(f"Task-{shard_ids[0]}", tuple(
        PlannedShardRead(batch=batch, query_id=f"q{batch}", shard_id=s, start=ShardPosition.trim_horizon())
        for s in shard_ids))
    barrier.wait()
    started = time.monotonic()
    rows = sum(b.num_rows for b in kinesis_task.read_task(options, partition))
    results.put((tuple(shard_ids), rows, time.monotonic() - started))


def _run(endpoint: str, stream: str, store: str, groups: list[list[str]], batch: int, page: int,
         serial: bool) -> float:
    """Every group of shards as one task in its own process at once; the batch's wall time (slowest task)."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(len(groups)), ctx.Queue()
    procs = [ctx.Process(target=_task_worker, args=(endpoint, stream, store, g, batch, page, serial, barrier,
                                                    results)) for g in groups]
    for p in procs:
        p.start()
    got = [results.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    for shard_ids, rows, _ in got:
        if rows != PER_SHARD * len(shard_ids):
            raise RuntimeError(f"task over {shard_ids} read {rows:,} rows, expected {PER_SHARD * len(shard_ids):,}")
    return max(seconds for _, _, seconds in got)


def part_tasks(args, work: Path) -> None:
    from samza_devkit import kinesis_helpers as kh
    from samza_devkit.moto_server import MotoServerProcess

    page = args.page
    say(f"== 3. Many shards per task: {SHARDS} shards x {PER_SHARD:,} x {RECORD_BYTES} B, {TASKS} tasks "
        f"({SHARDS // TASKS} shards each, 2 processes), pages of {page} records; {load()}")
    with MotoServerProcess() as endpoint:
        client = kh.kinesis_client(endpoint)
        stream = kh.create_stream(client, kh.unique_stream_name("bench-tasks"), SHARDS)
        shards = kh.list_shards(client, stream)
        ids = [s["ShardId"] for s in shards]
        value = os.urandom(RECORD_BYTES)
        for s in shards:
            kh.put_records(client, stream, [(f"pk-{i}", value, s["HashKeyRange"]["StartingHashKey"])
                                            for i in range(PER_SHARD)])
        store = f"file://{work}/tasks-store"
        from spark_samza_source.metadata import open_store
        from spark_samza_source.metadata.lease import JobLease

        # a driver's job lease in the store, as while a query runs: each task checks it is there (store_reach)
        JobLease(open_store(store, "bench-tasks"), heartbeat=False).hold("bench")
        per = SHARDS // TASKS
        groups = [ids[i * per:(i + 1) * per] for i in range(TASKS)]
        batch = 0
        best: dict[str, float] = {}
        ratios = []  # concurrent / single of the same run (the same load)
        for i in range(args.repeat):
            say(f"  run {i + 1}/{args.repeat}; {load()}")
            figures = {}
            for label, run_groups, serial in (
                ("single", [[ids[0]], [ids[1]]], False),  # two shards alone, one per process: the per-shard time
                ("concurrent", groups, False),
                ("serial", groups, True),
            ):
                batch += 1  # a fresh batch (and query id): every run records its own ends and reads from the start
                figures[label] = _run(endpoint, stream, store, run_groups, batch, page, serial)
                best[label] = min(best.get(label, float("inf")), figures[label])
            ratios.append(figures["concurrent"] / figures["single"])
            say(f"    slowest single shard {figures['single']:.2f} s; 2 tasks x {per} shards, concurrent "
                f"{figures['concurrent']:.2f} s ({figures['concurrent'] / figures['single']:.2f}x single), one "
                f"shard after the other {figures['serial']:.2f} s ({figures['serial'] / figures['single']:.2f}x)")
    ratio = min(ratios)
    record(f"tasks: slowest single shard, {PER_SHARD:,} x {RECORD_BYTES} B, pages of {page}",
           f"{best['single']:.2f} s", "-", None)
    record(f"tasks: {SHARDS} shards in {TASKS} tasks, shards one after the other (before)",
           f"{best['serial']:.2f} s ({best['serial'] / best['single']:.2f}x)", "-", None)
    record(f"tasks: {SHARDS} shards in {TASKS} tasks, concurrent / slowest single shard (best run)", f"{ratio:.2f}",
           f"<= {TARGET}", ratio <= TARGET)
