"""kinesis-mock (npm package ``kinesis-local``) as a third Kinesis emulator: the one that serves enhanced fan-out.

moto registers stream consumers but has no ``SubscribeToShard``, kinesalite has neither; kinesis-mock serves
``RegisterStreamConsumer`` / ``DescribeStreamConsumer`` / ``SubscribeToShard`` (an AWS event stream over
HTTP/1.1) besides the polling API. Where it departs from AWS's documented behaviour, the devkit bridges it in front
of it (``kinesis_mock_bridge``); tests talk to the bridge, never to this process directly.

- :func:`ensure_kinesis_mock` installs the pinned version once into a cache directory (``npm_cache``;
  ``SAMZA_KINESIS_MOCK_DIR`` or ``~/.cache/spark-samza-source/kinesis-mock``): one self-contained ``main.js`` with no
  dependencies, nothing downloaded at run time. :class:`KinesisMockNotAvailable` when npm/node are missing or the
  install fails (the fixture turns that into a skip with the reason).
- :class:`KinesisMockProcess` runs it in a child ``node`` process on loopback, with no CREATING/UPDATING/DELETING
  delays worth waiting for, and stops it with SIGTERM. The child exits when its parent process is gone.

Ports: kinesis-mock binds the ports ``KINESIS_MOCK_PLAIN_PORT`` and ``KINESIS_MOCK_TLS_PORT`` on every interface and
has no setting for the address. Choosing a free port here and passing it would race with any other process
binding it first, so the launcher wraps Node's ``net.Server.listen`` instead: each server binds port 0 on the
loopback address (the kernel picks a free port, no race, nothing reachable from outside), and the two environment
values only tell the launcher which server is the plain HTTP one, whose bound port it prints as
``listening on http://127.0.0.1:PORT``. The TLS server is bound the same way and left unused.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .moto_server import ListeningChildProcess
from .npm_cache import NpmPackageNotAvailable, cache_root, install_npm_package

__all__ = ["KINESIS_MOCK_VERSION", "KinesisMockNotAvailable", "KinesisMockProcess", "ensure_kinesis_mock"]

KINESIS_MOCK_PACKAGE = "kinesis-local"
KINESIS_MOCK_VERSION = "0.6.2"

# The values kinesis-mock reads as its ports; the launcher binds port 0 for each and tells them apart by these.
_PLAIN_PORT_TAG = "4568"
_TLS_PORT_TAG = "4567"

# node -e script: argv[1] the address to bind, argv[2] kinesis-mock's main.js. Leaves at once on SIGTERM (kinesis-mock's
# own graceful exit waits for open connections, which can take the stopping test run 10 s), and when the parent dies.
_LAUNCHER = r"""
const net = require('net');
const host = process.argv[1];
const plainTag = Number(process.env.KINESIS_MOCK_PLAIN_PORT);
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (first, ...rest) {
  const asked = Number(typeof first === 'object' && first !== null ? first.port : first);
  const done = rest.find((arg) => typeof arg === 'function');
  return listen.call(this, 0, host, () => {
    if (asked === plainTag) console.log('listening on http://' + host + ':' + this.address().port);
    if (done) done();
  });
};
const exitNow = process.exit.bind(process);  // cats-effect replaces process.exit with a graceful exit that waits
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) exitNow(0); }, 1000).unref();
process.on('SIGTERM', () => exitNow(0));
require(process.argv[2]);
"""

# Operations complete at once (kinesis-mock's default is 500 ms each); the states still pass through CREATING etc.
_DURATIONS = ("CREATE_STREAM", "DELETE_STREAM", "REGISTER_STREAM_CONSUMER", "DEREGISTER_STREAM_CONSUMER",
              "MERGE_SHARDS", "SPLIT_SHARD", "UPDATE_SHARD_COUNT", "UPDATE_STREAM_MODE",
              "START_STREAM_ENCRYPTION", "STOP_STREAM_ENCRYPTION")


class KinesisMockNotAvailable(NpmPackageNotAvailable):
    """npm or node is missing, or installing kinesis-mock failed (the message says which)."""


def cache_dir() -> Path:
    return cache_root("SAMZA_KINESIS_MOCK_DIR", "kinesis-mock")


def ensure_kinesis_mock(prefix: Path | None = None, timeout_s: float = 300.0) -> Path:
    """The ``node_modules`` directory holding kinesis-mock ``KINESIS_MOCK_VERSION``, installed there if needed."""
    return install_npm_package(KINESIS_MOCK_PACKAGE, KINESIS_MOCK_VERSION, Path(prefix or cache_dir()),
                               error=KinesisMockNotAvailable, timeout_s=timeout_s)


class KinesisMockProcess(ListeningChildProcess):
    """kinesis-mock in a child ``node`` process; ``start()`` returns its plain HTTP endpoint once it answers."""

    name = "kinesis-mock"

    def __init__(self, host: str = "127.0.0.1", startup_timeout: float = 60.0, modules: Path | None = None) -> None:
        super().__init__(startup_timeout)
        self.host = host
        self.modules = modules

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        package = (self.modules or ensure_kinesis_mock()) / KINESIS_MOCK_PACKAGE
        env = {
            **os.environ,
            "KINESIS_MOCK_PLAIN_PORT": _PLAIN_PORT_TAG,
            "KINESIS_MOCK_TLS_PORT": _TLS_PORT_TAG,
            "KINESIS_MOCK_CERT_PATH": str(package / "server.json"),  # it looks in the working directory otherwise
            "SHARD_LIMIT": "1000",
            "LOG_LEVEL": "ERROR",
            "SHOULD_PERSIST_DATA": "false",
            # cats-effect's CPU starvation warnings on stderr say only that the shared test machine is busy
            "CATS_EFFECT_CPU_STARVATION_CHECK_INITIAL_DELAY": "Inf",
            **{f"{op}_DURATION": "0ms" for op in _DURATIONS},
        }
        node = shutil.which("node") or "node"
        return [node, "-e", _LAUNCHER, self.host, str(package / "main.js")], env
