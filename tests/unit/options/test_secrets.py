"""The one declaration of secret options (``options/secrets.py``) and every path that prints an option.

Each secret option gets a recognisable value and goes through the paths that can print an option without a
broker: option errors (a bad value beside it, a misspelt name, librdkafka refusing a setting), the errors and
log lines of a client that cannot be created or cannot connect, the operator CLI (``lag`` with ``-X``), the
``job.properties`` importer's report and the Spark redaction setting. The paths with a broker and a SparkSession
are in ``tests/integration/test_secrets.py`` and ``tests/integration/kafka/test_secured_kafka.py``.
"""

from __future__ import annotations

import logging
import re
import uuid

import pytest

from spark_samza_source.core.errors import SamzaSourceError
from spark_samza_source.options.secrets import (
    AWS_SECRET_OPTIONS,
    JAVA_CLIENT_SECRETS,
    LIBRDKAFKA_SENSITIVE,
    is_secret_option,
    scrub,
    secret_values,
    shown,
    spark_redaction_regex,
)

#: librdkafka properties a client can be created with (ssl_key is internal: set through ssl.key.pem)
SETTABLE = sorted(LIBRDKAFKA_SENSITIVE - {"ssl_key"})


def recognisable(name: str) -> str:
    return f"SECRET-{re.sub(r'[^a-z]', '', name)}-{uuid.uuid4().hex[:12]}"


def test_the_bundled_librdkafka_redacts_exactly_the_declared_properties():
    """librdkafka's ``debug=conf`` dump writes ``[redacted]`` for its _RK_SENSITIVE properties: the list must
    match the librdkafka this package runs with, not only the version whose source was read."""
    from confluent_kafka import Producer

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger(f"rdkafka-dump-{uuid.uuid4().hex[:6]}")
    logger.addHandler(Keep())
    logger.setLevel(logging.DEBUG)
    plain = {"client.id": "plain-client", "ssl.certificate.pem": "PLAIN-CERT", "ssl.certificate.location": "/c",
             "sasl.mechanisms": "PLAIN", "ssl.ca.location": "/ca"}
    conf = {"debug": "conf", "logger": logger, **plain, **{name: recognisable(name) for name in SETTABLE}}
    Producer(conf).flush(0)
    dumped = dict(re.search(r"\s([\w.]+) = (.*)$", line).groups() for line in lines
                  if re.search(r"\s[\w.]+ = ", line))
    redacted = {name for name, value in dumped.items() if value == "[redacted]"}
    assert redacted == set(SETTABLE)
    assert all(dumped[name] == value for name, value in plain.items())


@pytest.mark.parametrize("name", [
    *(f"kafka.{n}" for n in sorted(LIBRDKAFKA_SENSITIVE | JAVA_CLIENT_SECRETS)),
    *(f"systems.kafka.consumer.{n}" for n in sorted(LIBRDKAFKA_SENSITIVE)), *sorted(AWS_SECRET_OPTIONS),
    "awsSecretKey", "kinesis.sessionToken", "kafka.SSL.KEY.PEM", "kafka.sasl.login.password",
])
def test_secret_options_are_secret_whatever_their_words(name):
    assert is_secret_option(name)
    assert shown(name, "v4lue") == "***"


@pytest.mark.parametrize("name", ["kafka.ssl.certificate.pem", "kafka.ssl.ca.location", "kafka.sasl.mechanism",
                                  "kafka.bootstrap.servers", "subscribe", "kafka.security.protocol", "region"])
def test_other_options_are_shown(name):
    assert not is_secret_option(name)
    assert shown(name, "v4lue") == "'v4lue'"


def test_a_store_uri_is_shown_without_its_credentials():
    uri = "s3://AKIAEXAMPLE:wJalr%2FSECRET@bucket/p?region=eu-west-1&session_token=tok-123"
    assert shown("metadata.store", uri) == "'s3://***@bucket/p?region=eu-west-1&session_token=***'"
    assert scrub(f"cannot open {uri} (key AKIAEXAMPLE)", {"metadata.store": uri}).count("***") >= 2
    assert "wJalr" not in scrub("said wJalr/SECRET", {"metadata.store": uri})


def test_the_pieces_of_a_pem_key_and_of_a_jaas_line_are_secret_too():
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nabc\n-----END PRIVATE KEY-----\n"
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="al1ce" password="pw-XYZ";'
    found = secret_values({"kafka.ssl.key.pem": pem, "kafka.sasl.jaas.config": jaas})
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" in found and "pw-XYZ" in found and "al1ce" in found
    assert scrub("OpenSSL: bad line MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", {"kafka.ssl.key.pem": pem}) \
        == "OpenSSL: bad line ***"


def test_spark_redacts_every_secret_option_name():
    regex = re.compile(spark_redaction_regex())  # Java's regex reads this the same way (inline (?i), ^, $)
    for name in [*(f"kafka.{n}" for n in LIBRDKAFKA_SENSITIVE | JAVA_CLIENT_SECRETS), "awsSecretKey",
                 "sessionToken", "awsAccessKeyId"]:
        assert regex.search(name), name
    for name in ("kafka.bootstrap.servers", "subscribe", "kafka.ssl.ca.location", "kafka.ssl.certificate.pem"):
        assert not regex.search(name), name


# ---- every printing path, every secret ------------------------------------------------------------------------
def kafka_secrets() -> dict[str, str]:
    secrets = {f"kafka.{n}": recognisable(n) for n in SETTABLE}
    secrets["kafka.sasl.jaas.config"] = (
        'org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'username="{recognisable("jaasuser")}" password="{recognisable("jaaspassword")}";')
    secrets["kafka.ssl.truststore.password"] = recognisable("truststore")
    return secrets


def values_of(secrets: dict[str, str]) -> list[str]:
    return secret_values(secrets)


def assert_absent(secrets: dict[str, str], *texts: str) -> None:
    values = values_of(secrets)
    assert values
    for text in texts:
        for value in values:
            assert value not in text, f"{value[:20]}... shown"


BASE = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "orders", "job.name": "secret-job"}


def parse_error(options: dict[str, str]) -> str:
    from spark_samza_source.kafka.options import KafkaSourceOptions

    with pytest.raises(SamzaSourceError) as err:
        KafkaSourceOptions.parse({k.lower(): v for k, v in {**BASE, **options}.items()})
    return str(err.value)


def test_option_errors_never_show_a_secret():
    """A bad value beside the secrets, a misspelt secret name (the suggestion path), an empty secret. librdkafka
    checks the secrets' values only when a client is created: the next test."""
    secrets = kafka_secrets()
    seen = [parse_error({**secrets, "maxOffsetsPerTrigger": "-5"})]
    for name, value in secrets.items():
        seen.append(parse_error({name + "x": value}))  # misspelt: "did you mean ..."
    seen.append(parse_error({"kafka.ssl.key.password": "", "kafka.sasl.password": secrets["kafka.sasl.password"]}))
    assert "is empty" in seen[-1]
    assert any("did you mean 'kafka.sasl.password'" in text for text in seen)
    assert_absent(secrets, *seen)


def test_a_client_that_cannot_connect_never_shows_a_secret(caplog):
    from spark_samza_source.kafka.driver.admin import KafkaAdmin

    caplog.set_level(logging.DEBUG)
    secrets = {k: v for k, v in kafka_secrets().items() if k.startswith("kafka.sasl.")
               and k not in ("kafka.sasl.jaas.config",) and "assertion" not in k}
    conf = {k[len("kafka."):]: v for k, v in secrets.items()}
    conf.update({"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_PLAINTEXT",
                 "sasl.mechanism": "SCRAM-SHA-512", "socket.connection.setup.timeout.ms": "1000"})
    del conf["sasl.oauthbearer.config"], conf["sasl.oauthbearer.client.secret"]
    with pytest.raises(SamzaSourceError) as err:
        KafkaAdmin(conf, api_timeout_ms=1500).list_partition_counts(["orders"])
    assert "127.0.0.1:1" in str(err.value)
    bad_key = {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSL",
               "ssl.key.pem": kafka_secrets()["kafka.ssl.key.pem"]}
    with pytest.raises(SamzaSourceError) as refused:
        _ = KafkaAdmin(bad_key).admin  # created lazily: this creates it
    assert "ssl.key.pem" in str(refused.value)
    assert_absent({**secrets, "kafka.ssl.key.pem": bad_key["ssl.key.pem"]}, str(err.value), str(refused.value),
                  caplog.text)


def test_the_cli_never_shows_a_secret_property(capsys, monkeypatch):
    from spark_samza_source.core.checkpoint import Checkpoint, CheckpointMirror
    from spark_samza_source.core.model import SystemStreamPartition, TaskName
    from spark_samza_source.metadata import open_store
    from spark_samza_source.ops import cli

    store = f"memory:secrets-{uuid.uuid4().hex[:8]}"
    CheckpointMirror(open_store(store, "j")).write(
        Checkpoint({TaskName("Partition 0"): {SystemStreamPartition("kafka", "orders", 0): 5}}))
    secrets = {k: v for k, v in kafka_secrets().items() if "assertion" not in k}
    for protocol in ("SSL", "SASL_PLAINTEXT"):
        argv = ["lag", "--store", store, "--job", "j", "--bootstrap", "127.0.0.1:1", "--timeout", "2",
                "-X", f"security.protocol={protocol}", "-X", "socket.connection.setup.timeout.ms=500"]
        for name, value in secrets.items():
            if protocol == "SSL" or name.startswith("kafka.sasl.") and "oauthbearer" not in name:
                argv += ["-X", f"{name[len('kafka.'):]}={value}"]
        for json_flag in ([], ["--json"]):
            code = cli.main(argv + json_flag)
            out, err = capsys.readouterr()
            assert code != 0 and (out + err).strip()
            assert_absent(secrets, out, err)


def test_the_importers_report_never_shows_a_secret():
    from spark_samza_source.samza_config.importer import import_mapping

    secrets = {f"systems.kafka.consumer.{n}": recognisable(n) for n in SETTABLE if "assertion" not in n}
    properties = {"task.inputs": "kafka.orders", "job.name": "j", "systems.kafka.samza.factory":
                  "org.apache.samza.system.kafka.KafkaSystemFactory",
                  "systems.kafka.consumer.bootstrap.servers": "b:9092", **secrets}
    result = import_mapping(properties)
    assert any(k.startswith("kafka.ssl") for k in result.options)  # the secrets were carried over ...
    assert_absent(secrets, result.describe(), repr(result), "\n".join(result.notes),
                  "\n".join(result.rejected.values()))  # ... and never shown


def test_kinesis_option_errors_never_show_aws_credentials():
    from spark_samza_source.kinesis.options import KinesisSourceOptions

    secrets = {"awsAccessKeyId": "AKIA" + uuid.uuid4().hex[:16].upper(), "awsSecretKey": recognisable("aws"),
               "sessionToken": recognisable("token")}
    options = {"streamName": "s", "region": "eu-west-1", "job.name": "j", "maxRecordsPerShard": "-1", **secrets}
    with pytest.raises(SamzaSourceError) as err:
        KinesisSourceOptions.parse({k.lower(): v for k, v in options.items()})
    assert "maxRecordsPerShard" in str(err.value)
    assert_absent({k.lower(): v for k, v in secrets.items()}, str(err.value))
