"""Lag metrics of samza-kafka sources from Spark's streaming progress, and a listener that logs them.

Spark's own Kafka source reports ``minOffsetsBehindLatest``, ``avgOffsetsBehindLatest`` and
``maxOffsetsBehindLatest`` in each source's ``metrics``; a Python data source cannot add metrics there, but its
progress carries what is needed to compute them:

- ``latestOffset``: what the samza-kafka reader's ``reportLatestOffset`` returned when the batch was planned,
  ``{"kafka.orders.0": <high watermark>, ...}`` (the SSP key ``system.stream.partition``);
- ``endOffset``: the batch's end offset, whose ``positions`` hold, per task and SSP, the next offset to read.

Per SSP: ``offsets behind latest = latest - end position`` (never below 0), where a broadcast SSP, held by every
task with its own position, counts with its lowest position (its most-behind task). The min / avg / max are
taken over the SSPs, as Spark does over topic partitions (avg is a float). The figures describe the moment the
batch was planned: records that arrived while it ran are not in them, exactly as for Spark's Kafka source.

Usage::

    from spark_samza_source.ops.metrics import SamzaLagListener, lag_from_progress

    listener = SamzaLagListener()                # logs one line per progress event of every query
    spark.streams.addListener(listener)
    query = df.writeStream.format("parquet").start(path)   # any query; its batches then report lag
    listener.last                                # the latest SourceLag figures (None before the first event)
    lag_from_progress(query.lastProgress)        # the same computation on demand

PySpark runs listeners in the driver's Python process (Py4J calls ``onQueryProgress`` on a callback thread);
the listener only parses JSON there and keeps a bounded history, so it cannot slow the query down.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

__all__ = [
    "METRIC_NAMES",
    "SamzaLagListener",
    "SourceLag",
    "lag_from_progress",
    "source_lag",
]

log = logging.getLogger(__name__)

#: Spark's Kafka source metric names, in the order it reports them
METRIC_NAMES = ("avgOffsetsBehindLatest", "maxOffsetsBehindLatest", "minOffsetsBehindLatest")


@dataclass(frozen=True)
class SourceLag:
    """Offsets behind latest for one samza-kafka source of one progress event."""

    query_id: str | None
    query_name: str | None
    batch_id: int | None
    source_index: int
    behind: Mapping[str, int]  # SSP key -> offsets behind latest

    @property
    def min_offsets_behind_latest(self) -> int | None:
        return min(self.behind.values()) if self.behind else None

    @property
    def max_offsets_behind_latest(self) -> int | None:
        return max(self.behind.values()) if self.behind else None

    @property
    def avg_offsets_behind_latest(self) -> float | None:
        return sum(self.behind.values()) / len(self.behind) if self.behind else None

    @property
    def total_offsets_behind_latest(self) -> int:
        return sum(self.behind.values())

    def metrics(self) -> dict[str, str]:
        """The three figures under Spark's Kafka metric names, as strings (as ``SourceProgress.metrics``)."""
        if not self.behind:
            return {}
        return {
            "avgOffsetsBehindLatest": str(self.avg_offsets_behind_latest),
            "maxOffsetsBehindLatest": str(self.max_offsets_behind_latest),
            "minOffsetsBehindLatest": str(self.min_offsets_behind_latest),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "batchId": self.batch_id,
            "behind": dict(self.behind),
            "queryId": self.query_id,
            "queryName": self.query_name,
            "sourceIndex": self.source_index,
            "totalOffsetsBehindLatest": self.total_offsets_behind_latest,
            **{name: getattr(self, _attr(name)) for name in METRIC_NAMES},
        }


def _attr(metric: str) -> str:
    return {"avgOffsetsBehindLatest": "avg_offsets_behind_latest",
            "maxOffsetsBehindLatest": "max_offsets_behind_latest",
            "minOffsetsBehindLatest": "min_offsets_behind_latest"}[metric]


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


def source_lag(source: Any, *, query_id: str | None = None, query_name: str | None = None,
               batch_id: int | None = None, source_index: int = 0) -> SourceLag | None:
    """Offsets behind latest of one source progress (a ``SourceProgress`` or its JSON dict).

    None when the source is not a samza-kafka source (its end offset is not a samza-kafka offset) or reported
    no latest offset (``reportLatestOffset`` returned None, e.g. samza-kinesis).
    """
    from ..core.errors import OffsetFormatError, SamzaSourceError
    from ..kafka.offset import LogOffset

    latest = _as_json(_get(source, "latestOffset"))
    end = _as_json(_get(source, "endOffset"))
    if not isinstance(latest, dict) or not isinstance(end, dict) or "jobModel" not in end:
        return None
    try:
        offset = LogOffset.from_json(end)
    except (OffsetFormatError, SamzaSourceError):
        return None
    position: dict[str, int] = {}
    for (_task, ssp), pos in offset.positions.items():
        key = ssp.key
        position[key] = min(pos, position.get(key, pos))  # broadcast SSPs: the most-behind task
    behind = {}
    for key, high in sorted(latest.items()):
        if key in position and isinstance(high, int) and not isinstance(high, bool):
            behind[key] = max(0, high - position[key])
    return SourceLag(query_id, query_name, batch_id, source_index, behind)


def lag_from_progress(progress: Any) -> list[SourceLag]:
    """Offsets behind latest of every samza-kafka source in a ``StreamingQueryProgress``.

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
    """Logs the offsets behind latest of every samza-kafka source at each progress event, and keeps them.

    ``last`` is the latest :class:`SourceLag` (any query), ``last_by_query`` the latest per query id, and
    ``history`` the last ``history_size`` figures, oldest first. ``query_name`` restricts the listener to one
    query. Log lines go to the ``spark_samza_source.ops.metrics`` logger at ``level``::

        samza-kafka lag: query orders_etl batch 12 source 0: min 0 avg 12.5 max 40 offsets behind latest
        (kafka.orders.0=40, kafka.orders.1=10, ...)
    """

    def __init__(self, *, query_name: str | None = None, level: int = logging.INFO, history_size: int = 1000,
                 max_logged_ssps: int = 20) -> None:
        self.query_name = query_name
        self.level = level
        self.max_logged_ssps = max_logged_ssps
        self._lock = threading.Lock()
        self._history: deque[SourceLag] = deque(maxlen=history_size)
        self._by_query: dict[str, SourceLag] = {}
        self.errors = 0

    # ---- what tests and notebooks read ---------------------------------------------------------------------
    @property
    def last(self) -> SourceLag | None:
        with self._lock:
            return self._history[-1] if self._history else None

    @property
    def last_by_query(self) -> dict[str, SourceLag]:
        with self._lock:
            return dict(self._by_query)

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
            log.warning("samza-kafka lag: could not read a progress event: %s", err)
            return
        for lag in figures:
            with self._lock:
                self._history.append(lag)
                if lag.query_id is not None:
                    self._by_query[lag.query_id] = lag
            if log.isEnabledFor(self.level):
                log.log(self.level, "%s", self.describe(lag))

    def onQueryIdle(self, event) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event) -> None:  # noqa: N802
        pass

    def describe(self, lag: SourceLag) -> str:
        items = list(lag.behind.items())
        shown = ", ".join(f"{k}={v}" for k, v in items[: self.max_logged_ssps])
        if len(items) > self.max_logged_ssps:
            shown += f", ... {len(items) - self.max_logged_ssps} more"
        avg = lag.avg_offsets_behind_latest
        return (f"samza-kafka lag: query {lag.query_name or lag.query_id} batch {lag.batch_id} source "
                f"{lag.source_index}: min {lag.min_offsets_behind_latest} "
                f"avg {'-' if avg is None else f'{avg:g}'} max {lag.max_offsets_behind_latest} "
                f"offsets behind latest ({shown})")
