"""Co-partition planner: streams joined in one task must agree in partition count (Samza's execution planner).

Called by the Kafka coordinator before the first batch and at every new job model (option ``copartition``).
:func:`check_partition_counts` requires every stream of a group to share its initial partition count and each
current count to be one the expansion algorithm accepts; :func:`check_task_affinity` requires the grouper to
place those partitions in a common task. A violation fails the query before it reads anything, naming every
stream of the group and its count.

Why the counts must agree, and why growth by different multiples still keeps a join correct:
docs/architecture.md §5.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..options.common import COPARTITION, JOB_NAME
from . import errors
from .errors import PartitionExpansionError
from .expansion import (
    checked_partition_before_expansion,
    resolve_expansion_algorithm,
)
from .jobmodel import JobModel
from .model import SystemStream, TaskName

#: Roles a member can play in a join; they only label messages (the rule is the same for all).
ROLES = ("stream", "table", "side-input")


@dataclass(frozen=True, order=True)
class JoinedStream:
    """One member of a co-partition group: the stream and the role it plays in the join."""

    stream: SystemStream
    role: str = "stream"

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise errors.invalid_option(
                f"option {COPARTITION.name}: unknown role {self.role!r} for {self.stream}; expected one of "
                f"{', '.join(ROLES)}"
            )

    def __str__(self) -> str:
        return str(self.stream) if self.role == "stream" else f"{self.stream} ({self.role})"


@dataclass(frozen=True)
class CoPartitionGroup:
    """Streams joined in one task (a join's inputs, a table's source streams, its side inputs)."""

    members: tuple[JoinedStream, ...]
    name: str | None = None

    @classmethod
    def of(
        cls,
        *streams: SystemStream,
        tables: Iterable[SystemStream] = (),
        side_inputs: Iterable[SystemStream] = (),
        name: str | None = None,
    ) -> CoPartitionGroup:
        members = [JoinedStream(s) for s in streams]
        members += [JoinedStream(s, "table") for s in tables]
        members += [JoinedStream(s, "side-input") for s in side_inputs]
        return cls(tuple(members), name)

    @property
    def streams(self) -> list[SystemStream]:
        return [m.stream for m in self.members]

    def __str__(self) -> str:
        label = f"{self.name!r} " if self.name else ""
        return f"co-partition group {label}[{', '.join(str(m) for m in self.members)}]"


# ---- checks -----------------------------------------------------------------------------------------------

def check_partition_counts(
    groups: Iterable[CoPartitionGroup],
    current_counts: Mapping[SystemStream, int],
    initial_counts: Mapping[SystemStream, int] | None = None,
    expansion_algorithm: Any = None,
) -> None:
    """Raise :class:`CoPartitionError` unless every group's streams are co-partitioned.

    While no member expanded (``initial_counts`` None or equal to the current counts: the first job model),
    all current counts of a group must be equal. Otherwise all initial counts of a group must be equal and
    each current count valid for the expansion algorithm (a member without an initial count uses its current).
    A member missing from ``current_counts`` is an error too (a join against a stream the job does not read).
    """
    algorithm = resolve_expansion_algorithm(expansion_algorithm)
    for group in groups:
        missing = [m for m in group.members if m.stream not in current_counts]
        if missing:
            raise errors.copartition_mismatch(
                f"{group}: {', '.join(str(m.stream) for m in missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not among the job's inputs, so its partition count is "
                f"unknown (inputs: {', '.join(str(s) for s in sorted(current_counts)) or 'none'}). Fix option "
                f"{COPARTITION.name} or subscribe to the stream."
            )
        initial = {
            m.stream: (initial_counts or {}).get(m.stream, current_counts[m.stream]) for m in group.members
        }
        if all(initial[m.stream] == current_counts[m.stream] for m in group.members):
            # Nothing expanded (e.g. the first job model): the counts themselves must agree.
            if len({current_counts[m.stream] for m in group.members}) > 1:
                raise errors.copartition_mismatch(
                    f"{group}: joined streams must have the same partition count, but "
                    f"{_describe(group, current_counts)}. A key would land in different tasks on each side "
                    "and the join would miss matches. Fix: repartition (or re-create) the streams to one "
                    f"count, or remove the group from option {COPARTITION.name}."
                )
            continue
        if len(set(initial.values())) > 1:
            raise errors.copartition_mismatch(
                f"{group}: joined streams must have had the same partition count when the job was first "
                f"planned, but {_describe(group, current_counts, initial)}. Their keys map to different tasks "
                f"and the join would miss matches. Fix: start a new {JOB_NAME.name} once all streams have the same "
                f"count, or remove the group from option {COPARTITION.name}."
            )
        for member in group.members:
            stream = member.stream
            try:
                algorithm.validate(stream, current_counts[stream], initial[stream])
            except PartitionExpansionError as err:
                raise errors.copartition_mismatch(
                    f"{group}: {stream} can no longer be mapped onto its initial partitions, which breaks "
                    f"the join's key affinity; {_describe(group, current_counts, initial)}. {err.detail}"
                ) from None


def check_task_affinity(
    groups: Iterable[CoPartitionGroup],
    job_model: JobModel,
    expansion_algorithm: Any = None,
) -> None:
    """Raise :class:`CoPartitionError` unless the job model puts each group's matching partitions in a common task.

    For every key bucket b (a partition index below the shared initial count), the partitions of all members
    whose pre-expansion partition is b must share at least one task. Members absent from the model (e.g. side
    inputs read elsewhere) are skipped here; :func:`check_partition_counts` covers their counts.
    """
    algorithm = resolve_expansion_algorithm(expansion_algorithm)
    groups = list(groups)
    wanted = {m.stream for g in groups for m in g.members}
    holders: dict[SystemStream, dict[int, set[TaskName]]] = {}
    for task, ssps in job_model.tasks.items():
        for ssp in ssps:
            if ssp in job_model.broadcast:
                continue
            stream = ssp.system_stream
            if stream in wanted:
                holders.setdefault(stream, {}).setdefault(ssp.partition, set()).add(task)
    counts = {s: len(parts) for s, parts in holders.items()}
    for group in groups:
        present = [m for m in group.members if m.stream in holders]
        if len(present) < 2:
            continue
        buckets: dict[int, set[TaskName]] = {}
        first_of_bucket: dict[int, str] = {}
        for member in present:
            stream = member.stream
            initial = job_model.initial_partition_counts.get(stream, counts[stream])
            for partition, tasks in holders[stream].items():
                bucket = checked_partition_before_expansion(algorithm, stream, partition, counts[stream], initial)
                where = f"partition {partition} of {stream} is in {', '.join(sorted(map(str, tasks)))}"
                if bucket not in buckets:
                    buckets[bucket] = set(tasks)
                    first_of_bucket[bucket] = where
                    continue
                buckets[bucket] &= tasks
                if not buckets[bucket]:
                    raise errors.copartition_mismatch(
                        f"{group}: matching partitions are not in a common task ({first_of_bucket[bucket]}; "
                        f"{where}), so the join cannot see both sides of a key. Fix: use a grouper that puts "
                        "partition N of every stream in one task (GroupByPartitionFixedTasks, the default, or "
                        f"GroupByPartition), or remove the group from option {COPARTITION.name}."
                    )


def check_copartitioning(
    groups: Iterable[CoPartitionGroup],
    job_model: JobModel,
    expansion_algorithm: Any = None,
    extra_counts: Mapping[SystemStream, int] | None = None,
) -> None:
    """Both checks against a job model. ``extra_counts`` supplies the counts of members the model does not
    hold (side inputs read outside the job model).
    """
    groups = list(groups)
    algorithm = resolve_expansion_algorithm(expansion_algorithm)
    current = {**(extra_counts or {}), **job_model.partition_counts()}
    initial = {**(extra_counts or {}), **job_model.initial_partition_counts}
    check_partition_counts(groups, current, initial, algorithm)
    check_task_affinity(groups, job_model, algorithm)


def _describe(
    group: CoPartitionGroup, current: Mapping[SystemStream, int], initial: Mapping[SystemStream, int] | None = None
) -> str:
    """``kafka.orders has 3 partitions, kafka.payments (side-input) has 4 partitions`` (every member)."""
    parts = []
    for member in group.members:
        count = current.get(member.stream)
        text = f"{member} has {count if count is not None else 'no'} partition{'' if count == 1 else 's'}"
        if initial is not None and initial.get(member.stream) not in (None, count):
            text += f" (initially {initial[member.stream]})"
        parts.append(text)
    return ", ".join(parts)


# ---- option parsing ---------------------------------------------------------------------------------------

_NAME = re.compile(r"^[A-Za-z0-9._\-]+$")
_EXPECTED = (
    "expected groups separated by ';' and streams by ',', each stream 'topic' or 'system.topic', optionally "
    f"tagged ':{'|:'.join(ROLES)}', e.g. 'orders,payments;clicks,views:table'"
)


def parse_copartition(
    value: str | None, default_system: str, known_systems: Sequence[str] | None = None
) -> list[CoPartitionGroup]:
    """Parse the ``copartition`` option, e.g. ``orders,payments;clicks,views``.

    A name ``x.y`` means stream ``y`` of system ``x`` only when ``x`` is a known system (default: just
    ``default_system``); otherwise the whole name is a stream of ``default_system``, so Kafka topics with dots
    (``orders.v2``) need no system prefix. A blank value means no group.
    """
    if value is None:
        return []
    if not isinstance(value, str):
        raise errors.invalid_option(
            f"option {COPARTITION.name} must be a string, got {type(value).__name__}; {_EXPECTED}")
    if not value.strip():
        return []
    systems = set(known_systems) if known_systems is not None else {default_system}
    groups: list[CoPartitionGroup] = []
    for group_text in value.split(";"):
        if not group_text.strip():
            raise errors.invalid_option(
                f"option {COPARTITION.name}: empty group (stray ';') in {value!r:.300}; {_EXPECTED}")
        members: list[JoinedStream] = []
        for item in group_text.split(","):
            members.append(_parse_member(item, group_text, default_system, systems))
        streams = [m.stream for m in members]
        duplicates = sorted({str(s) for s in streams if streams.count(s) > 1})
        if duplicates:
            raise errors.invalid_option(
                f"option {COPARTITION.name}: group {group_text.strip()!r} names {', '.join(duplicates)} twice; "
                f"{_EXPECTED}"
            )
        if len(members) < 2:
            raise errors.invalid_option(
                f"option {COPARTITION.name}: group {group_text.strip()!r} has a single stream; a join needs at "
                f"least two. {_EXPECTED}"
            )
        groups.append(CoPartitionGroup(tuple(members)))
    return groups


def _parse_member(item: str, group_text: str, default_system: str, systems: set[str]) -> JoinedStream:
    text = item.strip()
    name, sep, role = text.partition(":")
    name, role = name.strip(), role.strip() if sep else "stream"
    if not name or not _NAME.match(name) or role not in ROLES:
        why = "empty stream name (stray ',')" if not name else (
            f"unknown role {role!r}" if _NAME.match(name) else f"bad stream name {name!r}"
        )
        raise errors.invalid_option(
            f"option {COPARTITION.name}: {why} in group {group_text.strip()!r}; {_EXPECTED}"
        )
    system, dot, stream = name.partition(".")
    if dot and system in systems and stream:
        return JoinedStream(SystemStream(system, stream), role)
    return JoinedStream(SystemStream(default_system, name), role)
