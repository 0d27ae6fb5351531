"""librdkafka's security reports, as Apache Kafka 4.2 and librdkafka 2.16 produce them (texts recorded from
``tests/integration/kafka/test_secured_kafka.py``'s broker), become the errors that end a call at once."""

from __future__ import annotations

import pytest

from spark_samza_source.kafka import errors
from spark_samza_source.kafka.security_failures import SecurityWatch, key_unreadable

WHERE = "(bootstrap servers 127.0.0.1:9093)"
VERIFY = ("ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify "
          "failed: broker certificate could not be verified, verify that ssl.ca.location is correctly configured or "
          "root CA certificates are installed (install ca-certificates package) (after 16ms in state SSL_HANDSHAKE)")
ALERT = ("ssl://127.0.0.1:9093/bootstrap: Receive failed: error:0A000416:SSL routines::ssl/tls alert certificate "
         "unknown: SSL alert number 46 (after 55ms in state APIVERSION_QUERY)")
SCRAM = ("sasl_ssl://127.0.0.1:9094/bootstrap: SASL authentication error: Authentication failed during "
         "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 392ms in state AUTH_REQ)")
DISCONNECT = ("FAIL [rdkafka#producer-12] [thrd:127.0.0.1:9093/bootstrap]: 127.0.0.1:9093/bootstrap: Disconnected: "
              "connection closed by peer: receive 0 after POLLIN (after 1ms in state APIVERSION_QUERY)")


def watch(**conf) -> SecurityWatch:
    return SecurityWatch(conf, WHERE, token_provider_option="kafka.sasl.oauthbearer.tokenProvider")


@pytest.mark.parametrize(("code", "text", "condition"), [
    ("_SSL", VERIFY, errors.TLS_BROKER_NOT_TRUSTED),
    ("_SSL", "ssl://h:1/bootstrap: SSL handshake failed: wrong version number", errors.TLS_HANDSHAKE_FAILED),
    ("_TRANSPORT", ALERT, errors.TLS_CLIENT_CERTIFICATE_REFUSED),
    ("_AUTHENTICATION", SCRAM, errors.AUTHENTICATION_FAILED),
])
def test_a_security_report_ends_the_call_with_its_condition(code, text, condition):
    w = watch(**{"security.protocol": "SSL"})
    w.on_error("_ALL_BROKERS_DOWN", "1/1 brokers are down")
    assert w.failure is None  # an outage is retried
    w.on_error(code, text)
    assert w.failure is not None and w.failure.condition == condition


def test_a_plain_disconnect_is_an_outage_not_a_cause():
    w = watch(**{"security.protocol": "SSL"})
    w.on_error("_TRANSPORT", "127.0.0.1:9093/bootstrap: Connect to ipv4#127.0.0.1:9093 failed: Connection refused")
    w.on_error("_SSL", "ssl://127.0.0.1:9093/bootstrap: SSL handshake failed: Disconnected: connection closed by peer")
    assert w.failure is None  # a broker restarting during a handshake


def test_an_answer_clears_what_was_reported_before_it():
    w = watch(**{"security.protocol": "SSL"})
    w.on_error("_SSL", VERIFY)
    w.answered()  # e.g. another broker of the list answered: the next call starts clean
    assert w.failure is None


def test_a_plaintext_client_closed_before_any_answer_is_told_to_use_tls():
    w = watch()  # PLAINTEXT by default
    w.on_log(DISCONNECT)
    w.on_log(DISCONNECT)
    assert w.failure is None  # a broker restarting may close a connection or two
    w.on_log(DISCONNECT)
    assert w.failure is not None and w.failure.condition == errors.PLAINTEXT_ON_TLS_LISTENER
    assert "kafka.security.protocol" in str(w.failure)


def test_disconnects_after_an_answer_are_an_outage():
    w = watch()
    w.answered()
    for _ in range(5):
        w.on_log(DISCONNECT)
    assert w.failure is None
    tls = watch(**{"security.protocol": "SSL"})
    for _ in range(5):
        tls.on_log(DISCONNECT)
    assert tls.failure is None  # a TLS client: the cause is elsewhere


def test_a_key_that_does_not_load_names_the_password_option():
    err = key_unreadable("Failed to create admin client: ssl.key.location failed: error:0A080009:SSL routines::PEM lib",
                         WHERE)
    assert err is not None and err.condition == errors.TLS_KEY_UNREADABLE and "kafka.ssl.key.password" in str(err)
    assert key_unreadable("Failed to create admin client: bootstrap.servers invalid", WHERE) is None


def test_the_reports_secrets_are_scrubbed():
    w = SecurityWatch({"sasl.password": "hunter2-XYZ"}, WHERE, token_provider_option="t")
    w.on_error("_AUTHENTICATION", "refused hunter2-XYZ")
    assert "hunter2-XYZ" not in str(w.failure)
