"""Options of a ``samza-kafka`` batch read (``spark.read``): Spark's Kafka batch option names and meanings.

Everything a streaming query takes (``subscribe`` / ``subscribePattern`` / ``assign``, ``includeHeaders``,
``failOnDataLoss``, the grouper, ...) is parsed by :class:`~spark_samza_source.kafka.options.KafkaSourceOptions`;
this adds where the read starts and stops, with Spark's batch defaults and rules: ``startingOffsets`` defaults to
``earliest`` and may not be ``latest``, ``endingOffsets`` defaults to ``latest`` and may not be ``earliest``,
``endingTimestamp`` / ``endingOffsetsByTimestamp`` end each partition at its first record at or after the time
(exclusive), or at its end when there is none. Plain, picklable data: it travels to executors in the reader.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError
from ..options.kafka import (
    ENDING_OFFSETS,
    ENDING_OFFSETS_BY_TIMESTAMP,
    ENDING_TIMESTAMP,
    STARTING_OFFSETS,
    STARTING_OFFSETS_BY_TIMESTAMP,
    STARTING_TIMESTAMP,
)
from ..options.values import Options
from .options import KafkaSourceOptions, epoch_ms, per_partition_numbers
from .starting import (
    EARLIEST_OFFSET,
    LATEST_OFFSET,
    TIMESTAMP_STRATEGY_LATEST,
    ByTimestamp,
    Earliest,
    Latest,
    SpecificOffsets,
    StartingOffsets,
)

__all__ = ["KafkaBoundedOptions"]


@dataclass(frozen=True, repr=False)
class KafkaBoundedOptions:
    """A batch read: the source options (``starting`` with the batch default), where it ends, and whether the
    tasks come from the job model stored for ``job.name``."""

    source: KafkaSourceOptions
    ending: StartingOffsets
    use_stored_job_model: bool

    def __repr__(self) -> str:  # never the client config (credentials)
        return f"KafkaBoundedOptions({self.source.describe()}, ending={self.ending!r})"

    @classmethod
    def parse(cls, raw: Any, use_stored_job_model: bool) -> KafkaBoundedOptions:
        source = KafkaSourceOptions.parse(raw)
        opts = Options(raw)
        starting = source.starting
        if not any(opts.has(n) for n in (STARTING_OFFSETS.name, STARTING_TIMESTAMP.name,
                                          STARTING_OFFSETS_BY_TIMESTAMP.name)):
            starting = Earliest()
        elif isinstance(starting, Latest):
            raise ConfigError(f"option '{STARTING_OFFSETS.name}'='latest' is not valid for batch queries: a "
                              "batch read would read nothing. Use 'earliest', per-partition JSON or a timestamp")
        elif isinstance(starting, SpecificOffsets) and any(
                o == LATEST_OFFSET for parts in starting.per_partition.values() for o in parts.values()):
            raise ConfigError(f"option '{STARTING_OFFSETS.name}': -1 (latest) is not valid for batch queries; "
                              "give an offset or -2 (earliest) for each partition named")
        source = dataclasses.replace(source, starting=starting)
        return cls(source, _parse_ending(opts), use_stored_job_model)


def _parse_ending(opts: Options) -> StartingOffsets:
    names = (ENDING_OFFSETS.name, ENDING_TIMESTAMP.name, ENDING_OFFSETS_BY_TIMESTAMP.name)
    given = [n for n in names if opts.has(n)]
    if len(given) > 1:
        raise ConfigError(f"set only one of the options {', '.join(given)}; they all choose where a batch read ends")
    if not given:
        return Latest()
    name = given[0]
    value = (opts.string(name) or "").strip()
    if name == ENDING_TIMESTAMP.name:
        return ByTimestamp(timestamp_ms=epoch_ms(name, value), strategy=TIMESTAMP_STRATEGY_LATEST, option=name)
    if name == ENDING_OFFSETS.name and value.lower() == "latest":
        return Latest()
    if name == ENDING_OFFSETS.name and value.lower() == "earliest":
        raise ConfigError(f"option '{name}'='earliest' is not valid for batch queries: the read would end before it "
                          "starts. Use 'latest' (the default) or per-partition JSON like {\"orders\":{\"0\":100}}")
    example = '{"orders":{"0":100,"1":-1}}' if name == ENDING_OFFSETS.name else '{"orders":{"0":1700000000000}}'
    try:
        per = per_partition_numbers(value, negatives=(LATEST_OFFSET,) if name == ENDING_OFFSETS.name else ())
    except (ValueError, RecursionError):
        meaning = (" (an offset, exclusive, or -1 = latest; -2 = earliest is not valid for an end)"
                   if name == ENDING_OFFSETS.name else " (epoch ms)")
        allowed = "'latest' or JSON" if name == ENDING_OFFSETS.name else "JSON"
        raise ConfigError(f"option '{name}' must be {allowed} like {example}{meaning}; got {value!r}") from None
    if name == ENDING_OFFSETS.name:
        assert EARLIEST_OFFSET not in {o for parts in per.values() for o in parts.values()}
        return SpecificOffsets(per, option=name)
    return ByTimestamp(per_partition=per, strategy=TIMESTAMP_STRATEGY_LATEST, option=name)
