"""spark-samza-source: Apache Samza's coordination semantics for Spark Structured Streaming.

The pure coordination model lives in :mod:`spark_samza_source.core` and imports neither pyspark nor any
client library, so it can be used (and tested) anywhere.
"""

from ._version import __version__

__all__ = ["__version__", "redact_secret_options", "register"]


def register(spark) -> None:
    """Register both sources on ``spark`` explicitly (not needed when the wheel is pip-installed: Spark finds
    the ``pyspark_samza_kafka`` / ``pyspark_samza_kinesis`` modules by itself)."""
    from .kafka.source import SamzaKafkaDataSource
    from .kinesis.source import SamzaKinesisDataSource

    spark.dataSource.register(SamzaKafkaDataSource)
    spark.dataSource.register(SamzaKinesisDataSource)
    redact_secret_options(spark)


def redact_secret_options(spark) -> None:
    """Make ``explain()`` and Spark's UI hide every secret option of the sources (``options/secrets.py``), as they
    hide Spark's own: Spark redacts option values whose names match ``spark.redaction.regex`` (default
    ``secret|password|token|access[.]?key``) or ``spark.sql.redaction.options.regex``, which misses
    ``kafka.ssl.key.pem``, ``kafka.sasl.username`` and ``kafka.ssl.key.location``. This adds the package's list to
    the session's ``spark.sql.redaction.options.regex``, keeping what is there; ``register`` calls it. A session
    that finds the sources by itself (the pip-installed wheel) needs this call, or the same setting at start."""
    from .options.secrets import spark_redaction_regex

    key = "spark.sql.redaction.options.regex"
    ours = spark_redaction_regex()
    current = spark.conf.get(key, "(?i)url")
    if ours not in current:
        spark.conf.set(key, f"{current}|{ours}" if current else ours)
