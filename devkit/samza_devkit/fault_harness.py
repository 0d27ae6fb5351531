"""What the fault-injection tests (``tests/integration/faults/``) drive their queries with.

- ``FaultQueries``: samza-kafka queries against a given broker (the shared development broker or a test's own, one
  it restarts or kills), writing Parquet or collecting per batch;
- ``KinesisFaultQueries``: samza-kinesis queries whose AWS endpoint is a :class:`CuttableProxy`, so a test can make
  the endpoint go away under a running query;
- ``wait_for``, ``exactly_once``, ``startpoints_left``, ``kill_process_group``: waiting for a fault window, the sink
  checked against what was produced, the metadata store read back, a driver killed like a dying machine.

Spark's checkpoint logs are read by :mod:`samza_devkit.checkpoint_log`. These live in the development kit rather
than in a conftest so that test modules can import them: under ``--import-mode=importlib`` a conftest is not an
importable module.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

from samza_devkit import kinesis_helpers as kh
from samza_devkit.cuttable_proxy import CuttableProxy
from samza_devkit.query_harness import QueryHarness
from samza_devkit.waits import wait_until
from spark_samza_source.core.startpoint_manager import StartpointManager
from spark_samza_source.metadata import open_store


def wait_for(condition, timeout: float = 60, interval: float = 0.1, what: str = "condition"):
    """:func:`samza_devkit.waits.wait_until`, polling faster and giving up sooner by default (fault windows are
    short)."""
    return wait_until(condition, timeout, what, interval)


def startpoints_left(store_dir: str | Path, job: str) -> list[str]:
    """The keys of every startpoint still in a ``file:`` store."""
    return [e.key for e in StartpointManager(open_store(f"file://{store_dir}", job)).list()]


class FaultQueries(QueryHarness):
    """samza-kafka queries on ``bootstrap``; collected batches keep (partition, offset, task) only."""

    default_trigger = {"processingTime": "300 milliseconds"}

    def __init__(self, spark, bootstrap: str, root: Path) -> None:
        super().__init__(spark, root)
        self.bootstrap = bootstrap

    def options(self, **extra) -> dict[str, str]:
        return self.job_options({"kafka.bootstrap.servers": self.bootstrap, "startingOffsets": "earliest"}, extra)

    def stream(self, **extra):
        return self.spark.readStream.format("samza-kafka").options(**self.options(**extra)).load()

    def start_parquet(self, name: str, trigger: dict | None = None, transform=None, **extra):
        df = self.stream(**extra)
        if transform is not None:
            df = transform(df)
        return self.write_parquet(name, df, trigger)

    def start_collecting(self, name: str, trigger: dict | None = None, **extra):
        return self.collect_batches(name, self.stream(**extra), trigger, columns=("partition", "offset", "task"))

    def sink_offsets(self, name: str) -> Counter:
        """(partition, offset) -> copies in the Parquet sink, read through the sink's own metadata log."""
        path = Path(self.sink_path(name))
        if not (path / "_spark_metadata").exists():
            return Counter()
        return Counter((r.partition, r.offset) for r in self.spark.read.parquet(str(path))
                       .select("partition", "offset").collect())


def exactly_once(counts: Counter, wanted) -> list[str]:
    """Problems (empty if none) comparing sink copies with the set of (partition, offset) wanted once each."""
    wanted = set(wanted)
    problems = []
    dupes = sorted(k for k, n in counts.items() if n > 1)
    missing = sorted(wanted - set(counts))
    extra = sorted(set(counts) - wanted)
    if dupes:
        problems.append(f"{len(dupes)} duplicated, e.g. {dupes[:5]}")
    if missing:
        problems.append(f"{len(missing)} missing, e.g. {missing[:5]}")
    if extra:
        problems.append(f"{len(extra)} unexpected, e.g. {extra[:5]}")
    return problems


class KinesisFaultQueries(QueryHarness):
    """samza-kinesis queries whose AWS endpoint is a :class:`CuttableProxy`; the test talks to moto directly.
    Collected batches keep (shardId, sequenceNumber, subSequenceNumber, data) only."""

    default_trigger = {"processingTime": "300 milliseconds"}

    def __init__(self, spark, moto_endpoint: str, proxy: CuttableProxy, root: Path) -> None:
        super().__init__(spark, root)
        self.proxy = proxy
        self.client = kh.kinesis_client(moto_endpoint)

    def create_stream(self, shards: int, prefix: str = "s") -> str:
        return kh.create_stream(self.client, kh.unique_stream_name(prefix), shards)

    def options(self, stream: str, **extra) -> dict[str, str]:
        return self.job_options({
            "streamName": stream, "endpointUrl": self.proxy.endpoint, "region": "us-east-1",
            "awsAccessKeyId": "testing", "awsSecretKey": "testing", "startingPosition": "TRIM_HORIZON",
            "maxFetchTimePerShard": "2s",
        }, extra)

    def start_collecting(self, name: str, stream: str, trigger: dict | None = None, on_batch=None, **extra):
        df = self.spark.readStream.format("samza-kinesis").options(**self.options(stream, **extra)).load()
        return self.collect_batches(name, df, trigger, on_batch,
                                    columns=("shardId", "sequenceNumber", "subSequenceNumber", "data"))


def kill_process_group(proc) -> None:
    """SIGKILL a subprocess started with ``start_new_session=True`` and everything it started (JVM, workers)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)
