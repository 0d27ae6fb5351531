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
from samza_devkit.aws_faults import AwsFaults
from samza_devkit.aws_fixtures import DUMMY_AWS_ENV
from samza_devkit.checkpoint_log import committed_batches, offset_log
from samza_devkit.cluster_tasks import kill_the_executor_of_a_task_in_flight, marked
from samza_devkit.fault_harness import exactly_once, wait_for
from samza_devkit.moto_server import MotoServerProcess
from samza_devkit.spark_cluster import (
    KINESIS_MOCK,
    MOTO,
    STORE,
    CutUnsupported,
    committed_parquet_rows,
    committed_parquet_rows_by_batch,
)
from spark_samza_source.kinesis.executor.parked_subscriptions import PARKED_TTL_S
from spark_samza_source.options.namespaces import BATCH_ENDS

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


@pytest.fixture(scope="module")
def cluster_store(bare_spark_cluster, cluster_moto):
    """A second moto, the metadata store's DynamoDB, on the cluster's ``STORE`` address: apart from the streams'
    endpoint, so a worker can lose the store alone."""
    with MotoServerProcess(host=bare_spark_cluster.service_address(STORE)) as endpoint:
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


@pytest.fixture(scope="module")
def cluster_fan_out(bare_spark_cluster):
    """kinesis-mock (the emulator with enhanced fan-out) behind the devkit's bridge, which makes it behave as AWS
    documents ``SubscribeToShard``; the bridge binds the cluster's ``KINESIS_MOCK`` address, kinesis-mock itself
    only loopback, so every connection of the workers to it is one to that address."""
    from samza_devkit.kinesis_mock import KinesisMockNotAvailable, KinesisMockProcess, ensure_kinesis_mock
    from samza_devkit.kinesis_mock_bridge import KinesisMockBridge

    try:
        modules = ensure_kinesis_mock()
    except KinesisMockNotAvailable as err:
        pytest.skip(f"kinesis-mock (the Kinesis emulator with enhanced fan-out) cannot be installed: {err}")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in DUMMY_AWS_ENV.items():
            mp.setenv(name, value)
        mp.delenv("AWS_PROFILE", raising=False)
        with KinesisMockProcess(modules=modules) as upstream, \
                KinesisMockBridge(upstream, host=bare_spark_cluster.service_address(KINESIS_MOCK)) as bridge:
            yield bridge


def test_fan_out_executor_lost_with_subscriptions_parked_read_on_elsewhere_exactly_once_and_none_leaked(
        bare_spark_cluster, cluster_fan_out, tmp_path):
    """Enhanced fan-out (``consumerType=SubscribeToShard``), a processing-time query over two shards. Once a batch
    has committed and no other batch is planned, a subscription still open is one parked by a read of the last
    batch; the bridge says which worker host holds it (the subscriber's address), and that host's executor JVM is
    SIGKILLed (its Python workers go with it). The records put next are read by the other executor or the
    replacement (a subscription from elsewhere takes the dead one over, or waits out AWS's 5-second rule a batch at
    a time), and the sink holds every acknowledged put exactly once.

    Leak check, over the batches of that round and of one more: every sample of the connections a worker host
    holds to the endpoint is at most ``2 * (shards + 1)`` per executor the host runs. Why that bound: an executor
    has one core, so it runs one task at a time and at most two Python workers for this query (the source's reader
    and the slow filter's UDF); in one Python worker the parked registry keeps at most one subscription per
    (client, consumer, shard) (``parked_subscriptions``: parking a newer one closes the older, taking one removes
    it; ``MAX_PARKED`` 64 and ``PARKED_TTL_S`` 60 s are the bounds of the general case), a read holds at most one
    for its shard besides, and the client's pool keeps at most one idle connection per call made at once (a
    refused subscription's answer returns its connection to the pool; a task here reads one shard). A parked
    subscription leaked per batch would pass the bound within a few batches. Once the query is stopped (stop file)
    the application ends, its executors exit, and every worker host's count drops to 0 (within ``PARKED_TTL_S``
    at most, were an executor to stay)."""
    cluster, bridge = bare_spark_cluster, cluster_fan_out
    if cluster.fallback:
        pytest.skip(f"the leak check counts connections per host: {cluster.fallback}")
    address, port = cluster.service_address(KINESIS_MOCK), int(bridge.endpoint.rsplit(":", 1)[1])
    client = kh.kinesis_client(bridge.endpoint)
    shards = 2
    stream = kh.create_stream(client, kh.unique_stream_name("cle"), shards)
    acks = kh.put_round(client, stream, 50, "a")
    root, name = tmp_path, f"cle-{uuid.uuid4().hex[:6]}"
    stop = root / "stop"
    driver = cluster.driver("kinesis-efo", None, "--kinesis-endpoint", bridge.endpoint, "--stream", stream,
                            "--job", name, "--store", f"file://{root}/metadata", "--checkpoint", str(root / "ck"),
                            "--sink", str(root / "sink"), "--markers", str(root / "inflight"), "--slow-ms", "1",
                            "--trigger", "processing:500", "--stop-file", str(stop), "--timeout", "300",
                            "--source-option", "consumerType=SubscribeToShard",
                            "--source-option", f"consumerName={name}-efo")

    def sunk() -> Counter:
        return Counter(committed_parquet_rows(root / "sink", ["shardId", "sequenceNumber", "subSequenceNumber"]))

    def connections() -> dict[str, int]:
        try:
            return {host: cluster.connections(host, address, port) for host in cluster.worker_hosts}
        except CutUnsupported as exc:
            pytest.skip(str(exc))

    def quiet() -> bool:
        """Every batch planned so far has committed (the offset log is written before a batch's tasks run)."""
        log = offset_log(root / "ck")
        return bool(log) and committed_batches(root / "ck") == set(log)

    wait_for(lambda: len(sunk()) == len(acks), timeout=180, what="the first round in the sink")

    def parked_somewhere():
        """A worker host holding an open subscription (the bridge names each subscriber's address; the host's
        namespace shows the connection established) while no batch runs, before and after the look: a subscription
        parked there by a read of the last batch."""
        if not quiet():
            return None
        planned = set(offset_log(root / "ck"))
        holders = {sub.client[0] for sub in bridge.open_subscriptions() if sub.client is not None}
        held = connections()
        found = [host for host in cluster.worker_hosts if cluster.address(host) in holders and held[host] > 0]
        if not found or not quiet() or set(offset_log(root / "ck")) != planned:
            return None  # none, or a batch started meanwhile: its reads may hold them
        return found[0]

    victim = wait_for(parked_somewhere, timeout=60, interval=0.2, what="a subscription parked between batches")
    executors = cluster.executors(victim)
    assert executors, f"no executor on {victim}"
    killed_at = len(marked(root / "inflight"))
    for pid in executors:
        cluster.kill_executor(pid)
    samples: list[tuple[str, int, int]] = []  # (host, connections, executors of this application there)

    def sampled_until_sunk() -> bool:
        for host, held in connections().items():
            samples.append((host, held, len(cluster.executors(host))))
        return len(sunk()) >= len(acks)

    for tag, count in (("b", 50), ("c", 5)):
        acks += kh.put_round(client, stream, count, tag)
        wait_for(sampled_until_sunk, timeout=120, interval=0.2, what=f"round {tag} in the sink")
    assert marked(root / "inflight")[killed_at:], "no task read after the executor loss"
    per_executor = 2 * (shards + 1)
    assert [s for s in samples if s[1] > per_executor * max(1, s[2])] == [], samples
    stop.touch()
    assert driver.wait(60) == 0, driver.log_tail()
    wait_for(lambda: not any(connections().values()), timeout=PARKED_TTL_S + 30, interval=0.5,
             what="no connection to Kinesis left from a worker host")
    assert exactly_once(sunk(), [(a.shard_id, a.sequence, 0) for a in acks]) == []


def _batch_ranges(checkpoint, sink, acks) -> list[str]:
    """Problems (empty if none) with what each batch delivered, found from Spark's logs alone: the offset log of
    batch N says where each shard's read starts (the batch ends the tasks of batch N-1 recorded), so batch N's rows
    of a shard must be exactly the acknowledged records after its start and up to batch N+1's start (the last
    batch: all after its start). A batch end recorded twice with different values, or a retry reading past or
    short of the recorded end, breaks this for the batch read to one end and planned on from the other."""
    log = offset_log(checkpoint)
    rows = committed_parquet_rows_by_batch(sink, ["shardId", "sequenceNumber"])
    acked: dict[str, list[int]] = {}
    for ack in acks:
        acked.setdefault(ack.shard_id, []).append(int(ack.sequence))

    def after(start: dict) -> int:
        if start["type"] == "TRIM_HORIZON":
            return -1
        assert start["type"] == "AFTER_SEQUENCE_NUMBER" and start["sub"] == -1, start
        return int(start["sequence"])

    problems = []
    for batch in sorted(log):
        for shard, state in log[batch]["shards"].items():
            low = after(state["start"])
            high = after(log[batch + 1]["shards"][shard]["start"]) if batch + 1 in log else float("inf")
            want = sorted(seq for seq in acked.get(shard, []) if low < seq <= high)
            got = sorted(int(seq) for sid, seq in rows.get(batch, []) if sid == shard)
            if got != want:
                problems.append(f"batch {batch} shard {shard}: {len(got)} rows, {len(want)} between its start and "
                                f"the next batch's")
    return problems


def test_worker_cut_off_from_the_metadata_store_before_a_read_and_while_recording_its_end_exactly_once(
        bare_spark_cluster, cluster_moto, cluster_store, tmp_path):
    """The metadata store is DynamoDB on an address of its own (``cluster_store``); one worker loses it twice
    (its packets there silently dropped: connections time out, nothing is refused), each time healed once a task
    there has failed:

    1. before the query starts: a task there fails at its first store call -- the lookup of the batch end an
       earlier attempt may have recorded, which every task makes before it reads (``stream_and_record``) --
       within the store client's connect timeout (10 s times ``max_attempts``, 1 here: measured 10.0 s, 20.0 s
       with 2, ~82 s with the default 8), never hanging;
    2. while it records a batch end: the store carries the worker's ``put_if_absent`` out and the link is cut
       before the answer reaches the worker (the devkit's moto holds that answer until the task has given up on
       it), so the write happened but the task never hears it; it fails within the client's read timeout (30 s),
       and the retry finds the end the lost answer belonged to and reads exactly to it.

    The sink holds every acknowledged put exactly once, and every batch delivered exactly the records between its
    planned start and the next batch's (``_batch_ranges``): the ends in the store, the one whose answer was lost
    included, are the ones the next batches started from."""
    cluster = bare_spark_cluster
    client = kh.kinesis_client(cluster_moto)
    stream = kh.create_stream(client, kh.unique_stream_name("cls"), 2)
    acks = kh.put_round(client, stream, 200, "a")
    root, name = tmp_path, f"cls-{uuid.uuid4().hex[:6]}"
    table = f"meta-{uuid.uuid4().hex[:8]}"
    store = (f"dynamodb://{table}?region=us-east-1&endpoint={cluster_store}&max_attempts=1"
             "&aws_access_key_id=testing&aws_secret_access_key=testing")
    cut_host, store_address = cluster.worker_hosts[0], cluster.service_address(STORE)
    try:
        cluster.cut(cut_host, store_address)
    except CutUnsupported as exc:
        pytest.skip(str(exc))
    cut_address = cluster.address(cut_host)
    # the first batch-end write from the cut host once it is healed: carried out, its answer held for the test
    faults = AwsFaults(cluster_store)
    held = faults.add("PutItem", service="DynamoDB", match=BATCH_ENDS, remote=cut_address, hold=True, times=1)
    stop = root / "stop"

    def failures_on_the_cut_host() -> list[str]:
        text = driver.log_path.read_text(errors="replace")
        return [line for line in text.splitlines() if "Lost task" in line and f"({cut_address}" in line]

    try:
        driver = cluster.driver("kinesis-storecut", None, "--kinesis-endpoint", cluster_moto, "--stream", stream,
                                "--job", name, "--store", store, "--checkpoint", str(root / "ck"),
                                "--sink", str(root / "sink"), "--markers", str(root / "inflight"),
                                "--max-offsets", "100", "--slow-ms", "1", "--trigger", "processing:500",
                                "--stop-file", str(stop), "--timeout", "400")
        wait_for(failures_on_the_cut_host, timeout=180, interval=0.5,
                 what=f"a task on {cut_host} failing while cut off from the store")
        text = driver.log_path.read_text(errors="replace")
        assert f"DynamoDB table '{table}'" in text and "Connect timeout on endpoint URL" in text, driver.log_tail(80)
    finally:
        cluster.heal(cut_host, store_address)
    healed_at, failed_before = len(marked(root / "inflight")), len(failures_on_the_cut_host())

    def a_batch_end_write_held() -> bool:
        if faults.counts(held)["failed"]:
            return True
        acks.extend(kh.put_round(client, stream, 20, f"r{len(acks)}"))  # more batches, until one ends on the host
        return False

    try:
        wait_for(a_batch_end_write_held, timeout=180, interval=2, what=f"a batch end recorded from {cut_host}")
        # the write is done and its answer not yet sent: the link goes now, so the answer never arrives (the cut
        # drops the host's own packets only; the held answer goes out once the task has given up on it)
        cluster.cut(cut_host, store_address)
        wait_for(lambda: len(failures_on_the_cut_host()) > failed_before, timeout=120, interval=0.5,
                 what=f"the task on {cut_host} failing without the answer to its write")
        assert "Read timeout on endpoint URL" in driver.log_path.read_text(errors="replace"), driver.log_tail(80)
    finally:
        cluster.heal(cut_host, store_address)
        faults.release(held)
    acks += kh.put_round(client, stream, 20, "last")
    wanted = [(a.shard_id, a.sequence, 0) for a in acks]

    def sunk() -> Counter:
        return Counter(committed_parquet_rows(root / "sink", ["shardId", "sequenceNumber", "subSequenceNumber"]))

    wait_for(lambda: set(sunk()) >= set(wanted), timeout=180, interval=0.5, what="every put in the sink")
    stop.touch()
    assert driver.wait(120) == 0, driver.log_tail()
    text = driver.log_path.read_text(errors="replace")
    assert "aws_secret_access_key=testing" not in text  # the URI's secret stays out of errors
    assert cut_host in {m["host"] for m in marked(root / "inflight")[healed_at:]}, marked(root / "inflight")
    assert exactly_once(sunk(), wanted) == []
    assert _batch_ranges(root / "ck", root / "sink", acks) == []
    assert committed_batches(root / "ck") >= set(offset_log(root / "ck")) - {max(offset_log(root / "ck"))}
