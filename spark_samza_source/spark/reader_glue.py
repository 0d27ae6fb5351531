"""What both stream readers and both coordinators share, so neither source carries its own copy.

Spark runs a stream reader twice: once on the driver (``latestOffset``/``partitions``/``commit``, in one
long-lived Python process) and once per task on executors, unpickled. Only the parsed options and the schema may
travel: :class:`OptionsOnlyPickling` pickles exactly those and rebuilds the reader with ``__init__``, and the
driver-side coordinator is created on first use, never on an executor.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["OptionsOnlyPickling", "DriverJobResources", "claim_once"]


class OptionsOnlyPickling(ABC):
    """Mixin for a stream reader whose ``__init__(options, schema)`` sets everything else."""

    options: Any
    schema: Any
    _coordinator: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "schema": self.schema}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"], state["schema"])

    @abstractmethod
    def _make_coordinator(self) -> Any:
        """The source's driver-side coordinator for ``self.options``: each reader class defines it."""

    @property
    def coordinator(self) -> Any:
        """The driver's coordinator, created on first use (a reader unpickled on an executor never makes one)."""
        if self._coordinator is None:
            self._coordinator = self._make_coordinator()
        return self._coordinator


class DriverJobResources:
    """Mixin for a coordinator: the job's metadata store and this driver's ownership lease, opened on first use.

    Needs ``options.metadata_store``, ``options.job_name`` and ``options.ownership_ttl_ms``.
    """

    options: Any
    _store: Any = None
    _lease: Any = None

    @property
    def store(self):
        if self._store is None:
            from ..metadata import open_store

            self._store = open_store(self.options.metadata_store, self.options.job_name)
        return self._store

    @property
    def lease(self):
        """This driver's ownership of the job (one query per job.name and store): held by every Spark call."""
        if self._lease is None:
            from ..metadata.lease import DriverLease

            self._lease = DriverLease(self.store, ttl_ms=self.options.ownership_ttl_ms)
        return self._lease


def claim_once(marker: str, line: str) -> bool:
    """Create ``marker`` holding ``line``; False when it exists already (another attempt fired first).

    The test-only fault hooks of both sources (``testing.failInReadOnce``, ``testing.failAfterRecord``) fire
    once per query across task retries and processes: the marker file is that "once".
    """
    import os

    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(line + "\n")
    return True
