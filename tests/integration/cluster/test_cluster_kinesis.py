"""samza-kinesis on a real Spark standalone cluster: workers on hosts of their own, executors lost.

One cluster for the module (``bare_spark_cluster``, see ``samza_devkit.cluster_fixtures``), with moto (Kinesis and
DynamoDB) on an address of its own on the cluster's bridge. Every query is a driver process
(``samza_devkit.fault_driver --master spark://...``) writing Spark's Parquet sink, an idempotent sink (exactly once
through its ``_spark_metadata`` log); each test checks that sink, read through that log, against every put Kinesis
acknowledged: each record exactly once.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.aws_fixtures import DUMMY_AWS_ENV
from samza_devkit.checkpoint_log import committed_batches, offset_log
from samza_devkit.cluster_tasks import kill_the_executor_of_a_task_in_flight, marked
from samza_devkit.fault_harness import exactly_once
from samza_devkit.moto_server import MotoServerProcess
from samza_devkit.spark_cluster import MOTO, committed_parquet_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster_moto(bare_spark_cluster):
    """moto (Kinesis and DynamoDB) on its own address of the cluster's bridge; this process's AWS clients get
    dummy credentials (the drivers pass theirs as options)."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in DUMMY_AWS_ENV.items():
            mp.setenv(name, value)
        mp.delenv("AWS_PROFILE", raising=False)
        with MotoServerProcess(host=bare_spark_cluster.service_address(MOTO)) as endpoint:
            yield endpoint


def test_kinesis_executor_sigkilled_after_recording_its_batch_end_retried_to_that_end_exactly_once(
        bare_spark_cluster, cluster_moto, tmp_path):
    """samza-kinesis: an executor is SIGKILLed while its task hands over a shard's rows, after the task recorded
    the shard's batch end (``put_if_absent``, before its first rows); the retry (on another executor) finds that end
    and reads exactly to it, so the sink (compared on shard, sequence and subsequence numbers) holds every
    acknowledged put exactly once (a retry reading past or short of the recorded end would duplicate or lose
    rows of that batch or the next)."""
    cluster = bare_spark_cluster
    client = kh.kinesis_client(cluster_moto)
    stream = kh.create_stream(client, kh.unique_stream_name("clk"), 2)
    acks = []
    for shard in kh.list_shards(client, stream):
        key = shard["HashKeyRange"]["StartingHashKey"]
        acks += kh.put_records(client, stream, [(f"pk-{i % 7}", f"{shard['ShardId']}-{i}".encode(), key)
                                                for i in range(200)])
    root, name = tmp_path, f"clk-{uuid.uuid4().hex[:6]}"
    driver = cluster.driver("kinesis-exkill", None, "--kinesis-endpoint", cluster_moto, "--stream", stream,
                            "--job", name, "--store", f"file://{root}/metadata", "--checkpoint", str(root / "ck"),
                            "--sink", str(root / "sink"), "--markers", str(root / "inflight"),
                            "--max-offsets", "100", "--slow-ms", "2000")

    mark = kill_the_executor_of_a_task_in_flight(cluster, root / "inflight")
    assert driver.wait(240) == 0, driver.log_tail()
    got = Counter(committed_parquet_rows(root / "sink", ["shardId", "sequenceNumber", "subSequenceNumber"]))
    assert exactly_once(got, [(a.shard_id, a.sequence, 0) for a in acks]) == []
    retries = [m for m in marked(root / "inflight") if m["task"][:2] == mark["task"][:2] and m["task"][2] > 0]
    assert retries, marked(root / "inflight")  # where: the scheduler's choice (see the Kafka executor test)
    log = offset_log(root / "ck")
    assert len(log) >= 2 and committed_batches(root / "ck") == set(log)  # 200 a shard, 100 a batch
