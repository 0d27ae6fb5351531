"""ShardPartitionMapper: Kinesis shards onto the SSP slots of fixed tasks (the Samza Kinesis proposal).

Pure: no boto3, no Spark, no I/O. The state (``num_tasks``, ``slots_per_task``, shard -> slot) is explicit and
JSON-serialisable; the Kinesis planner copies it, changes the copy and writes it into the next Spark offset.

- Tasks ``Task-0`` .. ``Task-<n-1>``; task ``i`` owns the slot SSPs ``[i * S, (i + 1) * S)``, ``S = slots_per_task``.
- ``build``: a new job model: the readable shards, sorted by starting hash key, cut into contiguous hash ranges
  per task; children follow their parents.
- ``place``: a new shard joins its parent's task (``lineage``) or the least-loaded one (``balanced``), and takes a
  free slot, a slot holding only its parents, or overloads the least-loaded slot. ``release``: a drained shard.

The reasons behind each rule: docs/architecture.md §8.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from ...core.model import SystemStreamPartition, TaskName
from .. import errors
from ..errors import MapperError
from ..shards import ShardInfo, lineage_order

LINEAGE = "lineage"
BALANCED = "balanced"
ASSIGNMENTS = (LINEAGE, BALANCED)

_NO_HASH = 2**128  # sorts after every real starting hash key
MAX_TASKS = 100_000  # Spark input partitions per micro-batch; far beyond any sensible setting
MAX_SLOTS = 2**31 - 1  # Samza partition ids are Java ints


def task_name(index: int) -> TaskName:
    """``Task-<index>``, as ``AllSspToSingleTask`` names its tasks."""
    return TaskName(f"Task-{index}")


def task_index(task: TaskName | str) -> int | None:
    """Inverse of :func:`task_name`; ``None`` if the name is not of the form ``Task-<n>``."""
    name = task.name if isinstance(task, TaskName) else task
    if not isinstance(name, str) or not name.startswith("Task-"):
        return None
    digits = name[5:]
    if not digits.isascii() or not digits.isdigit() or (len(digits) > 1 and digits[0] == "0"):
        return None
    return int(digits)


def check_assignment(assignment: str) -> str:
    if assignment not in ASSIGNMENTS:
        raise MapperError(f"assignment must be one of {ASSIGNMENTS}, got {assignment!r}")
    return assignment


def _positive_int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise MapperError(f"{what} must be a positive int, got {value!r:.80}")
    return value


class ShardPartitionMapper:
    """shard -> SSP slot (and so -> task) for ``num_tasks`` tasks of ``slots_per_task`` slots each.

    A slot is identified by its global SSP partition number ``p``; the task is ``p // slots_per_task``.
    Mutable (``assign``, ``release``, ``place``); ``copy()`` before changing a mapper owned by an offset.
    """

    __slots__ = ("_num_tasks", "_slots_per_task", "_slot_of", "_members", "_task_used")

    def __init__(self, num_tasks: int, slots_per_task: int, slots: Mapping[str, int] | None = None) -> None:
        self._num_tasks = _positive_int(num_tasks, "num_tasks")
        self._slots_per_task = _positive_int(slots_per_task, "slots_per_task")
        if num_tasks > MAX_TASKS or num_tasks * slots_per_task > MAX_SLOTS:
            raise errors.job_model_too_large(num_tasks, slots_per_task, MAX_TASKS, MAX_SLOTS)
        self._slot_of: dict[str, int] = {}
        self._members: dict[int, set[str]] = {}  # only slots holding a shard
        self._task_used: dict[int, set[int]] = {}  # task -> its slots holding a shard
        for shard, slot in (slots or {}).items():
            self.assign(shard, slot)

    # ---- shape -----------------------------------------------------------------------------------------
    @property
    def num_tasks(self) -> int:
        return self._num_tasks

    @property
    def slots_per_task(self) -> int:
        return self._slots_per_task

    @property
    def total_slots(self) -> int:
        return self._num_tasks * self._slots_per_task

    def task_of_slot(self, slot: int) -> int:
        self._check_slot(slot)
        return slot // self._slots_per_task

    def slots_of_task(self, task: int) -> range:
        self._check_task(task)
        return range(task * self._slots_per_task, (task + 1) * self._slots_per_task)

    def task_names(self) -> list[TaskName]:
        return [task_name(i) for i in range(self._num_tasks)]

    def ssp(self, slot: int, stream: str, system: str = "kinesis") -> SystemStreamPartition:
        self._check_slot(slot)
        return SystemStreamPartition(system, stream, slot)

    # ---- queries ---------------------------------------------------------------------------------------
    def __contains__(self, shard: object) -> bool:
        return shard in self._slot_of

    def __len__(self) -> int:
        return len(self._slot_of)

    def slot_of(self, shard: str) -> int | None:
        return self._slot_of.get(shard)

    def task_of(self, shard: str) -> int | None:
        slot = self._slot_of.get(shard)
        return None if slot is None else slot // self._slots_per_task

    def assignments(self) -> dict[str, int]:
        """shard -> slot, sorted by shard id."""
        return dict(sorted(self._slot_of.items()))

    def shards_in(self, slot: int) -> list[str]:
        return sorted(self._members.get(slot, ()))

    def shards_of_task(self, task: int) -> list[str]:
        return sorted(s for slot in self.slots_of_task(task) for s in self._members.get(slot, ()))

    def free_slots(self, task: int) -> list[int]:
        used = self._task_used.get(task, set()) if 0 <= task < self._num_tasks else set()
        return [slot for slot in self.slots_of_task(task) if slot not in used]

    def used_slots(self) -> dict[int, list[str]]:
        """slot -> its shards, for every slot holding at least one shard, sorted."""
        return {slot: sorted(members) for slot, members in sorted(self._members.items())}

    def overloaded_slots(self) -> list[int]:
        return sorted(slot for slot, members in self._members.items() if len(members) > 1)

    # ---- changes ---------------------------------------------------------------------------------------
    def assign(self, shard: str, slot: int) -> None:
        if not isinstance(shard, str) or not shard:
            raise MapperError(f"a shard id must be a non-empty string, got {shard!r:.80}")
        self._check_slot(slot)
        if shard in self._slot_of:
            raise MapperError(f"shard {shard} is already mapped to slot {self._slot_of[shard]}")
        self._slot_of[shard] = slot
        self._members.setdefault(slot, set()).add(shard)
        self._task_used.setdefault(slot // self._slots_per_task, set()).add(slot)

    def release(self, shard: str) -> int | None:
        """Unmap ``shard`` (drained or gone); returns the slot it held, or ``None`` if it was not mapped."""
        slot = self._slot_of.pop(shard, None)
        if slot is not None:
            members = self._members[slot]
            members.discard(shard)
            if not members:
                del self._members[slot]
                task = slot // self._slots_per_task
                self._task_used[task].discard(slot)
                if not self._task_used[task]:
                    del self._task_used[task]
        return slot

    def place(self, shard: ShardInfo, info: Mapping[str, ShardInfo], assignment: str = LINEAGE,
              retired: Mapping[str, int] | None = None) -> int:
        """Map a new shard: choose its task (lineage or balanced) and a slot in it; returns the slot.

        ``info`` describes the shards currently listed (for parents' hash keys and which mapped shards are
        still open); a mapped shard missing from it counts as closed. ``retired``: drained (unmapped) shard ->
        the task index it was in when drained, for the lineage of its children.
        """
        return self.place_many([shard], info, assignment, retired)[0]

    def place_many(
        self, shards: Iterable[ShardInfo], info: Mapping[str, ShardInfo], assignment: str = LINEAGE,
        retired: Mapping[str, int] | None = None,
    ) -> list[int]:
        """``place`` each of ``shards`` in the order given (parents first: see :func:`lineage_order`).

        Task loads are computed once and kept up to date, so placing many shards costs about as much as one.
        """
        retired = retired or {}
        check_assignment(assignment)
        loads: list[list[int]] | None = None  # [open shards, shards] per task, computed when first needed
        out = []
        for shard in shards:
            task = self._lineage_task(shard, info, retired) if assignment == LINEAGE else None
            if task is None:
                if loads is None:
                    loads = self._loads(info)
                task = min(range(self._num_tasks), key=lambda i: (loads[i][0], loads[i][1], i))
            slot = self.choose_slot(task, shard, info)
            self.assign(shard.shard_id, slot)
            if loads is not None:
                loads[task][0] += shard.shard_id in info and not info[shard.shard_id].closed
                loads[task][1] += 1
            out.append(slot)
        return out

    def choose_slot(self, task: int, shard: ShardInfo, info: Mapping[str, ShardInfo]) -> int:
        self._check_task(task)
        used = self._task_used.get(task, set())
        base = task * self._slots_per_task
        if len(used) < self._slots_per_task:  # 1. the lowest free slot (at most len(used) steps away)
            slot = base
            while slot in used:
                slot += 1
            return slot
        members = self._members
        ordered = sorted(used)
        parents = set(shard.parent_ids)
        for slot in ordered:  # 2. succession: only its own parents are there
            if members[slot] <= parents:
                return slot
        # 3. overload the slot with the fewest open shards, then fewest shards, then the lowest number
        return min(ordered, key=lambda slot: (self._open_count(members[slot], info), len(members[slot]), slot))

    def copy(self) -> ShardPartitionMapper:
        out = ShardPartitionMapper(self._num_tasks, self._slots_per_task)
        out._slot_of = dict(self._slot_of)
        out._members = {slot: set(members) for slot, members in self._members.items()}
        out._task_used = {task: set(used) for task, used in self._task_used.items()}
        return out

    # ---- a new job model -------------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        num_tasks: int,
        shards: Iterable[ShardInfo],
        assignment: str = LINEAGE,
        slots_per_task: int | None = None,
    ) -> ShardPartitionMapper:
        """A new job model's mapping of the live (not drained) ``shards``: see the module docstring.

        With ``slots_per_task=None`` every task gets ``max(open shards, the most shards one task gets, 1)``
        slots, so the result is 1:1.
        """
        _positive_int(num_tasks, "num_tasks")
        check_assignment(assignment)
        if slots_per_task is not None:
            _positive_int(slots_per_task, "slots_per_task")
        live = {s.shard_id: s for s in shards}
        ordered = lineage_order(live.values())
        roots = [s for s in ordered if not any(p in live and p != s.shard_id for p in s.parent_ids)]
        roots.sort(key=lambda s: (s.hash_start, s.shard_id))
        root_ids = {s.shard_id for s in roots}
        task_of: dict[str, int] = {}
        totals = [0] * num_tasks
        opens = [0] * num_tasks
        for k, s in enumerate(roots):
            task_of[s.shard_id] = t = k * num_tasks // len(roots)
            totals[t] += 1
            opens[t] += not s.closed
        children = [s for s in ordered if s.shard_id not in root_ids]
        for s in children:
            parents = [p for p in s.parent_ids if p in task_of and p != s.shard_id]
            if assignment == LINEAGE and parents:
                t = task_of[min(parents, key=lambda p: (live[p].hash_start, p))]
            else:
                t = min(range(num_tasks), key=lambda i: (opens[i], totals[i], i))
            task_of[s.shard_id] = t
            totals[t] += 1
            opens[t] += not s.closed
        if slots_per_task is None:
            open_count = sum(1 for s in live.values() if not s.closed)
            slots_per_task = max(open_count, max(totals, default=0), 1)
        mapper = cls(num_tasks, slots_per_task)
        for s in roots + children:
            mapper.assign(s.shard_id, mapper.choose_slot(task_of[s.shard_id], s, live))
        return mapper

    # ---- JSON ------------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"numTasks": self._num_tasks, "slots": self.assignments(), "slotsPerTask": self._slots_per_task}

    @classmethod
    def from_json(cls, value: Any) -> ShardPartitionMapper:
        """A mapper from JSON that was stored or handed over: what does not fit is the input's fault
        (``OffsetFormatError``), not a bug."""
        if not isinstance(value, dict):
            raise errors.offset_invalid(f"mapper JSON must be an object, got {type(value).__name__}")
        slots = value.get("slots", {})
        if not isinstance(slots, dict):
            raise errors.offset_invalid("mapper JSON: 'slots' must be an object of shard id -> slot")
        for shard, slot in slots.items():
            if not isinstance(slot, int) or isinstance(slot, bool):
                raise errors.offset_invalid(f"mapper JSON: slot of {shard!r:.80} must be an int, got {slot!r:.80}")
        # unchecked JSON values: the constructor checks that both are positive ints (MapperError, turned below)
        num_tasks, slots_per_task = cast(int, value.get("numTasks")), cast(int, value.get("slotsPerTask"))
        try:
            return cls(num_tasks, slots_per_task, slots)
        except MapperError as err:
            raise errors.offset_invalid(f"mapper JSON: {err}") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShardPartitionMapper):
            return NotImplemented
        return (self._num_tasks, self._slots_per_task, self._slot_of) == (
            other._num_tasks, other._slots_per_task, other._slot_of)

    # no __hash__: a class that defines __eq__ alone is unhashable, as a mutable mapper must be

    def __repr__(self) -> str:
        return (f"ShardPartitionMapper(num_tasks={self._num_tasks}, slots_per_task={self._slots_per_task}, "
                f"slots={self.assignments()!r})")

    # ---- helpers ---------------------------------------------------------------------------------------
    def _check_slot(self, slot: Any) -> None:
        if not isinstance(slot, int) or isinstance(slot, bool) or not 0 <= slot < self.total_slots:
            raise MapperError(
                f"slot {slot!r:.80} is out of range: {self._num_tasks} tasks x {self._slots_per_task} slots "
                f"= slots 0..{self.total_slots - 1}"
            )

    def _check_task(self, task: Any) -> None:
        if not isinstance(task, int) or isinstance(task, bool) or not 0 <= task < self._num_tasks:
            raise MapperError(f"task index {task!r:.80} is out of range 0..{self._num_tasks - 1}")

    @staticmethod
    def _open_count(members: Iterable[str], info: Mapping[str, ShardInfo]) -> int:
        return sum(1 for s in members if s in info and not info[s].closed)

    def _lineage_task(self, shard: ShardInfo, info: Mapping[str, ShardInfo],
                      retired: Mapping[str, int]) -> int | None:
        """The task of the parent with the lowest starting hash key among those whose task is known (mapped, or
        drained with its task in ``retired``); ``None`` if no parent's task is known."""
        known: dict[str, int] = {}
        for p in shard.parent_ids:
            if p == shard.shard_id:
                continue
            if p in self._slot_of:
                known[p] = self._slot_of[p] // self._slots_per_task
            elif p in retired and 0 <= retired[p] < self._num_tasks:
                known[p] = retired[p]
        if not known:
            return None
        first = min(known, key=lambda p: (info[p].hash_start if p in info else _NO_HASH, p))
        return known[first]

    def _loads(self, info: Mapping[str, ShardInfo]) -> list[list[int]]:
        """[open shards, shards] per task."""
        loads = [[0, 0] for _ in range(self._num_tasks)]
        per = self._slots_per_task
        for shard, slot in self._slot_of.items():
            load = loads[slot // per]
            load[1] += 1
            if shard in info and not info[shard].closed:
                load[0] += 1
        return loads
