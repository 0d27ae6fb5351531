"""Options of a ``samza-kinesis`` batch read (``spark.read``): where it starts and where it ends.

Everything a streaming query takes is parsed by :class:`~spark_samza_source.kinesis.options.KinesisSourceOptions`;
a batch read starts at ``TRIM_HORIZON`` unless ``startingPosition`` says otherwise, and ends at ``endingPosition``:
``LATEST`` (the default: fixed to the time the read is planned, so every task stops at the same instant),
``AT_TIMESTAMP:<ISO-8601>`` (records that arrived before that time), or per-shard JSON (shard id -> a sequence
number, read up to and including it, or ``LATEST``). Plain, picklable data: it travels to executors in the reader.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ConfigError
from ..options.kinesis import AT_TIMESTAMP, ENDING_POSITION, LATEST, STARTING_POSITION
from ..options.values import Options, json_object
from .options import KinesisSourceOptions, at_timestamp_ms
from .starting import TrimHorizon

__all__ = ["KinesisBoundedOptions", "KinesisEnding"]


@dataclass(frozen=True)
class KinesisEnding:
    """Where a batch read ends: at the time it is planned (``until_ms`` None, ``per_shard`` empty), at a time
    (``until_ms``: records that arrived before it), or per shard (shard id -> last sequence number read; shards
    not named end at the planning time)."""

    until_ms: int | None = None
    per_shard: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class KinesisBoundedOptions:
    source: KinesisSourceOptions
    ending: KinesisEnding
    #: ``job.name`` was given: take the tasks of the job's streaming query from its metadata store
    use_stored_job_model: bool = False

    def __repr__(self) -> str:  # never the credentials
        return f"KinesisBoundedOptions({self.source.describe()}, ending={self.ending!r})"

    @classmethod
    def parse(cls, raw: Any, use_stored_job_model: bool = False) -> KinesisBoundedOptions:
        source = KinesisSourceOptions.parse(raw)
        opts = Options(raw)
        if not opts.has(STARTING_POSITION.name):
            source = dataclasses.replace(source, starting=TrimHorizon())
        return cls(source, _parse_ending(opts.string(ENDING_POSITION.name)), use_stored_job_model)


def _parse_ending(value: str | None) -> KinesisEnding:
    if value is None or value.strip().upper() == LATEST:
        return KinesisEnding()
    text = value.strip()
    if text.upper().startswith(AT_TIMESTAMP):
        return KinesisEnding(until_ms=at_timestamp_ms(ENDING_POSITION.name, value))
    if text.startswith("{"):
        try:
            per: dict[str, str] = {}
            for shard, end in json_object(text).items():
                if not isinstance(end, str) or not (end.isdigit() or end.upper() == LATEST):
                    raise ValueError
                if end.isdigit():
                    per[str(shard)] = end
        except (ValueError, RecursionError):
            raise ConfigError(
                f"option '{ENDING_POSITION.name}' per-shard JSON must map shard ids to a sequence number (the "
                f"last record read) or \"LATEST\", e.g. {{\"shardId-000000000000\": \"4960...\"}}; got {value!r}"
            ) from None
        return KinesisEnding(per_shard=per)
    raise ConfigError(f"option '{ENDING_POSITION.name}' must be LATEST, AT_TIMESTAMP:<ISO-8601> or per-shard JSON; "
                      f"got {value!r}")
