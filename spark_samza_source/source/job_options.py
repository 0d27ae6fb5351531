"""The options every Samza job has, whichever system it reads, parsed in one place.

``KafkaSourceOptions`` and ``KinesisSourceOptions`` derive from :class:`JobOptions`, so ``options.job_name`` and
the rest read the same in both sources, and :meth:`JobOptions.parse_common` is the one parser of the entries of
``options/common.py``'s ``JOB_OPTIONS`` (names, defaults and descriptions live there) and of the test-only
``testing.*`` fault hooks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..core.store import validate_job_name
from ..metadata import check_store_uri
from ..options import common
from ..options.values import Options
from .fault_hooks import NO_FAULT_HOOKS, FaultHookOptions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobOptions:
    """What names and guards the Samza job: its name and store, its startpoints, its lease, its data-loss policy."""

    job_name: str
    metadata_store: str
    fail_on_data_loss: bool
    startpoint_ttl_ms: int
    startpoint_poll_ms: int
    job_lease_ttl_ms: int  # job.ownership.ttl: see metadata.lease
    retry_timeout_ms: int  # endpoint.retryTimeout: driver-side calls are retried this long, then fail
    # the ``testing.*`` options (source/fault_hooks.py): empty, and nothing loaded, unless a test sets them
    fault_hooks: FaultHookOptions = field(default=NO_FAULT_HOOKS, kw_only=True)

    @property
    def max_rows_per_batch(self) -> int | None:
        """The row cap of a micro-batch when Spark sets none (the stream reader's ``getDefaultReadLimit``; without
        admission control, every batch): none unless a system's options say (samza-kafka: ``maxOffsetsPerTrigger``)."""
        return None

    @staticmethod
    def parse_common(opts: Options, *, job_name_example: str, store_holds: str) -> dict[str, Any]:
        """The common fields, as keyword arguments for the system's options class.

        ``job_name_example`` completes the error for a missing ``job.name``; ``store_holds`` says what this
        system keeps in the store, for the warning when ``metadata.store`` is not set.
        """
        job_name = opts.string(
            common.JOB_NAME.name, required=True, hint=f"it names the job's {store_holds} in the metadata store, "
            f"e.g. .option('{common.JOB_NAME.name}', '{job_name_example}')")
        validate_job_name(job_name)
        store = opts.string(common.METADATA_STORE.name)
        if store is not None:
            check_store_uri(store)  # refused at load(), not at the first trigger
        else:
            store = common.METADATA_STORE.default
            log.warning(
                "option '%s' is not set: using the local directory '%s'. The job's %s then live on this "
                "machine's disk only, which driver and executors must share; production jobs should use durable "
                "shared storage (e.g. s3://bucket/prefix or dynamodb://table?region=...).",
                common.METADATA_STORE.name, store, store_holds)
        return {
            "job_name": job_name,
            "metadata_store": store,
            "fail_on_data_loss": common.FAIL_ON_DATA_LOSS.read(opts),
            "startpoint_ttl_ms": common.STARTPOINT_TTL.read(opts),
            "startpoint_poll_ms": common.STARTPOINT_POLL_INTERVAL.read(opts),
            "job_lease_ttl_ms": common.JOB_LEASE_TTL.read(opts),
            "retry_timeout_ms": common.RETRY_TIMEOUT.read(opts),
            "fault_hooks": FaultHookOptions.parse(opts),
        }
