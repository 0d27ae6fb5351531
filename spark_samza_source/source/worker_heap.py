"""Executors: keep the full garbage collection that follows every task in a reused Python worker cheap.

PySpark's worker daemon runs ``gc.collect()`` after each task of a reused worker (``spark.python.worker.reuse``,
on by default). A full collection traverses every object the process's collector tracks: some 44,000 in any Python data
source's worker (PySpark's worker modules and pyarrow), 54,000 with samza-kafka's read path, 159,000 with
samza-kinesis's and the clients it keeps between tasks (a boto3 client alone is about 31,000). Measured
(``benchmarks/worker_collection.py``): 30-45 ms of CPU per collection for the first two, 120-190 ms for the last,
paid after every task whether it read one record or a million; for a query of small, frequent batches, most of what
its Python workers spend.

Those objects live as long as the worker. So when a read has ended and the collector tracks more than
:data:`FREEZE_ABOVE_TRACKED_OBJECTS` objects that survive a collection (a worker's first read, or one that created a
consumer or client the worker keeps), they are moved into the collector's permanent generation (``gc.freeze()``),
which collections skip: the collection after each later task traverses only what that task left. The collection made
first means garbage is freed, never frozen. Reference counting still frees a frozen object as soon as nothing refers
to it (a consumer the cache drops, a client closed); only a reference cycle among frozen objects stays until the
worker exits.

An executor module: it imports nothing of the package.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

__all__ = ["FREEZE_ABOVE_TRACKED_OBJECTS", "freeze_long_lived_objects", "freezing_after_read"]

#: more surviving objects than a task leaves behind (a few hundred), fewer than one boto3 client or the imports add
FREEZE_ABOVE_TRACKED_OBJECTS = 20_000


def freeze_long_lived_objects() -> bool:
    """Freeze the objects that survive a collection when there are many of them; True when it froze."""
    if len(gc.get_objects()) <= FREEZE_ABOVE_TRACKED_OBJECTS:  # frozen objects are not counted: cheap once frozen
        return False
    gc.collect()
    if len(gc.get_objects()) <= FREEZE_ABOVE_TRACKED_OBJECTS:
        return False
    gc.freeze()
    return True


def freezing_after_read(batches: Iterator) -> Iterator:
    """``batches`` unchanged; once they have been read to their end, :func:`freeze_long_lived_objects` (a read
    that fails freezes nothing)."""
    yield from batches
    freeze_long_lived_objects()
