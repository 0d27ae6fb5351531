"""Executors: refuse a metadata store the driver's Kinesis query cannot share with them.

A samza-kinesis task records where each shard's read stopped in the metadata store, and the driver plans the next
batch from those records (``kinesis/microbatch_ends.py``). A local directory (``file:``, or a bare path such as
the default ``samza-metadata``, made absolute in each process's own working directory) is the same directory on
the driver and the executors only in local mode, or on a filesystem every node mounts at the same path. Elsewhere each
executor would record its ends in a directory of its own, the driver would never see them, and the query could
not make progress. A Python data source cannot see Spark's master, so the check is made where the problem is: an
executor opening a local store looks for the driver's job lease there (every streaming batch is planned by a
driver holding it, ``metadata/lease.py``), and fails naming the option and the fix when it is not there.
"""

from __future__ import annotations

import socket

from ...core.errors import MetadataStoreError
from ...core.store import MetadataStore
from ...metadata.filesystem import FileSystemMetadataStore
from ...options.namespaces import LEASE, LEASE_KEY
from .. import errors

__all__ = ["check_store_shared_with_driver"]

# (store URI, job) pairs this process has seen the driver's lease in: shared once, shared for good, so a task pays
# the check only in the first batch a worker process runs.
_SEEN_SHARED: set[tuple[str, str]] = set()


def check_store_shared_with_driver(store: MetadataStore) -> None:
    """Raise :class:`UnreachableStoreError` when ``store`` is a local directory without the driver's lease in it."""
    if not (isinstance(store, FileSystemMetadataStore) and store.uri.startswith("file:")):
        return  # dynamodb://, s3://, object stores: the same store wherever it is opened
    key = (store.uri, store.job_name)
    if key in _SEEN_SHARED:
        return
    try:
        lease = store.get(LEASE, LEASE_KEY)
    except MetadataStoreError:
        return  # a store that fails is no sign of a store not shared: the read that needs it reports the failure
    if lease is not None:
        _SEEN_SHARED.add(key)
        return
    raise errors.store_not_shared(store.uri, socket.gethostname(), store.job_name)
