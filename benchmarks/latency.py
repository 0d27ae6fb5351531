"""Latency at a steady low rate, the same way for every source: shared by ``kafka_source.py`` and
``kinesis_source.py``.

A spawned process produces records at a steady rate (``steady_production``: its own process, so the producer
never competes for this process's GIL with the collector); the query runs with the default trigger (the next
batch starts as soon as the previous one ends) and a ``foreachBatch`` that collects each batch's record
timestamps; a record's latency is the time its batch's rows were collected on the driver minus the record's
timestamp (Kafka's CreateTime, set by the producer; Kinesis' approximateArrivalTimestamp, set by the emulator on
put; the floor's "due" time).  Only records created after the warm-up count (a backlog from the query's start,
when Python workers import and connect, is not the steady state).  Per batch,
the phases of Spark's progress (``durationMs``) are averaged over the batches with rows in the measured window:
``addBatch`` (the tasks read and the sink runs), ``walCommit`` (the offset log write and the source's
``commit`` of the previous batch), ``commitOffsets`` (the commit log), ``latestOffset``, ``queryPlanning``
(includes the source's ``partitions``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from bench_report import iso_ts, load, progress_dicts, record, say

__all__ = ["steady_production", "measure_latency", "compare_with_floor", "floor_latency", "local_session",
           "LATENCY_PHASES"]

LATENCY_PHASES = ("addBatch", "walCommit", "commitOffsets", "latestOffset", "queryPlanning", "getBatch")
PROGRESS_POLL_S = 2.0  # recentProgress keeps the last 100 events only: read it while the query runs


def local_session(app: str, kafka_connector: bool = False, ui: bool = False):
    """The benchmarks' local[2] session: its Python processes run this interpreter and can import
    ``floor_source`` (this directory on their ``PYTHONPATH``); ``kafka_connector``: Spark's own Kafka source too;
    ``ui``: Spark's UI on, for its status API (``spark_phases``: task timings per micro-batch)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from floor_source import expose_to_workers

    from samza_devkit.spark_fixtures import make_local_spark
    from spark_samza_source import register

    expose_to_workers()
    started = time.monotonic()
    conf = {"spark.ui.showConsoleProgress": "false"}
    if ui:
        conf.update({"spark.ui.enabled": "true", "spark.ui.port": "0"})  # port 0: any free one (shared machine)
    spark = make_local_spark(app, conf, kafka_connector=kafka_connector)
    register(spark)
    say(f"  Spark session {spark.version} started in {time.monotonic() - started:.1f} s (not measured), "
        f"PYSPARK_PYTHON={sys.executable}")
    return spark


def _production_loop(make_sender: Callable, args: tuple, rate: float, tick_s: float, stop, ready) -> None:
    """Runs in the spawned producer: ``send(n)`` every tick for the records due since the start."""
    send = make_sender(*args)
    ready.set()
    started, sent = time.monotonic(), 0
    while not stop.is_set():
        due = int((time.monotonic() - started) * rate)
        if due > sent:
            send(due - sent)
            sent = due
        stop.wait(tick_s)
    send(0)


@contextmanager
def steady_production(make_sender: Callable, args: tuple, rate: float, tick_s: float = 0.01):
    """``rate`` records per second from a spawned process while the block runs; ``make_sender(*args)`` (run in
    the child, so it must be a module-level function) returns ``send(n)``, which sends n records (n = 0: flush)."""
    ctx = mp.get_context("spawn")
    stop, ready = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_production_loop, args=(make_sender, args, rate, tick_s, stop, ready), daemon=True)
    proc.start()
    try:
        if not ready.wait(120):
            raise RuntimeError("the producer process did not start within 2 minutes")
        yield
    finally:
        stop.set()
        proc.join(30)
        if proc.is_alive():
            proc.terminate()


class BatchTimes:
    """The ``foreachBatch`` function: each batch's record timestamps (epoch us) and when they were collected.

    ``whole_rows``: collect every column of the rows (as a user's ``foreachBatch`` that looks at the records
    would) and take the timestamps from them, instead of only the timestamp column: the difference is what the
    collection itself costs per batch."""

    def __init__(self, column: str, whole_rows: bool = False) -> None:
        self.column = column
        self.whole_rows = whole_rows
        self.batches: list[tuple[int, float, list[int]]] = []

    def __call__(self, df, batch_id: int) -> None:
        from pyspark.sql import functions as F

        if self.whole_rows:
            rows = df.withColumn("us", F.unix_micros(F.col(self.column))).collect()
        else:
            rows = df.select(F.unix_micros(F.col(self.column)).alias("us")).collect()
        self.batches.append((batch_id, time.time(), [r.us for r in rows]))


def _run_for(query, seconds: float, progress: dict[int, dict]) -> None:
    """Let ``query`` run ``seconds``, keeping every progress event (by batch id); fail if the query fails."""
    until = time.monotonic() + seconds
    while True:
        for p in progress_dicts(query):
            progress[p["batchId"]] = p
        if query.exception() is not None:
            raise RuntimeError(f"the latency query failed: {query.exception()}")
        left = until - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(PROGRESS_POLL_S, left))


def _percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def _summary(times: BatchTimes, progress: dict[int, dict], since: float) -> dict:
    # records created in the measured window only: a backlog left from the query's start (Python workers importing,
    # first connections) is not the steady state being measured
    latencies = [(at - us / 1e6) * 1000 for _, at, stamps in times.batches if at >= since
                 for us in stamps if us >= since * 1e6]
    batches = [p for p in progress.values() if p.get("numInputRows", 0) > 0 and iso_ts(p["timestamp"]) >= since]
    if not latencies or not batches:
        raise RuntimeError("no batch with rows in the measured window: is the producer running?")
    phases = {k: statistics.fmean(p["durationMs"].get(k, 0) for p in batches)
              for k in ("triggerExecution", *LATENCY_PHASES)}
    slowest = max(batches, key=lambda p: p["durationMs"].get("triggerExecution", 0))
    return {"records": len(latencies), "batches": len(batches), "p50": _percentile(latencies, 50),
            "p99": _percentile(latencies, 99), "max": max(latencies), "phases": phases, "slowest": slowest,
            "rows_per_batch": statistics.fmean(p["numInputRows"] for p in batches), "window": batches}


def measure_latency(label: str, stream_df, column: str, work: Path, *, seconds: float, warmup_s: float,
                    whole_rows: bool = False) -> dict:
    """Run ``stream_df`` (default trigger, ``foreachBatch`` collecting ``column``) for ``warmup_s`` + ``seconds``
    and summarise the measured window: p50 / p99 / max latency (ms), mean ms per batch by phase."""
    say(f"  [{label}] latency query, default trigger, foreachBatch collecting rows: {warmup_s:g} s warm-up, "
        f"{seconds:g} s measured; {load()}")
    times, progress = BatchTimes(column, whole_rows), {}
    name = f"latency-{uuid.uuid4().hex[:8]}"
    query = stream_df.writeStream.foreachBatch(times).option("checkpointLocation", str(work / name)).start()
    try:
        _run_for(query, warmup_s, progress)
        since = time.time()
        _run_for(query, seconds, progress)
    finally:
        query.stop()
    res = _summary(times, progress, since)
    res["run_id"] = str(query.runId)
    ph = res["phases"]
    say(f"    {label}: {res['records']:,} records in {res['batches']} batches ({res['rows_per_batch']:,.0f} rows per "
        f"batch); latency p50 {res['p50']:,.0f} ms, p99 {res['p99']:,.0f} ms, max {res['max']:,.0f} ms; ms per batch "
        f"{ph['triggerExecution']:,.0f} (" + " / ".join(f"{k} {ph[k]:,.0f}" for k in LATENCY_PHASES) + f"); {load()}")
    slow = res["slowest"]["durationMs"]
    say(f"      slowest batch {res['slowest']['batchId']}: {slow.get('triggerExecution', 0):,} ms ("
        + " / ".join(f"{k} {slow.get(k, 0):,}" for k in LATENCY_PHASES) + ")")
    record(f"latency {label}: p50 / p99", f"{res['p50']:,.0f} / {res['p99']:,.0f} ms", "-", None)
    record(f"latency {label}: ms per batch", f"{ph['triggerExecution']:,.0f} (addBatch {ph['addBatch']:,.0f}, "
           f"walCommit {ph['walCommit']:,.0f})", "-", None)
    return res


def compare_with_floor(label: str, res: dict, floor: dict, p50_target: float | None,
                       p99_target: float | None) -> None:
    """Record ``res`` against the floor measured in the same run: ratios of p50 and p99, ms per batch added."""
    p50, p99 = res["p50"] / floor["p50"], res["p99"] / floor["p99"]
    extra = {k: res["phases"][k] - floor["phases"][k] for k in ("triggerExecution", *LATENCY_PHASES)}
    say(f"    {label} / floor: p50 {p50:.2f}x, p99 {p99:.2f}x; per batch {extra['triggerExecution']:+,.0f} ms ("
        + " / ".join(f"{k} {extra[k]:+,.0f}" for k in LATENCY_PHASES) + ")")
    record(f"latency {label}: p50 / floor p50", f"{p50:.2f}", "-" if p50_target is None else f"<= {p50_target}",
           None if p50_target is None else p50 <= p50_target)
    record(f"latency {label}: p99 / floor p99", f"{p99:.2f}", "-" if p99_target is None else f"<= {p99_target}",
           None if p99_target is None else p99 <= p99_target)


def floor_latency(spark, rate: float, work: Path, *, seconds: float, warmup_s: float, whole_rows: bool = False) -> dict:
    """The same latency query over the rate floor (``floor_source.RateFloorSource``): no I/O at all."""
    from floor_source import RateFloorSource

    spark.dataSource.register(RateFloorSource)
    df = spark.readStream.format(RateFloorSource.name()).option("rate", str(rate)).load()
    return measure_latency(f"floor, {rate:,.0f} rec/s", df, "timestamp", work, seconds=seconds, warmup_s=warmup_s,
                           whole_rows=whole_rows)
