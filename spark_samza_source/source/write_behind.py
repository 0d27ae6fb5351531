"""Write-behind for the driver's mirror writes: ``commit`` hands them over and returns, a daemon thread does them.

Spark calls a source's ``commit`` inside its ``walCommit`` phase, on the critical path of every micro-batch;
the writes for tools (the checkpoint mirror, the consumer group, the Kinesis shard -> task map and batch-end
clean-up) are store and broker round trips with fsyncs that the batch does not need. ``JobCoordinator.commit``
(the one commit path of both sources, docs/architecture.md §9) hands them here; they run on one thread while the
batch runs, newest first: a job submitted while an older one still waits replaces it (the newer positions
supersede the older ones, and every mirror is absolute, never incremental). :meth:`WriteBehind.settle` is the
barrier the coordinator passes at the next ``latestOffset``: it waits for the job in progress and raises what a
job raised, so a failed write fails the query one call later, and the mirrors never trail by more than one batch
more.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["WriteBehind"]

log = logging.getLogger(__name__)


class WriteBehind:
    """One daemon thread running the newest submitted job; thread-safe."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._cond = threading.Condition()
        self._pending: Callable[[], None] | None = None
        self._running = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` soon on the writer thread; a job submitted before and not yet started is dropped."""
        with self._cond:
            self._pending = job
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def settle(self, timeout_s: float | None = None) -> bool:
        """Wait until every submitted job has run; re-raise the first error one raised (once). False on timeout."""
        with self._cond:
            done = self._cond.wait_for(lambda: self._pending is None and not self._running, timeout_s)
            error, self._error = self._error, None
        if error is not None:
            raise error
        return done

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None)
                job, self._pending = self._pending, None
                self._running = True
            try:
                if job is not None:  # always: the wait above returns only with a job pending
                    job()
            except BaseException as err:  # noqa: BLE001 - handed to the caller of settle, which raises it
                with self._cond:
                    if self._error is None:
                        self._error = err
            finally:
                with self._cond:
                    self._running = False
                    self._cond.notify_all()
