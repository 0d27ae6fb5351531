"""boto3 clients of the ``s3://`` and ``dynamodb://`` stores: one per process for the same settings.

A store is opened on the driver for each query and on the executors for each samza-kinesis task, which records its
batch ends there. Making a boto3 client takes a session of its own, costs 80-240 ms of CPU (botocore reads its
endpoint rules and the service's model from JSON; ``benchmarks/worker_collection.py``) and leaves some 31,000
Python objects for the worker's collector: per task, more than recording the ends costs. A client is safe to share
between threads (a session is not, so each is made under the lock and only its client is kept), so stores opened
in one process with the same settings share one. The key holds the settings themselves, credentials included; it
lives in this process's memory only.

Sessions of different settings (a Kinesis client and an S3 store in one executor task, a role's STS client beside
them) share one botocore data loader (:func:`boto3_session`): what it reads is botocore's own data, the same for
every session, and each session with a loader of its own parsed it from JSON again (the endpoint list and partitions,
each service's model and endpoint rules), about half of what making a client costs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["boto3_session", "shared_client"]

_CLIENTS: dict[Hashable, Any] = {}
_LOCK = threading.Lock()
_LOADER: Any = None  # botocore.loaders.Loader, made by the first session of the process
_LOADER_LOCK = threading.Lock()  # apart from _LOCK: a client made under _LOCK makes its session here


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


def boto3_session(botocore_session: Any = None, **kwargs: Any) -> Any:
    """``boto3.Session(**kwargs)`` (on ``botocore_session`` if given) whose botocore data loader is this process's
    one: JSON botocore ships is parsed once per process, not once per session. The loader is made from the first
    session's data path (``AWS_DATA_PATH`` included), as that session would have made its own."""
    global _LOADER
    import boto3
    import botocore.session
    from botocore.loaders import create_loader

    core = botocore_session if botocore_session is not None else botocore.session.get_session()
    with _LOADER_LOCK:
        if _LOADER is None:
            _LOADER = create_loader(core.get_config_variable("data_path"))
        core.register_component("data_loader", _LOADER)
        session = boto3.Session(botocore_session=core, **kwargs)
        # boto3 adds its own data directory to the loader of every session it makes: once is enough
        _LOADER.search_paths[:] = list(dict.fromkeys(_LOADER.search_paths))
    return session
