"""samza-kafka against a SASL_PLAINTEXT development broker that checks credentials (PLAIN users, OAUTHBEARER
tokens signed with its key; see samza_devkit/kafka_broker/sasl.py), with real queries on the local SparkSession.

* OAUTHBEARER: the token provider named by ``kafka.sasl.oauthbearer.tokenProvider`` (a dotted path) is librdkafka's
  ``oauth_cb`` in every process that talks to Kafka: the driver-side runner (admin: metadata, watermarks, group
  mirror) and the executors' Python workers (consumers). Without the provider librdkafka has no token to send
  (or, with ``enable.sasl.oauthbearer.unsecure.jwt``, an unsigned one the broker refuses), so rows only arrive if
  the provider ran in the executors too; the provider also records each call's process id.
* A token the broker refuses fails the query with an authentication error, not a silent stall.
* PLAIN from a Java ``sasl.jaas.config`` line, translated at option parsing, on driver and executors.

Why the development broker and not Apache Kafka: these tests need a broker that checks a token's signature
against a key the test holds. Apache Kafka's default OAUTHBEARER validator accepts unsecured (unsigned) tokens and
checks no signature at all, and its OIDC validator checks signatures only against keys fetched from a JWKS endpoint
(``sasl.oauthbearer.jwks.endpoint.url``, an identity provider), which the devkit does not run; the development
broker checks HS256 signatures against a shared secret. PLAIN and SCRAM-SHA-512 on Apache Kafka itself:
test_kafka_sasl_scram.py.
"""

from __future__ import annotations

import os
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from samza_devkit.kafka_broker import KafkaDevBroker
from samza_devkit.kafka_helpers import produce
from samza_devkit.oauth import DEV_OAUTH_SECRET, token_provider
from samza_devkit.query_harness import failure_of

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PLAIN_PASSWORD = f"plain-pw-{uuid.uuid4().hex}"
TOKEN_PROVIDER = "samza_devkit.oauth.token_provider"


@pytest.fixture(scope="module")
def kafka_broker():
    """This module's broker (overrides the shared PLAINTEXT one for ``kq``): SASL only, both mechanisms."""
    with KafkaDevBroker(sasl_plain_users={"alice": PLAIN_PASSWORD}, sasl_oauthbearer_secret=DEV_OAUTH_SECRET) as b:
        yield b


def _test_client_conf(bootstrap: str) -> dict:
    """How the test itself (topic creation, producing) authenticates: PLAIN, so no provider call comes from here."""
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": "alice", "sasl.password": PLAIN_PASSWORD}


def _topic_with_rows(bootstrap: str, rows: int = 40) -> str:
    topic = f"sasl-{uuid.uuid4().hex[:10]}"
    admin = AdminClient(_test_client_conf(bootstrap))
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    produce(bootstrap, topic, [(b"k", f"v{i}".encode(), None, i % 2) for i in range(rows)],
            extra_conf={k: v for k, v in _test_client_conf(bootstrap).items() if k != "bootstrap.servers"})
    return topic


def _oauth_options(config: str) -> dict[str, str]:
    return {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "OAUTHBEARER",
            "kafka.sasl.oauthbearer.tokenProvider": TOKEN_PROVIDER, "kafka.sasl.oauthbearer.config": config}


def test_oauthbearer_token_provider_runs_on_the_driver_and_the_executors(kq, tmp_path):
    topic = _topic_with_rows(kq.bootstrap)
    calls = tmp_path / "provider-calls"
    kq.run_available_now_parquet("oauth", subscribe=topic, **_oauth_options(f"principal=spark-job record_dir={calls}"))
    assert sorted(r.value for r in kq.sink_rows("oauth")) == sorted(f"v{i}".encode() for i in range(40))
    callers = {p.name.split("-")[0] for p in calls.iterdir()}
    assert str(os.getpid()) not in callers  # every call came from Spark's Python processes
    assert len(callers) >= 2, callers  # the driver-side runner and at least one executor worker


def test_a_token_the_broker_refuses_fails_the_query_with_an_authentication_error(kq):
    topic = _topic_with_rows(kq.bootstrap, rows=4)
    query = kq.start_parquet("refused", trigger={"availableNow": True}, subscribe=topic,
                             **_oauth_options("principal=spark-job signing_key=not-the-broker-key"))
    message = failure_of(query)
    assert "authentication failed" in message.lower() and "signature does not verify" in message


def test_plain_credentials_from_a_java_jaas_line(kq):
    topic = _topic_with_rows(kq.bootstrap)
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" '
            f'password="{PLAIN_PASSWORD}";')
    kq.run_available_now_parquet("jaas", subscribe=topic, **{"kafka.security.protocol": "SASL_PLAINTEXT",
                                                            "kafka.sasl.jaas.config": jaas})
    assert len(kq.sink_rows("jaas")) == 40


def test_the_devkit_provider_signs_what_the_broker_accepts():
    """The provider's tokens carry the principal and an expiry librdkafka needs (seconds since the epoch)."""
    token, expiry, principal, extensions = token_provider("principal=p1 lifetime_s=60")
    from samza_devkit.kafka_broker.sasl import verify_token

    assert verify_token(DEV_OAUTH_SECRET, token) == "p1" == principal and extensions == {}
    with pytest.raises(ValueError, match="signature"):
        verify_token("other-key", token)
    assert expiry > 0
