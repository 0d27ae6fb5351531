"""The option spec is the one place an option is declared: the reference is generated from it, its defaults are
what parsing gives, and a name cannot be declared twice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spark_samza_source.core.errors import InternalError
from spark_samza_source.core.store import validate_namespace
from spark_samza_source.kafka import options as kafka
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kinesis import options as kinesis
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.ops import options_reference as reference
from spark_samza_source.options import common, namespaces
from spark_samza_source.options.option import Duration, Option, OptionSpec, Text, format_duration
from spark_samza_source.options.values import parse_duration_ms

DOCS = Path(__file__).resolve().parents[3] / "docs" / "options.md"
SPECS = (kafka.KAFKA, kinesis.KINESIS)


def test_docs_options_md_is_the_reference_generated_from_the_specs():
    assert DOCS.read_text(encoding="utf-8") == reference.render(), (
        f"docs/options.md is stale: regenerate it with `{reference.REGENERATE}`")


def _rows(text: str, name: str, cells: int) -> list[list[str]]:
    """The table rows of ``text`` that start with option ``name`` and have ``cells`` cells."""
    rows = [re.split(r"(?<!\\)\|", line)[1:-1] for line in text.splitlines() if line.startswith(f"| `{name}` |")]
    return [row for row in rows if len(row) == cells]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.source)
def test_every_option_is_listed_once_with_its_aliases_and_every_refusal_once(spec):
    text = reference.render()
    for option in spec.options:
        rows = _rows(text, option.name, cells=5)  # option, aliases, default, value, meaning
        assert len(rows) == 1, (option.name, rows)
        for alias in option.aliases:
            assert f"`{alias}`" in rows[0][1], (option.name, alias)
    section = text.split(f"### Refused by {spec.source}", 1)[1].split("\n## ", 1)[0]
    for name in spec.refused:
        assert len(_rows(section, name, cells=2)) == 1, name


def test_every_entry_says_what_it_does_and_what_it_takes():
    for spec in SPECS:
        for option in spec.options:
            assert option.description.strip() and option.kind.describe().strip(), option.name
            assert option.default_text().strip(), option.name


def test_a_name_declared_twice_in_one_spec_is_refused_as_a_bug_of_the_spec():
    twice = Option("sameName", Text(), "once")
    with pytest.raises(InternalError, match="'samename' declared twice"):
        OptionSpec("s", (twice, Option("other", Text(), "an alias clash", aliases=("SameName",))))


def test_the_defaults_are_what_parsing_gives_when_an_option_is_not_set():
    parsed = KafkaSourceOptions.parse({"kafka.bootstrap.servers": "localhost:9092", "subscribe": "orders",
                                       "job.name": "j", "metadata.store": "memory://spec"})
    for field, entry in [("max_trigger_delay_ms", kafka.MAX_TRIGGER_DELAY), ("ordering", kafka.EXPANSION_ORDERING),
                         ("expansion_settle_ms", kafka.EXPANSION_SETTLE), ("grouper", common.GROUPER),
                         ("poll_timeout_ms", kafka.POLL_TIMEOUT), ("include_headers", kafka.INCLUDE_HEADERS),
                         ("max_rows_per_arrow_batch", kafka.MAX_ROWS_PER_ARROW_BATCH),
                         ("commit_offsets_to_kafka", kafka.COMMIT_OFFSETS_TO_KAFKA),
                         ("startpoint_ttl_ms", common.STARTPOINT_TTL), ("retry_timeout_ms", common.RETRY_TIMEOUT),
                         ("startpoint_poll_ms", common.STARTPOINT_POLL_INTERVAL),
                         ("job_lease_ttl_ms", common.JOB_LEASE_TTL),
                         ("fail_on_data_loss", common.FAIL_ON_DATA_LOSS)]:
        assert getattr(parsed, field) == entry.default, field
    assert parsed.group_id == f"{kafka.GROUP_ID_PREFIX.default}-j"
    parsed = KinesisSourceOptions.parse({"streamName": "clicks", "job.name": "j", "metadata.store": "memory://spec"})
    for field, entry in [("assignment", kinesis.ASSIGNMENT), ("max_records_per_shard", kinesis.MAX_RECORDS_PER_SHARD),
                         ("max_fetch_time_ms", kinesis.MAX_FETCH_TIME_PER_SHARD),
                         ("describe_shard_interval_ms", kinesis.DESCRIBE_SHARD_INTERVAL)]:
        assert getattr(parsed, field) == entry.default, field


def test_a_duration_default_shown_in_the_reference_reads_back_as_the_default():
    for spec in SPECS:
        for option in spec.options:
            if isinstance(option.kind, Duration) and option.default is not None:
                assert parse_duration_ms(format_duration(option.default), option.name) == option.default


def test_the_store_namespaces_are_distinct_and_valid():
    assert len(set(namespaces.NAMESPACES)) == len(namespaces.NAMESPACES)
    for namespace in namespaces.NAMESPACES:
        validate_namespace(namespace)
