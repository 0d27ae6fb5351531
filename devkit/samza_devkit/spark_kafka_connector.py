"""Spark's own Kafka source (``format("kafka")``, ``org.apache.spark:spark-sql-kafka-0-10_2.13``) for the tests and
benchmarks that set samza-kafka beside it.

The jars come through the devkit's Maven fetcher (``maven_jars``), like Apache Kafka's: one cached
``copy-dependencies`` into ``~/.cache/spark-samza-source/maven-jars``, after which nothing is resolved again and the
machine may be offline. ``spark.jars.packages`` (Spark's Ivy) would resolve the same coordinates at every session
start, against the repositories its resolution report names, and bring its own copy of what PySpark already ships.
Here the jars PySpark ships (``scala-library``, ``hadoop-client-*``, ``lz4-java``, ``snappy-java``,
``slf4j-api``, ...) are left out by artifact name, so the session's classpath holds one copy of each library; what
remains is the connector, its token provider, ``kafka-clients`` and ``commons-pool2``, handed to the session
with ``spark.jars``.

Version: Spark publishes the connector with each Spark release, and Spark's docs pair it with the same Spark.
Maven Central serves it up to 4.2.0 while PyPI has PySpark 4.3.0, so the newest connector runs on the newest
PySpark here: the 4.2.0 connector's batch read, micro-batch read with ``maxOffsetsPerTrigger``,
``Trigger.AvailableNow`` and partition discovery ran on PySpark 4.3.0 (the order test and
``benchmarks/kafka_vs_spark.py`` exercise them). ``SPARK_KAFKA_CONNECTOR_VERSION`` is the one place to move it.
"""

from __future__ import annotations

import re
from pathlib import Path

from .maven_jars import fetch_jars

__all__ = ["SPARK_KAFKA_CONNECTOR_VERSION", "spark_kafka_connector_conf", "spark_kafka_connector_jars"]

#: the newest spark-sql-kafka-0-10 Maven Central serves here; pairs with PySpark 4.2 and ran on 4.3
SPARK_KAFKA_CONNECTOR_VERSION = "4.2.0"
_COORDINATE = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_KAFKA_CONNECTOR_VERSION}"
_VERSIONED_JAR = re.compile(r"-\d[\w.\-]*\.jar$")


def _artifact(jar: Path) -> str:
    return _VERSIONED_JAR.sub("", jar.name)


def _pyspark_jars() -> list[Path]:
    import pyspark

    return sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))


def spark_kafka_connector_jars() -> list[Path]:
    """The connector's jars that the installed PySpark does not already ship, fetched once into the Maven cache."""
    shipped = {_artifact(jar) for jar in _pyspark_jars()}
    folder = fetch_jars(f"spark-sql-kafka-{SPARK_KAFKA_CONNECTOR_VERSION}", [_COORDINATE])
    jars = [jar for jar in sorted(folder.glob("*.jar")) if _artifact(jar) not in shipped]
    if not any(jar.name.startswith("spark-sql-kafka-0-10") for jar in jars):
        raise RuntimeError(f"{folder} holds no spark-sql-kafka-0-10 jar: remove that folder to fetch it again")
    return jars


def spark_kafka_connector_conf() -> dict[str, str]:
    """The session settings that make ``format("kafka")`` available (set before the session starts)."""
    return {"spark.jars": ",".join(str(jar) for jar in spark_kafka_connector_jars())}
