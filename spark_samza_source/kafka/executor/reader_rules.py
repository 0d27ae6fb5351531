"""The constants and error texts of the executor read's rules (read_control.py applies them for both read paths):
how much one consume call asks for, when a waiting partition is paused, which errors mean data loss, and the words
of the errors that name the task, the partition and the range."""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError

from ...options.common import FAIL_ON_DATA_LOSS
from ..errors import KafkaDataLossError, KafkaSourceError
from ..input_partition import KafkaRange
from ..options import POLL_TIMEOUT

log = logging.getLogger("spark_samza_source.kafka.executor.reader")  # one logger for both paths' warnings

CONSUME_MAX = 10_000  # messages per consume() call
CONSUME_BYTES = 8 * 1024 * 1024  # ... and about this many value bytes, from the average message size seen
CONSUME_WAIT_S = 0.5  # longest single consume() wait; also how often the stall timeout is checked
OUT_OF_RANGE = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE}
GONE = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}
WAIT_BYTES_TOTAL = 64 * 1024 * 1024  # buffered value bytes of waiting partitions, shared among them
WAIT_BYTES_MIN = 8 * 1024 * 1024
MAX_REPOSITION = 5  # out-of-range errors at an offset the broker says exists (leader moving): retries


def data_loss(task: str, label: str, rng: KafkaRange, lost_from: int, lost_to: int, why: str, fail: bool) -> None:
    """Records ``[lost_from, lost_to)`` of ``rng`` are gone: raise (``fail``) or warn, naming task, partition
    (``label``) and range."""
    if lost_to <= lost_from:
        return
    what = (
        f"data loss in task {task!r}: {label} offsets {lost_from}..{lost_to - 1} ({lost_to - lost_from} "
        f"records) of the planned range [{rng.start}, {rng.end}) are no longer available: {why}. "
        "They were deleted (retention, delete-records) or the topic was re-created after the batch was planned"
    )
    if fail:
        raise KafkaDataLossError(what + f". Set the option '{FAIL_ON_DATA_LOSS.name}' to 'false' to skip lost "
                                        "records with a warning instead.")
    log.warning("%s; skipping them (%s=false).", what, FAIL_ON_DATA_LOSS.name)


def stalled_error(task: str, timeout_s: float, pending: list[str], last_error: str | None) -> KafkaSourceError:
    """No record for the poll timeout: the error naming what was still to read (``pending``)."""
    return KafkaSourceError(
        f"task {task!r}: no Kafka record received for {timeout_s:g} s "
        f"(option '{POLL_TIMEOUT.name}'); still to read: {', '.join(pending)}"
        + (f"; last consumer error: {last_error}" if last_error else "")
        + ". Is the broker reachable from the executors?"
    )
