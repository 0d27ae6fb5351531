"""One ``except DataLossError`` catches a data loss wherever it was found: the planners' (driver) and the
readers' (executors, one class per system), which keep their system's base class too."""

import pytest

from spark_samza_source.core.errors import DataLossError, SamzaSourceError
from spark_samza_source.kafka.errors import KafkaDataLossError, KafkaSourceError
from spark_samza_source.kinesis.errors import KinesisDataLossError, KinesisSourceError


@pytest.mark.parametrize("error", [DataLossError, KafkaDataLossError, KinesisDataLossError])
def test_except_data_loss_error_catches_every_system_data_loss(error):
    caught = None
    try:
        raise error("shard gone before it was read")
    except DataLossError as err:
        caught = err
    assert type(caught) is error and isinstance(caught, SamzaSourceError)
    assert str(caught) == "shard gone before it was read"


def test_system_data_loss_errors_keep_their_system_base_and_nothing_else_is_data_loss():
    assert issubclass(KafkaDataLossError, KafkaSourceError) and issubclass(KinesisDataLossError, KinesisSourceError)
    assert not issubclass(KafkaSourceError, DataLossError) and not issubclass(KinesisSourceError, DataLossError)
    assert not issubclass(KafkaDataLossError, KinesisSourceError)
