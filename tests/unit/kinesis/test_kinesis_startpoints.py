"""Kinesis' startpoint resolver, pure: every startpoint becomes a replayable shard position."""

from dataclasses import dataclass

import pytest

from spark_samza_source.core.errors import UnsupportedStartpointError
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import (
    StartpointCustom,
    StartpointOldest,
    StartpointSpecific,
    StartpointTimestamp,
    StartpointUpcoming,
)
from spark_samza_source.kinesis.driver.startpoints import KinesisStartpointResolver
from spark_samza_source.kinesis.positions import ShardPosition

SSP = SystemStreamPartition("kinesis", "clicks", 0)
NOW = 1_800_000_000_000
SEQ = "49590338271490256608559692538361571095921575989136588898"


@pytest.mark.parametrize(("startpoint", "expected"), [
    (StartpointSpecific(f" {SEQ} ", creation_timestamp=1), ShardPosition.at_sequence(SEQ)),
    (StartpointTimestamp(1_700_000_000_000, creation_timestamp=1), ShardPosition.at_timestamp(1_700_000_000_000)),
    (StartpointOldest(creation_timestamp=1), ShardPosition.trim_horizon()),
    # upcoming is "now", fixed at resolution time so a replay reads the same records
    (StartpointUpcoming(creation_timestamp=1), ShardPosition.at_timestamp(NOW)),
])
def test_each_builtin_type_resolves_to_its_shard_position(startpoint, expected):
    assert startpoint.apply(SSP, KinesisStartpointResolver(NOW)) == expected


@dataclass(frozen=True)
class StartpointKinesisResolverProbe(StartpointCustom):
    """A system-specific startpoint type this resolver has no visit method for."""

    region: str


def test_a_custom_startpoint_is_unsupported_naming_the_resolver():
    with pytest.raises(UnsupportedStartpointError, match="KinesisStartpointResolver"):
        StartpointKinesisResolverProbe("x", creation_timestamp=1).apply(SSP, KinesisStartpointResolver(NOW))
