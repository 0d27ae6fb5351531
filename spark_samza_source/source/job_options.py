"""The options every Samza job has, whichever system it reads, parsed in one place.

``KafkaSourceOptions`` and ``KinesisSourceOptions`` derive from :class:`JobOptions`, so ``options.job_name`` and
the rest read the same in both sources, and :meth:`JobOptions.parse_common` is the one parser of ``job.name``,
``metadata.store``, ``failOnDataLoss``, ``startpoint.ttl`` / ``startpoint.pollInterval``, ``job.ownership.ttl``,
``endpoint.retryTimeout`` and the test-only ``testing.*`` fault hooks. Each default is defined beside the code
that uses it and imported here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..core.startpoint import DEFAULT_STARTPOINT_POLL_INTERVAL_MS, DEFAULT_STARTPOINT_TTL_MS
from ..metadata.base import validate_job_name
from ..metadata.lease import DEFAULT_OWNERSHIP_TTL_MS, MIN_TTL_MS
from .fault_hooks import NO_FAULT_HOOKS, FaultHookOptions
from .option_parser import Options
from .options import (
    FAIL_ON_DATA_LOSS_OPTION,
    JOB_NAME_OPTION,
    JOB_OWNERSHIP_TTL_OPTION,
    METADATA_STORE_OPTION,
    RETRY_TIMEOUT_OPTION,
    STARTPOINT_POLL_INTERVAL_OPTION,
    STARTPOINT_TTL_OPTION,
)

log = logging.getLogger(__name__)

#: Where startpoints, the job model, the checkpoint mirror and the lease live when ``metadata.store`` is not set:
#: a local directory, fine for a notebook, not for production (the warning says so).
DEFAULT_METADATA_STORE = "samza-metadata"
#: How long an endpoint that does not answer (broker down, connection refused or reset, HTTP 5xx, a leader
#: moving) is retried, with backoff, before the query fails naming it: rides out a broker or endpoint restart.
DEFAULT_RETRY_TIMEOUT_MS = 60_000
MIN_RETRY_TIMEOUT_MS = 1_000


@dataclass(frozen=True)
class JobOptions:
    """What names and guards the Samza job: its name and store, its startpoints, its lease, its data-loss policy."""

    job_name: str
    metadata_store: str
    fail_on_data_loss: bool
    startpoint_ttl_ms: int
    startpoint_poll_ms: int
    ownership_ttl_ms: int  # job.ownership.ttl: see metadata.lease
    retry_timeout_ms: int  # endpoint.retryTimeout: driver-side calls are retried this long, then fail
    # the ``testing.*`` options (source/fault_hooks.py): empty, and nothing loaded, unless a test sets them
    fault_hooks: FaultHookOptions = field(default=NO_FAULT_HOOKS, kw_only=True)

    @staticmethod
    def parse_common(opts: Options, *, job_name_example: str, store_holds: str) -> dict[str, Any]:
        """The common fields, as keyword arguments for the system's options class.

        ``job_name_example`` completes the error for a missing ``job.name``; ``store_holds`` says what this
        system keeps in the store, for the warning when ``metadata.store`` is not set.
        """
        job_name = opts.string(
            JOB_NAME_OPTION, required=True, hint=f"it names the job's {store_holds} in the metadata store, e.g. "
            f".option('{JOB_NAME_OPTION}', '{job_name_example}')")
        validate_job_name(job_name)
        store = opts.string(METADATA_STORE_OPTION)
        if store is not None:
            from ..metadata import check_store_uri

            check_store_uri(store)  # refused at load(), not at the first trigger
        else:
            store = DEFAULT_METADATA_STORE
            log.warning(
                "option '%s' is not set: using the local directory '%s'. The job's %s then live on this "
                "machine's disk only, which driver and executors must share; production jobs should use durable "
                "shared storage (e.g. s3://bucket/prefix or dynamodb://table?region=...).",
                METADATA_STORE_OPTION, store, store_holds)
        return {
            "job_name": job_name,
            "metadata_store": store,
            "fail_on_data_loss": opts.boolean(FAIL_ON_DATA_LOSS_OPTION, True),
            "startpoint_ttl_ms": opts.duration_ms(STARTPOINT_TTL_OPTION, DEFAULT_STARTPOINT_TTL_MS, minimum_ms=1),
            "startpoint_poll_ms": opts.duration_ms(STARTPOINT_POLL_INTERVAL_OPTION,
                                                   DEFAULT_STARTPOINT_POLL_INTERVAL_MS),
            "ownership_ttl_ms": opts.duration_ms(JOB_OWNERSHIP_TTL_OPTION, DEFAULT_OWNERSHIP_TTL_MS,
                                                 minimum_ms=MIN_TTL_MS),
            "retry_timeout_ms": opts.duration_ms(RETRY_TIMEOUT_OPTION, DEFAULT_RETRY_TIMEOUT_MS,
                                                 minimum_ms=MIN_RETRY_TIMEOUT_MS),
            "fault_hooks": FaultHookOptions.parse(opts),
        }
