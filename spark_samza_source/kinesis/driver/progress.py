"""How far behind the tip samza-kinesis reads are, as ``sources[i].latestOffset`` in Spark's streaming progress.

Every ``GetRecords`` answer carries ``MillisBehindLatest``; the executors record the one where each shard's read of
batch N ended, beside the batch end (``microbatch_ends``), and the driver, planning batch N + 1 from those ends, reports
them through ``reportLatestOffset`` (``KinesisCoordinator.system_progress``). A Python data source cannot fill
``sources[i].metrics``, so the figures go where it can write: ``latestOffset``. The min / avg / max carry the names
Databricks' Kinesis source uses in its metrics; ``ops.metrics`` reads them back (key names defined here, once).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "AVG_MS_BEHIND_LATEST",
    "MAX_MS_BEHIND_LATEST",
    "MEASURED_IN_BATCH",
    "MILLIS_BEHIND_LATEST",
    "MIN_MS_BEHIND_LATEST",
    "millis_behind_report",
]

#: {shard id: MillisBehindLatest} where each shard's read of the measured batch ended
MILLIS_BEHIND_LATEST = "millisBehindLatest"
MIN_MS_BEHIND_LATEST = "minMsBehindLatest"
AVG_MS_BEHIND_LATEST = "avgMsBehindLatest"
MAX_MS_BEHIND_LATEST = "maxMsBehindLatest"
#: the batch whose reads measured the figures (the one before the batch the progress describes)
MEASURED_IN_BATCH = "millisBehindLatestBatch"


def millis_behind_report(millis: Mapping[str, int], batch: int) -> dict[str, Any]:
    """The progress entries for ``millis`` ({shard id: MillisBehindLatest}) measured in ``batch``; {} when empty.

    Pure. The average is a float, as Spark's ``avgOffsetsBehindLatest``; the shards are listed in sorted order.
    """
    if not millis:
        return {}
    values = list(millis.values())
    return {
        AVG_MS_BEHIND_LATEST: sum(values) / len(values),
        MAX_MS_BEHIND_LATEST: max(values),
        MEASURED_IN_BATCH: batch,
        MILLIS_BEHIND_LATEST: dict(sorted(millis.items())),
        MIN_MS_BEHIND_LATEST: min(values),
    }
