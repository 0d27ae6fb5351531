"""What every live-query test harness shares: a job, a ``file:`` metadata store, checkpoints and sinks under one
root, batches collected in memory, waiting, and stopping the session's queries afterwards.

The integration tests run real samza-kafka and samza-kinesis queries on the local SparkSession through a harness
per source (:mod:`samza_devkit.kafka_query_harness`, :mod:`samza_devkit.kinesis_query_harness`, and the
fault-injection ones of :mod:`samza_devkit.fault_harness`).  Those harnesses differ only in the source's options,
how they build the streaming DataFrame and which columns they keep per batch; the rest is this class. They live in
the package rather than in a conftest because the tests run with ``--import-mode=importlib``, under which a
conftest is not an importable module: a test could reach them only through a fixture.

Also here, for the tests that check the driver lease (one query per job.name and store) on either source:
:func:`failure_of` (the error a query fails with) and :func:`lease_of` (the lease record a harness's job holds).
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

from spark_samza_source.core.startpoint_manager import StartpointManager
from spark_samza_source.metadata import open_store
from spark_samza_source.metadata.lease import KEY, NAMESPACE

from .waits import scaled, wait_until


class QueryHarness:
    """Queries of one job (a fresh ``job.name``) whose metadata store, checkpoints and sinks all live under ``root``.

    A subclass adds the source: its ``options`` (built on :meth:`job_options`) and a ``start_collecting`` /
    ``start_parquet`` that make the streaming DataFrame and hand it to :meth:`collect_batches` /
    :meth:`write_parquet`.
    """

    #: the trigger of a query started without one
    default_trigger: dict = {"processingTime": "500 milliseconds"}

    def __init__(self, spark, root: Path) -> None:
        self.spark = spark
        self.root = root
        self.job = f"job-{uuid.uuid4().hex[:8]}"
        self.store_dir = root / "metadata"
        self.store_uri = f"file://{self.store_dir}"
        # query name -> [(batch id, rows)] in the order the batches ran; foreachBatch calls run on Spark's threads
        self.batches: dict[str, list[tuple[int, list]]] = {}
        self.started: list = []  # every query this harness started, for what a timed-out wait saw
        self.replays_that_differ: list[str] = []  # batches Spark ran again whose records were not the first run's
        self._lock = threading.Lock()

    # ---- options ----------------------------------------------------------------------------------------------
    def job_options(self, source: dict[str, str], extra: dict) -> dict[str, str]:
        """``source``'s options plus this harness's job and store, startpoints checked every batch, then ``extra``
        (stringified, so tests may pass numbers) over all of them."""
        opts = {"job.name": self.job, "metadata.store": self.store_uri, "startpoint.pollInterval": "0", **source}
        opts.update({k: str(v) for k, v in extra.items()})
        return opts

    # ---- where a query writes ---------------------------------------------------------------------------------
    def checkpoint(self, name: str) -> str:
        return str(self.root / "checkpoints" / name)

    def sink_path(self, name: str) -> str:
        return str(self.root / "sink" / name)

    @staticmethod
    def query_name(name: str) -> str:
        """A unique Spark query name: the same ``name`` may run more than once (a restart from its checkpoint)."""
        return f"{name}_{uuid.uuid4().hex[:6]}"

    # ---- starting queries -------------------------------------------------------------------------------------
    def collect_batches(self, name: str, df, trigger: dict | None = None, on_batch=None, columns=None):
        """Start ``df`` with a foreachBatch sink keeping ``(batch_id, rows)`` in ``batches[name]`` (``columns``
        only, if given), then calling ``on_batch(batch_id, rows)``; checkpoint ``checkpoint(name)``."""
        self.batches.setdefault(name, [])

        def collect(batch_df, batch_id):
            rows = _collect_in_foreach_batch(batch_df if columns is None else batch_df.select(*columns))
            with self._lock:
                self._keep(name, batch_id, rows)
            if on_batch is not None:
                on_batch(batch_id, rows)

        writer = (df.writeStream.foreachBatch(collect).option("checkpointLocation", self.checkpoint(name))
                  .queryName(self.query_name(name)))
        return self._started(writer.trigger(**(trigger or self.default_trigger)).start())

    def write_parquet(self, name: str, df, trigger: dict | None = None):
        """Start ``df`` into a Parquet sink at ``sink_path(name)``, checkpoint ``checkpoint(name)``."""
        writer = (df.writeStream.format("parquet").option("path", self.sink_path(name))
                  .option("checkpointLocation", self.checkpoint(name)).queryName(self.query_name(name)))
        return self._started(writer.trigger(**(trigger or self.default_trigger)).start())

    def _started(self, query):
        self.started.append(query)
        return query

    # ---- reading back -----------------------------------------------------------------------------------------
    def _keep(self, name: str, batch_id: int, rows: list) -> None:
        """Keep a batch as an idempotent sink keyed by batch id would: a batch Spark runs again after a restart
        (its sink call had ended but its commit was not written when the query stopped, which a stop on a busy
        machine meets) replaces the earlier rows instead of adding them twice. The source must plan the replay as
        the same records, so a replay that differs is kept aside and :meth:`collected` fails naming it."""
        kept = self.batches[name]
        earlier = next((i for i, (seen, _) in enumerate(kept) if seen == batch_id), None)
        if earlier is None:
            kept.append((batch_id, rows))
            return
        if sorted(map(repr, kept[earlier][1])) != sorted(map(repr, rows)):
            self.replays_that_differ.append(
                f"{name} batch {batch_id}: {len(kept[earlier][1])} rows first, {len(rows)} when run again")
        kept[earlier] = (batch_id, rows)

    def collected(self, name: str) -> list:
        """Every row ``name``'s foreachBatch sink has kept so far, batch after batch (a batch run again once)."""
        with self._lock:
            assert not self.replays_that_differ, f"a batch run again read other records: {self.replays_that_differ}"
            return [row for _, rows in self.batches.get(name, []) for row in rows]

    def startpoints(self) -> StartpointManager:
        """The startpoints of this harness's job, in its metadata store (as a user would set them)."""
        return StartpointManager(open_store(self.store_uri, self.job))

    def wait_for(self, condition, timeout: float = 120, interval: float = 0.25, what: str = "condition", seen=None):
        """``condition()``'s first truthy value, polled every ``interval`` s; AssertionError after ``timeout`` s of a
        quiet machine (:func:`samza_devkit.waits.wait_until`) naming ``what``, what was seen (``seen()``, or the
        last answer) and how this harness's queries stand (a query that died is why many a wait runs out)."""
        def observed():
            return {"seen": seen() if seen is not None else condition(), "queries": self.query_states()}

        return wait_until(condition, timeout, what, interval, observed)

    def query_states(self) -> list[str]:
        """One line per query this harness started: its name, whether it runs, its error or last progress."""
        states = []
        for query in self.started:
            error = query.exception()
            progress = query.lastProgress
            state = (f"failed: {str(error)[:600]}" if error is not None else
                     f"{'active' if query.isActive else 'stopped'}, last batch "
                     f"{progress.get('batchId') if progress else None}")
            states.append(f"{query.name}: {state}")
        return states


def await_available_now(query, name: str, timeout: float) -> None:
    """Wait for an AvailableNow ``query`` to finish; stop it and fail if it does not within ``timeout`` s, and
    raise its error if it failed."""
    if not query.awaitTermination(scaled(timeout)):
        progress = query.lastProgress
        query.stop()
        raise AssertionError(f"AvailableNow query {name} did not finish within {scaled(timeout):.0f}s "
                             f"({timeout:g}s scaled to the machine's load); its last progress: {progress}")
    if query.exception() is not None:
        raise query.exception()


#: PySpark's error when its JVM's one-shot result server was gone before the Python side connected
_RESULT_SOCKET_MISSED = "CANNOT_OPEN_SOCKET"


def _collect_in_foreach_batch(df, attempts: int = 3) -> list:
    """``df.collect()``, asked again if PySpark missed the JVM's result socket.

    ``collect()`` has the JVM open a loopback server that accepts one connection for 15 s (a fixed timeout in
    Spark); with two test processes, their JVMs and the emulators on two cores, the Python side of a
    ``foreachBatch`` call was once late for it and the query failed with ``CANNOT_OPEN_SOCKET``. That is the test
    machine's load, not the source: the batch's rows are read again (a planned range reads the same records).
    """
    for _ in range(attempts - 1):
        try:
            return df.collect()
        except Exception as err:  # noqa: BLE001 - PySparkRuntimeError; anything else goes up unchanged
            if _RESULT_SOCKET_MISSED not in str(err):
                raise
    return df.collect()


def stop_active_queries(spark) -> None:
    """Stop every query still active in the session, so that a failed test's queries do not run into the next."""
    for query in spark.streams.active:
        try:
            query.stop()
        except Exception:  # noqa: BLE001 - best-effort cleanup of a failed test's queries
            pass


def failure_of(query, timeout: float = 120) -> str:
    """The text of the error ``query`` fails with (it must fail within ``timeout``)."""
    try:
        finished = query.awaitTermination(scaled(timeout))
    except Exception as err:  # noqa: BLE001 - StreamingQueryException: what we want to read
        return str(err)
    if not finished:
        progress = query.lastProgress
        query.stop()
        raise AssertionError(f"query did not fail within {scaled(timeout):.0f}s ({timeout:g}s scaled to the "
                             f"machine's load); its last progress: {progress}")
    assert query.exception() is not None, "query ended without an error"
    return str(query.exception())


def lease_of(harness: QueryHarness) -> dict | None:
    """The driver lease record of ``harness``'s job. A renewal (delete_if_equal, then put_if_absent) leaves the key
    absent for an instant, so look a few times; None only when it stays absent (a driver killed in that instant
    leaves no lease)."""
    store = open_store(harness.store_uri, harness.job)
    for _ in range(60):
        record = store.get(NAMESPACE, KEY)
        if record is not None:
            return record
        time.sleep(0.05)
    return None
