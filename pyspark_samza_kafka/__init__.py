"""Auto-registration shim: Spark imports every installed top-level ``pyspark_*`` module and registers its
``DefaultSource``, so ``spark.readStream.format("samza-kafka")`` works with no ``register()`` call."""

from spark_samza_source.kafka.source import SamzaKafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
