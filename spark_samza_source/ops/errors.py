"""Errors of the lag tools outside the command line (``ops.lag``, ``ops.prometheus``), and their catalogue: every
user's error those modules raise is built by a function here, its message starting with its condition
(``SAMZA_LAG_...``: docs/errors.md lists them; core/errors.py has the rule).

Not ``ops/cli/errors.py``: these modules are a Python API of their own (an application serves the lag exporter,
the CLI's ``lag`` command calls ``ops.lag``), and importing the CLI's package from them would load the command line
into an application's driver. The classes are the shared ones: a failed Kinesis call stays a
``KinesisSourceError`` (imported where it is built, as ``ops`` imports the system packages lazily), a missing
argument of the exporter a ``ConfigError`` (a ``ValueError``, what it raised before it had a condition).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import ConfigError

if TYPE_CHECKING:
    from ..kinesis.errors import KinesisSourceError

READ_FAILED = "SAMZA_LAG_READ_FAILED"
EXPORTER_NEEDS_LISTENER = "SAMZA_LAG_EXPORTER_NEEDS_LISTENER"


def get_records_failed(shard_id: str, stream: str, where: str, why: str) -> KinesisSourceError:
    """Kinesis refused a ``GetRecords`` call counting a shard's backlog (``why``: its answer, scrubbed)."""
    from ..kinesis.errors import KinesisSourceError

    return KinesisSourceError(f"GetRecords of shard {shard_id} of stream {stream!r} failed ({where}): {why}",
                              condition=READ_FAILED)


def exporter_needs_listener() -> ConfigError:
    """``serve_lag_metrics`` was given neither a SparkSession nor a listener."""
    return ConfigError("serve_lag_metrics needs a SparkSession (to add a SamzaLagListener to) or a listener",
                       condition=EXPORTER_NEEDS_LISTENER)
