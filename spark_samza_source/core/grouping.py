"""SSP groupers: turn the current SSPs (and the previous job model) into the next job model.

Called by the Kafka coordinator at every trigger (and by the CLI and the properties import). A grouper is a pure
function object: ``group(previous, ssps, broadcast)`` never does I/O, so a replay recomputes the same model.

- :class:`GroupByPartition`: task ``Partition N`` holds partition N of every input stream.
- :class:`GroupBySystemStreamPartition`: one task per SSP, ``SystemStreamPartition [system, stream, N]``.
- :class:`AllSspToSingleTask`: ``Task-0`` .. ``Task-<n-1>``, each holding every SSP (Kinesis).
- :class:`GroupByPartitionFixedTasks` / :class:`GroupBySystemStreamPartitionFixedTasks` (SEP-5): the base grouper
  on the first model; afterwards a partition added by expansion joins the task of its pre-expansion partition.

Broadcast SSPs go to every task. Rules and reasons: docs/architecture.md §5.
"""

from __future__ import annotations

import gc
import importlib
import inspect
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar

from ..options.common import GROUPER, JOB_NAME
from . import errors
from .expansion import (
    EXPANSION_ALGORITHM,
    PartitionExpansionAlgorithm,
    checked_partition_before_expansion,
    resolve_expansion_algorithm,
)
from .jobmodel import JobModel
from .model import SystemStream, SystemStreamPartition, TaskName

SspSet = frozenset[SystemStreamPartition]


class SspGrouper(ABC):
    """Base class: normalises inputs, computes initial counts, adds broadcast SSPs, builds the JobModel."""

    #: the short name accepted by :func:`resolve_grouper`
    name: ClassVar[str]

    def group(
        self,
        previous: JobModel | None,
        ssps: Iterable[SystemStreamPartition],
        broadcast: Iterable[SystemStreamPartition] = (),
    ) -> JobModel:
        """The next job model for ``ssps`` (broadcast ones may be included or not: they are never grouped)."""
        with _cyclic_gc_paused():
            broadcast_set = frozenset(broadcast)
            by_stream = _by_stream(set(ssps) - broadcast_set)
            counts = {stream: len(parts) for stream, parts in by_stream.items()}
            initial = self._initial_counts(previous, counts)
            tasks = self._group_regular(previous, by_stream, counts, initial)
            return _build_model(tasks, initial, broadcast_set)

    @abstractmethod
    def _group_regular(
        self,
        previous: JobModel | None,
        by_stream: Mapping[SystemStream, list[SystemStreamPartition]],
        counts: Mapping[SystemStream, int],
        initial: Mapping[SystemStream, int],
    ) -> dict[TaskName, list[SystemStreamPartition]]:
        """task -> regular SSPs (``by_stream`` lists are unordered), tasks in TaskName order.

        Returning tasks already in order is only a speed matter: JobModel sorts its tasks with
        ``TaskName.__lt__``, which is cheap on sorted input and costly (seconds for 100,000 tasks) otherwise.
        """

    def _initial_counts(
        self, previous: JobModel | None, counts: Mapping[SystemStream, int]
    ) -> dict[SystemStream, int]:
        if previous is None:
            return dict(counts)
        known = _previous_initial_counts(previous, counts)
        out: dict[SystemStream, int] = {}
        for stream, count in counts.items():
            initial = known.get(stream, count)
            out[stream] = count if count < initial else initial  # shrank: history void, restart
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class GroupByPartition(SspGrouper):
    """Task ``Partition N`` holds partition N of every stream (Samza's ``GroupByPartition``)."""

    name = "GroupByPartition"

    def _group_regular(self, previous, by_stream, counts, initial):
        tasks: dict[int, list[SystemStreamPartition]] = {}
        for ssps in by_stream.values():
            for ssp in ssps:
                bucket = tasks.get(ssp.partition)
                if bucket is None:
                    tasks[ssp.partition] = [ssp]
                else:
                    bucket.append(ssp)
        return {partition_task_name(p): tasks[p] for p in sorted(tasks)}


class GroupBySystemStreamPartition(SspGrouper):
    """One task per SSP, named after it: ``SystemStreamPartition [kafka, orders, 3]``."""

    name = "GroupBySystemStreamPartition"

    def _group_regular(self, previous, by_stream, counts, initial):
        # "SystemStreamPartition [s, t, N]" in natural order: by the natural order of the "[s, t, " prefix,
        # then by N; the prefix key is computed once per stream, not once per SSP.
        def stream_key(stream: SystemStream) -> tuple:
            return _task_sort_key(TaskName(f"SystemStreamPartition [{stream.system}, {stream.stream}, "))

        return {
            ssp_task_name(ssp): [ssp]
            for stream in sorted(by_stream, key=stream_key)
            for ssp in sorted(by_stream[stream], key=_partition_of)
        }


class AllSspToSingleTask(SspGrouper):
    """``num_tasks`` tasks (``Task-0`` ..), each holding every SSP (Samza's ``AllSspToSingleTaskGrouper``).

    With ``num_tasks > 1`` every regular SSP belongs to several tasks, like a broadcast SSP; it is meant for
    Kinesis, where the reader maps shards onto each task's SSP slots.
    """

    name = "AllSspToSingleTask"

    def __init__(self, num_tasks: int = 1) -> None:
        if not isinstance(num_tasks, int) or isinstance(num_tasks, bool) or num_tasks < 1:
            raise errors.invalid_option(f"{self.name}: num_tasks must be a positive int, got {num_tasks!r}")
        self.num_tasks = num_tasks

    def _group_regular(self, previous, by_stream, counts, initial):
        if not by_stream:
            return {}
        everything = [ssp for ssps in by_stream.values() for ssp in ssps]
        return {TaskName(f"Task-{i}"): everything for i in range(self.num_tasks)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_tasks={self.num_tasks})"


class FixedTasksGrouper(SspGrouper):
    """SEP-5 fixed tasks over a base grouper (Samza's ``SSPGrouperProxy`` with ``HashSystemStreamPartitionMapper``).

    - No previous model (or an empty one): exactly the base grouper.
    - An SSP that was in the previous model keeps its task (its state lives there).
    - A new SSP of a stream that was in the previous model joins the previous task of partition
      ``algorithm.partition_before_expansion(p, current, initial)``; the stream's growth is first checked by
      ``algorithm.validate``. So when nothing expanded the result equals the previous model, and expansion
      never adds or removes a task.
    - A stream new to the job is grouped by the base grouper (which may add tasks, as in Samza).
    - A stream that shrank or vanished since the previous model raises :class:`PartitionExpansionError`.
    """

    base: ClassVar[type[SspGrouper]]

    def __init__(self, expansion_algorithm: Any = None) -> None:
        self.expansion_algorithm: PartitionExpansionAlgorithm = resolve_expansion_algorithm(expansion_algorithm)
        self._base = self.base()

    def _initial_counts(self, previous, counts):
        if previous is None:
            return dict(counts)
        known = _previous_initial_counts(previous, counts)
        return {stream: known.get(stream, count) for stream, count in counts.items()}

    def _group_regular(self, previous, by_stream, counts, initial):
        if previous is None or not previous.tasks:
            return self._base._group_regular(previous, by_stream, counts, initial)
        previous_by_stream = _previous_assignment_by_stream(previous)
        _check_no_stream_vanished(previous_by_stream, counts)

        # Streams already in the job: keep tasks, map expanded partitions onto their pre-expansion task.
        tasks: dict[TaskName, list[SystemStreamPartition]] = {task: [] for task in previous.tasks}
        algorithm = self.expansion_algorithm
        for stream in sorted(previous_by_stream):
            previous_tasks = previous_by_stream[stream]
            current, initial_count = counts[stream], initial[stream]
            previous_count = len(previous_tasks)
            if current != previous_count:
                _check_growth(stream, previous_count, current, initial_count)
                algorithm.validate(stream, current, initial_count)
                for partition in range(min(initial_count, current)):  # SEP-5: old partitions map to themselves
                    checked_partition_before_expansion(algorithm, stream, partition, current, initial_count)
            kept = 0
            for ssp in by_stream[stream]:
                task = previous_tasks.get(ssp.partition)
                if task is not None:
                    kept += 1
                else:
                    before = checked_partition_before_expansion(
                        algorithm, stream, ssp.partition, current, initial_count
                    )
                    task = previous_tasks.get(before)
                    if task is None:
                        raise errors.expansion_unsupported(
                            f"stream {stream}: partition {ssp.partition} maps to pre-expansion partition "
                            f"{before} (current count {current}, initial count {initial_count}), which had no "
                            f"task in the previous job model (it had {previous_count} partitions: "
                            f"{_ranges(sorted(previous_tasks))}). Fix: make sure every partition below the "
                            f"initial count is an input of the job (not broadcast), or start a new {JOB_NAME.name}."
                        )
                tasks.setdefault(task, []).append(ssp)
            if kept != previous_count:
                present = {ssp.partition for ssp in by_stream[stream]}
                missing = sorted(set(previous_tasks) - present)
                raise errors.expansion_unsupported(
                    f"stream {stream} lost partitions {_ranges(missing)}: it had {previous_count} partitions in "
                    f"the previous job model and has {current} now, without them (topic re-created?). Fixed "
                    "tasks would lose those partitions' state. Fix: restore the partitions, or start a new "
                    f"{JOB_NAME.name}."
                )
        tasks = {task: ssps for task, ssps in tasks.items() if ssps}
        # Streams new to the job: the base grouper's choice (may add tasks, as in Samza).
        new_streams = {s: ssps for s, ssps in by_stream.items() if s not in previous_by_stream}
        if new_streams:
            added = False
            for task, ssps in self._base._group_regular(previous, new_streams, counts, initial).items():
                if task in tasks:
                    tasks[task].extend(ssps)
                else:
                    tasks[task] = ssps
                    added = True
            if added:
                tasks = {task: tasks[task] for task in sorted(tasks, key=_task_sort_key)}
        return tasks

    def __repr__(self) -> str:
        return f"{type(self).__name__}(expansion_algorithm={self.expansion_algorithm!r})"


class GroupByPartitionFixedTasks(FixedTasksGrouper):
    """:class:`GroupByPartition` on the first model; fixed tasks across expansion (SEP-5, the default)."""

    name = "GroupByPartitionFixedTasks"
    base = GroupByPartition


class GroupBySystemStreamPartitionFixedTasks(FixedTasksGrouper):
    """:class:`GroupBySystemStreamPartition` on the first model; fixed tasks across expansion (SEP-5)."""

    name = "GroupBySystemStreamPartitionFixedTasks"
    base = GroupBySystemStreamPartition


# ---- task names -------------------------------------------------------------------------------------------

def partition_task_name(partition: int) -> TaskName:
    """Samza's ``GroupByPartition`` task name: ``Partition 3``."""
    return TaskName(f"Partition {partition}")


def ssp_task_name(ssp: SystemStreamPartition) -> TaskName:
    """Samza's ``GroupBySystemStreamPartition`` task name: ``SystemStreamPartition [kafka, orders, 3]``."""
    return TaskName(str(ssp))


# ---- resolution -------------------------------------------------------------------------------------------

GROUPERS: dict[str, type[SspGrouper]] = {
    cls.name.lower(): cls
    for cls in (
        GroupByPartition,
        GroupBySystemStreamPartition,
        GroupByPartitionFixedTasks,
        GroupBySystemStreamPartitionFixedTasks,
        AllSspToSingleTask,
    )
}

_SAMZA_PACKAGE = "org.apache.samza.container.grouper.stream."

#: Samza grouper factory class names -> our grouper. Samza wraps GroupByPartition and
#: GroupBySystemStreamPartition in ``SSPGrouperProxy`` (``job.systemstreampartition.input.expansion.enabled``
#: defaults to true), which keeps tasks fixed across expansion; so a Samza config naming those factories gets
#: the fixed-task variant here, which is identical to the plain grouper until a stream expands.
SAMZA_GROUPER_FACTORIES: dict[str, type[SspGrouper]] = {
    "GroupByPartitionFactory": GroupByPartitionFixedTasks,
    "GroupBySystemStreamPartitionFactory": GroupBySystemStreamPartitionFixedTasks,
    "AllSspToSingleTaskGrouperFactory": AllSspToSingleTask,
    "AllSspToSingleTaskGrouper": AllSspToSingleTask,
}
_SAMZA_ALIASES = {name.lower(): cls for name, cls in SAMZA_GROUPER_FACTORIES.items()} | {
    (_SAMZA_PACKAGE + name).lower(): cls for name, cls in SAMZA_GROUPER_FACTORIES.items()
}


def resolve_grouper(name_or_path: Any, expansion_algorithm: Any = None, **kwargs: Any) -> SspGrouper:
    """Build the grouper named by the ``grouper`` option.

    ``name_or_path``: a short name (case-insensitive: ``GroupByPartition``, ``GroupBySystemStreamPartition``,
    ``GroupByPartitionFixedTasks``, ``GroupBySystemStreamPartitionFixedTasks``, ``AllSspToSingleTask``), a
    Samza factory class name (see :data:`SAMZA_GROUPER_FACTORIES`), a dotted Python path to a grouper class,
    or a grouper instance. ``expansion_algorithm`` is passed to groupers that take one (fixed-task groupers,
    or a custom class whose constructor has that parameter) and ignored by the others; ``kwargs`` (e.g.
    ``num_tasks`` for AllSspToSingleTask) go to the constructor.
    """
    if isinstance(name_or_path, SspGrouper) or (
        not isinstance(name_or_path, (str, type)) and callable(getattr(name_or_path, "group", None))
    ):
        return name_or_path
    if isinstance(name_or_path, str):
        text = name_or_path.strip()
        cls: Any = GROUPERS.get(text.lower()) or _SAMZA_ALIASES.get(text.lower())
        if cls is None:
            if "." not in text or text.lower().startswith("org.apache.samza."):
                raise errors.invalid_option(
                    f"option {GROUPER.name}: unknown grouper {name_or_path!r}; expected one of "
                    f"{', '.join(c.name for c in GROUPERS.values())} (case-insensitive), a Samza factory "
                    f"({', '.join(SAMZA_GROUPER_FACTORIES)}) or a dotted path 'package.module.ClassName'"
                )
            cls = _import_grouper(text)
    else:
        cls = name_or_path
    if not isinstance(cls, type):
        if callable(getattr(cls, "group", None)):
            return cls
        raise errors.invalid_option(f"option {GROUPER.name}: {name_or_path!r:.200} is not a grouper class or instance")
    if not callable(getattr(cls, "group", None)):
        raise errors.invalid_option(
            f"option {GROUPER.name}: {cls.__module__}.{cls.__qualname__} is not a grouper; expected a subclass "
            "of spark_samza_source.core.grouping.SspGrouper (or a class with group(previous, ssps, broadcast))"
        )
    if expansion_algorithm is not None and _accepts(cls, "expansion_algorithm"):
        kwargs = {**kwargs, "expansion_algorithm": expansion_algorithm}
    try:
        return cls(**kwargs)
    except TypeError as err:
        raise errors.invalid_option(
            f"option {GROUPER.name}: cannot build {cls.__qualname__} with {sorted(kwargs)}: {err}"
        ) from None


def _accepts(cls: type, parameter: str) -> bool:
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False
    return parameter in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _import_grouper(path: str) -> Any:
    module_name, _, attr = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:
        raise errors.invalid_option(
            f"option {GROUPER.name}: cannot import module {module_name!r} for {path!r}: {err}; expected one "
            f"of {', '.join(c.name for c in GROUPERS.values())} or 'package.module.ClassName'"
        ) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise errors.invalid_option(
            f"option {GROUPER.name}: module {module_name!r} has no attribute {attr!r} (from {path!r})"
        ) from None


# ---- helpers ----------------------------------------------------------------------------------------------

@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a model is built.

    Grouping allocates a few objects per SSP and none of them form cycles (frozen dataclasses, sets, dicts),
    yet with 100,000 SSPs the allocations trigger repeated full collections that cost about a third of the
    time. Reference counting still frees everything; the collector is re-enabled (if it was on) on exit.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _by_stream(ssps: Iterable[SystemStreamPartition]) -> dict[SystemStream, list[SystemStreamPartition]]:
    # Keyed by a plain tuple while looping: cheaper than building a SystemStream per SSP.
    out: dict[tuple[str, str], list[SystemStreamPartition]] = {}
    for ssp in ssps:
        key = (ssp.system, ssp.stream)
        bucket = out.get(key)
        if bucket is None:
            out[key] = [ssp]
        else:
            bucket.append(ssp)
    return {SystemStream(*key): bucket for key, bucket in out.items()}


def _partition_of(ssp: SystemStreamPartition) -> int:
    return ssp.partition


def _previous_initial_counts(previous: JobModel, counts: Mapping[SystemStream, int]) -> dict[SystemStream, int]:
    """Initial counts recorded in ``previous``; a stream without one falls back to its count there."""
    recorded = previous.initial_partition_counts
    if all(stream in recorded for stream in counts):
        return dict(recorded)  # the usual case: no need to count the previous model's SSPs
    return {**previous.partition_counts(), **recorded}


def _previous_assignment_by_stream(previous: JobModel) -> dict[SystemStream, dict[int, TaskName]]:
    """stream -> partition -> task of the previous model, broadcast SSPs excluded (one pass, no SSP hashing
    unless there are broadcast SSPs)."""
    out: dict[tuple[str, str], dict[int, TaskName]] = {}
    broadcast = previous.broadcast
    for task, ssps in previous.tasks.items():
        for ssp in ssps:
            if broadcast and ssp in broadcast:
                continue
            key = (ssp.system, ssp.stream)
            partitions = out.get(key)
            if partitions is None:
                out[key] = partitions = {}
            partitions[ssp.partition] = task
    return {SystemStream(*key): partitions for key, partitions in out.items()}


def _check_no_stream_vanished(
    previous_by_stream: Mapping[SystemStream, Mapping[int, TaskName]],
    counts: Mapping[SystemStream, int],
) -> None:
    for stream, previous_tasks in previous_by_stream.items():
        if stream not in counts:
            raise errors.expansion_unsupported(
                f"stream {stream} had {len(previous_tasks)} partitions in the previous job model and has "
                "disappeared (0 now): the topic/stream was deleted (perhaps being re-created) or is no longer "
                "subscribed. Fixed tasks would lose the state of its tasks. Fix: restore the stream with "
                f"{len(previous_tasks)} partitions (or a multiple), or start a new {JOB_NAME.name}."
            )


def _check_growth(stream: SystemStream, previous_count: int, current: int, initial_count: int) -> None:
    if current < previous_count:
        raise errors.expansion_unsupported(
            f"stream {stream} shrank from {previous_count} partitions (previous job model; {initial_count} when "
            f"the job was first planned) to {current}: partitions were removed, or the topic was deleted and "
            "re-created with fewer partitions. Fixed tasks cannot survive a contraction. Fix: re-create it with "
            f"{previous_count} partitions or a multiple of {initial_count}, or start a new {JOB_NAME.name} "
            f"(fresh state), or plug in your own {EXPANSION_ALGORITHM.name}."
        )


def _ranges(values: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5`` (keeps messages short for streams with many partitions)."""
    parts: list[str] = []
    start: int | None = None
    prev = 0
    for v in values:
        if start is None:
            start = prev = v
        elif v == prev + 1:
            prev = v
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = v
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(parts)


def _task_sort_key(task: TaskName) -> tuple:
    # Same order as TaskName.__lt__, computed once per task instead of once per comparison: JobModel sorts
    # its tasks, and Timsort over already-sorted input needs only n comparisons.
    return task.sort_key


def _build_model(
    tasks: Mapping[TaskName, list[SystemStreamPartition]],
    initial: Mapping[SystemStream, int],
    broadcast: SspSet,
) -> JobModel:
    if broadcast:
        built = {task: frozenset(ssps) | broadcast for task, ssps in tasks.items()}
    else:
        built = {task: frozenset(ssps) for task, ssps in tasks.items()}
    return JobModel(built, initial, broadcast)
