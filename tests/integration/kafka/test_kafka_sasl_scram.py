"""samza-kafka against Apache Kafka's own SASL_PLAINTEXT listener, PLAIN and SCRAM-SHA-512, with real queries on
the local SparkSession.

* SCRAM-SHA-512: the user is created on the running broker through the admin API (AlterUserScramCredentials, what
  ``kafka-configs --alter --add-config 'SCRAM-SHA-512=[...]'`` sends), and the query authenticates with a Java
  ``ScramLoginModule`` JAAS line, translated at option parsing, on the driver and the executors.
* PLAIN: a user of the listener's JAAS configuration, with ``kafka.sasl.username`` / ``kafka.sasl.password``.
* A wrong password fails the query with the authentication error (not a timeout after retries), naming the options
  to check and never the password.

OAUTHBEARER stays on the development broker (test_source_sasl.py): see there why.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from samza_devkit.apache_kafka import ApacheKafkaBroker
from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from samza_devkit.query_harness import failure_of

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PLAIN_PASSWORD = f"plain-pw-{uuid.uuid4().hex}"
SCRAM_USER = "scram-reader"
SCRAM_PASSWORD = f"scram-pw-{uuid.uuid4().hex}"
WRONG_PASSWORD = f"wrong-pw-{uuid.uuid4().hex}"
ROWS = 40


@pytest.fixture(scope="module")
def kafka_broker(tmp_path_factory):
    """This module's Apache Kafka (overrides the shared one for ``kq``): ``bootstrap_servers`` is its SASL listener
    (PLAIN user ``alice``; SCRAM-SHA-512 users are created by the test), ``plaintext_bootstrap_servers`` the open
    one the test sets topics and users up through."""
    with ApacheKafkaBroker(tmp_path_factory.mktemp("sasl-kafka"), sasl_plain_users={"alice": PLAIN_PASSWORD}) as b:
        yield b


@pytest.fixture(scope="module")
def topic(kafka_broker):
    """A 2-partition topic with ROWS records, and the SCRAM user created on the running broker."""
    open_listener = kafka_broker.plaintext_bootstrap_servers
    admin = AdminClient({"bootstrap.servers": open_listener})
    upsert = UserScramCredentialUpsertion(SCRAM_USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                          SCRAM_PASSWORD.encode())
    admin.alter_user_scram_credentials([upsert])[SCRAM_USER].result(30)
    name = create_topic(open_listener, unique_topic("sasl"), 2)
    produce(open_listener, name, [(b"k", f"v{i}".encode(), None, i % 2) for i in range(ROWS)])
    return name


def _scram_jaas(password: str) -> dict[str, str]:
    return {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                      f'username="{SCRAM_USER}" password="{password}";'}


def test_scram_sha_512_user_created_on_the_broker_reads_through_a_jaas_line(kq, topic):
    kq.run_available_now_parquet("scram", subscribe=topic, **_scram_jaas(SCRAM_PASSWORD))
    assert sorted(r.value for r in kq.sink_rows("scram")) == sorted(f"v{i}".encode() for i in range(ROWS))


def test_plain_user_of_the_listener_reads(kq, topic):
    kq.run_available_now_parquet("plain", subscribe=topic, **{
        "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.username": "alice", "kafka.sasl.password": PLAIN_PASSWORD})
    assert sorted((r.partition, r.offset) for r in kq.sink_rows("plain")) == sorted(
        (p, o) for p in (0, 1) for o in range(ROWS // 2))


def test_a_wrong_scram_password_fails_with_the_authentication_error_and_no_secret(kq, topic):
    query = kq.start_parquet("wrong", trigger={"availableNow": True}, subscribe=topic,
                             **_scram_jaas(WRONG_PASSWORD))
    message = failure_of(query)
    assert "Kafka authentication failed" in message, message[-2000:]
    assert "SCRAM-SHA-512" in message and "invalid credentials" in message, message[-2000:]
    assert "kafka.sasl.mechanism" in message and "kafka.sasl.password" in message  # what to check
    assert "did not complete within" not in message  # refused at once, not retried until the API timeout
    assert WRONG_PASSWORD not in message and SCRAM_PASSWORD not in message
    assert kq.sink_rows("wrong") == []
