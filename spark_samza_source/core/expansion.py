"""Partition expansion algorithms (SEP-5): which partition a new partition's keys lived in before expansion.

Called by the fixed-task groupers (``core.grouping``) and the co-partition planner. An algorithm answers
``partition_before_expansion(p, current_count, initial_count)``; :func:`checked_partition_before_expansion`
enforces SEP-5's two requirements on every answer (in ``[0, initial_count)``; identity below ``initial_count``),
so a faulty plug-in fails loudly. The default, :class:`DefaultPartitionExpansionAlgorithm`, is ``p % initial``
and accepts only growth by an integer multiple. Users plug their own by dotted path (``expansion.algorithm``).

Why ``p % initial`` keeps every key in its task: docs/architecture.md §5.
"""

from __future__ import annotations

import importlib
import math
from abc import ABC, abstractmethod
from typing import Any

from ..options.common import EXPANSION_ALGORITHM, JOB_NAME
from . import errors
from .model import SystemStream

# Samza configuration values that mean "the default algorithm", accepted so Samza configs carry over.
_DEFAULT_ALIASES = frozenset(
    name.lower()
    for name in (
        "default",
        "DefaultPartitionExpansionAlgorithm",
        "HashSystemStreamPartitionMapper",
        "HashSystemStreamPartitionMapperFactory",
        "org.apache.samza.container.grouper.stream.HashSystemStreamPartitionMapperFactory",
        "org.apache.samza.container.grouper.stream.HashSystemStreamPartitionMapper",
    )
)


class PartitionExpansionAlgorithm(ABC):
    """Maps a partition of an expanded stream to the partition that held its keys at the initial count.

    Implementations must be pure and deterministic: the result is recomputed on every replay of a batch.
    """

    @abstractmethod
    def partition_before_expansion(self, partition: int, current_count: int, initial_count: int) -> int:
        """The partition (in ``[0, initial_count)``) whose keys ``partition`` now holds."""

    def feeders(self, partition: int, current_count: int, previous_count: int, initial_count: int) -> frozenset[int]:
        """The partitions of the previous layout (``previous_count``) whose keys may now be in ``partition``.

        The drain-first barrier makes ``partition`` wait until each of these (other than itself) has been read
        up to where the growth was cut, so keys that moved keep their order. The base rule is the conservative
        one: every previous partition that maps to the same pre-expansion partition (so the same task) as
        ``partition``. Override it when you know the producers' partitioner, to wait for fewer partitions.
        """
        target = self.partition_before_expansion(partition, current_count, initial_count)
        return frozenset(
            p for p in range(previous_count)
            if self.partition_before_expansion(p, previous_count, initial_count) == target
        )

    def validate(self, stream: SystemStream, current_count: int, initial_count: int) -> None:
        """Reject a (current, initial) pair this algorithm cannot map; raise :class:`PartitionExpansionError`.

        The base check only refuses counts that cannot be partition counts; override to add your own rules.
        """
        if current_count <= 0 or initial_count <= 0:
            raise errors.expansion_unsupported(
                f"stream {stream}: partition counts must be positive, got initial {initial_count}, "
                f"current {current_count}"
            )

    def __repr__(self) -> str:
        return f"{type(self).__module__}.{type(self).__qualname__}()"


class DefaultPartitionExpansionAlgorithm(PartitionExpansionAlgorithm):
    """``p % initial``; the stream may only grow by an integer multiple of its initial count (SEP-5)."""

    def partition_before_expansion(self, partition: int, current_count: int, initial_count: int) -> int:
        return partition % initial_count

    def feeders(self, partition: int, current_count: int, previous_count: int, initial_count: int) -> frozenset[int]:
        """Under ``hash % N`` a key with hash h moves from ``h % previous`` to ``h % current``.

        The keys now in ``partition`` q have h = q + k * current; their previous partitions are
        ``(q + k * current) % previous``, i.e. every r < previous with r = q (mod gcd(current, previous)).
        Growth by a multiple (previous divides current) gives the single sibling ``q % previous``; other
        growth (4 -> 6) also moves keys between partitions that existed before.
        """
        step = math.gcd(current_count, previous_count)
        return frozenset(range(partition % step, previous_count, step))

    def validate(self, stream: SystemStream, current_count: int, initial_count: int) -> None:
        super().validate(stream, current_count, initial_count)
        if current_count < initial_count:
            raise errors.expansion_unsupported(
                f"stream {stream} shrank from {initial_count} partitions (when the job was first planned) to "
                f"{current_count}: partitions were removed or the topic was deleted and re-created with fewer "
                "partitions. Fixed tasks cannot keep key affinity across a contraction. Fix: re-create the "
                f"topic with {initial_count} partitions or a multiple of it "
                f"({_multiples(initial_count)}), or start a new {JOB_NAME.name} (fresh state), or plug in your own "
                f"{EXPANSION_ALGORITHM.name}."
            )
        if current_count % initial_count != 0:
            raise errors.expansion_unsupported(
                f"stream {stream} grew from {initial_count} partitions (when the job was first planned) to "
                f"{current_count}, which is not a multiple of {initial_count}: keys of one old partition would "
                "spread over several tasks, breaking per-key state. Fix: grow the topic to a multiple of "
                f"{initial_count} ({_multiples(initial_count)}), or start a new {JOB_NAME.name} (fresh state), or "
                f"plug in your own {EXPANSION_ALGORITHM.name}."
            )


def _multiples(n: int) -> str:
    return ", ".join(str(n * k) for k in (2, 4, 8)) + "..."


def checked_partition_before_expansion(
    algorithm: PartitionExpansionAlgorithm, stream: SystemStream, partition: int, current_count: int,
    initial_count: int,
) -> int:
    """Call the algorithm and enforce SEP-5's contract on its result (range, identity below initial)."""
    result = algorithm.partition_before_expansion(partition, current_count, initial_count)
    if not isinstance(result, int) or isinstance(result, bool) or not 0 <= result < initial_count:
        raise errors.expansion_algorithm_broken(
            f"{EXPANSION_ALGORITHM.name} {algorithm!r} mapped partition {partition} of stream {stream} "
            f"(current count {current_count}, initial count {initial_count}) to {result!r}; it must return an "
            f"int in [0, {initial_count}). Fix the algorithm."
        )
    if partition < initial_count and result != partition:
        raise errors.expansion_algorithm_broken(
            f"{EXPANSION_ALGORITHM.name} {algorithm!r} mapped partition {partition} of stream {stream} "
            f"(current count {current_count}, initial count {initial_count}) to {result}; SEP-5 requires "
            f"partitions below the initial count ({initial_count}) to map to themselves. Fix the algorithm."
        )
    return result


def checked_feeders(
    algorithm: PartitionExpansionAlgorithm, stream: SystemStream, partition: int, current_count: int,
    previous_count: int, initial_count: int,
) -> frozenset[int]:
    """Call ``algorithm.feeders`` and check that it names partitions of the previous layout."""
    result = algorithm.feeders(partition, current_count, previous_count, initial_count)
    try:
        found = frozenset(result)
    except TypeError:
        found = None
    if found is None or not all(
        isinstance(p, int) and not isinstance(p, bool) and 0 <= p < previous_count for p in found
    ):
        raise errors.expansion_algorithm_broken(
            f"{EXPANSION_ALGORITHM.name} {algorithm!r}: feeders of partition {partition} of stream {stream} "
            f"(grown from {previous_count} to {current_count} partitions) returned {result!r:.200}; it must return "
            f"a set of ints in [0, {previous_count}). Fix the algorithm."
        )
    return found


def resolve_expansion_algorithm(spec: Any = None) -> PartitionExpansionAlgorithm:
    """Turn the ``expansion.algorithm`` option into an algorithm instance.

    Accepts None (the default), an instance, a class (instantiated with no arguments), the default's names
    (``default``, Samza's ``HashSystemStreamPartitionMapperFactory``) or a dotted path
    ``"package.module.ClassName"`` (imported, then instantiated with no arguments). An object that is not a
    :class:`PartitionExpansionAlgorithm` but has a callable ``partition_before_expansion`` is accepted too
    (duck typing), wrapped so it gets the base ``validate``.
    """
    if spec is None:
        return DefaultPartitionExpansionAlgorithm()
    if isinstance(spec, str):
        text = spec.strip()
        if text.lower() in _DEFAULT_ALIASES:
            return DefaultPartitionExpansionAlgorithm()
        spec = _import_dotted(text)
    if isinstance(spec, type):
        try:
            spec = spec()
        except Exception as err:  # a constructor needing arguments, or failing: a configuration problem
            raise errors.invalid_option(
                f"option {EXPANSION_ALGORITHM.name}: cannot instantiate {spec.__module__}.{spec.__qualname__} "
                f"with no arguments: {err}"
            ) from None
    if isinstance(spec, PartitionExpansionAlgorithm):
        return spec
    if callable(getattr(spec, "partition_before_expansion", None)):
        return _DuckTypedAlgorithm(spec)
    raise errors.invalid_option(
        f"option {EXPANSION_ALGORITHM.name}: {spec!r:.200} is not a partition expansion algorithm; expected a "
        "subclass of spark_samza_source.core.expansion.PartitionExpansionAlgorithm (or an object with "
        "partition_before_expansion(partition, current_count, initial_count))"
    )


def _import_dotted(path: str) -> Any:
    module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise errors.invalid_option(
            f"option {EXPANSION_ALGORITHM.name}: {path!r} is neither 'default' nor a dotted path; expected "
            "'package.module.ClassName'"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # ImportError, or an error raised while importing the user's module
        raise errors.invalid_option(
            f"option {EXPANSION_ALGORITHM.name}: cannot import module {module_name!r} for {path!r}: {err}. "
            "Expected 'package.module.ClassName' importable on the driver"
        ) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise errors.invalid_option(
            f"option {EXPANSION_ALGORITHM.name}: module {module_name!r} has no attribute {attr!r} "
            f"(from {path!r}); expected 'package.module.ClassName'"
        ) from None


class _DuckTypedAlgorithm(PartitionExpansionAlgorithm):
    """Adapts an object that only has ``partition_before_expansion`` (and maybe ``validate``)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def partition_before_expansion(self, partition: int, current_count: int, initial_count: int) -> int:
        return self._inner.partition_before_expansion(partition, current_count, initial_count)

    def feeders(self, partition: int, current_count: int, previous_count: int, initial_count: int) -> frozenset[int]:
        inner = getattr(self._inner, "feeders", None)
        if callable(inner):
            return frozenset(inner(partition, current_count, previous_count, initial_count))
        return super().feeders(partition, current_count, previous_count, initial_count)

    def validate(self, stream: SystemStream, current_count: int, initial_count: int) -> None:
        super().validate(stream, current_count, initial_count)
        inner_validate = getattr(self._inner, "validate", None)
        if callable(inner_validate):
            inner_validate(stream, current_count, initial_count)

    def __repr__(self) -> str:
        return repr(self._inner)
