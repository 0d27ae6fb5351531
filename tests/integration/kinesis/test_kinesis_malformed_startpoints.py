"""Malformed startpoints (an unknown @type) are logged once each at WARN, counted in the progress
(``latestOffset["malformedStartpoints"]``, as samza-kafka) and never block valid ones. Driver side only,
as Spark's runner calls it, against the moto server."""

from __future__ import annotations

import logging
import uuid

from spark_samza_source.core.model import SystemStreamPartition
from spark_samza_source.core.startpoint import StartpointOldest
from spark_samza_source.core.startpoint_manager import NAMESPACE, StartpointManager
from spark_samza_source.kinesis.driver.coordinator import KinesisCoordinator
from spark_samza_source.kinesis.options import KinesisSourceOptions
from spark_samza_source.metadata import open_store


def test_malformed_startpoints_are_warned_once_counted_and_do_not_block_valid_ones(
        make_stream, kinesis_endpoint, moto_server, tmp_path, caplog):
    stream = make_stream(2)
    job = f"job-{uuid.uuid4().hex[:8]}"
    uri = f"file://{tmp_path / 'metadata'}"
    coordinator = KinesisCoordinator(KinesisSourceOptions.parse({
        "streamName": stream, "endpointUrl": kinesis_endpoint, "dynamodbEndpointUrl": moto_server,
        "region": "us-east-1", "awsAccessKeyId": "testing", "awsSecretKey": "testing", "job.name": job,
        "metadata.store": uri, "startingPosition": "LATEST", "startpoint.pollInterval": "0"}))
    try:
        start = coordinator.initial_offset()
        store = open_store(uri, job)
        StartpointManager(store).write(SystemStreamPartition("kinesis", stream, 0), StartpointOldest())
        bad_key = f"kinesis.{stream}.1"
        store.put(NAMESPACE, bad_key, {"@type": "StartpointBogus", "creationTimestamp": 1})
        with caplog.at_level(logging.WARNING):
            planned = coordinator.latest_offset(start)
            assert coordinator.progress_report() == {"malformedStartpoints": 1}
            coordinator.latest_offset(start)  # planned again (Spark asks again while no batch ran): polled again
            assert coordinator.progress_report() == {"malformedStartpoints": 1}
        applied = [key for key in planned.startpoints]
        assert applied and all(ssp.partition == 0 for _task, ssp in applied), "the valid startpoint was not applied"
        mentions = [r for r in caplog.records if bad_key in r.getMessage() and r.levelno == logging.WARNING]
        assert len(mentions) == 1, [r.getMessage() for r in caplog.records]
    finally:
        lease = getattr(coordinator, "_lease", None)
        if lease is not None:
            lease.release()
