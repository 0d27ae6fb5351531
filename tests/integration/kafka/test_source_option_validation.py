"""Option validation through real Spark: a misspelt or refused option fails ``load()`` (or, when the user gives
the schema and Spark skips ``schema()``, the query's start) with our message, before anything is read."""

import pytest

from samza_devkit.waits import scaled
from spark_samza_source.kafka.schema import kafka_schema

pytestmark = [pytest.mark.spark]


def _error(action) -> str:
    with pytest.raises(Exception) as err:
        action()
    return str(err.value)


def test_a_misspelt_option_fails_load_naming_the_option_meant(kq):
    message = _error(lambda: kq.stream(subscribe="orders", maxOffsetPerTrigger="1000"))
    assert "unknown option 'maxoffsetpertrigger' for samza-kafka" in message
    assert "did you mean 'maxOffsetsPerTrigger'" in message


def test_with_a_given_schema_the_misspelt_option_fails_the_start(kq):
    df = (kq.spark.readStream.format("samza-kafka").schema(kafka_schema(False))
          .options(**kq.options(subscribe="orders", startingOffset="earliest")).load())
    message = _error(lambda: df.writeStream.format("noop").start().awaitTermination(scaled(60)))
    assert "unknown option 'startingoffset'" in message and "did you mean 'startingOffsets'" in message


def test_a_misspelt_librdkafka_property_fails_load(kq):
    options = kq.options(subscribe="orders")
    options["kafka.bootstrap.server"] = options.pop("kafka.bootstrap.servers")
    message = _error(lambda: kq.spark.readStream.format("samza-kafka").options(**options).load())
    assert "did you mean 'kafka.bootstrap.servers'?" in message


def test_a_refused_spark_option_fails_load_with_the_reason(kq):
    message = _error(lambda: kq.stream(subscribe="orders", maxRecordsPerPartition="1000"))
    assert "option 'maxRecordsPerPartition' is not supported by samza-kafka" in message
    assert "never cut across Spark tasks" in message and "'minPartitions'" in message
