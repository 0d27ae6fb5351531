"""spark-samza-source: Apache Samza's coordination semantics for Spark Structured Streaming.

The pure coordination model lives in :mod:`spark_samza_source.core` and imports neither pyspark nor any
client library, so it can be used (and tested) anywhere.
"""

from ._version import __version__

__all__ = ["__version__", "register"]


def register(spark) -> None:
    """Register both sources on ``spark`` explicitly (not needed when the wheel is pip-installed: Spark finds
    the ``pyspark_samza_kafka`` / ``pyspark_samza_kinesis`` modules by itself)."""
    from .kafka.source import SamzaKafkaDataSource
    from .kinesis.source import SamzaKinesisDataSource

    spark.dataSource.register(SamzaKafkaDataSource)
    spark.dataSource.register(SamzaKinesisDataSource)
