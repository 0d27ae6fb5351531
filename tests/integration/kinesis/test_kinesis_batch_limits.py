"""samza-kinesis's maxRecordsPerShard on every supported PySpark: the executors apply it whatever read limit Spark
passes (none at all on PySpark 4.0 / 4.1), so every batch reads at most that many records of each shard, before and
after a restart from the checkpoint. On moto only: the limit is the source's, not the emulator's."""

from collections import Counter

import pytest

from samza_devkit import kinesis_helpers as kh

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def rows_key(rows):
    return sorted((r.shardId, r.sequenceNumber) for r in rows)


def acks_key(acks):
    return sorted((a.shard_id, a.sequence) for a in acks)


def test_max_records_per_shard_bounds_every_batch_across_a_restart(ks):
    """Backs docs/deployment.md, Compatibility: every batch reads at most maxRecordsPerShard records of each shard on
    every supported PySpark (the executors apply it, whatever limit Spark passes), before and after a restart
    from the checkpoint; every record is read once."""
    stream = ks.create_stream(2, "cap")
    acks = kh.put_round(ks.client, stream, 250, "a")

    def read():
        return rows_key(ks.collected("cap"))

    query = ks.start_collecting("cap", stream, maxRecordsPerShard="100")
    ks.wait_for(lambda: read() == acks_key(acks), timeout=180, what="the first 500 records")
    query.stop()
    acks += kh.put_round(ks.client, stream, 150, "b")
    query = ks.start_collecting("cap", stream, maxRecordsPerShard="100")
    ks.wait_for(lambda: len(read()) >= len(acks), timeout=180, what="the 300 records put while stopped")
    query.stop()
    assert read() == acks_key(acks)  # every record once
    per_shard = [Counter(r.shardId for r in rows) for _, rows in ks.batches["cap"]]
    assert max(n for counts in per_shard for n in counts.values()) <= 100
    assert len([c for c in per_shard if c]) >= 5  # 250 then 150 records a shard, at most 100 a batch
