"""Kafka's StartpointVisitor: resolves a Startpoint to the next offset to read, on the driver.

Samza's ``KafkaStartpointToOffsetResolver`` semantics: Specific -> that offset; Timestamp -> offsetsForTimes,
and when no record is at or after the timestamp, the end offset (upcoming); Oldest -> the log start offset;
Upcoming -> the high watermark. Resolution runs on the driver so the resolved position lands in Spark's
offset log and a replay reads exactly the same records.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...core.model import SystemStreamPartition
from ...core.startpoint import (
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
    StartpointVisitor,
)
from .. import errors
from ..positions import OffsetsForTimes, Watermarks


def kafka_startpoint_problem(startpoint) -> str | None:
    """Why ``startpoint`` can never position a Kafka partition (a malformed startpoint), or None.

    Parsing accepts any non-empty ``specificOffset`` string (Kinesis sequence numbers are strings too); for Kafka
    it must be a non-negative whole number. The CLI marks such startpoints malformed and the query skips them.
    """
    if isinstance(startpoint, StartpointSpecific):
        text = startpoint.position.strip()
        if not (text.isascii() and text.isdigit()):
            return (f"StartpointSpecific has specificOffset {startpoint.position!r:.40}; a Kafka offset must be a "
                    "non-negative whole number written as a string, e.g. \"42\"")
    return None


class KafkaStartpointResolver(StartpointVisitor[int]):
    def __init__(self, watermarks: Mapping[SystemStreamPartition, Watermarks], offsets_for_times: OffsetsForTimes):
        self._watermarks = watermarks
        self._offsets_for_times = offsets_for_times

    def _marks(self, ssp: SystemStreamPartition) -> Watermarks:
        return self._watermarks[ssp]

    def visit_specific(self, ssp: SystemStreamPartition, startpoint: StartpointSpecific) -> int:
        problem = kafka_startpoint_problem(startpoint)
        if problem is not None:
            raise errors.startpoint_invalid(problem, ssp)
        return int(startpoint.position.strip())

    def visit_timestamp(self, ssp: SystemStreamPartition, startpoint: StartpointTimestamp) -> int:
        tp = (ssp.stream, ssp.partition)
        found = self._offsets_for_times({tp: startpoint.timestamp_ms}).get(tp)
        return self._marks(ssp).high if found is None or found < 0 else found

    def visit_oldest(self, ssp: SystemStreamPartition, startpoint: StartpointOldest) -> int:
        return self._marks(ssp).low

    def visit_upcoming(self, ssp: SystemStreamPartition, startpoint: StartpointUpcoming) -> int:
        return self._marks(ssp).high
