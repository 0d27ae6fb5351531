"""Option validation of both sources (options/option.py): a misspelt, refused or unknown option fails option
parsing with an error naming it and the fix, never a silent run with defaults the user did not choose."""

from __future__ import annotations

import dataclasses
import string

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kafka import options as kafka_options
from spark_samza_source.kafka.client_conf import librdkafka_knows
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kinesis import options as kinesis_options
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.kinesis.starting import AtTimestamp, TrimHorizon
from spark_samza_source.options.option import Namespace, Option, OptionNames, Text, check_option_names

KAFKA = {"kafka.bootstrap.servers": "localhost:9092", "subscribe": "orders", "job.name": "j",
         "metadata.store": "memory://validation"}
KINESIS = {"streamName": "clicks", "region": "us-east-1", "job.name": "j", "metadata.store": "memory://validation"}


def spark_options(options: dict[str, str]) -> dict[str, str]:
    """As Spark hands them to a Python data source: names lower-cased (a CaseInsensitiveDict)."""
    return {k.lower(): v for k, v in options.items()}


def kafka(**extra: str) -> KafkaSourceOptions:
    return KafkaSourceOptions.parse(spark_options({**KAFKA, **extra}))


def kinesis(options: dict[str, str] | None = None, **extra: str) -> KinesisSourceOptions:
    return KinesisSourceOptions.parse(spark_options({**(KINESIS if options is None else options), **extra}))


def error_of(parse, *args, **extra) -> str:
    with pytest.raises(ConfigError) as err:
        parse(*args, **extra)
    return str(err.value)


# ---- misspelt option names: each fails naming the closest known name ----------------------------------------------

@pytest.mark.parametrize(("typo", "meant"), [
    ("maxOffsetPerTrigger", "maxOffsetsPerTrigger"),  # one letter short
    ("startingOffset", "startingOffsets"),
    ("maxoffsetspertriger", "maxOffsetsPerTrigger"),
    ("includeHeader", "includeHeaders"),
    ("failOnDataLose", "failOnDataLoss"),
    ("job.nam", "job.name"),
])
def test_a_misspelt_kafka_option_fails_naming_it_and_the_closest_name(typo, meant):
    message = error_of(kafka, **{typo: "1000"})
    assert f"unknown option '{typo.lower()}' for samza-kafka" in message
    assert f"did you mean '{meant}'" in message


@pytest.mark.parametrize(("typo", "meant"), [
    ("maxRecordPerShard", "maxRecordsPerShard"),
    ("startingPositon", "startingPosition"),
    ("streamNam", "streamName"),
    ("kinesis.streamNme", "kinesis.streamName"),
    ("maxFetchTimePerShardSec", "kinesis.maxFetchTimePerShardSec"),
])
def test_a_misspelt_kinesis_option_fails_naming_it_and_the_closest_name(typo, meant):
    message = error_of(kinesis, **{typo: "100"})
    assert f"unknown option '{typo.lower()}' for samza-kinesis" in message
    assert repr(meant) in message.split("did you mean", 1)[1]


def test_kafka_bootstrap_server_is_caught_by_librdkafka_and_the_right_name_suggested():
    message = error_of(kafka, **{"kafka.bootstrap.server": "localhost:9092"})
    assert "option 'kafka.bootstrap.server' is not a librdkafka configuration property" in message
    assert "did you mean 'kafka.bootstrap.servers'?" in message


def test_kafka_bootstrap_server_alone_is_caught_before_the_missing_bootstrap_servers():
    options = {k: v for k, v in KAFKA.items() if k != "kafka.bootstrap.servers"}
    message = error_of(KafkaSourceOptions.parse, spark_options({**options, "kafka.bootstrap.server": "h:9092"}))
    assert "did you mean 'kafka.bootstrap.servers'?" in message


@pytest.mark.parametrize(("typo", "meant"), [
    ("kafka.sesion.timeout.ms", "kafka.session.timeout.ms"),
    ("kafka.fetch.max.byte", "kafka.fetch.max.bytes"),
    ("kafka.security.protocl", "kafka.security.protocol"),
])
def test_other_misspelt_librdkafka_properties_are_caught(typo, meant):
    assert f"did you mean '{meant}'" in error_of(kafka, **{typo: "1"})


def test_a_librdkafka_property_with_a_bad_value_is_refused_at_parsing():
    message = error_of(kafka, **{"kafka.session.timeout.ms": "soon"})
    assert "option 'kafka.session.timeout.ms' is refused by librdkafka" in message


def test_a_refusal_that_does_not_name_the_property_is_still_pinned_on_it():
    # librdkafka's message for a Java trust store names no property: the check finds which one it was
    message = error_of(kafka, **{"kafka.client.id": "c", "kafka.ssl.truststore.location": "/etc/kafka/trust.jks",
                                 "kafka.ssl.truststore.password": "changeit-secret"})
    assert "option 'kafka.ssl.truststore.location'" in message and "ssl.ca.location" in message
    assert "changeit-secret" not in message


def test_librdkafka_properties_pass_and_reach_the_client_config():
    parsed = kafka(**{"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN",
                      "kafka.sasl.username": "u", "kafka.sasl.password": "p", "kafka.fetch.max.bytes": "1048576",
                      "kafka.client.id": "c"})
    assert parsed.client_conf["fetch.max.bytes"] == "1048576"


def test_a_misspelt_secret_property_never_shows_its_value():
    message = error_of(kafka, **{"kafka.sasl.pasword": "hunter2-secret"})
    assert "kafka.sasl.pasword" in message and "did you mean 'kafka.sasl.password'" in message
    assert "hunter2" not in message


@pytest.mark.parametrize("setting", ["error_cb", "oauth_cb", "stats_cb", "logger", "on_commit"])
def test_python_callback_settings_of_confluent_kafka_are_refused(setting):
    message = error_of(kafka, **{f"kafka.{setting}": "my.module.fn"})
    assert f"option 'kafka.{setting}' is not supported" in message and "Python object" in message


# ---- options refused with the reason --------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(kafka_options.REFUSED))
def test_each_option_samza_kafka_refuses_fails_with_its_reason(name):
    message = error_of(kafka, **{name: "4"})
    assert message == (f"[SAMZA_UNSUPPORTED_OPTION] option '{name}' is not supported by samza-kafka: "
                       f"{kafka_options.REFUSED[name]}")


@pytest.mark.parametrize("name", sorted(kinesis_options.REFUSED))
def test_each_option_samza_kinesis_refuses_fails_with_its_reason(name):
    message = error_of(kinesis, **{name: "4"})
    assert message == (f"[SAMZA_UNSUPPORTED_OPTION] option '{name}' is not supported by samza-kinesis: "
                       f"{kinesis_options.REFUSED[name]}")


def test_the_refusal_reasons_say_what_to_do():
    assert "repartition()" in kafka_options.REFUSED["maxRecordsPerPartition"]
    assert "'minPartitions'" in kafka_options.REFUSED["maxRecordsPerPartition"]
    assert "endpoint.retryTimeout" in kafka_options.REFUSED["fetchOffset.numRetries"]
    assert "'tasks'" in kinesis_options.REFUSED["maxRecordsPerPartition"]
    assert "'minPartitions'" in kinesis_options.REFUSED["maxRecordsPerPartition"]
    assert "HTTPS_PROXY" in kinesis_options.REFUSED["proxyAddress"]
    assert "metadata.store" in kinesis_options.REFUSED["kinesis.metadataCommitterType"]


def test_enhanced_fan_out_needs_a_consumer_name_and_getrecords_needs_none():
    message = error_of(kinesis, **{"kinesis.consumerType": "SubscribeToShard"})
    assert "option 'consumerName' is required with consumerType=SubscribeToShard" in message
    assert kinesis(**{"kinesis.consumerType": "SubscribeToShard", "kinesis.consumerName": "etl"}).consumer_name == "etl"
    assert kinesis(**{"kinesis.consumerType": "GetRecords"}).consumer_name is None
    message = error_of(kinesis, consumerName="etl")
    assert "option 'consumerName' is set but 'consumerType' is 'GetRecords'" in message
    message = error_of(kinesis, consumerType="SubscribeToShard", consumerName="no spaces")
    assert "option 'consumerName' 'no spaces' is not a valid stream consumer name" in message
    assert "maxFetchTimePerShard" in kinesis_options.REFUSED["kinesis.subscribeToShard.timeoutSec"]


@pytest.mark.parametrize("name", ["kafka.enable.auto.commit", "kafka.auto.offset.reset"])
def test_kafka_client_settings_the_source_manages_stay_refused(name):
    assert f"option '{name}' is not supported" in error_of(kafka, **{name: "x"})


# ---- what stays accepted ----------------------------------------------------------------------------------------

def test_every_known_name_passes_the_name_check():
    for names in (kafka_options.option_names(), kinesis_options.option_names()):
        check_option_names([n.lower() for n in names.known if n not in names.refused], names)


def test_batch_only_names_are_known_options_not_unknown_ones():
    # refusing them on a stream is the batch reader's business; here they are known names
    for name in kafka_options.BOUNDED_ONLY_OPTIONS:
        check_option_names([name.lower()], kafka_options.option_names())
    for name in kinesis_options.BOUNDED_ONLY_OPTIONS:
        check_option_names([name.lower()], kinesis_options.option_names())


def test_names_are_matched_case_insensitively_as_spark_hands_them_over():
    assert kafka(MAXOFFSETSPERTRIGGER="10").max_offsets_per_trigger == 10
    assert kafka(maxOffsetsPerTrigger="10").max_offsets_per_trigger == 10


def test_an_entry_added_to_a_spec_is_known_without_further_change(monkeypatch):
    assert "unknown option 'newoptionforatest'" in error_of(kafka, newOptionForATest="1")
    added = Option("newOptionForATest", Text(), "an option only this test has")
    monkeypatch.setattr(kafka_options, "KAFKA", dataclasses.replace(kafka_options.KAFKA,
                                                                 options=(*kafka_options.KAFKA.options, added)))
    kafka(newOptionForATest="1")
    new_namespace = Namespace("new.", "a namespace only this test has")
    monkeypatch.setattr(kinesis_options, "KINESIS", dataclasses.replace(
        kinesis_options.KINESIS, namespaces=(*kinesis_options.KINESIS.namespaces, new_namespace)))
    check_option_names(["new.anything"], kinesis_options.option_names())


def test_testing_options_stay_open_for_the_fault_hooks():
    parsed = kafka(**{"testing.faultHooks": "samza_devkit.fault_hooks", "testing.killAfterBatches": "1"})
    assert parsed.fault_hooks.module == "samza_devkit.fault_hooks"


def test_an_error_names_the_first_bad_option_whatever_the_order():
    names = OptionNames(source="s", known=("alpha",))
    with pytest.raises(ConfigError, match="'beta'"):
        check_option_names(["gamma", "beta", "alpha"], names)


def test_a_name_far_from_every_known_one_points_to_the_readme():
    assert "check its spelling against docs/options.md" in error_of(kafka, zzzqqq="1")


# ---- the AWS connector's names ---------------------------------------------------------------------------------

ENDPOINT = "http://localhost:4566"


def test_a_query_configured_with_the_aws_connectors_names_parses_as_one_with_ours():
    ours = kinesis({"job.name": "j", "metadata.store": "memory://validation", "streamName": "clicks",
                    "region": "eu-west-1", "endpointUrl": ENDPOINT, "startingPosition": "TRIM_HORIZON",
                    "maxRecordsPerShard": "500", "maxFetchTimePerShard": "20s", "failOnDataLoss": "false",
                    "roleArn": "arn:aws:iam::1:role/r", "roleSessionName": "sess", "stsEndpointUrl": ENDPOINT,
                    "awsAccessKeyId": "AKIA", "awsSecretKey": "s3cr3t", "sessionToken": "tok",
                    "describeShardInterval": "5s"})
    aws = kinesis({"job.name": "j", "metadata.store": "memory://validation", "kinesis.streamName": "clicks",
                   "kinesis.region": "eu-west-1", "kinesis.endpointUrl": ENDPOINT,
                   "kinesis.startingPosition": "EARLIEST", "kinesis.maxFetchRecordsPerShard": "500",
                   "kinesis.maxFetchTimePerShardSec": "20", "kinesis.failOnDataLoss": "false",
                   "kinesis.stsRoleArn": "arn:aws:iam::1:role/r", "kinesis.stsSessionName": "sess",
                   "kinesis.stsEndpointUrl": ENDPOINT, "kinesis.awsAccessKeyId": "AKIA",
                   "kinesis.awsSecretKey": "s3cr3t", "kinesis.sessionToken": "tok",
                   "kinesis.describeShardInterval": "5s", "kinesis.consumerType": "GetRecords"})
    assert aws.__dict__ == ours.__dict__
    assert isinstance(aws.starting, TrimHorizon) and aws.max_fetch_time_ms == 20_000
    assert aws.client_settings()["sts_endpoint_url"] == ENDPOINT
    assert aws.describe_shard_interval_ms == 5_000


def test_kinesis_kinesis_region_is_the_region_too():
    assert kinesis({**{k: v for k, v in KINESIS.items() if k != "region"},
                    "kinesis.kinesisRegion": "ap-south-1"}).region == "ap-south-1"


@pytest.mark.parametrize("alias", sorted(kinesis_options.AWS_CONNECTOR_ALIASES))
def test_an_alias_and_its_canonical_name_together_are_an_error(alias):
    ours = kinesis_options.AWS_CONNECTOR_ALIASES[alias]
    options = {**KINESIS, ours: "x-ours", alias: "y-aws"}
    message = error_of(kinesis, options)
    assert f"options '{alias}' and '{ours}' both set '{ours}'" in message and "give only one" in message
    assert "x-ours" not in message and "y-aws" not in message  # values (maybe secret) are never shown


def test_both_aws_region_names_together_are_an_error():
    options = {**{k: v for k, v in KINESIS.items() if k != "region"}, "kinesis.region": "a",
               "kinesis.kinesisRegion": "b"}
    assert "options 'kinesis.kinesisRegion' and 'kinesis.region' both set 'region'" in error_of(kinesis, options)


@pytest.mark.parametrize(("value", "millis"), [
    ("AT_TIMESTAMP 2026-11-22T08:00:00+01:00", 1_795_330_800_000),
    ("AT_TIMESTAMP 2026-11-22T07:00:00Z", 1_795_330_800_000),
    ("AT_TIMESTAMP 2026-11-22T02:00:00-05:00", 1_795_330_800_000),
])
def test_the_aws_connectors_at_timestamp_form_is_accepted(value, millis):
    assert kinesis(**{"kinesis.startingPosition": value}).starting == AtTimestamp(millis, option="startingPosition")
    assert kinesis(startingPosition=value).starting == AtTimestamp(millis, option="startingPosition")


@pytest.mark.parametrize("value", ["0", "1.5", "ten", "-3"])
def test_max_fetch_time_per_shard_sec_must_be_whole_seconds(value):
    message = error_of(kinesis, **{"kinesis.maxFetchTimePerShardSec": value})
    assert "option 'kinesis.maxFetchTimePerShardSec' must be a whole number of seconds" in message


def test_the_missing_stream_error_names_the_aws_connectors_name_too():
    message = error_of(kinesis, {k: v for k, v in KINESIS.items() if k != "streamName"})
    assert "option 'streamName' is required" in message and "'kinesis.streamName'" in message


# ---- no near-miss name ever runs silently (a property test) --------------------------------------------------------

_EDIT_CHARS = string.ascii_lowercase + string.digits + "._-"


@st.composite
def near_misses(draw, names: OptionNames):
    """A known name with one to three random edits (deleted, inserted, replaced or swapped characters)."""
    name = draw(st.sampled_from(sorted(names.known))).lower()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["delete", "insert", "replace", "swap"]))
        i = draw(st.integers(0, max(len(name) - 1, 0)))
        char = draw(st.sampled_from(_EDIT_CHARS))
        if kind == "delete" and len(name) > 1:
            name = name[:i] + name[i + 1:]
        elif kind == "insert":
            name = name[:i] + char + name[i:]
        elif kind == "replace":
            name = name[:i] + char + name[i + 1:]
        elif kind == "swap" and i + 1 < len(name):
            name = name[:i] + name[i + 1] + name[i] + name[i + 2:]
    return name


def _really_another_option(name: str, names: OptionNames, client_prefix: str | None) -> bool:
    """The edits made another real option: a known name, a fault-hook option, or a real librdkafka property."""
    if name in {n.lower() for n in names.known}:
        return True
    if name.startswith("testing.faulthooks"):
        return True
    return client_prefix is not None and name.startswith(client_prefix) and librdkafka_knows(name[len(client_prefix):])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_near_miss_kafka_option_name_never_runs_silently(data):
    names = kafka_options.option_names()
    name = data.draw(near_misses(names))
    assume(not _really_another_option(name, names, "kafka."))
    with pytest.raises(ConfigError):
        KafkaSourceOptions.parse({**spark_options(KAFKA), name: "1"})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_near_miss_kinesis_option_name_never_runs_silently(data):
    names = kinesis_options.option_names()
    name = data.draw(near_misses(names))
    assume(not _really_another_option(name, names, None))
    with pytest.raises(ConfigError):
        KinesisSourceOptions.parse({**spark_options(KINESIS), name: "1"})


#: librdkafka properties users set through ``kafka.*`` (the property test misspells them)
LIBRDKAFKA_PROPERTIES = ("bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.username",
                         "sasl.password", "ssl.ca.location", "client.id", "fetch.max.bytes", "session.timeout.ms",
                         "isolation.level", "max.partition.fetch.bytes", "socket.timeout.ms", "client.rack")


def test_the_librdkafka_properties_of_the_property_test_are_real():
    assert all(librdkafka_knows(p) for p in LIBRDKAFKA_PROPERTIES)
    assert not librdkafka_knows("bootstrap.server")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_near_miss_librdkafka_property_never_runs_silently(data):
    names = OptionNames(source="librdkafka", known=LIBRDKAFKA_PROPERTIES)
    name = "kafka." + data.draw(near_misses(names))
    assume(not _really_another_option(name, kafka_options.option_names(), "kafka."))
    with pytest.raises(ConfigError):
        KafkaSourceOptions.parse({**spark_options(KAFKA), name: "1"})
