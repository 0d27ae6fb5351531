"""What an executor needs to know to read a task's ranges, besides the client configuration: one frozen value
built from the parsed options in the task's ``read()`` on the executor (``source.read_task_ranges``) and carried
to both read paths."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import InternalError
from ..options import DEFAULT_MAX_ROWS_PER_BATCH, DEFAULT_POLL_TIMEOUT_MS, READ_PATH, READ_PATHS

__all__ = ["KafkaReadSettings", "DEFAULT_MAX_BYTES_PER_BATCH", "ARROW_COLUMN_BYTES_MAX"]

DEFAULT_MAX_BYTES_PER_BATCH = 32 * 1024 * 1024
# The most bytes one column of an Arrow batch holds: binary and string columns have 32-bit offsets (the schema
# PySpark checks has no large_binary), so no batch may take a column past this.
ARROW_COLUMN_BYTES_MAX = 2**31 - 1


@dataclass(frozen=True)
class KafkaReadSettings:
    """``include_headers`` adds the headers column; ``fail_on_data_loss`` raises on lost records instead of
    skipping them; a batch holds at most ``max_rows_per_batch`` rows and is cut where the bytes of all its columns
    (key, value, header keys and values) reach ``max_bytes_per_batch``, and before any record that would take one
    column past ``max_column_bytes`` (Arrow's limit; lower only in tests, to reach it with little data);
    ``poll_timeout_ms`` without a record fails the read; ``read_path`` chooses the
    native or the Python reader (``auto``: native where available)."""

    include_headers: bool
    fail_on_data_loss: bool
    max_rows_per_batch: int = DEFAULT_MAX_ROWS_PER_BATCH
    max_bytes_per_batch: int = DEFAULT_MAX_BYTES_PER_BATCH
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    read_path: str = "auto"
    max_column_bytes: int = ARROW_COLUMN_BYTES_MAX

    def __post_init__(self) -> None:
        if self.max_rows_per_batch < 1 or self.max_bytes_per_batch < 1 or self.poll_timeout_ms < 1:
            raise InternalError("max_rows_per_batch, max_bytes_per_batch and poll_timeout_ms must be >= 1")
        if not 1 <= self.max_column_bytes <= ARROW_COLUMN_BYTES_MAX:
            raise InternalError(f"max_column_bytes must be in 1..{ARROW_COLUMN_BYTES_MAX} (Arrow's 32-bit offsets)")
        if self.read_path not in READ_PATHS:
            raise InternalError(f"read_path must be one of {', '.join(READ_PATHS)} (option '{READ_PATH.name}' "
                                f"is read as one of them), got {self.read_path!r}")
