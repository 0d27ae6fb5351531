"""``samza-source startpoint set`` without a partition, against live queries: ``--topic T`` alone rewinds every
partition of T (and no other topic of the job); ``--stream S`` alone rewinds every slot of S."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.kafka_helpers import create_topic, produce, unique_topic

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def cli_json(*args: str) -> dict:
    result = subprocess.run([sys.executable, "-m", "spark_samza_source.ops.cli", *args, "--json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    return json.loads(result.stdout)


def test_set_for_a_whole_topic_rewinds_every_partition_of_it_and_nothing_else(kq):
    topic = create_topic(kq.bootstrap, unique_topic("whole"), 3)
    other = create_topic(kq.bootstrap, unique_topic("other"), 2)
    produce(kq.bootstrap, topic, [(b"k", f"a{i}".encode(), None, i % 3) for i in range(30)])
    produce(kq.bootstrap, other, [(b"k", f"o{i}".encode(), None, i % 2) for i in range(10)])
    kq.start_collecting("whole", subscribe=f"{topic},{other}")
    kq.wait_for(lambda: len(kq.collected("whole")) == 40, what="the backlog")
    job = ["--store", kq.store_uri, "--job", kq.job]

    stored = cli_json("startpoint", "set", *job, "--topic", topic, "--oldest")
    assert stored["keys"] == [f"kafka.{topic}.{p}" for p in range(3)]
    kq.wait_for(lambda: len(kq.collected("whole")) >= 70, timeout=90, what="every partition of the topic replayed")
    replayed = kq.collected("whole")[40:]
    assert sorted((r.topic, r.partition, r.offset) for r in replayed) == [
        (topic, p, o) for p in range(3) for o in range(10)]
    kq.wait_for(lambda: cli_json("startpoint", "list", *job)["startpoints"] == [], timeout=60,
                what="the applied startpoints deleted after their batch committed")


def test_set_for_a_whole_stream_rewinds_every_slot(ks):
    stream = ks.create_stream(2, "whole")
    acks = []
    for shard in kh.list_shards(ks.client, stream):
        key = shard["HashKeyRange"]["StartingHashKey"]
        acks += kh.put_records(ks.client, stream, [(f"pk-{i}", f"{shard['ShardId']}-{i}".encode(), key)
                                                   for i in range(20)])
    assert len(ks.run_available_now("whole", stream)) == 40
    assert ks.run_available_now("whole", stream) == []  # caught up: nothing without the startpoints

    stored = cli_json("startpoint", "set", "--store", ks.store_uri, "--job", ks.job, "--stream", stream,
                      "--checkpoint", ks.checkpoint("whole"), "--oldest")
    assert len(stored["keys"]) == 2 and sorted(s for x in stored["ssps"] for s in x["shardsInSlot"]) == sorted(
        s["ShardId"] for s in kh.list_shards(ks.client, stream))
    replayed = ks.run_available_now("whole", stream)
    assert sorted((r.shardId, r.sequenceNumber) for r in replayed) == sorted((a.shard_id, a.sequence) for a in acks)
