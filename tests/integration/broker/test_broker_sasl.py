"""The development broker's SASL_PLAINTEXT listener (``sasl.py``), through confluent-kafka as against Kafka.

Kafka's documented behaviour checked here: SaslHandshake names the enabled mechanisms; PLAIN checks the user's
password; OAUTHBEARER checks the token (here: an HS256 signature under the broker's key, a subject, an expiry in
the future), so the unsigned token librdkafka builds by itself when no token provider is set is refused; a failed
authentication is reported to the client as an authentication error; any request but ApiVersions / SaslHandshake
before authentication closes the connection.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from samza_devkit.kafka_broker import KafkaDevBroker
from samza_devkit.kafka_broker.sasl import make_token
from samza_devkit.oauth import DEV_OAUTH_SECRET
from samza_devkit.waits import deadline_after

PASSWORD = "dev-plain-password"


@pytest.fixture(scope="module")
def broker():
    with KafkaDevBroker(in_process=True, sasl_plain_users={"alice": PASSWORD},
                        sasl_oauthbearer_secret=DEV_OAUTH_SECRET) as b:
        yield b


def _metadata(conf: dict, timeout: float = 8.0):
    """Metadata through an AdminClient; the authentication error librdkafka reports, if any.

    Asked in short rounds, serving librdkafka's error callbacks in between, so that a refusal is seen as soon as
    it is reported instead of after the whole timeout (a refused client never gets metadata)."""
    errors: list[KafkaError] = []
    admin = AdminClient({**conf, "error_cb": errors.append})
    deadline = deadline_after(timeout)
    while True:
        try:
            return admin.list_topics(timeout=0.5), None
        except KafkaException:
            admin.poll(0.1)
        auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        if auth or time.monotonic() >= deadline:
            return None, auth[0] if auth else (errors[0] if errors else None)


def _sasl(broker, mechanism: str, **extra) -> dict:
    return {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, **extra}


def test_plain_right_and_wrong_password(broker):
    ok, err = _metadata(_sasl(broker, "PLAIN", **{"sasl.username": "alice", "sasl.password": PASSWORD}))
    assert ok is not None and err is None
    assert broker.authentications.get(("PLAIN", "alice"), 0) >= 1
    bad, err = _metadata(_sasl(broker, "PLAIN", **{"sasl.username": "alice", "sasl.password": "wrong"}))
    assert bad is None and err is not None and "Invalid username or password" in err.str()


def test_oauthbearer_signed_token_is_accepted_and_names_the_principal(broker):
    def provider(_config):
        token, expiry = make_token(DEV_OAUTH_SECRET, "svc-orders", 600)
        return token, expiry

    ok, err = _metadata(_sasl(broker, "OAUTHBEARER", oauth_cb=provider))
    assert ok is not None and err is None
    assert broker.authentications.get(("OAUTHBEARER", "svc-orders"), 0) >= 1


@pytest.mark.parametrize("why, provider_or_config", [
    ("signature does not verify", lambda _c: make_token("another-key", "svc", 600)),
    # the token's own exp claim is past; librdkafka is told a future expiry (it would not send a stale one)
    ("expired", lambda _c: (make_token(DEV_OAUTH_SECRET, "svc", 60, now=time.time() - 3600)[0], time.time() + 600)),
    # no oauth_cb: librdkafka's own unsecured JWT (alg none), which a broker checking tokens must refuse
    ("is not accepted", "principal=svc"),
])
def test_oauthbearer_tokens_the_broker_must_refuse(broker, why, provider_or_config):
    extra = ({"sasl.oauthbearer.config": provider_or_config, "enable.sasl.oauthbearer.unsecure.jwt": True}
             if isinstance(provider_or_config, str) else {"oauth_cb": provider_or_config})
    bad, err = _metadata(_sasl(broker, "OAUTHBEARER", **extra))
    assert bad is None and err is not None and why in err.str(), err


def test_an_unenabled_mechanism_is_refused(broker):
    bad, err = _metadata(_sasl(broker, "SCRAM-SHA-256", **{"sasl.username": "alice", "sasl.password": PASSWORD}))
    assert bad is None and err is not None


def test_requests_before_authentication_close_the_connection(broker):
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        frame = struct.pack(">hhih", 3, 1, 1, 4) + b"test" + struct.pack(">i", -1)  # Metadata v1, all topics
        s.sendall(struct.pack(">i", len(frame)) + frame)
        s.settimeout(10)
        try:
            assert s.recv(1) == b""
        except ConnectionError:
            pass
