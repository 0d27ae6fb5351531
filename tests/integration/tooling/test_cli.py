"""samza-source, the real console script in a subprocess, against live samza-kafka and samza-kinesis queries.

Kafka (dev broker + local Spark): a startpoint set with the CLI is applied and then deleted; ``jobmodel show``
reflects a 2 -> 4 expansion; ``lag`` equals what the broker says (high watermarks minus the offsets committed to
the job's consumer group, written at the same commit as the checkpoint mirror); ``--json`` parses; bad arguments
exit 2 with usage. Kinesis (moto): a startpoint set by ``--stream --shard`` is applied, and ``lag`` counts the
records put after the query stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from samza_devkit import kinesis_helpers as kh
from samza_devkit.kafka_helpers import add_partitions, create_topic, produce, unique_topic
from spark_samza_source.core.checkpoint import CheckpointMirror
from spark_samza_source.metadata import open_store

SCRIPT = Path(sys.executable).parent / "samza-source"


def cli(*args: str, env: dict[str, str] | None = None, entry_point: bool = False) -> subprocess.CompletedProcess:
    command = [str(SCRIPT)] if entry_point else [sys.executable, "-m", "spark_samza_source.ops.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def cli_json(*args: str, env: dict[str, str] | None = None, expect: int = 0) -> dict:
    result = cli(*args, "--json", env=env)
    assert result.returncode == expect, f"exit {result.returncode}: {result.stderr}"
    return json.loads(result.stdout)


def group_committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cli-test-probe"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
    finally:
        consumer.close()


def test_bad_arguments_exit_2_with_a_usage_message():
    result = cli("startpoint", "set", "--store", "file:///tmp/x", "--job", "j", "--topic", "t", "--offset", "3")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: samza-source startpoint set")
    assert "error: [SAMZA_CLI_SELECTOR_TOO_WIDE] --topic needs --partition" in result.stderr and result.stdout == ""

    result = cli("lag", "--store", "file:///tmp/x", "--job", "j", "--bootstrap", "h:1", "--stream", "s", "--json")
    assert result.returncode == 2 and "usage: samza-source lag" in result.stderr
    assert json.loads(result.stdout) == {
        "error": "samza-source lag: [SAMZA_CLI_LAG_FLAGS_INVALID] give exactly one of --bootstrap HOST:PORT (Kafka) or "
                 "--stream S (Kinesis)",
        "exitCode": 2}

    result = cli("startpoint", "set", "--store", "file:///tmp/x", "--job", "j", "--topic", "t", "--partition", "0",
                 "--timestamp", "2024-01-01T00:00:00", entry_point=True)
    assert result.returncode == 2 and "argument --timestamp" in result.stderr and "no time zone" in result.stderr


@pytest.mark.spark
@pytest.mark.slow
def test_cli_on_a_running_kafka_query(kq):
    topic = create_topic(kq.bootstrap, unique_topic("cli"), 2)
    produce(kq.bootstrap, topic, [(b"k", f"a{i}".encode(), None, i % 2) for i in range(40)])
    query = kq.start_collecting("cli", subscribe=topic)
    kq.wait_for(lambda: len(kq.collected("cli")) == 40, what="the backlog")
    job = ["--store", kq.store_uri, "--job", kq.job]

    model = cli_json("jobmodel", "show", *job)
    assert model["tasks"] == {"Partition 0": [f"kafka.{topic}.0"], "Partition 1": [f"kafka.{topic}.1"]}

    # -- a startpoint set with the CLI is applied at the next batch, then deleted once that batch commits
    stored = cli_json("startpoint", "set", *job, "--topic", topic, "--partition", "0", "--offset", "5")
    assert (stored["key"], stored["startpoint"]["specificOffset"]) == (f"kafka.{topic}.0", "5")
    # get and delete on an SSP the query does not read: the running query may apply (and delete) the startpoint
    # above before a second CLI process has even started (seen in CI)
    idle = ["--topic", f"{topic}-idle", "--partition", "0"]
    cli_json("startpoint", "set", *job, *idle, "--oldest")
    listed = cli_json("startpoint", "get", *job, *idle)["startpoints"]
    assert [s["type"] for s in listed] == ["StartpointOldest"] and listed[0]["ssp"] == f"kafka.{topic}-idle.0"
    assert cli_json("startpoint", "delete", *job, *idle)["deleted"] == [f"kafka.{topic}-idle.0"]
    kq.wait_for(lambda: len(kq.collected("cli")) >= 55, timeout=60, what="partition 0 replayed from offset 5")
    replayed = kq.collected("cli")[40:]
    assert sorted((r.partition, r.offset) for r in replayed) == [(0, o) for o in range(5, 20)]
    kq.wait_for(lambda: cli_json("startpoint", "list", *job)["startpoints"] == [], timeout=60,
                what="the applied startpoint deleted after its batch committed")
    result = cli("startpoint", "get", *job, "--topic", topic, "--partition", "0")
    assert result.returncode == 1 and "no startpoint stored" in result.stderr

    # -- jobmodel show reflects the expansion 2 -> 4 (fixed tasks: 2 joins Partition 0, 3 joins Partition 1)
    add_partitions(kq.bootstrap, topic, 4)
    produce(kq.bootstrap, topic, [(b"k", f"b{i}".encode(), None, 2 + i % 2) for i in range(10)])
    expanded = {"Partition 0": [f"kafka.{topic}.0", f"kafka.{topic}.2"],
                "Partition 1": [f"kafka.{topic}.1", f"kafka.{topic}.3"]}
    kq.wait_for(lambda: cli_json("jobmodel", "show", *job)["tasks"] == expanded, timeout=60,
                what="the expanded job model")
    model = cli_json("jobmodel", "show", *job)
    assert model["previous"] is True
    assert model["changes"]["newSsps"] == [{"ssp": f"kafka.{topic}.2", "task": "Partition 0"},
                                           {"ssp": f"kafka.{topic}.3", "task": "Partition 1"}]
    assert model["initialPartitionCounts"] == {f"kafka.{topic}": 2}
    table = cli("jobmodel", "show", *job).stdout.splitlines()
    assert ["Partition", "0", f"kafka.{topic}.2", "new"] in [line.split() for line in table]
    assert f"  SystemStreamPartition [kafka, {topic}, 3] -> Partition 1 (new)" in table
    kq.wait_for(lambda: len(kq.collected("cli")) >= 65, timeout=60, what="the new partitions read")

    # -- lag: the broker's high watermarks minus the offsets committed at the last commit
    query.stop()
    produce(kq.bootstrap, topic, [(b"k", f"c{i}".encode(), None, 1) for i in range(7)])
    produce(kq.bootstrap, topic, [(b"k", f"d{i}".encode(), None, 2) for i in range(3)])
    highs = high_watermarks(kq.bootstrap, topic, 4)
    committed = group_committed(kq.bootstrap, f"samza-{kq.job}", topic, 4)
    report = cli_json("lag", *job, "--bootstrap", kq.bootstrap)
    rows = {r["partition"]: r for r in report["rows"]}
    assert sorted(rows) == [0, 1, 2, 3]
    expected = {}
    for p in range(4):
        if committed[p] >= 0:
            expected[p] = (committed[p], highs[p], highs[p] - committed[p])
        else:  # the batch that first read the new partitions was not committed yet: counted from the log start
            expected[p] = (None, highs[p], highs[p] - 0)
        assert (rows[p]["committed"], rows[p]["latest"], rows[p]["behind"]) == expected[p]
    assert committed[0] >= 0 and committed[1] >= 0
    assert report["totals"]["behind"] == sum(e[2] for e in expected.values())
    assert report["totals"]["behind"] >= 10  # at least what arrived after the query stopped
    assert report["complete"] is True and report["exitCode"] == 0
    mirror = CheckpointMirror(open_store(kq.store_uri, kq.job)).read()
    assert {ssp.partition: pos for ps in mirror.positions.values() for ssp, pos in ps.items()} == {
        p: c for p, c in committed.items() if c >= 0}

    # the aligned table: one row per partition, numbers as in the JSON (BEHIND right-aligned), and a total
    result = cli("lag", *job, "--bootstrap", kq.bootstrap)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["SSP", "TASKS", "COMMITTED", "LATEST", "BEHIND", "NOTE"]
    end = lines[0].index("BEHIND") + len("BEHIND")
    for line in lines[2:6]:
        ssp, _, _, c, latest, behind = line[:end].split()
        p = int(ssp.rsplit(".", 1)[1])
        assert line[end:end + 1] in ("", " ")
        assert (None if c == "-" else int(c), int(latest), int(behind)) == expected[p]
    assert lines[6].startswith(f"total: {report['totals']['behind']} offsets behind over 4 partitions")

    # -- the installed entry point
    result = cli("checkpoint", "show", *job, "--json", entry_point=True)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)["checkpoint"]["tasks"]
    assert {item["partition"]: item["position"] for items in shown.values() for item in items} == {
        p: c for p, c in committed.items() if c >= 0}


@pytest.mark.spark
@pytest.mark.slow
def test_cli_kinesis_startpoint_by_shard_and_lag(ks):
    stream = ks.create_stream(2, "cli")
    shards = sorted(s["ShardId"] for s in kh.list_shards(ks.client, stream))
    keys = {s["ShardId"]: s["HashKeyRange"]["StartingHashKey"] for s in kh.list_shards(ks.client, stream)}

    def put(shard, tag, count):
        return kh.put_records(ks.client, stream, [(f"pk-{i}", f"{tag}-{i}".encode(), keys[shard])
                                                  for i in range(count)])

    first = put(shards[0], "a", 10)
    put(shards[1], "b", 6)
    query = ks.start_collecting("kcli", stream)
    ks.wait_for(lambda: len(ks.collected("kcli")) == 16, what="the backlog")
    job = ["--store", ks.store_uri, "--job", ks.job]
    aws = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}

    stored = cli_json("startpoint", "set", *job, "--stream", stream, "--shard", shards[0],
                      "--checkpoint", ks.checkpoint("kcli"), "--oldest")
    assert stored["shard"] == shards[0] and stored["shardsInSlot"] == [shards[0]]
    assert stored["sspKey"] == f"kinesis.{stream}.{stored['slot']}" and stored["type"] == "StartpointOldest"
    ks.wait_for(lambda: len(ks.collected("kcli")) >= 26, timeout=90, what="shard 0 replayed")
    replayed = ks.collected("kcli")[16:]
    assert [r.data for r in replayed] == [p.data for p in first]
    assert {r.shardId for r in replayed} == {shards[0]}
    ks.wait_for(lambda: cli_json("startpoint", "list", *job)["startpoints"] == [], timeout=60,
                what="the applied startpoint deleted")

    lag = ["lag", *job, "--stream", stream, "--region", "us-east-1", "--endpoint", ks.endpoint,
           "--checkpoint", ks.checkpoint("kcli")]
    ks.wait_for(lambda: cli_json(*lag, env=aws)["totals"]["behind"] == 0, timeout=60, what="lag 0 once caught up")
    query.stop()
    later = put(shards[1], "c", 7)
    report = cli_json(*lag, env=aws)
    rows = {r["shard"]: r for r in report["rows"]}
    assert set(rows) == set(shards)
    assert (rows[shards[0]]["behind"], rows[shards[1]]["behind"]) == (0, 7)
    assert rows[shards[1]]["latest"] == later[-1].sequence
    assert rows[shards[1]]["committed"].startswith("after ")
    assert rows[shards[1]]["capped"] is False and report["totals"]["behind"] == 7

    capped = cli_json(*lag, "--max-records", "3", env=aws)
    assert {r["shard"]: (r["behind"], r["capped"]) for r in capped["rows"]}[shards[1]] == (3, True)

    result = cli(*lag, env=aws)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split() == ["TASK", "SLOT", "SHARD", "COMMITTED", "LATEST", "BEHIND",
                                                     "MS_BEHIND", "NOTE"]
    assert "total: 7 records behind over 2 shards" in result.stdout


def test_startpoint_list_marks_malformed_startpoints(tmp_path):
    """An unknown @type and a negative Kafka offset are listed as malformed (the query skips both), next to a valid
    startpoint that is listed as usual. Backs docs/guarantees.md: "Malformed startpoints are listed as
    malformed by `samza-source startpoint list`"."""
    from spark_samza_source.core.model import SystemStreamPartition
    from spark_samza_source.core.startpoint import StartpointSpecific
    from spark_samza_source.core.startpoint_manager import NAMESPACE, StartpointManager

    uri = f"file://{tmp_path}/meta"
    store = open_store(uri, "sp-lint")
    manager = StartpointManager(store)
    manager.write(SystemStreamPartition("kafka", "orders", 0), StartpointSpecific("7"))
    manager.write(SystemStreamPartition("kafka", "orders", 1), StartpointSpecific("-5"))
    store.put(NAMESPACE, "kafka.orders.2", {"@type": "StartpointBogus", "creationTimestamp": 1})
    listed = cli_json("startpoint", "list", "--store", uri, "--job", "sp-lint")
    assert [e["key"] for e in listed["startpoints"]] == ["kafka.orders.0"]
    bad = {m["key"]: m["error"] for m in listed["malformed"]}
    assert set(bad) == {"kafka.orders.1", "kafka.orders.2"}
    assert "'-5'" in bad["kafka.orders.1"] and "non-negative whole number" in bad["kafka.orders.1"]
    assert "unknown startpoint @type 'StartpointBogus'" in bad["kafka.orders.2"]
    text = cli("startpoint", "list", "--store", uri, "--job", "sp-lint").stdout
    assert "malformed startpoint at key 'kafka.orders.1'" in text
