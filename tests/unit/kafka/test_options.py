"""Every bad samza-kafka option fails with a clear message naming the option, the value and what is allowed."""

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kafka.options import KafkaSourceOptions
from spark_samza_source.kafka.starting import ByTimestamp, Earliest, Latest, SpecificOffsets

#: the options a ByTimestamp of the starting options names in its messages
BY_TIMESTAMP = {"option": "startingOffsetsByTimestamp", "strategy_option": "startingOffsetsByTimestampStrategy"}

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders", "job.name": "orders-job"}


def parse(**overrides):
    raw = dict(BASE)
    for key, value in overrides.items():
        key = key.replace("__", ".")
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    # Spark lower-cases option names before the source sees them.
    return KafkaSourceOptions.parse({k.lower(): v for k, v in raw.items()})


def error_of(**overrides) -> str:
    with pytest.raises(ConfigError) as err:
        parse(**overrides)
    return str(err.value)


def test_defaults():
    opts = parse()
    assert opts.topics == ("orders",)
    assert opts.client_conf == {"bootstrap.servers": "127.0.0.1:9092"}
    assert opts.grouper == "GroupByPartitionFixedTasks"
    assert opts.ordering == "drain-first"
    assert opts.starting == Latest()
    assert opts.fail_on_data_loss is True and opts.include_headers is False
    assert opts.startpoint_ttl_ms == 12 * 3600 * 1000 and opts.startpoint_poll_ms == 10_000
    assert opts.commit_offsets_to_kafka is True
    assert opts.group_id == "samza-orders-job"


def test_option_names_are_case_insensitive_like_spark():
    opts = KafkaSourceOptions.parse({**{k.lower(): v for k, v in BASE.items()}, "maxoffsetspertrigger": "5"})
    assert opts.max_offsets_per_trigger == 5


def test_bootstrap_servers_required():
    assert "'kafka.bootstrap.servers' is required" in error_of(kafka__bootstrap__servers=None)


@pytest.mark.parametrize("key", ["kafka.enable.auto.commit", "kafka.auto.offset.reset"])
def test_refused_kafka_options_explain_why(key):
    message = error_of(**{key.replace(".", "__"): "x"})
    assert f"'{key}' is not supported" in message


def test_exactly_one_subscription():
    assert "exactly one of the options 'subscribe'" in error_of(subscribe=None)
    assert "got subscribe, subscribePattern" in error_of(subscribePattern="o.*")


def test_bad_subscribe_pattern_and_assign():
    assert "'subscribePattern' is not a valid regular expression" in error_of(subscribe=None, subscribePattern="(")
    assert "'assign' must be a JSON object" in error_of(subscribe=None, assign='{"orders": [-1]}')
    assert parse(subscribe=None, assign='{"orders":[1,0]}').assign == {"orders": (0, 1)}


def test_empty_topic_in_subscribe():
    assert "empty topic name" in error_of(subscribe="orders,,payments")


def test_job_name_required_and_namespaced():
    assert "'job.name' is required" in error_of(job__name=None)
    assert "job.name '../etc' is not allowed" in error_of(job__name="../etc")
    assert "is not allowed" in error_of(job__name="a/b")


def test_booleans():
    assert "'failOnDataLoss' must be 'true' or 'false', got 'yes'" in error_of(failOnDataLoss="yes")
    assert parse(includeHeaders="TRUE").include_headers is True


def test_limits():
    assert "'maxOffsetsPerTrigger' must be at least 1, got 0" in error_of(maxOffsetsPerTrigger="0")
    assert "'maxOffsetsPerTrigger' must be a whole number, got 'lots'" in error_of(maxOffsetsPerTrigger="lots")
    assert "must not exceed" in error_of(maxOffsetsPerTrigger="5", minOffsetsPerTrigger="10")


def test_durations():
    assert parse(startpoint__ttl="30m").startpoint_ttl_ms == 30 * 60_000
    assert parse(startpoint__pollInterval="1500ms").startpoint_poll_ms == 1500
    assert parse(startpoint__pollInterval="0").startpoint_poll_ms == 0  # zero is zero in every unit
    assert "'startpoint.ttl' must be a duration" in error_of(startpoint__ttl="soon")


def test_a_bare_number_in_a_duration_is_refused_naming_the_option_and_a_unit():
    """Samza reads a bare number as milliseconds: startpoint.ttl=3600 would be 3.6 s where an hour was meant."""
    message = error_of(startpoint__ttl="3600")
    assert "option 'startpoint.ttl' = '3600' has no unit" in message
    assert "'3600s'" in message and "'3600ms'" in message and "'1h'" in message
    assert "'expansion.settleTime' = '90' has no unit" in error_of(expansion__settleTime="90")
    assert "90 seconds is '90s'" in error_of(expansion__settleTime="90")


def test_a_duration_whose_name_carries_its_unit_takes_a_bare_number():
    assert parse(kafkaConsumer__pollTimeoutMs="250").poll_timeout_ms == 250


def test_ordering_choice():
    assert parse(expansion__ordering="NONE").ordering == "none"
    assert "'expansion.ordering' must be one of drain-first, none" in error_of(expansion__ordering="strict")


def test_starting_offsets_forms():
    assert parse(startingOffsets="earliest").starting == Earliest()
    assert parse(startingOffsets="LATEST").starting == Latest()
    specific = parse(startingOffsets='{"orders":{"0":23,"1":-2}}').starting
    assert specific == SpecificOffsets({"orders": {0: 23, 1: -2}}, option="startingOffsets")
    by_ts = parse(startingTimestamp="1700000000000").starting
    assert by_ts == ByTimestamp(timestamp_ms=1700000000000, strategy="error", **BY_TIMESTAMP)
    per_ts = parse(startingOffsetsByTimestamp='{"orders":{"0":1700000000000}}',
                   startingOffsetsByTimestampStrategy="latest").starting
    assert per_ts == ByTimestamp(per_partition={"orders": {0: 1700000000000}}, strategy="latest",
                                  **BY_TIMESTAMP)


def test_bad_starting_offsets():
    assert "'startingOffsets' must be 'earliest', 'latest' or JSON" in error_of(startingOffsets="beginning")
    assert "(-2 = earliest, -1 = latest)" in error_of(startingOffsets='{"orders":{"0":-3}}')
    assert "'startingTimestamp' must be epoch milliseconds" in error_of(startingTimestamp="yesterday")
    assert "set only one of the options" in error_of(startingOffsets="earliest", startingTimestamp="1")


def test_broadcast_must_name_the_kafka_system():
    assert parse(task__broadcast__inputs="kafka.config#[0-1]").broadcast[1].partition == 1
    assert "names system 'kinesis'" in error_of(task__broadcast__inputs="kinesis.config#0")


def test_secret_values_never_echoed():
    message = error_of(**{"kafka__sasl__password": "   "})
    assert "'kafka.sasl.password' is empty" in message
    opts = parse(**{"kafka__sasl__password": "hunter2"})
    assert "hunter2" not in opts.describe()


@pytest.mark.parametrize(("servers", "bad"), [
    ("localhost:notaport", "'localhost:notaport'"),
    ("broker1:9092,broker2", "'broker2'"),
    ("broker1:9092,,broker2:9092", "''"),
    ("broker1:70000", "'broker1:70000'"),
    ("broker 1:9092", "'broker 1:9092'"),
])
def test_a_bootstrap_list_that_does_not_parse_fails_at_load_naming_the_bad_entry(servers, bad):
    """Backs Guarantees (docs/guarantees.md, mistakes caught where they are made)."""
    message = error_of(**{"kafka.bootstrap.servers": servers})
    assert f"'kafka.bootstrap.servers' entry {bad} is not host:port" in message
    assert "host:port[,host:port]" in message


@pytest.mark.parametrize("servers", [
    "localhost:9092", " b1:9092 , b2.example.com:9093", "SSL://b1:9093", "[::1]:9092", "10.0.0.1:1",
])
def test_bootstrap_lists_of_host_port_are_taken(servers):
    assert parse(**{"kafka.bootstrap.servers": servers}).client_conf["bootstrap.servers"] == servers


def test_kerberos_fails_at_load_naming_the_option_when_librdkafka_has_no_provider():
    """confluent-kafka's wheels ship a librdkafka without libsasl2: GSSAPI would otherwise pass the option check
    and fail only when the first client is made, with librdkafka's words and no option named."""
    from spark_samza_source.kafka.client_conf import missing_sasl_provider

    conf = {"kafka__security__protocol": "SASL_SSL", "kafka__sasl__mechanism": "GSSAPI",
            "kafka__sasl__kerberos__principal": "reader@EXAMPLE.COM"}
    if missing_sasl_provider({"sasl.mechanism": "GSSAPI"}) is None:  # a librdkafka built with libsasl2
        assert parse(**conf).client_conf["sasl.mechanism"] == "GSSAPI"
        return
    message = error_of(**conf)
    assert "'kafka.sasl.mechanism'" in message and "No provider for SASL mechanism GSSAPI" in message
    assert "SCRAM or OAUTHBEARER" in message


def test_a_mechanism_every_build_has_is_not_probed():
    from spark_samza_source.kafka.client_conf import missing_sasl_provider

    assert missing_sasl_provider({"sasl.mechanism": "SCRAM-SHA-512"}) is None
    assert missing_sasl_provider({}) is None
