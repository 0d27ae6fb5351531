"""Samza job.properties import (``samza_config``: importer, common, kafka, kinesis, report): every mapped key, and
every key reported."""

import json
import logging
import re
from pathlib import Path

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.core.expansion import DefaultPartitionExpansionAlgorithm, resolve_expansion_algorithm
from spark_samza_source.core.grouping import (
    AllSspToSingleTask,
    GroupByPartition,
    GroupByPartitionFixedTasks,
    GroupBySystemStreamPartition,
    GroupBySystemStreamPartitionFixedTasks,
    resolve_grouper,
)
from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kafka.starting import Earliest, Latest, SpecificOffsets
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.starting import KclCheckpoints, TrimHorizon
from spark_samza_source.samza_config import (
    KAFKA_FORMAT,
    KINESIS_FORMAT,
    import_mapping,
    import_properties,
    load_properties,
    properties_to_options,
    read_properties,
)

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"
CONF = REPO / "conf"

KAFKA_FACTORY = "org.apache.samza.system.kafka.KafkaSystemFactory"
KINESIS_FACTORY = "org.apache.samza.system.kinesis.KinesisSystemFactory"
GROUPERS = "org.apache.samza.container.grouper.stream."


def kafka(**extra):
    """A minimal Kafka job plus ``extra`` keys (``__`` in a keyword stands for '.')."""
    props = {
        "job.name": "orders-job",
        "task.inputs": "kafka.orders",
        "systems.kafka.samza.factory": KAFKA_FACTORY,
        "systems.kafka.consumer.bootstrap.servers": "b1:9092",
    }
    props.update({k.replace("__", "."): v for k, v in extra.items()})
    return {k: v for k, v in props.items() if v is not None}


def kinesis(**extra):
    props = {
        "job.name": "clicks-etl",
        "task.inputs": "kinesis.clicks",
        "systems.kinesis.samza.factory": KINESIS_FACTORY,
        "systems.kinesis.streams.clicks.aws.region": "eu-west-1",
    }
    props.update({k.replace("__", "."): v for k, v in extra.items()})
    return {k: v for k, v in props.items() if v is not None}


def error(props, **kwargs) -> str:
    with pytest.raises(ConfigError) as err:
        import_mapping(props, **kwargs)
    assert err.value.condition and str(err.value).startswith(f"[{err.value.condition}] ")
    return err.value.detail


def parse_kafka(options) -> KafkaSourceOptions:
    return KafkaSourceOptions.parse({k.lower(): v for k, v in options.items()})  # Spark lower-cases names


def parse_kinesis(options) -> KinesisSourceOptions:
    return KinesisSourceOptions.parse({k.lower(): v for k, v in options.items()})


# ---- the realistic Kafka job --------------------------------------------------------------------------------


def test_kafka_job_file_maps_to_options():
    result = import_properties(DATA / "samza-kafka-job.properties")
    assert result.format == KAFKA_FORMAT and result.system == "kafka"
    assert result.options == {
        "job.name": "orders-enricher",
        "subscribe": "orders,payments",
        "kafka.bootstrap.servers": "broker1:9092,broker2:9092,broker3:9092",
        "kafka.fetch.wait.max.ms": "250",
        "kafka.max.partition.fetch.bytes": "2097152",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.password": "not-a-real-password",
        "kafka.sasl.username": "orders-enricher",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.ssl.ca.location": "/etc/kafka/ca.pem",
        "startingOffsets": "earliest",
        "grouper": "GroupByPartitionFixedTasks",
        "expansion.algorithm": "default",
        "task.broadcast.inputs": "kafka.currency-rates#0",
    }
    assert set(result.rejected) == {"systems.kafka.consumer.zookeeper.connect",
                                    "systems.kafka.consumer.auto.offset.reset"}
    assert "bootstrap.servers" in result.rejected["systems.kafka.consumer.zookeeper.connect"]
    assert "failOnDataLoss" in result.rejected["systems.kafka.consumer.auto.offset.reset"]


def test_kafka_job_file_every_key_is_accounted_for():
    path = DATA / "samza-kafka-job.properties"
    keys = set(read_properties(path))
    result = import_properties(path)
    mapped = {
        "job.name", "job.id", "task.inputs", "task.broadcast.inputs", "systems.kafka.samza.factory",
        "job.systemstreampartition.grouper.factory", "job.system.stream.partition.mapper.factory",
        "systems.kafka.samza.offset.default", "systems.kafka.streams.currency-rates.samza.offset.default",
    } | {k for k in keys if k.startswith(("systems.kafka.consumer.", "sensitive.systems.kafka.consumer."))}
    reported = set(result.rejected) | set(result.ignored)
    assert keys == (mapped - set(result.rejected)) | reported
    assert not (set(result.ignored) & set(result.rejected))
    for prefix in ("serializers.", "stores.", "metrics.", "yarn.", "task.checkpoint.", "systems.kafka.producer."):
        assert any(k.startswith(prefix) for k in result.ignored), prefix
    for key in ("task.class", "job.factory.class", "task.window.ms", "job.container.count"):
        assert key in result.ignored
    assert result.ignored["systems.kafka.streams.metrics.samza.msg.serde"].startswith("stream is not an input")


def test_kafka_job_file_options_are_accepted_by_the_source():
    opts = parse_kafka(import_properties(DATA / "samza-kafka-job.properties").options)
    assert opts.topics == ("orders", "payments")
    assert opts.job_name == "orders-enricher"
    assert opts.starting == Earliest()
    assert opts.broadcast == (SystemStreamPartition("kafka", "currency-rates", 0),)
    assert opts.client_conf["fetch.wait.max.ms"] == "250"
    assert opts.client_conf["sasl.password"] == "not-a-real-password"
    assert isinstance(resolve_grouper(opts.grouper), GroupByPartitionFixedTasks)


def test_secrets_stay_out_of_repr_and_describe():
    result = import_properties(DATA / "samza-kafka-job.properties")
    for text in (repr(result), result.describe()):
        assert "not-a-real-password" not in text
        assert "kafka.sasl.password" in text
    kin = import_properties(DATA / "samza-kinesis-job.properties")
    for text in (repr(kin), kin.describe()):
        assert "wJalrXUtnFEMI" not in text and "AKIAIOSFODNN7EXAMPLE" not in text


# ---- identity -------------------------------------------------------------------------------------------------


def test_job_id_folding():
    assert import_mapping(kafka()).options["job.name"] == "orders-job"
    assert import_mapping(kafka(job__id="1")).options["job.name"] == "orders-job"
    result = import_mapping(kafka(job__id="2"))
    assert result.options["job.name"] == "orders-job-2"
    assert any("job.id=2" in n and "orders-job-2" in n for n in result.notes)


def test_app_name_and_app_id_when_job_name_is_absent():
    props = kafka(job__name=None, app__name="orders-app", app__id="prod")
    assert import_mapping(props).options["job.name"] == "orders-app-prod"


def test_job_name_required_and_validated():
    assert "job.name is required" in error(kafka(job__name=None))
    assert "job.name" in error(kafka(job__name="../escape"))


# ---- inputs and systems -----------------------------------------------------------------------------------


def test_task_inputs_become_subscribe_in_file_order_without_duplicates():
    props = kafka(task__inputs=" kafka.payments , kafka.orders,kafka.payments,kafka.orders.v2 ")
    assert import_mapping(props).options["subscribe"] == "payments,orders,orders.v2"


def test_task_inputs_missing_or_malformed():
    assert "task.inputs is missing" in error(kafka(task__inputs=None))
    assert "task.inputs: entry 'orders'" in error(kafka(task__inputs="orders"))


def test_several_systems_need_system_argument():
    props = kafka(task__inputs="kafka.orders,other.clicks", systems__other__samza__factory=KAFKA_FACTORY)
    message = error(props)
    assert "several systems" in message and "'kafka'" in message and "'other'" in message
    assert "system='<name>'" in message
    result = import_mapping(props, system="kafka")
    assert result.options["subscribe"] == "orders"
    assert any("other.clicks" in k for k in result.ignored)
    other = import_mapping({**props, "systems.other.consumer.bootstrap.servers": "o:9092"}, system="other")
    assert other.options["subscribe"] == "clicks" and other.options["kafka.bootstrap.servers"] == "o:9092"
    assert "system='nope' has no input" in error(props, system="nope")


def test_kafka_and_kinesis_inputs_together_fail_naming_both_types():
    props = kafka(task__inputs="kafka.orders,kinesis.clicks", systems__kinesis__samza__factory=KINESIS_FACTORY)
    message = error(props)
    assert "samza-kafka" in message and "samza-kinesis" in message
    assert import_mapping(props, system="kinesis").format == KINESIS_FORMAT


def test_system_type_from_factory_or_inferred_from_keys():
    eventhubs = kafka(systems__kafka__samza__factory="org.apache.samza.system.eventhub.EventHubSystemFactory")
    assert "EventHubSystemFactory" in error(eventhubs) and "Kafka" in error(eventhubs)
    inferred = import_mapping(kafka(systems__kafka__samza__factory=None))
    assert inferred.format == KAFKA_FORMAT
    assert any("taken for Kafka" in n for n in inferred.notes)
    kin = import_mapping(kinesis(systems__kinesis__samza__factory=None))
    assert kin.format == KINESIS_FORMAT
    bare = {"job.name": "j", "task.inputs": "mystery.s"}
    assert "systems.mystery.samza.factory is not set" in error(bare)


# ---- Kafka consumer keys ----------------------------------------------------------------------------------


def test_consumer_keys_pass_through_renamed_or_rejected():
    result = import_mapping(kafka(**{
        "systems.kafka.consumer.client.id": "c1",
        "systems.kafka.consumer.group.id": "samza-group",
        "systems.kafka.consumer.auto.offset.reset": "largest",
        "systems.kafka.consumer.enable.auto.commit": "true",
        "systems.kafka.consumer.zookeeper.connect": "zk:2181",
        "systems.kafka.consumer.sasl.jaas.config": "org.apache.kafka...;",
        "systems.kafka.consumer.ssl.truststore.location": "/x.jks",
        "systems.kafka.consumer.interceptor.classes": "com.acme.I",
        "systems.kafka.consumer.receive.buffer.bytes": "65536",
        "sensitive.systems.kafka.consumer.ssl.key.password": "pw",
        "systems.kafka.consumer.empty": " ",
    }))
    opts = result.options
    assert opts["kafka.client.id"] == "c1"
    assert opts["kafka.socket.receive.buffer.bytes"] == "65536"
    assert opts["kafka.ssl.key.password"] == "pw"
    assert opts["kafka.group.id"] == "samza-group"  # the group committed positions are mirrored to
    assert not any(k in opts for k in ("kafka.auto.offset.reset", "kafka.enable.auto.commit"))
    assert set(result.rejected) == {
        "systems.kafka.consumer.auto.offset.reset",
        "systems.kafka.consumer.enable.auto.commit", "systems.kafka.consumer.zookeeper.connect",
        "systems.kafka.consumer.sasl.jaas.config", "systems.kafka.consumer.ssl.truststore.location",
        "systems.kafka.consumer.interceptor.classes",
    }
    assert "sasl.username" in result.rejected["systems.kafka.consumer.sasl.jaas.config"]
    assert "ssl.ca.location" in result.rejected["systems.kafka.consumer.ssl.truststore.location"]
    assert result.ignored["systems.kafka.consumer.empty"] == "empty value"
    assert parse_kafka(opts).group_id == "samza-group"  # the source accepts what is left


def test_consumer_security_keys_are_translated_as_for_query_options():
    """The importer and KafkaSourceOptions.parse share kafka/java_client.py: a PLAIN JAAS line becomes
    kafka.sasl.username / kafka.sasl.password here too, a PKCS#12 key store type is implied."""
    result = import_mapping(kafka(**{
        "systems.kafka.consumer.security.protocol": "SASL_SSL",
        "systems.kafka.consumer.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                                                   'required username="svc" password="pw-1";',
        "systems.kafka.consumer.ssl.keystore.type": "PKCS12",
        "systems.kafka.consumer.ssl.keystore.location": "/k.p12",
    }))
    opts = result.options
    assert (opts["kafka.sasl.username"], opts["kafka.sasl.password"], opts["kafka.sasl.mechanism"]) == (
        "svc", "pw-1", "PLAIN")
    assert opts["kafka.ssl.keystore.location"] == "/k.p12" and "kafka.ssl.keystore.type" not in opts
    assert "kafka.sasl.jaas.config" not in opts and not result.rejected
    assert all("pw-1" not in note for note in result.notes)
    parse_kafka(opts)


def test_bootstrap_from_producer_when_consumer_has_none_and_note_when_absent():
    result = import_mapping(kafka(**{"systems.kafka.consumer.bootstrap.servers": None,
                                     "systems.kafka.producer.bootstrap.servers": "p:9092"}))
    assert result.options["kafka.bootstrap.servers"] == "p:9092"
    none = import_mapping(kafka(**{"systems.kafka.consumer.bootstrap.servers": None}))
    assert "kafka.bootstrap.servers" not in none.options
    assert any("add the option kafka.bootstrap.servers" in n for n in none.notes)


def test_producer_and_system_serde_keys_are_ignored():
    result = import_mapping(kafka(**{"systems.kafka.producer.acks": "all", "systems.kafka.samza.msg.serde": "json",
                                     "systems.kafka.samza.fetch.threshold": "50000"}))
    assert "only reads" in result.ignored["systems.kafka.producer.acks"]
    assert "raw bytes" in result.ignored["systems.kafka.samza.msg.serde"]
    assert "maxOffsetsPerTrigger" in result.ignored["systems.kafka.samza.fetch.threshold"]


# ---- starting offsets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("systems.kafka.samza.offset.default", "oldest", "earliest"),
    ("systems.kafka.samza.offset.default", "UPCOMING", "latest"),
    ("systems.kafka.default.stream.samza.offset.default", "oldest", "earliest"),
    ("systems.kafka.streams.orders.samza.offset.default", "oldest", "earliest"),
    ("streams.orders.samza.offset.default", "oldest", "earliest"),
])
def test_offset_default_at_every_level(key, value, expected):
    # streams.<id>.* belongs to a system through streams.<id>.samza.system or job.default.system, as in Samza
    result = import_mapping(kafka(**{key: value, "job.default.system": "kafka"}))
    assert result.options["startingOffsets"] == expected
    assert parse_kafka(result.options).starting == (Earliest() if expected == "earliest" else Latest())


def test_stream_id_keys_without_a_system_belong_to_no_input():
    result = import_mapping(kafka(**{"streams.orders.samza.offset.default": "oldest"}))
    assert "startingOffsets" not in result.options
    assert "streams.orders.samza.offset.default" in result.ignored


def test_no_offset_default_leaves_the_source_default_which_is_samzas():
    result = import_mapping(kafka())
    assert "startingOffsets" not in result.options
    assert any("'upcoming'" in n and "latest" in n for n in result.notes)


def test_offset_default_precedence_stream_over_default_stream_over_system():
    props = kafka(**{"task.inputs": "kafka.orders,kafka.payments",
                     "systems.kafka.samza.offset.default": "upcoming",
                     "systems.kafka.default.stream.samza.offset.default": "oldest"})
    result = import_mapping(props)
    assert result.options["startingOffsets"] == "earliest"
    assert "overridden by systems.kafka.default.stream.samza.offset.default" in \
        result.ignored["systems.kafka.samza.offset.default"]
    both = {**props, "systems.kafka.streams.payments.samza.offset.default": "oldest"}
    assert import_mapping(both).options["startingOffsets"] == "earliest"


def test_stream_ids_resolve_through_system_and_physical_name():
    props = kafka(**{"streams.ord.samza.system": "kafka", "streams.ord.samza.physical.name": "orders",
                     "streams.ord.samza.offset.default": "oldest",
                     "streams.unrelated.samza.offset.default": "upcoming"})
    result = import_mapping(props)
    assert result.options["startingOffsets"] == "earliest"
    assert "streams.unrelated.samza.offset.default" in result.ignored


def test_stream_keys_match_topics_with_dots_longest_first():
    props = kafka(**{"task.inputs": "kafka.orders,kafka.orders.v2",
                     "systems.kafka.streams.orders.v2.samza.offset.default": "oldest"})
    message = error(props)
    assert "orders.v2: oldest" in message and "orders: upcoming (Samza default)" in message


def test_per_topic_offset_defaults_need_partition_counts():
    props = kafka(**{"task.inputs": "kafka.orders,kafka.payments",
                     "systems.kafka.samza.offset.default": "upcoming",
                     "systems.kafka.streams.orders.samza.offset.default": "oldest"})
    message = error(props)
    assert "partition_counts" in message and "orders: oldest" in message and "payments: upcoming" in message
    result = import_mapping(props, partition_counts={"orders": 3})
    assert json.loads(result.options["startingOffsets"]) == {"orders": {"0": -2, "1": -2, "2": -2}}
    starting = parse_kafka(result.options).starting
    assert starting == SpecificOffsets({"orders": {0: -2, 1: -2, 2: -2}}, option="startingOffsets")


def test_bad_offset_default_value():
    assert "must be 'oldest' or 'upcoming'" in error(kafka(**{"systems.kafka.samza.offset.default": "earliest"}))


# ---- stream semantics that would silently change results ----------------------------------------------------


@pytest.mark.parametrize(("prop", "expected"), [
    ("samza.reset.offset", "Startpoint"),
    ("samza.bootstrap", "bootstrap"),
    ("samza.broadcast", "task.broadcast.inputs"),
])
def test_result_changing_stream_flags_fail_naming_the_key(prop, expected):
    key = f"systems.kafka.streams.orders.{prop}"
    message = error(kafka(**{key: "true"}))
    assert message.startswith(key) and expected in message
    assert key in import_mapping(kafka(**{key: "false"})).ignored
    default_key = f"systems.kafka.default.stream.{prop}"
    assert error(kafka(**{default_key: "true"})).startswith(default_key)


def test_harmless_stream_properties_are_ignored_and_per_stream_consumer_keys_rejected():
    result = import_mapping(kafka(**{
        "systems.kafka.streams.orders.samza.priority": "2",
        "systems.kafka.streams.orders.retention.ms": "86400000",
        "systems.kafka.streams.orders.consumer.auto.offset.reset": "smallest",
        "systems.kafka.streams.orders.consumer.fetch.min.bytes": "1",
    }))
    assert "priority" in result.ignored["systems.kafka.streams.orders.samza.priority"]
    assert "never creates streams" in result.ignored["systems.kafka.streams.orders.retention.ms"]
    assert "failOnDataLoss" in result.rejected["systems.kafka.streams.orders.consumer.auto.offset.reset"]
    assert "one librdkafka" in result.rejected["systems.kafka.streams.orders.consumer.fetch.min.bytes"]


# ---- groupers and expansion ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("factory", "expansion", "expected"), [
    (GROUPERS + "GroupByPartitionFactory", None, GroupByPartitionFixedTasks),
    (GROUPERS + "GroupBySystemStreamPartitionFactory", None, GroupBySystemStreamPartitionFixedTasks),
    ("GroupBySystemStreamPartitionFactory", "true", GroupBySystemStreamPartitionFixedTasks),
    (GROUPERS + "GroupByPartitionFactory", "false", GroupByPartition),
    (GROUPERS + "GroupBySystemStreamPartitionFactory", "false", GroupBySystemStreamPartition),
    (None, "false", GroupByPartition),
    (GROUPERS + "AllSspToSingleTaskGrouperFactory", None, AllSspToSingleTask),
])
def test_grouper_factories(factory, expansion, expected):
    result = import_mapping(kafka(**{"job.systemstreampartition.grouper.factory": factory,
                                     "job.systemstreampartition.input.expansion.enabled": expansion}))
    grouper = result.options["grouper"]
    assert grouper == expected.name
    assert type(resolve_grouper(parse_kafka(result.options).grouper)) is expected
    if expansion == "false":
        assert any("does not keep tasks fixed" in n for n in result.notes)


def test_default_grouper_is_left_to_the_source_with_a_note_for_stateless_jobs():
    result = import_mapping(kafka())
    assert "grouper" not in result.options
    assert any("persistent stores" in n for n in result.notes)
    stateful = import_mapping(kafka(**{"stores.totals.factory": "RocksDb"}))
    assert not any("persistent stores" in n for n in stateful.notes)


@pytest.mark.parametrize("factory", ["com.acme.samza.RegionGrouperFactory",
                                     GROUPERS + "GroupByPartitionWithFixedTaskNumFactory", "SomethingElse"])
def test_unknown_grouper_factory_is_a_config_error(factory):
    message = error(kafka(**{"job.systemstreampartition.grouper.factory": factory}))
    assert message.startswith("job.systemstreampartition.grouper.factory:") and factory in message
    assert "SspGrouper" in message


def test_expansion_enabled_must_be_boolean():
    message = error(kafka(**{"job.systemstreampartition.input.expansion.enabled": "yes"}))
    assert "job.systemstreampartition.input.expansion.enabled: must be true or false" in message


@pytest.mark.parametrize("key", ["job.system.stream.partition.mapper.factory",
                                 "job.systemstreampartition.expansion.algorithm"])
def test_mapper_factory(key):
    result = import_mapping(kafka(**{key: GROUPERS + "HashSystemStreamPartitionMapperFactory"}))
    assert result.options["expansion.algorithm"] == "default"
    algo = resolve_expansion_algorithm(parse_kafka(result.options).expansion_algorithm)
    assert isinstance(algo, DefaultPartitionExpansionAlgorithm)
    message = error(kafka(**{key: "com.acme.RangeMapperFactory"}))
    assert message.startswith(key) and "PartitionExpansionAlgorithm" in message
    sep5 = import_mapping(kafka(**{key: GROUPERS + "DefaultPartitionExpansionAlgorithm"}))
    assert sep5.options["expansion.algorithm"] == "default"
    disabled = import_mapping(kafka(**{key: "com.acme.RangeMapperFactory",
                                       "job.systemstreampartition.input.expansion.enabled": "false"}))
    assert key in disabled.ignored and "expansion.algorithm" not in disabled.options


# ---- broadcast --------------------------------------------------------------------------------------------


def test_broadcast_inputs_keep_samza_syntax_and_take_the_sources_system_name():
    props = {
        "job.name": "j", "task.inputs": "kafka-prod.orders", "systems.kafka-prod.samza.factory": KAFKA_FACTORY,
        "systems.kafka-prod.consumer.bootstrap.servers": "b:9092",
        "task.broadcast.inputs": "kafka-prod.config#[0-2], kafka-prod.config#3,kafka-prod.rates#0",
    }
    result = import_mapping(props)
    assert result.options["task.broadcast.inputs"] == "kafka.config#[0-3], kafka.rates#0"
    assert any("called 'kafka' here" in n for n in result.notes)
    assert len(parse_kafka(result.options).broadcast) == 5


def test_broadcast_from_another_system_or_malformed_fails():
    message = error(kafka(task__broadcast__inputs="other.config#0"))
    assert message.startswith("task.broadcast.inputs") and "other" in message
    assert "task.broadcast.inputs" in error(kafka(task__broadcast__inputs="kafka.config"))


# ---- regex inputs and config rewriters ----------------------------------------------------------------------


def test_regex_topic_generator_becomes_subscribe_pattern():
    props = kafka(**{"job.config.rewriters": "regex",
                     "job.config.rewriter.regex.class": "org.apache.samza.config.RegExTopicGenerator",
                     "job.config.rewriter.regex.system": "kafka",
                     "job.config.rewriter.regex.regex": "clicks-.*",
                     "job.config.rewriter.regex.config.samza.msg.serde": "json"})
    result = import_mapping(props)
    assert "subscribe" not in result.options
    pattern = re.compile(result.options["subscribePattern"])
    assert pattern.fullmatch("orders") and pattern.fullmatch("clicks-eu")
    assert not pattern.fullmatch("orders2") and not pattern.fullmatch("xclicks-eu")
    assert parse_kafka(result.options).pattern == result.options["subscribePattern"]
    only_regex = import_mapping({k: v for k, v in props.items() if k != "task.inputs"})
    assert only_regex.options["subscribePattern"] == "clicks-.*"


def test_regex_inherited_offset_default_must_agree():
    base = kafka(**{"job.config.rewriters": "regex",
                    "job.config.rewriter.regex.class": "org.apache.samza.config.RegExTopicGenerator",
                    "job.config.rewriter.regex.system": "kafka",
                    "job.config.rewriter.regex.regex": "clicks-.*"})
    same = import_mapping({**base, "job.config.rewriter.regex.config.samza.offset.default": "upcoming",
                           "systems.kafka.samza.offset.default": "upcoming"})
    assert same.options["startingOffsets"] == "latest"
    message = error({**base, "job.config.rewriter.regex.config.samza.offset.default": "oldest"})
    assert "regex" in message and "clicks-.*" in message


def test_other_config_rewriters():
    env = kafka(**{"job.config.rewriters": "env",
                   "job.config.rewriter.env.class": "org.apache.samza.config.EnvironmentConfigRewriter"})
    assert "job.config.rewriter.env.class" in import_mapping(env).rejected
    custom = kafka(**{"job.config.rewriters": "mine", "job.config.rewriter.mine.class": "com.acme.Rewriter"})
    assert error(custom).startswith("job.config.rewriter.mine.class")
    unlisted = kafka(**{"job.config.rewriter.old.class": "com.acme.Rewriter"})
    assert "not listed" in import_mapping(unlisted).ignored["job.config.rewriter.old.class"]


# ---- job-level keys -------------------------------------------------------------------------------------------


def test_elasticity_matcher_startpoints_and_metadata_store_factory():
    assert error(kafka(job__elasticity__factor="4")).startswith("job.elasticity.factor")
    assert "job.elasticity.factor" in import_mapping(kafka(job__elasticity__factor="1")).ignored
    matcher = kafka(**{
        "job.systemstreampartition.matcher.class": "org.apache.samza.system.RangeSystemStreamPartitionMatcher",
        "job.systemstreampartition.matcher.config.ranges": "0-3",
    })
    assert "assign" in error(matcher)
    result = import_mapping(kafka(**{"job.startpoint.enabled": "false",
                                     "startpoint.metadata.store.factory": "x", "metadata.store.factory": "y"}))
    assert "always on" in result.rejected["job.startpoint.enabled"]
    assert "metadata.store" in result.rejected["startpoint.metadata.store.factory"]
    assert "metadata.store" in result.rejected["metadata.store.factory"]
    assert "job.startpoint.enabled" in import_mapping(kafka(**{"job.startpoint.enabled": "true"})).ignored


def test_unknown_keys_are_reported_as_not_recognised():
    result = import_mapping(kafka(**{"acme.feature.flag": "on", "systems.kafka-out.samza.factory": KAFKA_FACTORY}))
    assert "not recognised" in result.ignored["acme.feature.flag"]
    assert "not read by this query" in result.ignored["systems.kafka-out.samza.factory"]


# ---- options of the source in the file ------------------------------------------------------------------------


def test_native_options_pass_through_and_contradictions_fail():
    result = import_mapping(kafka(**{"metadata.store": "s3://b/p", "maxOffsetsPerTrigger": "5000",
                                     "includeheaders": "true", "kafka.client.id": "x"}))
    assert result.options["metadata.store"] == "s3://b/p"
    assert result.options["maxOffsetsPerTrigger"] == "5000"
    assert result.options["includeHeaders"] == "true"
    assert result.options["kafka.client.id"] == "x"
    assert parse_kafka(result.options).include_headers is True
    same = import_mapping(kafka(**{"subscribe": "orders"}))
    assert same.options["subscribe"] == "orders"
    message = error(kafka(**{"subscribe": "payments"}))
    assert "subscribe='payments' contradicts subscribe='orders'" in message
    clash = error(kafka(**{"subscribePattern": "o.*"}))
    assert "exclude each other" in clash
    clash = error(kafka(**{"systems.kafka.samza.offset.default": "oldest", "startingTimestamp": "1"}))
    assert "startingTimestamp" in clash and "exclude each other" in clash
    other = import_mapping(kafka(**{"streamName": "clicks"}))
    assert "other source" in other.ignored["streamName"]


# ---- Kinesis ------------------------------------------------------------------------------------------------


def test_kinesis_job_file_maps_to_options():
    result = import_properties(DATA / "samza-kinesis-job.properties")
    assert result.format == KINESIS_FORMAT and result.system == "kinesis-system"
    assert result.options == {
        "job.name": "clicks-etl",
        "streamName": "clicks",
        "region": "eu-west-1",
        "awsAccessKeyId": "AKIAIOSFODNN7EXAMPLE",
        "awsSecretKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "kcl.leaseTable": "clicks-etl-leases",
        "startingPosition": "kcl",
    }
    assert result.rejected == {}
    mapped = {"job.name", "task.inputs", "systems.kinesis-system.samza.factory",
              "systems.kinesis-system.streams.clicks.aws.region", "systems.kinesis-system.streams.clicks.aws.accessKey",
              "sensitive.systems.kinesis-system.streams.clicks.aws.secretKey",
              "systems.kinesis-system.streams.clicks.aws.kcl.TableName"}
    keys = set(read_properties(DATA / "samza-kinesis-job.properties"))
    assert mapped <= keys and not (mapped & set(result.ignored))
    assert keys == mapped | set(result.ignored)
    assert "systems.kinesis-system.aws.kcl.MaxRecords" in result.ignored
    assert "systems.kinesis-system.aws.clientConfig.ProxyHost" in result.ignored
    assert "job.systemstreampartition.grouper.factory" in result.ignored
    assert "systems.kafka.consumer.bootstrap.servers" in result.ignored  # the coordinator system
    assert any("InitialPositionInStream=TRIM_HORIZON" in n for n in result.notes)
    opts = parse_kinesis(result.options)
    assert opts.stream == "clicks" and opts.region == "eu-west-1" and opts.starting == KclCheckpoints()
    assert opts.kcl_lease_table == "clicks-etl-leases"
    assert opts.access_key_id == "AKIAIOSFODNN7EXAMPLE"


def test_kinesis_default_lease_table_and_overriding_the_starting_position():
    result = import_mapping(kinesis(job__id="7"))
    assert result.options["job.name"] == "clicks-etl-7"
    assert result.options["kcl.leaseTable"] == "clicks-etl-7-clicks"
    assert any("default lease table" in n for n in result.notes)
    fresh = import_mapping(kinesis(startingPosition="TRIM_HORIZON"))
    assert fresh.options["startingPosition"] == "TRIM_HORIZON"
    assert any("replaces startingPosition=kcl" in n for n in fresh.notes)
    assert parse_kinesis(fresh.options).starting == TrimHorizon()
    explicit = kinesis(**{"systems.kinesis.streams.clicks.aws.kcl.TableName": "t1", "kcl.leaseTable": "t2"})
    assert "contradicts kcl.leaseTable='t1'" in error(explicit)


def test_kinesis_region_precedence_and_kcl_settings():
    props = kinesis(**{"systems.kinesis.aws.region": "us-east-1",
                       "systems.kinesis.aws.kcl.KinesisEndpoint": "localhost:4566",
                       "systems.kinesis.aws.kcl.DynamoDBEndpoint": "http://localhost:4567",
                       "systems.kinesis.aws.kcl.TableName": "sys-table",
                       "systems.kinesis.streams.clicks.aws.kcl.TableName": "stream-table"})
    result = import_mapping(props)
    assert result.options["region"] == "eu-west-1"
    assert "overridden" in result.ignored["systems.kinesis.aws.region"]
    assert result.options["endpointUrl"] == "https://localhost:4566"
    assert result.options["dynamodbEndpointUrl"] == "http://localhost:4567"
    assert result.options["kcl.leaseTable"] == "stream-table"
    system_only = import_mapping(kinesis(**{"systems.kinesis.streams.clicks.aws.region": None,
                                            "systems.kinesis.aws.region": "us-east-1"}))
    assert system_only.options["region"] == "us-east-1"
    kcl_region = import_mapping(kinesis(**{"systems.kinesis.aws.kcl.RegionName": "ap-south-1"}))
    assert kcl_region.options["region"] == "ap-south-1"


def test_kinesis_credentials_go_together():
    result = import_mapping(kinesis(**{"systems.kinesis.streams.clicks.aws.accessKey": "AKIA"}))
    assert "awsAccessKeyId" not in result.options
    assert "default credential chain" in result.rejected["systems.kinesis.streams.clicks.aws.accessKey"]


def test_kinesis_one_stream_per_query_and_no_broadcast_or_regex():
    props = kinesis(task__inputs="kinesis.clicks,kinesis.views")
    assert "stream='<name>'" in error(props)
    views = import_mapping(props, stream="views")
    assert views.options["streamName"] == "views"
    assert any("kinesis.clicks" in k for k in views.ignored)
    assert "stream='nope'" in error(props, stream="nope")
    assert error(kinesis(task__broadcast__inputs="kinesis.clicks#0")).startswith("task.broadcast.inputs")
    regex = kinesis(**{"job.config.rewriters": "r", "job.config.rewriter.r.class": "RegExTopicGenerator",
                       "job.config.rewriter.r.system": "kinesis", "job.config.rewriter.r.regex": ".*"})
    assert "Kinesis" in error(regex)


def test_kinesis_grouper_and_kafka_only_keys():
    message = error(kinesis(**{"job.systemstreampartition.grouper.factory": GROUPERS + "GroupByPartitionFactory"}))
    assert message.startswith("job.systemstreampartition.grouper.factory") and "AllSspToSingleTask" in message
    result = import_mapping(kinesis(**{"job.systemstreampartition.input.expansion.enabled": "false",
                                       "systems.kinesis.samza.offset.default": "oldest",
                                       "job.container.count": "3"}))
    assert "lineage" in result.ignored["job.systemstreampartition.input.expansion.enabled"]
    assert "KCL lease table" in result.ignored["systems.kinesis.samza.offset.default"]
    assert "tasks" in result.ignored["job.container.count"]
    ids = import_mapping(kinesis(**{"streams.c.samza.system": "kinesis", "streams.c.samza.physical.name": "clicks",
                                    "streams.c.samza.offset.default": "oldest"}))
    assert "KCL lease table" in ids.ignored["streams.c.samza.offset.default"]
    assert "startingPosition" in ids.options and ids.options["startingPosition"] == "kcl"


# ---- entry points, logging ------------------------------------------------------------------------------------


def test_load_properties_returns_options_and_logs_what_was_left_out(caplog):
    with caplog.at_level(logging.INFO, logger="spark_samza_source.samza_config"):
        options = load_properties(DATA / "samza-kafka-job.properties")
    assert options == import_properties(DATA / "samza-kafka-job.properties").options
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("zookeeper.connect is not carried over" in w for w in warnings)
    assert any("task.class ignored" in r.getMessage() for r in caplog.records if r.levelno == logging.INFO)
    assert properties_to_options(kafka()) == import_mapping(kafka()).options


def test_errors_from_a_file_name_the_file(tmp_path):
    path = tmp_path / "job.properties"
    path.write_text("job.name=j\ntask.inputs=kafka.orders\nsystems.kafka.samza.factory=" + KAFKA_FACTORY +
                    "\njob.systemstreampartition.grouper.factory=com.acme.G\n")
    with pytest.raises(ConfigError) as err:
        load_properties(path)
    assert str(err.value).startswith(
        f"[SAMZA_CONFIG_KEY_UNSUPPORTED] {path}: job.systemstreampartition.grouper.factory")


# ---- conf/ ------------------------------------------------------------------------------------------------------


def test_example_properties_in_conf_load_and_satisfy_the_sources():
    kafka_result = import_properties(CONF / "samza-kafka.example.properties")
    assert kafka_result.format == KAFKA_FORMAT
    opts = parse_kafka(kafka_result.options)
    assert opts.topics == ("orders", "payments") and opts.starting == Earliest()
    assert opts.max_offsets_per_trigger == 100_000
    assert "systems.kafka.consumer.zookeeper.connect" in kafka_result.rejected
    kinesis_result = import_properties(CONF / "samza-kinesis.example.properties")
    assert kinesis_result.format == KINESIS_FORMAT
    kin = parse_kinesis(kinesis_result.options)
    assert kin.stream == "clicks" and kin.starting == KclCheckpoints() and kin.max_records_per_shard == 5000
    assert kin.metadata_store.startswith("dynamodb://")


# ---- the importer knows every option of the sources -------------------------------------------------------------


@pytest.mark.parametrize(("parse", "minimal", "module"), [
    (KafkaSourceOptions.parse, {"kafka.bootstrap.servers": "b:9092", "subscribe": "t", "job.name": "j"}, "kafka"),
    (KinesisSourceOptions.parse, {"streamname": "s", "job.name": "j"}, "kinesis"),
])
def test_every_option_a_source_reads_passes_through_from_a_file(monkeypatch, parse, minimal, module):
    """A new option of a source must be added to the importer's list, or a file carrying it reports it unknown."""
    import importlib

    from spark_samza_source.options.values import Options
    translation = importlib.import_module(f"spark_samza_source.samza_config.{module}")
    read: set[str] = set()
    original = Options.raw

    def spy(self, name):
        read.add(name.lower())
        return original(self, name)

    monkeypatch.setattr(Options, "raw", spy)
    parse(minimal)
    known = {n.lower() for n in translation.NATIVE_OPTIONS} | {"job.name", "task.broadcast.inputs"}
    missing = {n for n in read if not n.startswith("testing.")} - known
    assert read and not missing, f"add {sorted(missing)} to spark_samza_source.samza_config.{module}.NATIVE_OPTIONS"


def test_a_contradicting_password_is_never_echoed():
    """A file giving the password twice (JAAS line and kafka.sasl.password) fails without showing either."""
    with pytest.raises(ConfigError) as err:
        import_mapping(kafka(**{
            "systems.kafka.consumer.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                                                       'required username="svc" password="pw-FIRST";',
            "kafka.sasl.password": "pw-SECOND",
        }))
    assert "kafka.sasl.password" in str(err.value)
    assert "pw-FIRST" not in str(err.value) and "pw-SECOND" not in str(err.value)


def test_a_malformed_key_and_an_untranslatable_one_have_conditions_of_their_own():
    with pytest.raises(ConfigError) as malformed:
        import_mapping(kafka(job__systemstreampartition__input__expansion__enabled="maybe"))
    assert malformed.value.condition == "SAMZA_CONFIG_KEY_INVALID"
    with pytest.raises(ConfigError) as unsupported:
        import_mapping(kafka(job__elasticity__factor="4"))
    assert unsupported.value.condition == "SAMZA_CONFIG_KEY_UNSUPPORTED"
    with pytest.raises(ConfigError) as missing:
        import_mapping(kafka(task__inputs=None))
    assert str(missing.value).startswith("[SAMZA_CONFIG_INPUTS_MISSING] task.inputs is missing")
