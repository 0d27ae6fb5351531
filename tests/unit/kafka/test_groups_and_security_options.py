"""Consumer group naming (kafka.group.id, groupIdPrefix) and Java client security settings at option parsing.

The translation itself lives in ``kafka/java_client.py``, shared with the ``job.properties`` importer; these
tests go through ``KafkaSourceOptions.parse`` as a query's options do.
"""

from __future__ import annotations

import pytest

from spark_samza_source.core.errors import ConfigError
from spark_samza_source.kafka.client_conf import TOKEN_PROVIDER_KEY, load_token_provider, with_callbacks
from spark_samza_source.kafka.java_client import parse_jaas_config, translate_java_settings
from spark_samza_source.kafka.options import KafkaSourceOptions

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders", "job.name": "orders-job"}
PASSWORD = "pa ss\"w0rd-SECRET"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
              'password="pa ss\\"w0rd-SECRET";')


def parse(**options):
    return KafkaSourceOptions.parse({k.lower(): v for k, v in {**BASE, **options}.items()})


def error_of(**options) -> str:
    with pytest.raises(ConfigError) as err:
        parse(**options)
    return str(err.value)


# ---- consumer group ------------------------------------------------------------------------------------------
def test_default_group_is_samza_dash_job_name():
    assert parse().group_id == "samza-orders-job"


def test_kafka_group_id_names_the_group_and_stays_out_of_the_client_config():
    opts = parse(**{"kafka.group.id": "team-a.orders"})
    assert opts.group_id == "team-a.orders"
    assert "group.id" not in opts.client_conf  # readers keep their own id and never join or commit


def test_group_id_prefix_sets_the_prefix():
    assert parse(groupIdPrefix="analytics").group_id == "analytics-orders-job"


def test_group_id_and_prefix_together_is_an_error_naming_both():
    message = error_of(**{"kafka.group.id": "g", "groupIdPrefix": "p"})
    assert "'kafka.group.id'" in message and "'groupIdPrefix'" in message and "not both" in message


def test_empty_group_id_prefix_is_an_error():
    assert "'groupIdPrefix' is empty" in error_of(groupIdPrefix=" ")


# ---- Java client settings -------------------------------------------------------------------------------------
def test_plain_jaas_line_becomes_username_and_password_and_mechanism():
    opts = parse(**{"kafka.sasl.jaas.config": PLAIN_JAAS, "kafka.security.protocol": "SASL_SSL"})
    assert opts.client_conf["sasl.username"] == "alice"
    assert opts.client_conf["sasl.password"] == PASSWORD
    assert opts.client_conf["sasl.mechanism"] == "PLAIN"
    assert "sasl.jaas.config" not in opts.client_conf


def test_scram_jaas_line_needs_the_mechanism_and_keeps_it():
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="pw1";'
    opts = parse(**{"kafka.sasl.jaas.config": jaas, "kafka.sasl.mechanism": "SCRAM-SHA-512"})
    assert (opts.client_conf["sasl.username"], opts.client_conf["sasl.password"]) == ("bob", "pw1")
    assert opts.client_conf["sasl.mechanism"] == "SCRAM-SHA-512"
    message = error_of(**{"kafka.sasl.jaas.config": jaas})
    assert "SCRAM-SHA-256 or SCRAM-SHA-512" in message and "'kafka.sasl.jaas.config'" in message


def test_jaas_mechanism_mismatch_and_double_credentials_are_errors():
    assert "make them agree" in error_of(**{"kafka.sasl.jaas.config": PLAIN_JAAS,
                                            "kafka.sasl.mechanism": "SCRAM-SHA-256"})
    assert "kafka.sasl.username is set too" in error_of(**{"kafka.sasl.jaas.config": PLAIN_JAAS,
                                                           "kafka.sasl.username": "x"})


@pytest.mark.parametrize("line, expected", [
    ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
     "kafka.sasl.oauthbearer.tokenProvider"),
    ("software.amazon.msk.auth.iam.IAMLoginModule required;", "spark-samza-source[msk-iam]"),
    ('com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k";', "GSSAPI"),
    ("com.acme.MyLogin required;", "kafka.sasl.username"),
    ("not a jaas line", "cannot read the JAAS line"),
])
def test_jaas_lines_without_a_librdkafka_equivalent_name_the_alternative(line, expected):
    message = error_of(**{"kafka.sasl.jaas.config": line})
    assert "'kafka.sasl.jaas.config' is not supported" in message and expected in message


def test_oauthbearer_jaas_with_client_credentials_becomes_librdkafka_oidc():
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="app" '
            'clientSecret="s3cret" scope="kafka";')
    conf = parse(**{"kafka.sasl.jaas.config": jaas, "kafka.sasl.mechanism": "OAUTHBEARER",
                    "kafka.sasl.oauthbearer.token.endpoint.url": "https://idp/token"}).client_conf
    assert conf["sasl.oauthbearer.method"] == "oidc"
    assert (conf["sasl.oauthbearer.client.id"], conf["sasl.oauthbearer.client.secret"],
            conf["sasl.oauthbearer.scope"]) == ("app", "s3cret", "kafka")


@pytest.mark.parametrize("key, value, expected", [
    ("ssl.truststore.location", "/etc/kafka/truststore.jks", "kafka.ssl.ca.location"),
    ("ssl.truststore.password", "changeit-SECRET", "kafka.ssl.ca.location"),
    ("ssl.keystore.type", "JKS", "kafka.ssl.certificate.location"),
    ("ssl.keystore.location", "/etc/kafka/client.jks", "PKCS#12"),
    ("interceptor.classes", "com.acme.I", "Java Kafka client setting"),
])
def test_java_store_and_java_only_settings_fail_naming_the_alternative(key, value, expected):
    message = error_of(**{f"kafka.{key}": value})
    assert f"'kafka.{key}' is not supported" in message and expected in message
    assert "SECRET" not in message  # a store password is never echoed


def test_pkcs12_keystore_type_is_implied_and_renamed_settings_translate():
    conf = parse(**{"kafka.ssl.keystore.type": "PKCS12", "kafka.ssl.keystore.location": "/k.p12",
                    "kafka.fetch.max.wait.ms": "250", "kafka.ssl.endpoint.identification.algorithm": ""}).client_conf
    assert conf["ssl.keystore.location"] == "/k.p12" and "ssl.keystore.type" not in conf
    assert conf["fetch.wait.max.ms"] == "250" and "fetch.max.wait.ms" not in conf
    assert conf["ssl.endpoint.identification.algorithm"] == "none"  # Java's "" means no hostname check


def test_errors_never_show_the_jaas_password():
    message = error_of(**{"kafka.sasl.jaas.config": PLAIN_JAAS, "kafka.sasl.mechanism": "GSSAPI"})
    assert "SECRET" not in message and "alice" not in message


def test_parse_jaas_config_handles_quotes_escapes_and_bare_values():
    module, options = parse_jaas_config('a.b.C required x="1 2" y=3 z="q\\"uote";')
    assert module == "a.b.C" and options == {"x": "1 2", "y": "3", "z": 'q"uote'}


def test_translation_leaves_librdkafka_names_alone():
    conf = {"bootstrap.servers": "b:9092", "sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p"}
    result = translate_java_settings(conf, token_provider_option="x")
    assert result.conf == conf and not result.rejected and not result.derived_from


# ---- OAUTHBEARER token provider --------------------------------------------------------------------------------
def provider_for_tests(config: str):
    return "token", 4102444800.0


def test_token_provider_by_dotted_path_becomes_oauth_cb():
    path = f"{__name__}.provider_for_tests"
    opts = parse(**{"kafka.sasl.oauthbearer.tokenProvider": path, "kafka.sasl.mechanism": "OAUTHBEARER"})
    assert opts.client_conf[TOKEN_PROVIDER_KEY] == path
    conf = with_callbacks(opts.client_conf)
    assert TOKEN_PROVIDER_KEY not in conf and conf["oauth_cb"] is provider_for_tests


@pytest.mark.parametrize("path, expected", [
    ("nodots", "dotted path"),
    ("no_such_module_xyz.fn", "cannot import module 'no_such_module_xyz'"),
    (f"{__name__}.missing_function", "has no callable 'missing_function'"),
])
def test_bad_token_provider_fails_at_parse_naming_the_option(path, expected):
    message = error_of(**{"kafka.sasl.oauthbearer.tokenProvider": path})
    assert "'kafka.sasl.oauthbearer.tokenProvider'" in message and expected in message
    with pytest.raises(ConfigError):
        load_token_provider(path)
