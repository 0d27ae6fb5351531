"""Executors: keep the full garbage collection that follows every task in a reused Python worker cheap.

PySpark's worker daemon runs ``gc.collect()`` after each task of a reused worker (``spark.python.worker.reuse``,
on by default). A full collection traverses every object the process's collector tracks, and a worker that has run a
read of ours holds 70,000-120,000 of them: PySpark's and pyarrow's modules, confluent-kafka or boto3 with its service
models, and the consumers and clients a worker keeps between tasks. Measured: 40 ms of CPU per collection with
the imports alone, 64 ms once a Kinesis, an S3 and a DynamoDB client exist, paid after every task whether it read one
record or a million; for a query of small, frequent batches, most of what its Python workers spend.

Those objects live as long as the worker. After a worker's first read has ended, :func:`freeze_long_lived_objects`
moves everything the collector tracks into its permanent generation (``gc.freeze()``), which collections skip, so the
collection after each later task traverses only what that task left. Reference counting still frees a frozen object
as soon as nothing refers to it (a consumer the cache drops, a client closed); only a reference cycle among frozen
objects stays until the worker exits, and what is frozen is, once per worker, the modules, the caches and what the
first task still held when it ended.

An executor module: it imports nothing of the package.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

__all__ = ["freeze_long_lived_objects", "freezing_after_first_read"]

_frozen = False


def freeze_long_lived_objects() -> bool:
    """Freeze what the collector tracks now, once per process; True when this call froze it."""
    global _frozen
    if _frozen:
        return False
    _frozen = True
    gc.freeze()
    return True


def freezing_after_first_read(batches: Iterator) -> Iterator:
    """``batches`` unchanged; once the first of them in this process has been read to its end, the process's
    objects are frozen (a read that fails leaves that to a later one)."""
    if _frozen:
        return batches
    return _then_freeze(batches)


def _then_freeze(batches: Iterator) -> Iterator:
    yield from batches
    freeze_long_lived_objects()
