"""A Prometheus exporter of the lag the :class:`~spark_samza_source.ops.metrics.SamzaLagListener` keeps.

Optional: needs ``prometheus-client`` (``pip install 'spark-samza-source[prometheus]'``); nothing else in the
package imports this module. Runs in the Spark driver's Python process, next to the listener: at every scrape
:class:`LagCollector` turns the listener's latest figures per running query and source into gauges (no state of
its own, so a scrape always sees the last progress event). Metrics, all labelled ``query`` (the query's name, or
its id when unnamed), ``query_id``, ``source`` (the source's index in the query) and ``system``:

- ``spark_samza_ssp_lag_records`` / ``spark_samza_task_lag_records``: samza-kafka offsets behind latest per SSP
  (``ssp``, ``stream``, ``partition``) and per Samza task (``task``: the sum over its SSPs);
- ``spark_samza_ssp_lag_seconds`` / ``spark_samza_task_lag_seconds`` / ``spark_samza_shard_lag_seconds``:
  samza-kinesis ``MillisBehindLatest`` in seconds, per SSP slot and per task (the largest over their shards) and
  per shard (``shard``, ``ssp``, ``task``);
- ``spark_samza_lag_batch``: the batch the figures belong to.

Usage (docs/operations.md, "Lag in Prometheus and Grafana")::

    from spark_samza_source.ops.prometheus import serve_lag_metrics

    exporter = serve_lag_metrics(spark, port=9108)   # adds a SamzaLagListener, serves http://<driver>:9108/metrics
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..core.errors import extra_install_hint
from . import errors
from .metrics import KAFKA, SamzaLagListener, SourceLag

try:
    from prometheus_client import start_http_server
    from prometheus_client.core import GaugeMetricFamily
    from prometheus_client.registry import Collector, CollectorRegistry
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(
        "spark_samza_source.ops.prometheus needs prometheus-client, an optional dependency: pip install "
        f"prometheus-client, or install {extra_install_hint('prometheus')}") from err

__all__ = ["LagCollector", "LagExporter", "METRIC_PREFIX", "serve_lag_metrics"]

METRIC_PREFIX = "spark_samza"
_SOURCE_LABELS = ["query", "query_id", "source", "system"]


def _split_ssp(key: str) -> tuple[str, str]:
    """(stream, partition) of an SSP key ``system.stream.partition`` (a Kafka topic may hold dots)."""
    _system, _, rest = key.partition(".")
    stream, _, partition = rest.rpartition(".")
    return stream, partition


class LagCollector(Collector):
    """Gauges of a :class:`SamzaLagListener`'s latest figures, computed at each scrape (``collect``).

    Register it in any ``CollectorRegistry`` (``prometheus_client.REGISTRY`` to join an exporter the driver
    already runs), or let :func:`serve_lag_metrics` serve it on a registry of its own.
    """

    def __init__(self, listener: SamzaLagListener) -> None:
        self.listener = listener

    def collect(self) -> Iterator[GaugeMetricFamily]:
        def family(name: str, doc: str, extra: list[str]) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"{METRIC_PREFIX}_{name}", doc, labels=_SOURCE_LABELS + extra)

        ssp_records = family("ssp_lag_records", "samza-kafka: offsets behind the high watermark per SSP, when the "
                             "batch was planned (a broadcast SSP at its most-behind task)",
                             ["ssp", "stream", "partition"])
        task_records = family("task_lag_records", "samza-kafka: offsets behind the high watermarks per Samza task "
                              "(sum over its SSPs)", ["task"])
        ssp_seconds = family("ssp_lag_seconds", "samza-kinesis: MillisBehindLatest in seconds per SSP slot (its "
                             "most-behind shard), where the previous batch's reads ended",
                             ["ssp", "stream", "partition"])
        task_seconds = family("task_lag_seconds", "samza-kinesis: MillisBehindLatest in seconds per Samza task "
                              "(its most-behind shard)", ["task"])
        shard_seconds = family("shard_lag_seconds", "samza-kinesis: MillisBehindLatest in seconds per shard, where "
                               "the previous batch's read of it ended", ["shard", "ssp", "task"])
        batch = family("lag_batch", "the micro-batch whose progress the lag figures come from", [])
        for (_query_id, _index), lag in sorted(self.listener.latest_by_source.items()):
            source = self._source_labels(lag)
            if lag.batch_id is not None:
                batch.add_metric(source, lag.batch_id)
            if lag.system == KAFKA:
                for key, behind in lag.by_ssp.items():
                    ssp_records.add_metric(source + [key, *_split_ssp(key)], behind)
                for task, behind in lag.by_task.items():
                    task_records.add_metric(source + [task], behind)
                continue
            for key, ms in lag.by_ssp.items():
                ssp_seconds.add_metric(source + [key, *_split_ssp(key)], ms / 1000.0)
            for task, ms in lag.by_task.items():
                task_seconds.add_metric(source + [task], ms / 1000.0)
            for shard, ms in lag.behind.items():
                where = lag.shard_places.get(shard, ("", ""))
                shard_seconds.add_metric(source + [shard, where[0], where[1]], ms / 1000.0)
        yield from (ssp_records, task_records, ssp_seconds, task_seconds, shard_seconds, batch)

    @staticmethod
    def _source_labels(lag: SourceLag) -> list[str]:
        query_id = lag.query_id or ""
        return [lag.query_name or query_id, query_id, str(lag.source_index), lag.system]


class LagExporter:
    """A running HTTP endpoint serving a :class:`LagCollector` (``/metrics``); ``stop()`` shuts it down."""

    def __init__(self, listener: SamzaLagListener, registry: CollectorRegistry, server: Any, thread: Any) -> None:
        self.listener = listener
        self.registry = registry
        self._server = server
        self._thread = thread

    @property
    def port(self) -> int:
        """The port it listens on (the one the system chose when asked for port 0)."""
        return self._server.server_address[1]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve_lag_metrics(spark: Any = None, *, listener: SamzaLagListener | None = None, port: int = 9108,
                      addr: str = "0.0.0.0") -> LagExporter:
    """Serve the lag of every samza-kafka / samza-kinesis query of ``spark`` at ``http://<addr>:<port>/metrics``.

    Without ``listener``, a :class:`SamzaLagListener` is made and added to ``spark.streams``; with one, ``spark``
    may be None (the caller added it). The registry is the exporter's own, so the call can be made more than once
    per process (a new port each time); port 0 lets the system choose (``LagExporter.port``).
    """
    if listener is None:
        if spark is None:
            raise errors.exporter_needs_listener()
        listener = SamzaLagListener()
        spark.streams.addListener(listener)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LagCollector(listener))
    server, thread = start_http_server(port, addr=addr, registry=registry)
    return LagExporter(listener, registry, server, thread)
