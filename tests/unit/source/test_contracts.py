"""Both systems fill the skeleton's contracts (``source/contracts.py``): the same Protocols, checked here on the
classes each DataSource names, so a system that drops or renames one of the methods the skeleton calls fails
before a query does."""

from __future__ import annotations

import pytest

from spark_samza_source.kafka.driver.coordinator import KafkaCoordinator
from spark_samza_source.kafka.source import SamzaKafkaDataSource
from spark_samza_source.kinesis.driver.coordinator import KinesisCoordinator
from spark_samza_source.kinesis.source import SamzaKinesisDataSource
from spark_samza_source.source.contracts import OffsetCodec, OptionsParser, SourceOffset, StreamCoordinator

SYSTEMS = [(SamzaKafkaDataSource, KafkaCoordinator), (SamzaKinesisDataSource, KinesisCoordinator)]


@pytest.mark.parametrize(("source", "coordinator"), SYSTEMS, ids=["kafka", "kinesis"])
def test_a_system_fills_every_contract(source, coordinator):
    assert isinstance(source.options_class, OptionsParser)
    reader = source.stream_reader_class
    assert isinstance(reader.offset_class, OffsetCodec)
    assert isinstance(reader.offset_class, SourceOffset)  # the class has to_json for its instances
    assert isinstance(coordinator, StreamCoordinator)


def test_a_class_missing_a_method_is_seen():
    # Guards the test above against passing vacuously.
    class NoCommit:
        def initial_offset(self): ...
        def prepare_available_now(self): ...
        def latest_offset(self, start, *, max_rows=None): ...
        def partitions(self, start, end): ...
        def progress_report(self): ...

    assert not isinstance(NoCommit, StreamCoordinator)
    assert not isinstance(object, OffsetCodec) and not isinstance(object, OptionsParser)
