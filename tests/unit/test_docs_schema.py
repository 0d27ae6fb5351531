"""The column tables of the programming guide (docs/guide.md, "Output columns") are the sources' schemas.

A column added, renamed or retyped in ``kafka/schema.py`` or ``kinesis/schema.py`` would otherwise leave the page a
newcomer reads first for the schema saying something else.
"""

from __future__ import annotations

import re
from pathlib import Path

from spark_samza_source.kafka.schema import kafka_schema
from spark_samza_source.kinesis.schema import kinesis_schema

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"


def documented_columns(source: str) -> list[tuple[str, str]]:
    """(name, type) of each row of the table headed ``| <source> column | type |``, spaces dropped from types."""
    text = GUIDE.read_text()
    start = text.index(f"| {source} column | type |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        name, kind = (cell.strip() for cell in line.strip("|").split("|")[:2])
        rows.append((name.strip("`"), re.sub(r"\s", "", kind)))
    return rows


def test_the_samza_kafka_table_is_the_schema_with_headers():
    schema = kafka_schema(include_headers=True)
    assert documented_columns("samza-kafka") == [(f.name, f.dataType.simpleString()) for f in schema.fields]


def test_the_samza_kinesis_table_is_the_schema():
    assert documented_columns("samza-kinesis") == [(f.name, f.dataType.simpleString()) for f in kinesis_schema()]


def test_every_column_is_nullable_as_the_guide_says():
    assert all(f.nullable for f in [*kafka_schema(True).fields, *kinesis_schema().fields])


#: ``format("aws-kinesis")``'s columns in its order (awslabs/spark-sql-kinesis-connector,
#: ``KinesisClientFactory.kinesisSchema``)
AWS_CONNECTOR_COLUMNS = ["data", "streamName", "partitionKey", "sequenceNumber", "approximateArrivalTimestamp"]


def test_the_guide_says_how_many_columns_sit_where_the_aws_connector_has_them():
    names = [f.name for f in kinesis_schema().fields]
    assert set(AWS_CONNECTOR_COLUMNS) <= set(names)  # every connector column is there, by name
    same_place = next((i for i, (ours, theirs) in enumerate(zip(names, AWS_CONNECTOR_COLUMNS, strict=False))
                      if ours != theirs), len(AWS_CONNECTOR_COLUMNS))
    words = {3: "three", 4: "four", 5: "five"}
    text = " ".join(GUIDE.read_text().split())
    assert f"its first {words[same_place]}, then `{names[same_place]}`" in text, (
        f"the guide should say the first {same_place} columns are the connector's, then {names[same_place]}")
