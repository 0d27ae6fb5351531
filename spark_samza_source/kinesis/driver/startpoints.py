"""Kinesis' StartpointVisitor: resolves a Startpoint to a shard position, on the driver.

Specific -> ``AT_SEQUENCE_NUMBER``, Timestamp -> ``AT_TIMESTAMP``, Oldest -> ``TRIM_HORIZON``, Upcoming -> the
latest position at resolution time, written as ``AT_TIMESTAMP(now)`` so a replay of the batch reads the same
records (a ``LATEST`` iterator would mean a different place at every replay). Resolution runs on the driver so the
resolved position lands in Spark's offset log, as Kafka's (``kafka/driver/startpoints.py``).
"""

from __future__ import annotations

from ...core.model import SystemStreamPartition
from ...core.startpoint import (
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
    StartpointVisitor,
)
from ..positions import ShardPosition


class KinesisStartpointResolver(StartpointVisitor[ShardPosition]):
    """Resolves every startpoint of one poll against the same ``now_ms`` (epoch ms, the driver's wall clock)."""

    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def visit_specific(self, ssp: SystemStreamPartition, startpoint: StartpointSpecific) -> ShardPosition:
        return ShardPosition.at_sequence(startpoint.position.strip())

    def visit_timestamp(self, ssp: SystemStreamPartition, startpoint: StartpointTimestamp) -> ShardPosition:
        return ShardPosition.at_timestamp(startpoint.timestamp_ms)

    def visit_oldest(self, ssp: SystemStreamPartition, startpoint: StartpointOldest) -> ShardPosition:
        return ShardPosition.trim_horizon()

    def visit_upcoming(self, ssp: SystemStreamPartition, startpoint: StartpointUpcoming) -> ShardPosition:
        return ShardPosition.at_timestamp(self.now_ms)
