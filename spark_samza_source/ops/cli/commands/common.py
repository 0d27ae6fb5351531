"""What every command group shares: the outcome a command returns, opening the job's store, and
reading an offset-log line of either system."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from ....core.errors import ConfigError, SamzaSourceError
from ....core.jobmodel import JobModel
from ....core.jobmodel_store import JobModelStore
from ....metadata import open_store, redact_uri
from .. import errors

KAFKA = "kafka"
KINESIS = "kinesis"
#: how many offset files ``jobmodel show --checkpoint`` walks back to find the previous job model
_JOB_MODEL_HISTORY = 1000


@dataclass
class Outcome:
    data: dict[str, Any]
    text: str
    code: int = 0
    warnings: list[str] = field(default_factory=list)


def _open(args: argparse.Namespace):
    try:
        return open_store(args.store, args.job)
    except ConfigError as err:  # a malformed URI or job name is a usage problem
        raise errors.store_or_job_invalid(err) from None


def _header(args: argparse.Namespace) -> dict[str, Any]:
    return {"job": args.job, "store": redact_uri(args.store)}


def _where(args: argparse.Namespace) -> str:
    return f"job {args.job!r} in metadata store {redact_uri(args.store)}"


def _current_job_model(store) -> JobModel | None:
    return JobModelStore(store).current()


def _parse_any_offset(line: str):
    """A samza-kafka ``KafkaOffset`` or a samza-kinesis ``KinesisOffset`` from one offset-log line."""
    from ....kafka.driver.offset import KafkaOffset
    from ....kinesis.driver.offset import KinesisOffset

    try:
        return KafkaOffset.from_json_str(line)
    except SamzaSourceError:
        return KinesisOffset.from_json_str(line)


def _kinesis_offsets(location: str, stream: str):
    from ....kinesis.driver.offset import KinesisOffset
    from ....samza_config.offset_log import OffsetLog

    return OffsetLog(location), KinesisOffset.from_json_str, (lambda o: o.stream == stream)
