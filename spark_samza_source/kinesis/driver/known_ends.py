"""The recorded ends of complete batches that this driver has read, kept so that a batch's ends are listed once.

A batch's ends are read three times per batch without this: the plan of batch N + 1 reads batch N's ends (its
starts), the commit of batch N (which Spark calls right after that plan) reads them again for the mirrors, and the
clean-up after it lists the namespace to delete what is committed. On S3 a listing is a LIST plus a GET per
object, so at 1,000 shards each of those is a thousand GETs.

Why keeping them is safe: the driver reads batch N's ends only once batch N has run to its end (Spark plans batch
N + 1 after batch N's stage completed, and a restart replays an uncommitted batch before it plans the next), so
every shard read in batch N has recorded its end, and an end never changes once recorded (``put_if_absent``: a
later attempt reads to the first attempt's end, never records another). What was read is what is stored until
the clean-up deletes it; the clean-up then deletes exactly the keys that were read, in one bulk delete.

The first clean-up of a driver, and every one after a clean-up that failed, still lists the namespace: it is what
removes what an earlier driver (a crash, a restart) left behind, and the damaged records of committed batches.
Thread-safe: the commit runs on Spark's thread, the clean-up on the write-behind thread (``source/write_behind.py``).
"""

from __future__ import annotations

import threading

from ..microbatch_ends import BatchEnds, RecordedEnd

__all__ = ["KnownEnds"]


class KnownEnds:
    """{(stream scope, batch): the ends recorded for it} of the batches read and not yet cleaned up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read: dict[tuple[str, int], dict[str, RecordedEnd]] = {}
        self._swept: set[str] = set()  # scopes whose namespace a clean-up has listed since this driver started

    def recorded_for(self, ends: BatchEnds, batch: int) -> dict[str, RecordedEnd]:
        """Batch ``batch``'s recorded ends, which must have run to its end: read from the store the first time only."""
        key = (ends.stream or "", batch)
        with self._lock:
            found = self._read.get(key)
        if found is None:
            found = ends.recorded_for(batch)
            with self._lock:
                self._read[key] = found
        return dict(found)

    def clean_up_before(self, ends: BatchEnds, batch: int) -> int:
        """Delete the ends of batches < ``batch`` (committed): the ones read, by key; a listing the first time (and
        after a failed clean-up) for what was left by others. Returns how many keys were deleted or named."""
        scope = ends.stream or ""
        with self._lock:
            swept = scope in self._swept
            self._swept.discard(scope)  # set again only when this clean-up succeeds
            done = {b: list(found) for (s, b), found in self._read.items() if s == scope and b < batch}
        deleted = ends.delete_recorded(done) if swept else ends.cleanup_before(batch)
        with self._lock:
            self._swept.add(scope)
            for b in done:
                self._read.pop((scope, b), None)
        return deleted
