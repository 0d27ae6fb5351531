"""Lag of samza-kafka and samza-kinesis sources from Spark's streaming progress, and a listener that logs them.

Spark's own Kafka source reports ``minOffsetsBehindLatest``, ``avgOffsetsBehindLatest`` and
``maxOffsetsBehindLatest`` in each source's ``metrics``; a Python data source cannot add metrics there, but its
progress carries what is needed to compute them:

- ``latestOffset``: what the reader's ``reportLatestOffset`` returned when the batch was planned (PySpark 4.2+;
  4.0 and 4.1 never call it and put the batch's end offset there, so no lag is computed on them). samza-kafka:
  ``{"kafka.orders.0": <high watermark>, ...}`` (the SSP key ``system.stream.partition``); samza-kinesis:
  ``{"millisBehindLatest": {<shard id>: ms, ...}, "minMsBehindLatest": ..., ...}`` (``kinesis.progress``);
- ``endOffset``: the batch's end offset, whose job model maps partitions / shards to tasks and SSPs.

samza-kafka, per SSP: ``offsets behind latest = latest - end position`` (never below 0), where a broadcast SSP,
held by every task with its own position, counts with its lowest position (its most-behind task); per task: the
sum over its SSPs at its own positions. The figures describe the moment the batch was planned: records that
arrived while it ran are not in them, exactly as for Spark's Kafka source.

samza-kinesis, per shard: Kinesis' ``MillisBehindLatest`` where the shard's read of the previous batch ended (the
start of this one); per SSP slot and per task: the largest over their shards (time behind does not add up). The
min / avg / max are taken over the partitions (Kafka) or shards (Kinesis), as Spark does (avg is a float).

Usage::

    from spark_samza_source.ops.metrics import SamzaLagListener, lag_from_progress

    listener = SamzaLagListener()                # logs one line per progress event of every query
    spark.streams.addListener(listener)
    query = df.writeStream.format("parquet").start(path)   # any query; its batches then report lag
    listener.last                                # the latest SourceLag figures (None before the first event)
    lag_from_progress(query.lastProgress)        # the same computation on demand

PySpark runs listeners in the driver's Python process (Py4J calls ``onQueryProgress`` on a callback thread);
the listener only parses JSON there and keeps a bounded history, so it cannot slow the query down.
``ops.prometheus`` publishes the listener's latest figures for Prometheus.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from pyspark.sql.streaming.listener import StreamingQueryListener

__all__ = [
    "KINESIS_METRIC_NAMES",
    "METRIC_NAMES",
    "SamzaLagListener",
    "SourceLag",
    "lag_from_progress",
    "source_lag",
]

log = logging.getLogger(__name__)

#: Spark's Kafka source metric names, in the order it reports them
METRIC_NAMES = ("avgOffsetsBehindLatest", "maxOffsetsBehindLatest", "minOffsetsBehindLatest")
#: the names Databricks' Kinesis source reports its MillisBehindLatest figures under
KINESIS_METRIC_NAMES = ("avgMsBehindLatest", "maxMsBehindLatest", "minMsBehindLatest")

KAFKA = "kafka"
KINESIS = "kinesis"
_UNITS = {KAFKA: "offsets", KINESIS: "millis"}


@dataclass(frozen=True)
class SourceLag:
    """How far behind latest one samza-kafka or samza-kinesis source of one progress event is.

    ``behind`` is per partition: the SSP key (Kafka, offsets) or the shard id (Kinesis, milliseconds);
    ``by_ssp`` and ``by_task`` aggregate it per SSP (Kafka: ``behind`` itself; Kinesis: the SSP slot) and per
    Samza task. ``unit`` says which: ``offsets`` or ``millis``.
    """

    query_id: str | None
    query_name: str | None
    batch_id: int | None
    source_index: int
    behind: Mapping[str, int]
    system: str = KAFKA
    by_ssp: Mapping[str, int] = field(default_factory=dict)
    by_task: Mapping[str, int] = field(default_factory=dict)
    measured_in_batch: int | None = None  # Kinesis: the batch whose reads measured the figures
    shard_places: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # Kinesis: shard -> (SSP key, task)

    @property
    def unit(self) -> str:
        return _UNITS[self.system]

    @property
    def min_behind_latest(self) -> int | None:
        return min(self.behind.values()) if self.behind else None

    @property
    def max_behind_latest(self) -> int | None:
        return max(self.behind.values()) if self.behind else None

    @property
    def avg_behind_latest(self) -> float | None:
        return sum(self.behind.values()) / len(self.behind) if self.behind else None

    # Spark's Kafka names (samza-kafka only: None for a samza-kinesis source, whose figures are milliseconds)
    @property
    def min_offsets_behind_latest(self) -> int | None:
        return self.min_behind_latest if self.system == KAFKA else None

    @property
    def max_offsets_behind_latest(self) -> int | None:
        return self.max_behind_latest if self.system == KAFKA else None

    @property
    def avg_offsets_behind_latest(self) -> float | None:
        return self.avg_behind_latest if self.system == KAFKA else None

    @property
    def total_offsets_behind_latest(self) -> int:
        return sum(self.behind.values()) if self.system == KAFKA else 0

    @property
    def metric_names(self) -> tuple[str, str, str]:
        """(avg, max, min) under the system's names: Spark's Kafka ones, or Databricks' Kinesis ones."""
        return METRIC_NAMES if self.system == KAFKA else KINESIS_METRIC_NAMES

    def metrics(self) -> dict[str, str]:
        """The three figures under the system's metric names, as strings (as ``SourceProgress.metrics``)."""
        if not self.behind:
            return {}
        avg, high, low = self.metric_names
        return {avg: str(self.avg_behind_latest), high: str(self.max_behind_latest),
                low: str(self.min_behind_latest)}

    def to_json(self) -> dict[str, Any]:
        avg, high, low = self.metric_names
        out = {
            "batchId": self.batch_id,
            "behind": dict(self.behind),
            "bySsp": dict(self.by_ssp),
            "byTask": dict(self.by_task),
            "queryId": self.query_id,
            "queryName": self.query_name,
            "sourceIndex": self.source_index,
            "system": self.system,
            "unit": self.unit,
            avg: self.avg_behind_latest,
            high: self.max_behind_latest,
            low: self.min_behind_latest,
        }
        if self.system == KAFKA:
            out["totalOffsetsBehindLatest"] = self.total_offsets_behind_latest
        else:
            out["measuredInBatch"] = self.measured_in_batch
        return dict(sorted(out.items()))


def _as_json(value: Any) -> Any:
    """Progress fields are JSON strings (``SourceProgress``) or already parsed (``json.loads(progress.json)``)."""
    if isinstance(value, (bytes, str)):
        text = value.strip() if isinstance(value, str) else value
        if not text or text == "null":
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None
    return value


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def source_lag(source: Any, *, query_id: str | None = None, query_name: str | None = None,
               batch_id: int | None = None, source_index: int = 0) -> SourceLag | None:
    """How far behind latest one source progress (a ``SourceProgress`` or its JSON dict) is.

    None when the source is neither a samza-kafka nor a samza-kinesis source (its end offset is not one of
    theirs) or reported no lag in ``latestOffset`` (e.g. a samza-kinesis batch planned before any was read, or any
    batch on PySpark 4.0 / 4.1, where ``latestOffset`` is the batch's end offset).
    """
    from ..kinesis.driver.progress import MILLIS_BEHIND_LATEST

    latest = _as_json(_get(source, "latestOffset"))
    end = _as_json(_get(source, "endOffset"))
    if not isinstance(latest, dict) or not isinstance(end, dict) or "jobModel" not in end:
        return None
    if "jobModel" in latest:  # PySpark 4.0 / 4.1 never call reportLatestOffset: this is the batch's end offset
        return None
    where = {"query_id": query_id, "query_name": query_name, "batch_id": batch_id, "source_index": source_index}
    if isinstance(latest.get(MILLIS_BEHIND_LATEST), dict):
        return _kinesis_lag(latest, end, where)
    return _kafka_lag(latest, end, where)


def _kafka_lag(latest: dict, end: dict, where: dict) -> SourceLag | None:
    from ..core.errors import OffsetFormatError, SamzaSourceError
    from ..kafka.driver.offset import KafkaOffset

    try:
        offset = KafkaOffset.from_json(end)
    except (OffsetFormatError, SamzaSourceError):
        return None
    position: dict[str, int] = {}
    for (_task, ssp), pos in offset.positions.items():
        key = ssp.key
        position[key] = min(pos, position.get(key, pos))  # broadcast SSPs: the most-behind task
    behind = {}
    for key, high in sorted(latest.items()):
        if key in position and _count(high):
            behind[key] = max(0, high - position[key])
    by_task: dict[str, int] = {}
    for (task, ssp), pos in sorted(offset.positions.items()):
        high = latest.get(ssp.key)
        if _count(high):  # a task's own position, also for a broadcast SSP
            by_task[task.name] = by_task.get(task.name, 0) + max(0, high - pos)
    return SourceLag(behind=behind, system=KAFKA, by_ssp=dict(behind), by_task=dict(sorted(by_task.items())),
                     **where)


def _kinesis_lag(latest: dict, end: dict, where: dict) -> SourceLag | None:
    from ..core.errors import OffsetFormatError, SamzaSourceError
    from ..kinesis.driver.offset import KinesisOffset
    from ..kinesis.driver.progress import MEASURED_IN_BATCH, MILLIS_BEHIND_LATEST

    try:
        offset = KinesisOffset.from_json(end)
    except (OffsetFormatError, SamzaSourceError):
        return None
    behind = {shard: ms for shard, ms in sorted(latest[MILLIS_BEHIND_LATEST].items()) if _count(ms) and ms >= 0}
    by_ssp: dict[str, int] = {}
    by_task: dict[str, int] = {}
    places: dict[str, tuple[str, str]] = {}
    for shard, ms in behind.items():
        task, ssp = offset.task_of(shard), offset.slot_ssp(shard)
        if ssp is not None:
            by_ssp[ssp.key] = max(ms, by_ssp.get(ssp.key, ms))
        if task is not None:
            by_task[task.name] = max(ms, by_task.get(task.name, ms))
        places[shard] = ("" if ssp is None else ssp.key, "" if task is None else task.name)
    measured = latest.get(MEASURED_IN_BATCH)
    return SourceLag(behind=behind, system=KINESIS, by_ssp=dict(sorted(by_ssp.items())),
                     by_task=dict(sorted(by_task.items())), measured_in_batch=measured if _count(measured) else None,
                     shard_places=places, **where)


def lag_from_progress(progress: Any) -> list[SourceLag]:
    """How far behind latest every samza-kafka and samza-kinesis source in a ``StreamingQueryProgress`` is.

    Accepts the progress object (``query.lastProgress``, ``event.progress``), its JSON dict
    (``json.loads(progress.json)``) or the JSON text. Sources of other kinds are skipped.
    """
    if progress is None:
        return []
    if isinstance(progress, (str, bytes)):
        progress = json.loads(progress)
    query_id = _get(progress, "id")
    name = _get(progress, "name")
    batch = _get(progress, "batchId")
    out = []
    for index, source in enumerate(_get(progress, "sources") or []):
        found = source_lag(source, query_id=None if query_id is None else str(query_id), query_name=name,
                           batch_id=batch, source_index=index)
        if found is not None:
            out.append(found)
    return out


class SamzaLagListener(StreamingQueryListener):
    """Logs how far behind latest every samza-kafka and samza-kinesis source is at each progress event, and keeps
    the figures.

    ``last`` is the latest :class:`SourceLag` (any query), ``last_by_query`` the latest per query id,
    ``latest_by_source`` the latest per (query id, source index) of the queries still running (what
    ``ops.prometheus`` publishes), and ``history`` the last ``history_size`` figures, oldest first. ``query_name``
    restricts the listener to one query. Log lines go to the ``spark_samza_source.ops.metrics`` logger at
    ``level``::

        samza-kafka lag: query orders_etl batch 12 source 0: min 0 avg 12.5 max 40 offsets behind latest
        (kafka.orders.0=40, kafka.orders.1=10, ...)
        samza-kinesis lag: query clicks_etl batch 7 source 0: min 0 avg 1500 max 3000 ms behind latest
        (shardId-000000000000=3000, shardId-000000000001=0)
    """

    def __init__(self, *, query_name: str | None = None, level: int = logging.INFO, history_size: int = 1000,
                 max_logged_ssps: int = 20) -> None:
        self.query_name = query_name
        self.level = level
        self.max_logged_ssps = max_logged_ssps
        self._lock = threading.Lock()
        self._history: deque[SourceLag] = deque(maxlen=history_size)
        self._by_query: dict[str, SourceLag] = {}
        self._by_source: dict[tuple[str, int], SourceLag] = {}
        self.errors = 0

    # ---- what tests, notebooks and exporters read ----------------------------------------------------------
    @property
    def last(self) -> SourceLag | None:
        with self._lock:
            return self._history[-1] if self._history else None

    @property
    def last_by_query(self) -> dict[str, SourceLag]:
        with self._lock:
            return dict(self._by_query)

    @property
    def latest_by_source(self) -> dict[tuple[str, int], SourceLag]:
        """(query id, source index) -> the latest figures of that source, for queries not terminated."""
        with self._lock:
            return dict(self._by_source)

    @property
    def history(self) -> list[SourceLag]:
        with self._lock:
            return list(self._history)

    def for_batch(self, batch_id: int, query_id: str | None = None) -> list[SourceLag]:
        """The figures recorded for one batch (of one query, if given)."""
        return [f for f in self.history
                if f.batch_id == batch_id and (query_id is None or f.query_id == str(query_id))]

    # ---- StreamingQueryListener ----------------------------------------------------------------------------
    def onQueryStarted(self, event) -> None:  # noqa: N802 - PySpark's method names
        pass

    def onQueryProgress(self, event) -> None:  # noqa: N802
        try:
            progress = event.progress
            if self.query_name is not None and _get(progress, "name") != self.query_name:
                return
            figures = lag_from_progress(progress)
        except Exception as err:  # noqa: BLE001 - a listener must never break the listener bus
            self.errors += 1
            log.warning("samza lag: could not read a progress event: %s", err)
            return
        for lag in figures:
            with self._lock:
                self._history.append(lag)
                if lag.query_id is not None:
                    self._by_query[lag.query_id] = lag
                    self._by_source[(lag.query_id, lag.source_index)] = lag
            if log.isEnabledFor(self.level):
                log.log(self.level, "%s", self.describe(lag))

    def onQueryIdle(self, event) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event) -> None:  # noqa: N802
        """A stopped query's sources leave ``latest_by_source`` (an exporter stops publishing them)."""
        try:
            query_id = str(event.id)
        except Exception:  # noqa: BLE001 - never break the listener bus
            return
        with self._lock:
            for key in [k for k in self._by_source if k[0] == query_id]:
                del self._by_source[key]

    def describe(self, lag: SourceLag) -> str:
        items = list(lag.behind.items())
        shown = ", ".join(f"{k}={v}" for k, v in items[: self.max_logged_ssps])
        if len(items) > self.max_logged_ssps:
            shown += f", ... {len(items) - self.max_logged_ssps} more"
        avg = lag.avg_behind_latest
        unit = "offsets" if lag.system == KAFKA else "ms"
        return (f"samza-{lag.system} lag: query {lag.query_name or lag.query_id} batch {lag.batch_id} source "
                f"{lag.source_index}: min {lag.min_behind_latest} "
                f"avg {'-' if avg is None else f'{avg:g}'} max {lag.max_behind_latest} "
                f"{unit} behind latest ({shown})")
