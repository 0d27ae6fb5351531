"""Stream consumers of enhanced fan-out on moto (which registers consumers): the driver's registration (register
when absent, reuse when present, wait until ACTIVE, a clear error when the consumer is being deleted) and the
``samza-source consumers list / deregister`` commands, which are the only way a consumer is ever deregistered."""

from __future__ import annotations

import json
import uuid

import pytest

from samza_devkit import kinesis_helpers as kh
from spark_samza_source.kinesis.calls import KinesisCalls
from spark_samza_source.kinesis.client import AwsClientSettings, kinesis_client
from spark_samza_source.kinesis.driver.consumers import StreamConsumers
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.metadata import open_store
from spark_samza_source.ops import cli
from spark_samza_source.options.namespaces import STREAM_CONSUMERS


@pytest.fixture
def stream(moto_server):
    client = kh.kinesis_client(moto_server)
    name = kh.create_stream(client, kh.unique_stream_name("cons"), 1)
    yield client, name
    kh.delete_stream(client, name)
    client.close()


def consumers_of(client, stream: str) -> StreamConsumers:
    settings = AwsClientSettings(region="us-east-1", endpoint_url=client.meta.endpoint_url)
    arn = client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"]
    return StreamConsumers(KinesisCalls(kinesis_client(settings), settings=settings), stream, arn, poll_s=0.05)


def test_a_consumer_is_registered_once_then_reused_and_only_the_cli_deregisters_it(moto_server, stream, capsys,
                                                                                      tmp_path):
    client, name = stream
    consumers = consumers_of(client, name)
    first = consumers.ensure_active("etl")
    again = consumers.ensure_active("etl")
    assert first.status == again.status == "ACTIVE" and first.arn == again.arn  # reused, not registered twice
    listed = client.list_stream_consumers(StreamARN=consumers.stream_arn)["Consumers"]
    assert [c["ConsumerName"] for c in listed] == ["etl"]

    # what the driver remembers for the CLI (coordinator.consumer_arn)
    store_uri, job = f"file://{tmp_path}/store", f"job-{uuid.uuid4().hex[:6]}"
    with open_store(store_uri, job) as store:
        store.put(STREAM_CONSUMERS, f"{name}/etl", {"stream": name, "streamArn": consumers.stream_arn,
                                                    **first.to_json()})
    common = ["--store", store_uri, "--job", job, "--endpoint", moto_server, "--region", "us-east-1"]
    assert cli.main(["--json", "consumers", "list", *common]) == 0
    shown = json.loads(capsys.readouterr().out)["consumers"]
    assert [(c["name"], c["arn"], c["statusNow"]) for c in shown] == [("etl", first.arn, "ACTIVE")]

    assert cli.main(["consumers", "deregister", *common, "--name", "nope"]) == 1
    assert "has no stream consumer named 'nope'" in capsys.readouterr().err
    assert cli.main(["consumers", "deregister", *common, "--name", "etl"]) == 0
    assert "deregistered" in capsys.readouterr().out
    assert client.list_stream_consumers(StreamARN=consumers.stream_arn)["Consumers"] == []
    assert cli.main(["--json", "consumers", "list", *common]) == 0
    assert json.loads(capsys.readouterr().out)["consumers"] == []


def test_a_consumer_deregistered_behind_the_jobs_back_is_registered_again_at_the_next_start(stream, caplog):
    """moto deletes at once (no DELETING state to meet): the name is free and the next start registers it anew,
    saying so in the log (AWS charges for it again)."""
    client, name = stream
    consumers = consumers_of(client, name)
    gone = consumers.ensure_active("old")
    client.deregister_stream_consumer(ConsumerARN=gone.arn)
    assert consumers.describe("old") is None
    again = consumers.ensure_active("old")
    assert again.status == "ACTIVE" and again.created_ms >= gone.created_ms
    assert any("registered stream consumer 'old'" in r.getMessage() and "per shard-hour" in r.getMessage()
               for r in caplog.records)


def test_consumer_options_and_the_cli_usage_name_what_is_missing(capsys):
    base = {"streamName": "s", "job.name": "j", "metadata.store": "memory:x"}
    with pytest.raises(Exception, match="option 'consumerName' is required with consumerType=SubscribeToShard"):
        KinesisSourceOptions.parse({**base, "consumerType": "SubscribeToShard"})
    options = KinesisSourceOptions.parse({**base, "kinesis.consumerType": "subscribetoshard",
                                          "kinesis.consumerName": "etl"})
    assert options.fan_out and options.consumer_name == "etl"
    assert cli.main(["consumers", "deregister", "--store", "memory:x", "--job", "j"]) == 2
    assert "--name" in capsys.readouterr().err
