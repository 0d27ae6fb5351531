"""Where a samza-kafka query without a checkpoint starts, as small strategy objects.

``startingOffsets=earliest`` / ``latest`` / per-partition JSON, ``startingTimestamp`` and
``startingOffsetsByTimestamp`` become :class:`Earliest`, :class:`Latest`, :class:`SpecificOffsets` and
:class:`ByTimestamp` (Flink's ``OffsetsInitializer.earliest()`` / ``latest()`` / ``offsets(...)`` /
``timestamp(t)``). The option parser builds one; the coordinator calls its :meth:`StartingOffsets.starts` once,
when a query starts without a checkpoint (Startpoints override it later). A strategy is handed the watermarks
and the broker's offsets-for-times lookup, so it does no I/O itself and each rule is unit-tested without a broker.

The options travel to executors inside the stream reader, and these objects with them, so this module imports
nothing driver-side (``tests/unit/test_executor_imports.py``).
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.errors import InternalError
from ..core.jobmodel import JobModel
from ..core.model import SystemStreamPartition
from . import errors
from .positions import DataLoss, OffsetsForTimes, Watermarks

log = logging.getLogger(__name__)

#: Spark's per-partition markers in ``startingOffsets`` JSON.
EARLIEST_OFFSET, LATEST_OFFSET = -2, -1
#: what :class:`ByTimestamp` does with a partition that has no record at or after the time: fail the query
#: (Spark's default) or start it at its end (the words of ``startingOffsetsByTimestampStrategy``)
TIMESTAMP_STRATEGY_ERROR, TIMESTAMP_STRATEGY_LATEST = "error", "latest"
TIMESTAMP_STRATEGIES = (TIMESTAMP_STRATEGY_ERROR, TIMESTAMP_STRATEGY_LATEST)


@dataclass(frozen=True)
class Starts:
    """What a strategy decided: where each SSP starts, and the records skipped to start there.

    ``data_loss`` is not empty only with ``failOnDataLoss=false``: a start below the log start moved up to it,
    reported in the progress as the planner's losses are.
    """

    positions: dict[SystemStreamPartition, int]
    data_loss: tuple[DataLoss, ...] = ()


class StartingOffsets(ABC):
    """Where every SSP of a new checkpoint starts; one subclass per way of saying it."""

    @abstractmethod
    def starts(
        self,
        model: JobModel,
        marks: Mapping[SystemStreamPartition, Watermarks],
        offsets_for_times: OffsetsForTimes,
        *,
        fail_on_data_loss: bool,
        assigned: Sequence[SystemStreamPartition] | None = None,
    ) -> Starts:
        """The start of every SSP of ``model``, from each SSP's watermarks now (``marks``).

        ``offsets_for_times`` is the broker lookup, called at most once (only the timestamp strategy uses it).
        ``assigned``: every SSP the query reads (default: ``model``'s), the only ones a per-partition option may
        name. Raises :class:`ConfigError` for an entry that cannot apply and :class:`DataLossError` for a start
        below the log start when ``fail_on_data_loss``.
        """


@dataclass(frozen=True)
class Earliest(StartingOffsets):
    """``startingOffsets=earliest``: every SSP at its log start."""

    def starts(self, model, marks, offsets_for_times, *, fail_on_data_loss, assigned=None) -> Starts:
        return Starts({ssp: marks[ssp].low for ssp in sorted(model.ssps())})


@dataclass(frozen=True)
class Latest(StartingOffsets):
    """``startingOffsets=latest`` (the default): every SSP at its end, reading only what is written from now on."""

    def starts(self, model, marks, offsets_for_times, *, fail_on_data_loss, assigned=None) -> Starts:
        return Starts({ssp: marks[ssp].high for ssp in sorted(model.ssps())})



@dataclass(frozen=True)
class SpecificOffsets(StartingOffsets):
    """``startingOffsets`` as JSON: topic -> partition -> offset (-2 earliest, -1 latest, as Spark).

    Partitions not named start at latest, as Spark's. A named partition the query does not read, or an offset past
    the log end, fails; an offset below the log start is data loss.
    """

    per_partition: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    #: the option named in messages (``startingOffsets``; a batch read's ``endingOffsets`` uses this class too)
    option: str = field(kw_only=True, compare=False)

    def starts(self, model, marks, offsets_for_times, *, fail_on_data_loss, assigned=None) -> Starts:
        _check_named_partitions(self.option, self.per_partition, model, assigned)
        out: dict[SystemStreamPartition, int] = {}
        losses: list[DataLoss] = []
        beyond: list[str] = []
        for ssp in sorted(model.ssps()):
            m = marks[ssp]
            wanted = self.per_partition.get(ssp.stream, {}).get(ssp.partition)
            if wanted is None or wanted == LATEST_OFFSET:
                out[ssp] = m.high
            elif wanted == EARLIEST_OFFSET:
                out[ssp] = m.low
            elif wanted > m.high:
                beyond.append(f"{ssp.stream} partition {ssp.partition}: offset {wanted} (log end {m.high})")
            elif wanted < m.low:
                losses.append(_below_log_start(model, ssp, wanted, m, fail_on_data_loss, self.option))
                out[ssp] = m.low
            else:
                out[ssp] = wanted
        if beyond:
            raise errors.starting_offsets_beyond_log_end(self.option, beyond)
        return Starts(out, tuple(losses))


@dataclass(frozen=True)
class ByTimestamp(StartingOffsets):
    """Each SSP at its first record at or after a time (epoch ms): ``timestamp_ms`` for every partition
    (``startingTimestamp``), or per partition (``startingOffsetsByTimestamp``; partitions not named start at
    latest). A partition with no such record fails the query or starts at its end, as ``strategy`` says."""

    timestamp_ms: int | None = None
    per_partition: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    strategy: str = TIMESTAMP_STRATEGY_ERROR
    #: the option named in messages (``startingOffsetsByTimestamp``; a batch read's ``endingOffsetsByTimestamp``
    #: uses this class too), and the option that chooses ``strategy``
    option: str = field(kw_only=True, compare=False)
    strategy_option: str = field(kw_only=True, compare=False)

    def __post_init__(self) -> None:
        if self.timestamp_ms is not None and self.per_partition:
            raise InternalError("ByTimestamp takes one timestamp for every partition or one per partition, not both")
        if self.strategy not in TIMESTAMP_STRATEGIES:
            raise InternalError(f"ByTimestamp strategy must be one of {TIMESTAMP_STRATEGIES}, got {self.strategy!r}")

    def starts(self, model, marks, offsets_for_times, *, fail_on_data_loss, assigned=None) -> Starts:
        _check_named_partitions(self.option, self.per_partition, model, assigned)
        out: dict[SystemStreamPartition, int] = {}
        lookups: dict[SystemStreamPartition, int] = {}
        for ssp in sorted(model.ssps()):
            m = marks[ssp]
            ts = self.timestamp_ms
            if ts is None:
                ts = self.per_partition.get(ssp.stream, {}).get(ssp.partition)
            if ts is None:
                out[ssp] = m.high
            else:
                lookups[ssp] = ts
        if lookups:
            found = offsets_for_times({(ssp.stream, ssp.partition): ts for ssp, ts in lookups.items()})
            for ssp, ts in lookups.items():
                offset = found.get((ssp.stream, ssp.partition))
                if offset is None or offset < 0:
                    if self.strategy == TIMESTAMP_STRATEGY_ERROR:
                        raise errors.no_record_at_timestamp(ts, ssp, strategy_option=self.strategy_option,
                                                            latest=TIMESTAMP_STRATEGY_LATEST)
                    offset = marks[ssp].high
                out[ssp] = offset
        return Starts(out)


def _below_log_start(
    model: JobModel, ssp: SystemStreamPartition, wanted: int, m: Watermarks, fail_on_data_loss: bool,
    option: str,
) -> DataLoss:
    """A ``startingOffsets`` entry below the log start: the query stops naming the lost range, or (with
    ``failOnDataLoss=false``) starts at the log start with the loss logged and returned to be counted."""
    task = min(model.tasks_for(ssp), key=lambda t: t.sort_key)
    loss = DataLoss(ssp, task, wanted, m.low)
    if fail_on_data_loss:
        raise errors.starting_offset_below_log_start(option, ssp, wanted, m.low, loss.describe())
    log.warning("data loss: %s asks for offset %d of %s: %s; starting at offset %d",
                option, wanted, ssp, loss.describe(), m.low)
    return loss


def _check_named_partitions(
    option: str,
    per_partition: Mapping[str, Mapping[int, int]],
    model: JobModel,
    assigned: Sequence[SystemStreamPartition] | None,
) -> None:
    """Every partition a per-partition starting option names must be one the query reads (Spark's rule, and its
    "Specified: ... Assigned: ..." message), so a typo fails rather than silently starting the partition meant at
    latest."""
    if not per_partition:
        return
    have: dict[str, list[int]] = {}
    for s in assigned if assigned is not None else sorted(model.ssps()):
        have.setdefault(s.stream, []).append(s.partition)
    problems = []
    for topic, parts in sorted(per_partition.items()):
        if topic not in have:
            problems.append(f"topic '{topic}' is not read by this query")
            continue
        unknown = sorted(p for p in parts if p not in have[topic])
        if unknown:
            problems.append(f"topic '{topic}' has no partition {', '.join(map(str, unknown))} among those read "
                            f"({_ranges(sorted(have[topic]))})")
    if problems:
        specified = {t: sorted(ps) for t, ps in sorted(per_partition.items())}
        assigned_json = {t: _ranges(sorted(ps)) for t, ps in sorted(have.items())}
        raise errors.starting_partitions_not_read(option, problems, json.dumps(specified), json.dumps(assigned_json))


def _ranges(parts: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2,5``."""
    out: list[str] = []
    for p in parts:
        if out and p == int(out[-1].rsplit("-", 1)[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{p}"
        else:
            out.append(str(p))
    return ",".join(out)


__all__ = [
    "EARLIEST_OFFSET", "LATEST_OFFSET", "TIMESTAMP_STRATEGIES", "TIMESTAMP_STRATEGY_ERROR", "TIMESTAMP_STRATEGY_LATEST",
    "ByTimestamp", "Earliest", "Latest", "SpecificOffsets", "StartingOffsets", "Starts",
]
