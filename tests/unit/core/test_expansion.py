"""Partition expansion algorithms: the SEP-5 default, its preconditions, the contract check, resolution."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_samza_source.core.errors import ConfigError, PartitionExpansionError, SamzaSourceError
from spark_samza_source.core.expansion import (
    DefaultPartitionExpansionAlgorithm,
    PartitionExpansionAlgorithm,
    checked_partition_before_expansion,
    resolve_expansion_algorithm,
)
from spark_samza_source.core.model import SystemStream

ORDERS = SystemStream("kafka", "orders")


class PowerOfTwoExpansion(PartitionExpansionAlgorithm):
    """A custom algorithm (resolved by dotted path in the tests): p % initial, growth by 2^k only."""

    def partition_before_expansion(self, partition: int, current_count: int, initial_count: int) -> int:
        return partition % initial_count

    def validate(self, stream: SystemStream, current_count: int, initial_count: int) -> None:
        super().validate(stream, current_count, initial_count)
        factor, rest = divmod(current_count, initial_count)
        if rest or factor & (factor - 1):
            raise PartitionExpansionError(f"{stream}: {initial_count} -> {current_count} is not a power of two")


class BlockExpansion(PartitionExpansionAlgorithm):
    """Range-style mapping p // k: violates SEP-5's identity rule for partitions below the initial count."""

    def partition_before_expansion(self, partition: int, current_count: int, initial_count: int) -> int:
        return partition // (current_count // initial_count)


class OutOfRange(PartitionExpansionAlgorithm):
    def partition_before_expansion(self, partition: int, current_count: int, initial_count: int) -> int:
        return partition  # unchanged: partitions >= initial are out of range


class NeedsArguments(PartitionExpansionAlgorithm):
    def __init__(self, factor: int) -> None:
        self.factor = factor

    def partition_before_expansion(self, partition: int, current_count: int, initial_count: int) -> int:
        return partition % initial_count


class DuckTyped:
    """Not a subclass: only the method (and a validate that counts its calls)."""

    def __init__(self) -> None:
        self.validated: list[tuple[SystemStream, int, int]] = []

    def partition_before_expansion(self, partition: int, current_count: int, initial_count: int) -> int:
        return partition % initial_count

    def validate(self, stream: SystemStream, current_count: int, initial_count: int) -> None:
        self.validated.append((stream, current_count, initial_count))


NOT_AN_ALGORITHM = object()


# ---- the default algorithm --------------------------------------------------------------------------------

def test_default_maps_modulo_initial_count():
    algorithm = DefaultPartitionExpansionAlgorithm()
    assert [algorithm.partition_before_expansion(p, 4, 2) for p in range(4)] == [0, 1, 0, 1]
    assert [algorithm.partition_before_expansion(p, 12, 3) for p in range(12)] == [0, 1, 2] * 4


@given(
    initial=st.integers(min_value=1, max_value=64),
    factor=st.integers(min_value=1, max_value=16),
    data=st.data(),
)
def test_default_keeps_key_affinity_for_any_multiple(initial, factor, data):
    current = initial * factor
    partition = data.draw(st.integers(min_value=0, max_value=current - 1))
    hashed = data.draw(st.integers(min_value=0, max_value=2**31 - 1))
    algorithm = DefaultPartitionExpansionAlgorithm()
    algorithm.validate(ORDERS, current, initial)
    before = checked_partition_before_expansion(algorithm, ORDERS, partition, current, initial)
    assert 0 <= before < initial
    if partition < initial:
        assert before == partition
    # A key hashed to h sits in h % current now and sat in h % initial before: the mapping agrees.
    assert algorithm.partition_before_expansion(hashed % current, current, initial) == hashed % initial


@pytest.mark.parametrize("current", [2, 4, 8, 16])
def test_default_accepts_multiples(current):
    DefaultPartitionExpansionAlgorithm().validate(ORDERS, current, 2)
    assert checked_partition_before_expansion(DefaultPartitionExpansionAlgorithm(), ORDERS, current - 1, current, 2) \
        == (current - 1) % 2


def test_default_rejects_non_multiple_growth_naming_stream_counts_and_fix():
    with pytest.raises(PartitionExpansionError) as err:
        DefaultPartitionExpansionAlgorithm().validate(ORDERS, 6, 4)
    message = str(err.value)
    for part in ("kafka.orders", "from 4 partitions", "to 6", "not a multiple of 4", "8, 16", "job.name",
                 "expansion.algorithm"):
        assert part in message, part


def test_default_rejects_contraction_naming_stream_counts_and_fix():
    with pytest.raises(PartitionExpansionError) as err:
        DefaultPartitionExpansionAlgorithm().validate(ORDERS, 2, 4)
    message = str(err.value)
    for part in ("kafka.orders", "shrank from 4", "to 2", "re-created", "job.name", "expansion.algorithm"):
        assert part in message, part


@pytest.mark.parametrize("current, initial", [(0, 2), (2, 0), (-1, 1)])
def test_base_validate_rejects_non_positive_counts(current, initial):
    with pytest.raises(PartitionExpansionError, match="must be positive"):
        DefaultPartitionExpansionAlgorithm().validate(ORDERS, current, initial)


# ---- the SEP-5 contract on custom algorithms --------------------------------------------------------------

def test_contract_requires_identity_below_initial_count():
    with pytest.raises(PartitionExpansionError) as err:
        checked_partition_before_expansion(BlockExpansion(), ORDERS, 1, 4, 2)
    assert "map to themselves" in str(err.value) and "kafka.orders" in str(err.value)


def test_contract_requires_result_in_range():
    with pytest.raises(PartitionExpansionError) as err:
        checked_partition_before_expansion(OutOfRange(), ORDERS, 5, 8, 4)
    assert "[0, 4)" in str(err.value) and "partition 5" in str(err.value)


def test_contract_rejects_non_int_results():
    class ReturnsFloat(PartitionExpansionAlgorithm):
        def partition_before_expansion(self, partition, current_count, initial_count):
            return float(partition % initial_count)

    with pytest.raises(PartitionExpansionError, match="must return an int"):
        checked_partition_before_expansion(ReturnsFloat(), ORDERS, 3, 4, 2)


# ---- resolution -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "spec",
    [None, "default", "DEFAULT", " DefaultPartitionExpansionAlgorithm ",
     "org.apache.samza.container.grouper.stream.HashSystemStreamPartitionMapperFactory"],
)
def test_resolve_default(spec):
    assert type(resolve_expansion_algorithm(spec)) is DefaultPartitionExpansionAlgorithm


def test_resolve_instance_is_returned_as_is():
    algorithm = PowerOfTwoExpansion()
    assert resolve_expansion_algorithm(algorithm) is algorithm


def test_resolve_class_is_instantiated():
    assert type(resolve_expansion_algorithm(PowerOfTwoExpansion)) is PowerOfTwoExpansion


def test_resolve_dotted_path_of_a_class_defined_here():
    algorithm = resolve_expansion_algorithm(f"{__name__}.PowerOfTwoExpansion")
    assert type(algorithm).__name__ == "PowerOfTwoExpansion"
    algorithm.validate(ORDERS, 8, 2)
    with pytest.raises(PartitionExpansionError, match="power of two"):
        algorithm.validate(ORDERS, 6, 2)


def test_resolve_duck_typed_object_delegates_validate():
    inner = DuckTyped()
    algorithm = resolve_expansion_algorithm(inner)
    assert isinstance(algorithm, PartitionExpansionAlgorithm)
    assert algorithm.partition_before_expansion(5, 8, 4) == 1
    algorithm.validate(ORDERS, 8, 4)
    assert inner.validated == [(ORDERS, 8, 4)]


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("no_such_module_xyz.Algorithm", "cannot import module 'no_such_module_xyz'"),
        (f"{__name__}.NoSuchClass", "has no attribute 'NoSuchClass'"),
        (f"{__name__}.NOT_AN_ALGORITHM", "is not a partition expansion algorithm"),
        (f"{__name__}.NeedsArguments", "with no arguments"),
        ("collections.OrderedDict", "is not a partition expansion algorithm"),
        ("justaname", "dotted path"),
        ("", "dotted path"),
        (42, "is not a partition expansion algorithm"),
    ],
)
def test_resolve_errors_name_the_option(spec, expected):
    with pytest.raises(ConfigError) as err:
        resolve_expansion_algorithm(spec)
    assert "expansion.algorithm" in str(err.value)
    assert expected in str(err.value)
    assert isinstance(err.value, SamzaSourceError)


def test_the_base_feeder_rule_names_every_previous_partition_of_the_same_task():
    """The conservative rule a custom algorithm inherits (mutation check: feeders-base-none)."""

    class Modulo(PartitionExpansionAlgorithm):
        def partition_before_expansion(self, partition, current_count, initial_count):
            return partition % initial_count

    assert Modulo().feeders(5, 8, 4, 2) == frozenset({1, 3})
    assert Modulo().feeders(6, 8, 4, 2) == frozenset({0, 2})
    assert Modulo().feeders(2, 4, 2, 2) == frozenset({0})
