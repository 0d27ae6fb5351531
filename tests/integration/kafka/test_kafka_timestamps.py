"""``startingOffsetsByTimestamp`` and timestamp startpoints resolved by Apache Kafka's time index (ListOffsets by
timestamp), on a CreateTime and on a LogAppendTime topic read by one query.

* CreateTime: the producer's timestamps, out of order on purpose. Kafka answers the first offset *in log order*
  whose timestamp is at or after the one asked (a record stamped earlier further on does not count), not the
  position the timestamp would have in a sorted log.
* LogAppendTime: the broker stamps each record when it appends it, whatever timestamp the producer set (here one
  ten minutes old); the records are written in three waves the broker's clock tells apart, and what the query
  resolves and returns is the broker's time (``timestampType`` 1), never the producer's.

The query starts from the timestamps, runs to the end (availableNow), then timestamp startpoints on both topics
make its next run read each from a later timestamp again. Every expected offset is worked out from the
timestamps the broker acknowledged.
"""

from __future__ import annotations

import json
import time

import pytest

from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from samza_devkit.query_harness import await_available_now
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import StartpointTimestamp

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# CreateTime: seconds after the base of each record, in offset order (Kafka 4 refuses timestamps more than an hour
# ahead of its clock, so the base lies in the past)
CREATE_TIME_S = [0, 1, 2, 3, 10, 4, 5, 11, 12, 6, 13, 14, 7, 15]
WAVE = 5  # LogAppendTime records per wave


def _first_at_or_after(timestamps: list[int], target: int) -> int:
    """What a time index answers: the first offset, in log order, whose timestamp is >= ``target``."""
    return next(offset for offset, ts in enumerate(timestamps) if ts >= target)


def _waves_stamped_by_the_broker(bootstrap: str, topic: str, stale_ts: int) -> list[int]:
    """Three waves of WAVE records carrying ``stale_ts``; each wave is produced once the clock has passed the
    broker's stamp of the wave before, so the waves get distinct times. Returns the broker's stamps by offset."""
    stamps: list[int] = []
    for wave in range(3):
        while stamps and time.time() * 1000 <= stamps[-1] + 1:
            time.sleep(0.005)
        acks = produce(bootstrap, topic, [(b"k", b"w%d-%d" % (wave, i), None, 0, stale_ts) for i in range(WAVE)])
        stamps += [a.timestamp_ms for a in acks]
    return stamps


def _run_from_timestamps(kq, topics: list[str], starts: dict[str, dict[str, int]]) -> None:
    """An availableNow run of the query into its Parquet sink (the harness's options, without its
    ``startingOffsets``: only one option may say where a new query starts)."""
    options = kq.options(subscribe=",".join(topics), startingOffsetsByTimestamp=json.dumps(starts))
    del options["startingOffsets"]
    stream = kq.spark.readStream.format("samza-kafka").options(**options).load()
    await_available_now(kq.write_parquet("ts", stream, {"availableNow": True}), "ts", 180)


def test_timestamp_starts_and_startpoints_follow_the_time_index(kq):
    base = int(time.time() * 1000) - 10 * 60_000
    created = create_topic(kq.bootstrap, unique_topic("ts-create"), 1)
    appended = create_topic(kq.bootstrap, unique_topic("ts-append"), 1, {"message.timestamp.type": "LogAppendTime"})
    create_ts = [base + 1000 * s for s in CREATE_TIME_S]
    produce(kq.bootstrap, created, [(b"k", b"c%d" % i, None, 0, ts) for i, ts in enumerate(create_ts)])
    append_ts = _waves_stamped_by_the_broker(kq.bootstrap, appended, stale_ts=base)
    assert min(append_ts) > base + 60_000  # the broker's clock, not the producer's timestamp

    # -- a new checkpoint starts from the first record at or after each timestamp
    create_target, append_target = base + 4500, append_ts[WAVE]
    create_start = _first_at_or_after(create_ts, create_target)
    append_start = _first_at_or_after(append_ts, append_target)
    assert (create_start, append_start) == (4, WAVE)  # offset 4 (10 s) comes before 6 (5 s) in the log
    starts = {created: {"0": create_target}, appended: {"0": append_target}}
    _run_from_timestamps(kq, [created, appended], starts)
    rows = kq.sink_rows("ts")
    assert sorted((r.topic, r.offset) for r in rows) == sorted(
        [(created, o) for o in range(create_start, len(create_ts))]
        + [(appended, o) for o in range(append_start, len(append_ts))])
    stamped = {(r.topic, r.offset): (round(r.timestamp.timestamp() * 1000), r.timestampType) for r in rows}
    assert all(stamped[(created, o)] == (create_ts[o], 0) for o in range(create_start, len(create_ts)))
    assert all(stamped[(appended, o)] == (append_ts[o], 1) for o in range(append_start, len(append_ts)))

    # -- timestamp startpoints reposition the checkpointed query: each topic is read again from its own
    create_again, append_again = base + 10_500, append_ts[2 * WAVE]
    assert _first_at_or_after(create_ts, create_again) == 7  # 11 s, not 12 (its sorted place) nor 13
    assert _first_at_or_after(append_ts, append_again) == 2 * WAVE
    startpoints = kq.startpoints()
    startpoints.write(SystemStreamPartition("kafka", created, 0), StartpointTimestamp(create_again))
    startpoints.write(SystemStreamPartition("kafka", appended, 0), StartpointTimestamp(append_again))
    _run_from_timestamps(kq, [created, appended], starts)  # the same query again, from its checkpoint
    replayed = sorted((r.topic, r.offset) for r in kq.sink_rows("ts"))
    assert replayed == sorted(
        [(created, o) for o in range(create_start, len(create_ts))] + [(created, o) for o in range(7, len(create_ts))]
        + [(appended, o) for o in range(append_start, len(append_ts))]
        + [(appended, o) for o in range(2 * WAVE, len(append_ts))])
