"""spark-samza-source: Apache Samza's coordination semantics for Spark Structured Streaming.

The pure coordination model lives in :mod:`spark_samza_source.core` and imports neither pyspark nor any
client library, so it can be used (and tested) anywhere.
"""

__version__ = "0.1.0.dev0"
