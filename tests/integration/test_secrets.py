"""Credentials given as options never show up anywhere we (or Spark, for what we control) write them down.

Real queries on the local SparkSession, with ``kafka.sasl.password`` / ``kafka.ssl.key.password`` /
``kafka.ssl.key.pem`` / ``kafka.sasl.username`` (the development broker speaks PLAINTEXT; librdkafka accepts SASL/SSL
settings it does not use) and ``awsSecretKey`` /
``sessionToken`` (moto accepts any credentials). Scanned for each secret:

- Python logging in this process at DEBUG for our package (``caplog``), including a complete in-process driver
  and executor cycle (initialOffset, latestOffset, partitions, read, commit) with the same options;
- everything Spark's JVM prints while the queries run: its log4j output at INFO (a file appender added for the
  test) and ``System.err``, where the driver-side Python runner's and the Python workers' stderr go
  (tracebacks, warnings, librdkafka's own messages);
- ``explain()`` of the streaming DataFrame and of the running query, ``lastProgress`` / ``recentProgress``, the
  query's status and the descriptions of ``spark.streams.active``;
- the text of the errors of queries that fail (at analysis, and in the driver runner);
- every file under the metadata store, the checkpoint and the sink.

Spark itself prints a source's options in ``explain()``, redacting those whose names match
``spark.redaction.regex`` (default ``(?i)secret|password|token|access[.]?key``), which misses ``kafka.ssl.key.pem``
and ``kafka.sasl.username``: ``spark_samza_source.redact_secret_options`` adds the package's list
(``options/secrets.py``) to ``spark.sql.redaction.options.regex``; the Kafka test pins both. Every path without a
SparkSession, for every secret option: ``tests/unit/options/test_secrets.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import uuid
from pathlib import Path

import pytest

from samza_devkit import kinesis_helpers as kh
from samza_devkit.kafka_helpers import create_topic, produce, unique_topic
from samza_devkit.query_harness import failure_of

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@contextlib.contextmanager
def spark_output_to(spark, directory: Path):
    """Send the JVM's log4j output (at INFO) and ``System.err`` (Python runner / worker stderr) to files."""
    jvm = spark._jvm
    directory.mkdir(parents=True, exist_ok=True)
    log_file, err_file = directory / "log4j.txt", directory / "stderr.txt"
    original_err = jvm.java.lang.System.err
    err_stream = jvm.java.io.PrintStream(jvm.java.io.FileOutputStream(str(err_file), True), True)
    jvm.java.lang.System.setErr(err_stream)
    log4j = jvm.org.apache.logging.log4j
    context = log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    appender = (log4j.core.appender.FileAppender.newBuilder().withFileName(str(log_file))
                .setName(f"secrets-{uuid.uuid4().hex[:6]}").setConfiguration(config)
                .setLayout(log4j.core.layout.PatternLayout.createDefaultLayout()).build())
    appender.start()
    config.addAppender(appender)
    root = config.getRootLogger()
    spark_logger = config.getLoggerConfig("org.apache.spark")
    levels = (root.getLevel(), spark_logger.getLevel())
    console = config.getAppender("console")
    if console is not None:
        root.removeAppender("console")  # INFO to the file only, not to the terminal
    root.addAppender(appender, log4j.Level.INFO, None)
    root.setLevel(log4j.Level.INFO)
    spark_logger.setLevel(log4j.Level.INFO)
    context.updateLoggers()
    try:
        yield log_file, err_file
    finally:
        root.removeAppender(appender.getName())
        if console is not None:
            root.addAppender(console, None, None)
        root.setLevel(levels[0])
        spark_logger.setLevel(levels[1])
        context.updateLoggers()
        appender.stop()
        jvm.java.lang.System.setErr(original_err)
        err_stream.close()


def explain_text(target) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        target.explain(extended=True)
    return out.getvalue()


def progress_text(progress) -> str:
    """A StreamingQueryProgress as Spark's JSON (older PySpark returns plain dicts)."""
    return progress.json if hasattr(progress, "json") else json.dumps(progress, default=str)


def files_under(*roots: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for root in roots if root.exists() for p in root.rglob("*") if p.is_file()}


def assert_nowhere(secrets: list[str], texts: dict[str, str | bytes]) -> None:
    for where, text in texts.items():
        for secret in secrets:
            found = secret.encode() in text if isinstance(text, bytes) else secret in text
            assert not found, f"secret {secret[:6]}... found in {where}"


def run_driver_cycle_in_process(source, options: dict[str, str]) -> int:
    """One micro-batch the way Spark's driver runner and an executor would run it, in this process."""
    from pyspark.sql.datasource import DataSource

    assert issubclass(source, DataSource)
    ds = source(options)
    reader = ds.streamReader(ds.schema())
    start = reader.initialOffset()
    limit = reader.getDefaultReadLimit() if hasattr(reader, "getDefaultReadLimit") else None
    end = reader.latestOffset(start, limit)
    rows = 0
    for partition in reader.partitions(start, end):
        for batch in reader.read(partition):
            rows += batch.num_rows
    again = reader.latestOffset(end, limit)
    for partition in reader.partitions(end, again):
        for batch in reader.read(partition):
            rows += batch.num_rows
    reader.commit(end)
    reader.coordinator.lease.release()
    return rows


# ---- samza-kafka ------------------------------------------------------------------------------------------------
def test_kafka_sasl_and_ssl_passwords_never_appear(spark, kafka_broker, tmp_path, caplog):
    from spark_samza_source.kafka.source import SamzaKafkaDataSource

    caplog.set_level(logging.DEBUG, logger="spark_samza_source")
    from spark_samza_source import redact_secret_options

    previous_redaction = spark.conf.get("spark.sql.redaction.options.regex")
    redact_secret_options(spark)  # explain() hides every secret option, not only those Spark's regex knows
    secrets = [f"SASL-PW-{uuid.uuid4().hex}", f"SSL-KEY-PW-{uuid.uuid4().hex}", f"SSL-KEY-PEM-{uuid.uuid4().hex}",
               f"SASL-USER-{uuid.uuid4().hex}"]
    bootstrap = kafka_broker.bootstrap_servers
    topic = create_topic(bootstrap, unique_topic("secret"), 2)
    produce(bootstrap, topic, [(b"k", f"v{i}".encode(), None, i % 2) for i in range(20)])
    job = f"secret-{uuid.uuid4().hex[:8]}"
    store_dir, checkpoints = tmp_path / "metadata", tmp_path / "checkpoints"
    options = {
        "kafka.bootstrap.servers": bootstrap, "subscribe": topic, "job.name": job,
        "metadata.store": f"file://{store_dir}", "startingOffsets": "earliest",
        "kafka.security.protocol": "PLAINTEXT", "kafka.sasl.username": secrets[3],
        "kafka.sasl.password": secrets[0], "kafka.ssl.key.password": secrets[1], "kafka.ssl.key.pem": secrets[2],
    }
    texts: dict[str, str | bytes] = {}
    batches: list[int] = []
    with spark_output_to(spark, tmp_path / "spark-output") as (log_file, err_file):
        df = spark.readStream.format("samza-kafka").options(**options).load()
        texts["explain(DataFrame)"] = plan = explain_text(df)
        assert "kafka.sasl.password=*********(redacted)" in plan  # Spark prints the options, redacted
        assert "kafka.ssl.key.pem=*********(redacted)" in plan  # ... with the package's list too
        query = (df.writeStream.foreachBatch(lambda d, i: batches.append(d.count()))
                 .option("checkpointLocation", str(checkpoints / "ok")).queryName(f"secret_{job[-8:]}")
                 .trigger(processingTime="500 milliseconds").start())
        try:
            query.processAllAvailable()
            assert sum(batches) == 20  # the credentials did not stop the query from reading
            texts["explain(query)"] = explain_text(query)
            texts["lastProgress"] = progress_text(query.lastProgress)
            texts["recentProgress"] = "\n".join(progress_text(p) for p in query.recentProgress)
            texts["status"] = json.dumps(query.status)
            texts["streams"] = repr([(q.name, q.id, q.runId, q.status) for q in spark.streams.active])
        finally:
            query.stop()

        # A query failing in the driver runner (a partition the topic does not have), another at analysis.
        failing = {k: v for k, v in options.items() if k != "subscribe"}
        failing.update({"job.name": job + "-x", "assign": json.dumps({topic: [7]})})
        message = failure_of(spark.readStream.format("samza-kafka").options(**failing).load().writeStream
                             .format("noop").option("checkpointLocation", str(checkpoints / "fail")).start())
        assert "names partition 7" in message
        texts["runtime error"] = message
        with pytest.raises(Exception) as analysis:
            (spark.readStream.format("samza-kafka").options(**{**options, "maxOffsetsPerTrigger": "-5"}).load()
             .writeStream.format("noop").option("checkpointLocation", str(checkpoints / "bad")).start())
        assert "maxOffsetsPerTrigger" in str(analysis.value)
        texts["analysis error"] = str(analysis.value)

        inproc = {**options, "job.name": job + "-inproc"}
        assert run_driver_cycle_in_process(SamzaKafkaDataSource, inproc) == 20

    texts["log4j"] = log_file.read_text(errors="replace")
    texts["stderr"] = err_file.read_text(errors="replace")
    texts["caplog"] = caplog.text + "".join(f"{r.args!r}" for r in caplog.records)
    assert "MicroBatchExecution" in texts["log4j"]  # the capture did see Spark's log (not a vacuous scan)
    assert "taking the job over" in texts["caplog"] or "owns the job" in texts["caplog"]
    stored = files_under(store_dir, checkpoints)
    assert any("/offsets/" in p for p in stored) and any("/jobmodel/" in p for p in stored)
    texts.update(stored)
    assert_nowhere(secrets, texts)
    spark.conf.set("spark.sql.redaction.options.regex", previous_redaction)  # as the other tests had it


# ---- samza-kafka on a SASL listener: OAUTHBEARER tokens and a JAAS line's password -----------------------------
@pytest.fixture(scope="module")
def sasl_broker():
    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.oauth import DEV_OAUTH_SECRET

    with KafkaDevBroker(sasl_plain_users={"alice": SASL_PLAIN_PASSWORD},
                        sasl_oauthbearer_secret=DEV_OAUTH_SECRET) as broker:
        yield broker


SASL_PLAIN_PASSWORD = f"JAAS-PW-{uuid.uuid4().hex}"


def test_kafka_oauthbearer_tokens_and_jaas_passwords_never_appear(spark, sasl_broker, tmp_path, caplog):
    """The tokens the provider handed librdkafka (on the driver and executors: it records each one) and the
    password inside a ``kafka.sasl.jaas.config`` line (translated at option parsing) are nowhere to be found."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from spark_samza_source.kafka.source import SamzaKafkaDataSource

    caplog.set_level(logging.DEBUG, logger="spark_samza_source")
    bootstrap = sasl_broker.bootstrap_servers
    plain = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
             "sasl.password": SASL_PLAIN_PASSWORD}
    topic = unique_topic("secret-sasl")
    admin = AdminClient({"bootstrap.servers": bootstrap, **plain})  # kept alive until the topic exists
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    produce(bootstrap, topic, [(b"k", f"v{i}".encode(), None, i % 2) for i in range(20)], extra_conf=plain)
    job = f"secret-{uuid.uuid4().hex[:8]}"
    store_dir, checkpoints, tokens_dir = tmp_path / "metadata", tmp_path / "checkpoints", tmp_path / "tokens"
    common = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "metadata.store": f"file://{store_dir}",
              "startingOffsets": "earliest", "kafka.security.protocol": "SASL_PLAINTEXT"}
    oauth = {**common, "job.name": job, "kafka.sasl.mechanism": "OAUTHBEARER",
             "kafka.sasl.oauthbearer.tokenProvider": "samza_devkit.oauth.token_provider",
             "kafka.sasl.oauthbearer.config": f"principal=secret-test record_dir={tokens_dir}"}
    jaas = {**common, "job.name": job + "-jaas",
            "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                      f'username="alice" password="{SASL_PLAIN_PASSWORD}";'}
    texts: dict[str, str | bytes] = {}
    with spark_output_to(spark, tmp_path / "spark-output") as (log_file, err_file):
        for name, options in (("oauth", oauth), ("jaas", jaas)):
            batches: list[int] = []
            df = spark.readStream.format("samza-kafka").options(**options).load()
            texts[f"explain(DataFrame) {name}"] = explain_text(df)
            query = (df.writeStream.foreachBatch(lambda d, i, b=batches: b.append(d.count()))
                     .option("checkpointLocation", str(checkpoints / name)).queryName(f"secret_{name}_{job[-8:]}")
                     .trigger(processingTime="500 milliseconds").start())
            try:
                query.processAllAvailable()
                assert sum(batches) == 20  # authenticated on driver and executors
                texts[f"explain(query) {name}"] = explain_text(query)
                texts[f"recentProgress {name}"] = "\n".join(progress_text(p) for p in query.recentProgress)
                texts[f"status {name}"] = json.dumps(query.status)
            finally:
                query.stop()
        # A query failing in the driver runner with the same credentials
        failing = {**jaas, "job.name": job + "-x", "assign": json.dumps({topic: [7]})}
        del failing["subscribe"]
        message = failure_of(spark.readStream.format("samza-kafka").options(**failing).load().writeStream
                             .format("noop").option("checkpointLocation", str(checkpoints / "fail")).start())
        assert "names partition 7" in message
        texts["runtime error"] = message
        assert run_driver_cycle_in_process(SamzaKafkaDataSource, {**oauth, "job.name": job + "-inproc"}) == 20

    tokens = [p.read_text() for p in tokens_dir.iterdir()]
    assert tokens  # the provider ran
    secrets = [SASL_PLAIN_PASSWORD] + tokens + [t.rsplit(".", 1)[1] for t in tokens]  # whole tokens, signatures
    texts["log4j"] = log_file.read_text(errors="replace")
    texts["stderr"] = err_file.read_text(errors="replace")
    texts["caplog"] = caplog.text + "".join(f"{r.args!r}" for r in caplog.records)
    assert "MicroBatchExecution" in texts["log4j"]
    stored = files_under(store_dir, checkpoints)
    assert any("/offsets/" in p for p in stored)
    texts.update(stored)
    assert_nowhere(secrets, texts)


# ---- samza-kinesis ----------------------------------------------------------------------------------------------
def test_aws_secret_key_and_session_token_never_appear(spark, moto_server, tmp_path, caplog):
    from spark_samza_source.kinesis.source import SamzaKinesisDataSource

    caplog.set_level(logging.DEBUG, logger="spark_samza_source")
    secrets = [f"AWS-SECRET-{uuid.uuid4().hex}", f"AWS-TOKEN-{uuid.uuid4().hex}"]
    client = kh.kinesis_client(moto_server)
    stream = kh.create_stream(client, kh.unique_stream_name("secret"), 2)
    kh.put_records(client, stream, [(f"pk-{i}", f"v{i}".encode()) for i in range(20)])
    job = f"secret-{uuid.uuid4().hex[:8]}"
    store_dir, checkpoints = tmp_path / "metadata", tmp_path / "checkpoints"
    options = {
        "streamName": stream, "endpointUrl": moto_server, "region": "us-east-1", "job.name": job,
        "awsAccessKeyId": "AKIDSAMZATEST", "awsSecretKey": secrets[0], "sessionToken": secrets[1],
        "metadata.store": f"file://{store_dir}", "startingPosition": "TRIM_HORIZON", "maxFetchTimePerShard": "2s",
    }
    texts: dict[str, str | bytes] = {}
    batches: list[int] = []
    with spark_output_to(spark, tmp_path / "spark-output") as (log_file, err_file):
        df = spark.readStream.format("samza-kinesis").options(**options).load()
        texts["explain(DataFrame)"] = plan = explain_text(df)
        assert "awssecretkey=*********(redacted)" in plan.lower() and "sessiontoken=*********(redacted)" in plan.lower()
        query = (df.writeStream.foreachBatch(lambda d, i: batches.append(d.count()))
                 .option("checkpointLocation", str(checkpoints / "ok")).queryName(f"secret_{job[-8:]}")
                 .trigger(processingTime="500 milliseconds").start())
        try:
            query.processAllAvailable()
            assert sum(batches) == 20
            texts["explain(query)"] = explain_text(query)
            texts["lastProgress"] = progress_text(query.lastProgress)
            texts["recentProgress"] = "\n".join(progress_text(p) for p in query.recentProgress)
            texts["status"] = json.dumps(query.status)
            texts["streams"] = repr([(q.name, q.id, q.runId, q.status) for q in spark.streams.active])
        finally:
            query.stop()

        missing = {**options, "streamName": stream + "-missing", "job.name": job + "-x"}
        message = failure_of(spark.readStream.format("samza-kinesis").options(**missing).load().writeStream
                             .format("noop").option("checkpointLocation", str(checkpoints / "fail")).start())
        assert stream + "-missing" in message
        texts["runtime error"] = message
        with pytest.raises(Exception) as analysis:
            spark.readStream.format("samza-kinesis").options(**{**options, "awsAccessKeyId": ""}).load()
        assert "awsAccessKeyId" in str(analysis.value)
        texts["analysis error"] = str(analysis.value)

        inproc = {**options, "job.name": job + "-inproc"}
        assert run_driver_cycle_in_process(SamzaKinesisDataSource, inproc) == 20

    texts["log4j"] = log_file.read_text(errors="replace")
    texts["stderr"] = err_file.read_text(errors="replace")
    texts["caplog"] = caplog.text + "".join(f"{r.args!r}" for r in caplog.records)
    assert "MicroBatchExecution" in texts["log4j"]
    assert "owns the job" in texts["caplog"]
    stored = files_under(store_dir, checkpoints)
    assert any("/offsets/" in p for p in stored) and any("/batchends/" in p or "/checkpoint/" in p for p in stored)
    texts.update(stored)
    assert_nowhere(secrets, texts)


def test_explain_redacts_by_option_name_and_the_packages_setting_covers_other_names(spark, tmp_path):
    """Spark, not this source, prints options in explain(): by name, with ``spark.redaction.regex``. Sensitive
    options whose names it does not match (librdkafka's ``ssl.key.pem``: a private key) need the runtime SQL
    setting ``spark.sql.redaction.options.regex``, which ``spark_samza_source.redact_secret_options`` extends with
    the package's list of secret options (docs/security.md)."""
    from spark_samza_source import redact_secret_options

    pem = f"-----BEGIN PRIVATE KEY-----{uuid.uuid4().hex}"
    options = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "job.name": "explain-only",
               "metadata.store": f"file://{tmp_path}/md", "kafka.ssl.key.pem": pem}
    previous = spark.conf.get("spark.sql.redaction.options.regex")
    spark.conf.set("spark.sql.redaction.options.regex", "(?i)url")  # Spark's default
    try:
        plain = explain_text(spark.readStream.format("samza-kafka").options(**options).load())
        assert pem in plain  # Spark's default redaction does not know this name: the limitation
        redact_secret_options(spark)
        redacted = explain_text(spark.readStream.format("samza-kafka").options(**options).load())
    finally:
        spark.conf.set("spark.sql.redaction.options.regex", previous)
    assert pem not in redacted and "kafka.ssl.key.pem=*********(redacted)" in redacted
