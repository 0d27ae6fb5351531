"""The Samza vocabulary: SystemStreamPartition and TaskName.

Both are immutable, hashable and totally ordered, so they can key dicts and be sorted into the deterministic
JSON that Spark's offset log needs (Spark compares offsets as strings). String forms follow Samza exactly:
``SystemStreamPartition [kafka, orders, 3]`` and task names such as ``Partition 3``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import errors


@dataclass(frozen=True, order=True, slots=True)
class SystemStream:
    """A stream within a system, e.g. ``kafka.orders``."""

    system: str
    stream: str

    def __str__(self) -> str:
        return f"{self.system}.{self.stream}"


@dataclass(frozen=True, order=True, slots=True)
class SystemStreamPartition:
    """One partition of one stream of one system (a Kafka topic partition; a Kinesis SSP slot)."""

    system: str
    stream: str
    partition: int

    def __post_init__(self) -> None:
        if not isinstance(self.partition, int) or isinstance(self.partition, bool) or self.partition < 0:
            raise errors.ssp_invalid(
                f"SystemStreamPartition partition must be a non-negative int, got {self.partition!r} "
                f"for stream {self.system}.{self.stream}"
            )
        if not self.system or not self.stream:
            raise errors.ssp_invalid(
                f"SystemStreamPartition needs a non-empty system and stream, got {self.system!r}, {self.stream!r}"
            )

    @property
    def system_stream(self) -> SystemStream:
        return SystemStream(self.system, self.stream)

    def __str__(self) -> str:  # Samza's SystemStreamPartition.toString()
        return f"SystemStreamPartition [{self.system}, {self.stream}, {self.partition}]"

    @property
    def key(self) -> str:
        """Samza's map-key form ``system.stream.partition`` (used by the startpoint store)."""
        return f"{self.system}.{self.stream}.{self.partition}"

    def to_json(self) -> dict[str, Any]:
        return {"partition": self.partition, "stream": self.stream, "system": self.system}

    @classmethod
    def from_json(cls, value: Any) -> SystemStreamPartition:
        if not isinstance(value, dict):
            raise errors.ssp_invalid(f"expected a SystemStreamPartition JSON object, got {value!r:.200}")
        try:
            system, stream, partition = value["system"], value["stream"], value["partition"]
        except KeyError as missing:
            raise errors.ssp_invalid(
                f"SystemStreamPartition JSON lacks {missing}: {value!r:.200}; expected system, stream, partition"
            ) from None
        if not isinstance(system, str) or not isinstance(stream, str):
            raise errors.ssp_invalid(f"SystemStreamPartition system and stream must be strings: {value!r:.200}")
        return cls(system, stream, partition)

    _STR_RE = re.compile(r"^SystemStreamPartition \[(.+), (.+), (\d{1,18})\]$")

    @classmethod
    def parse(cls, text: str) -> SystemStreamPartition:
        """Parse the Samza string form ``SystemStreamPartition [system, stream, N]``."""
        match = cls._STR_RE.match(text) if isinstance(text, str) else None
        if not match:
            raise errors.ssp_invalid(
                f"not a SystemStreamPartition string: {text!r:.200}; "
                "expected 'SystemStreamPartition [system, stream, N]'"
            )
        return cls(match.group(1), match.group(2), int(match.group(3)))


def ssp_order(ssp: SystemStreamPartition) -> tuple[str, str, int]:
    """The sort key of an SSP, the order its ``<`` gives: sorting 10,000 SSPs by it compares tuples in C, where the
    dataclass's own ``__lt__`` builds two tuples in Python per comparison (~0.2 s per plan at 10,000 partitions)."""
    return (ssp.system, ssp.stream, ssp.partition)


def _natural_key(name: str) -> tuple:
    """Sort ``Partition 2`` before ``Partition 10``: digits compare as numbers.

    A run of digits compares by its length without leading zeros, then by its digits: numeric order without
    ``int()``, which Python refuses beyond 4300 digits (a task name of a damaged or hostile offset may hold more).
    """
    out = []
    for part in re.split(r"([0-9]+)", name):
        if part.isascii() and part.isdigit():
            digits = part.lstrip("0")
            out.append((0, len(digits), digits))
        else:
            out.append((1, 0, part))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class TaskName:
    """A Samza task; here also exactly one Spark input partition in every micro-batch."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise errors.task_name_invalid(f"TaskName must be a non-empty string, got {self.name!r}")

    def __str__(self) -> str:
        return self.name

    @property
    def sort_key(self) -> tuple:
        """Natural order (``Partition 2`` before ``Partition 10``), ties broken by the plain string."""
        return (_natural_key(self.name), self.name)

    def __lt__(self, other: TaskName) -> bool:
        if not isinstance(other, TaskName):
            return NotImplemented
        return self.sort_key < other.sort_key

    def __le__(self, other: TaskName) -> bool:
        return self == other or self < other

    def __gt__(self, other: TaskName) -> bool:
        if not isinstance(other, TaskName):
            return NotImplemented
        return other < self

    def __ge__(self, other: TaskName) -> bool:
        return self == other or self > other

    def to_json(self) -> str:
        return self.name

    @classmethod
    def from_json(cls, value: Any) -> TaskName:
        if not isinstance(value, str):
            raise errors.task_name_invalid(f"expected a task name string, got {value!r:.200}")
        return cls(value)


#: A Samza task and one SSP it reads: the key of per-(task, SSP) positions, rebases and applied startpoints.
TaskSsp = tuple[TaskName, SystemStreamPartition]


def by_task_json(mapping: Mapping[TaskSsp, Any], conv: Callable[[Any], Any]) -> dict[str, dict[str, Any]]:
    """``{task name: {SSP key: conv(value)}}``, keys sorted: how offsets store per-(task, SSP) values (Spark
    compares offsets as JSON strings, so the order must be fixed)."""
    out: dict[str, dict[str, Any]] = {}
    for (task, ssp), value in mapping.items():
        out.setdefault(task.name, {})[ssp.key] = conv(value)
    return {t: dict(sorted(v.items())) for t, v in sorted(out.items())}


def parse_ssp_key(key: Any) -> SystemStreamPartition:
    """Inverse of ``SystemStreamPartition.key`` (``system.stream.partition``; streams may contain dots).

    Both systems' offsets key their positions by it, so a bad key is an :class:`OffsetFormatError`.
    """
    if not isinstance(key, str):
        raise errors.offset_invalid(f"SSP key must be a string, got {key!r:.80}")
    system, sep, rest = key.partition(".")
    stream, sep2, partition = rest.rpartition(".")
    # ASCII digits only ('²'.isdigit() is True, int('²') fails) and at most 18 (int() refuses > 4300 digits)
    if not sep or not sep2 or not (partition.isascii() and partition.isdigit()) or len(partition) > 18 or not stream:
        raise errors.offset_invalid(f"bad SSP key {key!r:.80}; expected 'system.stream.partition'")
    return SystemStreamPartition(system, stream, int(partition))
