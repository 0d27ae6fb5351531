"""samza-kinesis starting strategies, pure: the clock, the sequence check and the lease-table read are handed in.

Against the emulators: tests/integration/kinesis/test_kinesis_start_checks.py. Here each strategy on its own,
including what it asks of the outside world (the clock read once or not at all, Kinesis asked only after the pure
checks passed) and that it is a plain value travelling with the options.
"""

import pickle

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kinesis.options import DEFAULT_STARTING_POSITION
from spark_samza_source.kinesis.positions import ShardPosition as P
from spark_samza_source.kinesis.shards import ShardInfo
from spark_samza_source.kinesis.starting import (
    AtTimestamp,
    KclCheckpoints,
    Latest,
    PerShard,
    Starts,
    TrimHorizon,
    kcl_starts,
)


def at(timestamp_ms: int) -> AtTimestamp:
    return AtTimestamp(timestamp_ms, option="startingPosition")


def per_shard(positions) -> PerShard:
    return PerShard(positions, option="startingPosition")

H = 2**128
NOW = 1_800_000_000_000


def sid(i: int) -> str:
    return f"shardId-{i:012d}"


# shard 0 was split into 2 and 3; shard 1 is open
SHARDS = [
    ShardInfo(sid(0), (), 0, H // 2 - 1, "100", "199"),
    ShardInfo(sid(1), (), H // 2, H - 1, "100"),
    ShardInfo(sid(2), (sid(0),), 0, H // 4 - 1, "200"),
    ShardInfo(sid(3), (sid(0),), H // 4, H // 2 - 1, "210"),
]


class World:
    """What a strategy may ask the coordinator for, recording each request."""

    def __init__(self, kcl=None):
        self.clock_reads = 0
        self.checked: list[dict] = []
        self.kcl = kcl
        self.kcl_reads = 0

    def now_ms(self) -> int:
        self.clock_reads += 1
        return NOW

    def check_sequences(self, named) -> None:
        self.checked.append(dict(named))

    def kcl_checkpoints(self):
        self.kcl_reads += 1
        if self.kcl is None:
            raise AssertionError("the KCL lease table was read")
        return self.kcl

    def starts(self, strategy) -> Starts:
        return strategy.starts(SHARDS, stream="clicks", now_ms=self.now_ms, check_sequences=self.check_sequences,
                               kcl_checkpoints=self.kcl_checkpoints)


def test_latest_fixes_now_once_and_starts_closed_shards_drained():
    world = World()
    got = world.starts(Latest())
    assert got == Starts({sid(0): P.shard_end(), sid(1): P.at_timestamp(NOW), sid(2): P.at_timestamp(NOW),
                          sid(3): P.at_timestamp(NOW)}, latest_timestamp_ms=NOW)
    assert world.clock_reads == 1 and world.checked == [] and world.kcl_reads == 0
    assert DEFAULT_STARTING_POSITION == Latest()


def test_trim_horizon_starts_every_shard_at_its_oldest_record_without_the_clock():
    world = World()
    assert world.starts(TrimHorizon()) == Starts({s.shard_id: P.trim_horizon() for s in SHARDS})
    assert world.clock_reads == 0


def test_at_timestamp_starts_every_shard_there():
    world = World()
    got = world.starts(at(NOW - 1))
    assert got == Starts({s.shard_id: P.at_timestamp(NOW - 1) for s in SHARDS})
    assert got.latest_timestamp_ms is None and world.clock_reads == 1
    assert world.starts(at(NOW)).positions[sid(1)] == P.at_timestamp(NOW)  # now itself is fine


def test_at_timestamp_in_the_future_is_refused_naming_the_option():
    with pytest.raises(ConfigError) as err:
        World().starts(at(NOW + 1))
    message = str(err.value)
    assert message.startswith("[SAMZA_INVALID_OPTION] option 'startingPosition': AT_TIMESTAMP "
                              "2027-01-15T08:00:00.001Z is in the future")
    assert "(now 2027-01-15T08:00:00.000Z); Kinesis refuses iterators later than its clock" in message


def test_per_shard_follows_the_named_shard_into_its_children_and_asks_kinesis_last():
    world = World()
    named = {sid(0): P.after_sequence("150")}
    got = world.starts(per_shard(named))
    # the named shard as named; its children from TRIM_HORIZON (their records follow it); the others as LATEST
    assert got == Starts({sid(0): P.after_sequence("150"), sid(1): P.at_timestamp(NOW), sid(2): P.trim_horizon(),
                          sid(3): P.trim_horizon()}, latest_timestamp_ms=NOW)
    assert world.checked == [named] and world.clock_reads == 1


@pytest.mark.parametrize(("named", "expected"), [
    ({"shardId-9": P.trim_horizon()}, "names shard(s) 'shardId-9' that stream 'clicks' does not have"),
    ({sid(1): P.at_sequence("99")}, "that sequence number does not belong to the shard"),
    ({sid(1): P.at_timestamp(NOW + 1)}, f"option 'startingPosition' for shard {sid(1)}: AT_TIMESTAMP"),
])
def test_per_shard_mistakes_fail_before_kinesis_is_asked(named, expected):
    world = World()
    with pytest.raises(ConfigError) as err:
        world.starts(per_shard(named))
    assert expected in str(err.value)
    assert world.checked == []


def test_per_shard_fails_when_kinesis_refuses_a_sequence_number():
    class Refusing(World):
        def check_sequences(self, named):
            raise ConfigError("refused")

    with pytest.raises(ConfigError, match="refused"):
        Refusing().starts(per_shard({sid(1): P.at_sequence("150")}))


def test_kcl_checkpoints_start_where_the_lease_table_says():
    leases = {sid(0): P.shard_end(), sid(2): P.after_sequence("205")}
    world = World(kcl=leases)
    got = world.starts(KclCheckpoints())
    assert got == Starts(leases) and got.positions is not leases
    assert world.kcl_reads == 1 and world.clock_reads == 0


def test_a_parent_whose_lease_kcl_cleaned_up_counts_as_finished():
    """KCL deletes a finished parent's lease once its children have checkpoints: a parent without a row beside a
    leased child is drained, not read again from its start; a shard KCL never reached still starts at
    TRIM_HORIZON."""
    leases = {sid(2): P.after_sequence("205"), sid(3): P.trim_horizon()}
    got = World(kcl=leases).starts(KclCheckpoints())
    assert got == Starts({**leases, sid(0): P.shard_end()})
    grandchild = [*SHARDS, ShardInfo(sid(4), (sid(2), sid(3)), 0, H // 2 - 1, "300")]
    assert kcl_starts({sid(4): P.after_sequence("301")}, grandchild) == {
        sid(4): P.after_sequence("301"), sid(2): P.shard_end(), sid(3): P.shard_end(), sid(0): P.shard_end()}
    assert kcl_starts({sid(1): P.after_sequence("150")}, SHARDS) == {sid(1): P.after_sequence("150")}


@pytest.mark.parametrize("strategy", [Latest(), TrimHorizon(), at(NOW), KclCheckpoints(),
                                      per_shard({sid(0): P.after_sequence("150")})])
def test_a_strategy_is_a_plain_value_that_travels_with_the_options(strategy):
    assert pickle.loads(pickle.dumps(strategy)) == strategy
