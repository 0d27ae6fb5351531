"""samza-kafka against Apache Kafka as production runs it: TLS, client certificates, SASL_SSL with SCRAM-SHA-512 and
ACLs (KRaft's StandardAuthorizer), one broker for the module (``samza_devkit.kafka_tls.SecuredKafkaBroker``).

- TLS with the CA as a file and as PEM text; mutual TLS with certificate and key as files (an encrypted key and
  its password) and as PEM text; SASL_SSL with SCRAM-SHA-512: through a streaming query, a batch read and the CLI.
- Each misconfiguration a user meets ends the query with its own condition (not SAMZA_KAFKA_OPERATION_TIMED_OUT
  after ``endpoint.retryTimeout``, left at its 60 s default here), naming the option to fix, with no secret in it.
- ACLs: the principals with exactly the ACLs docs/security.md lists read everything (streaming with the group
  mirror, batch, lag); without DESCRIBE the topic looks absent; without READ on the topic the query fails naming
  the authorization; without READ on the group the query reads on and warns once.
- A client certificate rotated on disk under a running query.

The PLAINTEXT listener is the harness's door (``User:ANONYMOUS`` is the super user): topics, records and ACLs.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import uuid

import pytest

from samza_devkit.kafka_helpers import produce
from samza_devkit.kafka_query_harness import KafkaQueryHarness
from samza_devkit.kafka_tls import SecuredKafkaBroker
from samza_devkit.query_harness import failure_of

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PREFIX = "sk-"  # the topics of this module; the good principals' topic ACLs are PREFIXED on it
GROUP_PREFIX = "samza-"  # groupIdPrefix's default: the group mirror is samza-<job.name>
SCRAM_USERS = {name: f"{name}-pw-{uuid.uuid4().hex}" for name in ("alice", "noread", "nodescribe", "nogroup")}
KEY_PASSWORD = f"key-pw-{uuid.uuid4().hex}"
ROWS = 20


def grant_what_the_docs_list(broker: SecuredKafkaBroker, principal: str, *, group: bool = True) -> None:
    """Exactly the ACLs docs/security.md lists for a query (and a batch read, and the lag tool)."""
    broker.grant(principal, "TOPIC", PREFIX, "DESCRIBE", "READ", prefixed=True)
    if group:
        broker.grant(principal, "GROUP", GROUP_PREFIX, "READ", prefixed=True)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with SecuredKafkaBroker(tmp_path_factory.mktemp("secured-kafka"), scram_users=SCRAM_USERS) as b:
        grant_what_the_docs_list(b, "reader")  # mTLS CN=reader
        grant_what_the_docs_list(b, "alice")
        grant_what_the_docs_list(b, "nogroup", group=False)
        b.grant("noread", "TOPIC", PREFIX, "DESCRIBE", prefixed=True)
        b.grant("noread", "GROUP", GROUP_PREFIX, "READ", prefixed=True)
        yield b


@pytest.fixture
def kq(spark, broker, tmp_path):
    from samza_devkit.query_fixtures import stop_active_queries

    harness = KafkaQueryHarness(spark, broker.ssl_bootstrap_servers, tmp_path)
    yield harness
    stop_active_queries(spark)


def kafka_options(conf: dict[str, str]) -> dict[str, str]:
    return {f"kafka.{k}": v for k, v in conf.items()}


def topic_with_rows(broker: SecuredKafkaBroker, partitions: int = 2) -> str:
    topic = f"{PREFIX}{uuid.uuid4().hex[:10]}"
    broker.create_topic(topic, partitions)
    produce(broker.plaintext_bootstrap_servers, topic,
            [(b"k", f"v{i}".encode(), None, i % partitions) for i in range(ROWS)])
    return topic


def values(rows) -> list[bytes]:
    return sorted(bytes(r.value) for r in rows)


EXPECTED = sorted(f"v{i}".encode() for i in range(ROWS))


def batch_read(kq: KafkaQueryHarness, topic: str, conf: dict[str, str]) -> list:
    return (kq.spark.read.format("samza-kafka")
            .options(**kq.job_options({"subscribe": topic}, kafka_options(conf))).load().collect())


def stream_read(kq: KafkaQueryHarness, name: str, topic: str, conf: dict[str, str], **extra) -> list:
    kq.run_available_now_parquet(name, subscribe=topic, **kafka_options(conf), **extra)
    return kq.sink_rows(name)


# ---- what works --------------------------------------------------------------------------------------------------
def test_tls_with_the_ca_as_a_file_and_as_pem_text(broker, kq):
    topic = topic_with_rows(broker)
    assert values(stream_read(kq, "ca-file", topic, broker.tls_client())) == EXPECTED
    ca_pem = {**broker.tls_client(), "ssl.ca.pem": broker.certificates.ca.read_text()}
    del ca_pem["ssl.ca.location"]
    assert values(batch_read(kq, topic, ca_pem)) == EXPECTED


def test_mutual_tls_with_files_an_encrypted_key_and_pem_text(broker, kq):
    """As User:reader, which has exactly the ACLs the docs list: a streaming query mirroring to its group."""
    topic = topic_with_rows(broker)
    files = broker.mtls_client("reader", key_password=KEY_PASSWORD)
    assert values(stream_read(kq, "mtls-files", topic, files)) == EXPECTED
    client = broker.certificates.client("reader")
    pem = {**broker.tls_client(), "ssl.certificate.pem": client.certificate_pem, "ssl.key.pem": client.key_pem}
    assert values(batch_read(kq, topic, pem)) == EXPECTED


def test_sasl_ssl_with_scram_sha_512_and_the_lag_tool(broker, kq):
    """As User:alice, with exactly the ACLs the docs list: a streaming query mirroring to its group, a batch read,
    and the lag tool (``-X`` properties) reading the committed positions against the log ends."""
    topic = topic_with_rows(broker)
    scram = broker.scram_client("alice")
    query = kq.start_collecting("scram", trigger={"processingTime": "500 milliseconds"}, subscribe=topic,
                                **kafka_options(scram))
    query.processAllAvailable()
    produce(broker.plaintext_bootstrap_servers, topic, [(b"k", b"more", None, 0)])
    query.processAllAvailable()  # the second batch commits the first: the mirrors are written
    query.stop()
    assert sorted(bytes(r.value) for r in kq.collected("scram")) == sorted([*EXPECTED, b"more"])
    assert values(batch_read(kq, topic, scram)) == sorted([*EXPECTED, b"more"])
    argv = [sys.executable, "-m", "spark_samza_source.ops.cli", "lag", "--store", kq.store_uri, "--job", kq.job,
            "--bootstrap", scram["bootstrap.servers"], "--json"]
    for key, value in scram.items():
        if key != "bootstrap.servers":
            argv += ["-X", f"{key}={value}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["complete"] is True and topic in done.stdout and len(report["rows"]) == 2
    assert SCRAM_USERS["alice"] not in done.stdout + done.stderr


# ---- what a user meets when a setting is wrong ----------------------------------------------------------------------
def _misconfigured(broker: SecuredKafkaBroker) -> dict[str, tuple[dict[str, str], str, str]]:
    """case -> (client settings, the condition, the option the message must name)"""
    tls = broker.tls_client()
    return {
        "unknown CA": ({**tls, "ssl.ca.location": str(broker.certificates.stranger_ca)},
                       "SAMZA_KAFKA_TLS_BROKER_NOT_TRUSTED", "kafka.ssl.ca.location"),
        "host name mismatch": ({**tls, "bootstrap.servers": f"localhost:{broker.ssl_port}"},
                               "SAMZA_KAFKA_TLS_BROKER_NOT_TRUSTED", "kafka.ssl.endpoint.identification.algorithm"),
        "expired client certificate": (broker.mtls_client("reader", expired=True),
                                       "SAMZA_KAFKA_TLS_CLIENT_CERTIFICATE_REFUSED", "kafka.ssl.certificate.location"),
        "wrong key password": ({**broker.mtls_client("reader", key_password=KEY_PASSWORD),
                                "ssl.key.password": f"not-{KEY_PASSWORD}"},
                               "SAMZA_KAFKA_TLS_KEY_UNREADABLE", "kafka.ssl.key.password"),
        "wrong SCRAM password": ({**broker.scram_client("alice"), "sasl.password": f"not-{SCRAM_USERS['alice']}"},
                                 "SAMZA_KAFKA_AUTHENTICATION_FAILED", "kafka.sasl.password"),
        "plaintext client on a TLS port": ({"bootstrap.servers": broker.ssl_bootstrap_servers},
                                           "SAMZA_KAFKA_PLAINTEXT_ON_TLS_LISTENER", "kafka.security.protocol"),
    }


CASES = ["unknown CA", "host name mismatch", "expired client certificate", "wrong key password",
         "wrong SCRAM password", "plaintext client on a TLS port"]


@pytest.mark.parametrize("case", CASES)
def test_a_wrong_security_setting_fails_the_query_with_its_cause(broker, kq, case):
    conf, condition, option = _misconfigured(broker)[case]
    topic = f"{PREFIX}absent"  # never reached: the cause is found before any topic is asked about
    query = kq.start_parquet(f"bad-{CASES.index(case)}", trigger={"availableNow": True}, subscribe=topic,
                             **kafka_options(conf))
    message = failure_of(query)
    assert f"[{condition}]" in message and option in message, message
    assert "OPERATION_TIMED_OUT" not in message  # not the 60 s endpoint.retryTimeout: the cause ended the call
    for secret in (KEY_PASSWORD, *SCRAM_USERS.values()):
        assert secret not in message


# ---- ACLs ---------------------------------------------------------------------------------------------------------
def test_without_describe_the_topic_looks_absent(broker, kq):
    topic = topic_with_rows(broker)
    message = failure_of(kq.start_parquet("nodescribe", trigger={"availableNow": True}, subscribe=topic,
                                          **kafka_options(broker.scram_client("nodescribe"))))
    assert "[SAMZA_KAFKA_TOPIC_NOT_FOUND]" in message and "may not DESCRIBE looks absent" in message


def test_without_read_on_the_topic_the_query_fails_naming_the_authorization(broker, kq):
    topic = topic_with_rows(broker)
    message = failure_of(kq.start_parquet("noread", trigger={"availableNow": True}, subscribe=topic,
                                          **kafka_options(broker.scram_client("noread"))))
    assert "[SAMZA_KAFKA_TOPIC_READ_NOT_AUTHORIZED]" in message and "grant it READ" in message, message


def test_without_read_on_the_group_the_query_reads_on_and_warns_once(broker, kq, caplog):
    """The group mirror is for lag tools; the positions live in the metadata store. Run in this process (the
    driver's calls and an executor's read) so the driver's log is seen."""
    from spark_samza_source.kafka.source import SamzaKafkaDataSource

    caplog.set_level(logging.INFO, logger="spark_samza_source")
    topic = topic_with_rows(broker)
    options = {k.lower(): v for k, v in kq.job_options(
        {"subscribe": topic, "startingOffsets": "earliest"}, kafka_options(broker.scram_client("nogroup"))).items()}
    source = SamzaKafkaDataSource(options)
    reader = source.streamReader(source.schema())
    start = reader.initialOffset()
    rows = 0
    for _ in range(3):
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        for partition in reader.partitions(start, end):
            rows += sum(batch.num_rows for batch in reader.read(partition))
        reader.commit(end)
        produce(broker.plaintext_bootstrap_servers, topic, [(b"k", b"more", None, 0)])
        start = end
    reader.latestOffset(start, reader.getDefaultReadLimit())  # waits for the last commit's mirror writes
    reader.coordinator.lease.release()
    assert rows >= ROWS  # read on
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "consumer group" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "commitOffsetsToKafka" in warnings[0].getMessage() and "READ" in warnings[0].getMessage()


# ---- rotation -----------------------------------------------------------------------------------------------------
def test_a_certificate_rotated_on_disk_takes_effect_for_new_clients_only(broker, kq):
    """librdkafka reads ssl.certificate.location / ssl.key.location when a client is created: a running query's
    clients keep their connections and certificate; a query started after the files change uses the new ones."""
    topic = topic_with_rows(broker)
    good = broker.certificates.client("reader")
    expired = broker.certificates.client("reader", expired=True)
    cert, key = kq.root / "client.pem", kq.root / "client.key"
    shutil.copyfile(good.certificate, cert)
    shutil.copyfile(good.key, key)
    conf = {**broker.tls_client(), "ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
    batches: list[int] = []
    query = kq.start_collecting("rotating", trigger={"processingTime": "500 milliseconds"}, subscribe=topic,
                                on_batch=lambda batch_id, rows: batches.append(len(rows)), **kafka_options(conf))
    query.processAllAvailable()
    shutil.copyfile(expired.certificate, cert)  # rotated to a certificate the broker refuses
    shutil.copyfile(expired.key, key)
    produce(broker.plaintext_bootstrap_servers, topic, [(b"k", b"after", None, 0)])
    query.processAllAvailable()
    assert sum(batches) == ROWS + 1  # the running query read on with the clients it had
    query.stop()
    message = failure_of(kq.start_parquet("after-rotation", trigger={"availableNow": True}, subscribe=topic,
                                          **kafka_options(conf)))
    assert "[SAMZA_KAFKA_TLS_CLIENT_CERTIFICATE_REFUSED]" in message  # a new query's clients read the new files
