"""Auto-registration shim: Spark imports every installed top-level ``pyspark_*`` module and registers its
``DefaultSource``, so ``spark.readStream.format("samza-kinesis")`` works with no ``register()`` call."""

from spark_samza_source.kinesis.source import SamzaKinesisDataSource as DefaultSource

__all__ = ["DefaultSource"]
