"""The samza-kinesis input partition's per-shard value: frozen, self-validating, picklable (no positional tuples)."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from spark_samza_source.core.errors import InternalError
from spark_samza_source.kinesis.input_partition import PlannedShardRead
from spark_samza_source.kinesis.positions import ShardPosition


def test_a_shard_read_round_trips_through_pickle_and_is_frozen():
    read = PlannedShardRead(3, "q-1", "shardId-000000000001", ShardPosition.trim_horizon(), "49", 1_700_000_000_000)
    assert pickle.loads(pickle.dumps(read)) == read
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.batch = 4  # type: ignore[misc]


@pytest.mark.parametrize("fields, name", [
    ({"batch": -1}, "batch"),
    ({"batch": True}, "batch"),
    ({"shard_id": ""}, "shard_id"),
    ({"start": {"type": "TRIM_HORIZON"}}, "start"),
    ({"query_id": 7}, "query_id"),
    ({"ending_sequence": 49}, "ending_sequence"),
    ({"until_arrival_ms": "soon"}, "until_arrival_ms"),
])
def test_a_malformed_shard_read_fails_where_it_is_made_naming_the_field(fields, name):
    values = {"batch": 0, "query_id": None, "shard_id": "shardId-000000000000", "start": ShardPosition.trim_horizon(),
              **fields}
    with pytest.raises(InternalError, match=f"PlannedShardRead.{name}"):  # the driver builds them: a bug
        PlannedShardRead(**values)
