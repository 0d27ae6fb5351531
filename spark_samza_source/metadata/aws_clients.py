"""boto3 clients of the ``s3://`` and ``dynamodb://`` stores: one per process for the same settings.

A store is opened on the driver for each query and on the executors for each samza-kinesis task, which records its
batch ends there. Making a boto3 client takes a session of its own, costs 80-240 ms of CPU (botocore reads its
endpoint rules and the service's model from JSON; ``benchmarks/worker_collection.py``) and leaves some 31,000
Python objects for the worker's collector: per task, more than recording the ends costs. A client is safe to share
between threads (a session is not, so each is made under the lock and only its client is kept), so stores opened
in one process with the same settings share one. The key holds the settings themselves, credentials included; it
lives in this process's memory only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["shared_client"]

_CLIENTS: dict[Hashable, Any] = {}
_LOCK = threading.Lock()


def shared_client(key: Hashable, make: Callable[[], Any]) -> Any:
    """The client made by ``make()`` for ``key`` (every setting the client depends on), made once per process; an
    error of ``make`` is raised and nothing is kept."""
    client = _CLIENTS.get(key)
    if client is None:
        with _LOCK:
            client = _CLIENTS.get(key)
            if client is None:
                client = _CLIENTS[key] = make()
    return client
