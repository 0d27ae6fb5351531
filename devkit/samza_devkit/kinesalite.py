"""kinesalite (npm) as a second, independent Kinesis emulator for the tests, beside moto.

Two emulators written by different people disagree where the Kinesis API reference leaves room or where one of
them is wrong; running the Kinesis integration tests on both keeps the product from leaning on one emulator's
habits (``docs/kinesis-emulators.md`` lists the differences found and which one matches AWS).

- :func:`ensure_kinesalite` installs the pinned version once into a cache directory (``npm_cache``;
  ``SAMZA_KINESALITE_DIR`` or ``~/.cache/spark-samza-source/kinesalite``), under a file lock so parallel test
  processes install it once; :class:`KinesaliteNotAvailable` when ``npm``/``node`` are missing or the install
  fails (the fixture turns that into a skip with the reason).
- :class:`KinesaliteProcess` starts it on a free loopback port (the kernel picks it: the launcher listens on port 0
  and prints the port it bound), in memory, with no CREATING/UPDATING/DELETING delays worth waiting for, and stops
  it with SIGTERM. The child exits when its parent process is gone (it polls ``process.ppid``).

Only Kinesis: DynamoDB (lease tables, the metadata store) stays on moto.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .moto_server import ListeningChildProcess
from .npm_cache import NpmPackageNotAvailable, cache_root, install_npm_package

__all__ = ["KINESALITE_VERSION", "KinesaliteNotAvailable", "KinesaliteProcess", "ensure_kinesalite"]

KINESALITE_VERSION = "3.3.3"
_LISTENING = "listening on "

# node -e script: kinesalite's own server factory, bound to port 0 on loopback; leaves when the parent does.
_LAUNCHER = r"""
const kinesalite = require('kinesalite');
const parent = process.ppid;
const server = kinesalite({createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 1000});
server.listen(Number(process.argv[2] || 0), process.argv[1], () => {
  console.log('listening on http://' + process.argv[1] + ':' + server.address().port);
});
setInterval(() => { if (process.ppid !== parent) process.exit(0); }, 1000).unref();
process.on('SIGTERM', () => server.close(() => process.exit(0)));
setTimeout(() => process.exit(0), 2 ** 31 - 1);
"""


class KinesaliteNotAvailable(NpmPackageNotAvailable):
    """npm or node is missing, or installing kinesalite failed (the message says which)."""


def cache_dir() -> Path:
    return cache_root("SAMZA_KINESALITE_DIR", "kinesalite")


def ensure_kinesalite(prefix: Path | None = None, timeout_s: float = 300.0) -> Path:
    """The ``node_modules`` directory holding kinesalite ``KINESALITE_VERSION``, installed there if needed."""
    return install_npm_package("kinesalite", KINESALITE_VERSION, Path(prefix or cache_dir()),
                               error=KinesaliteNotAvailable, timeout_s=timeout_s)


class KinesaliteProcess(ListeningChildProcess):
    """A kinesalite server in a child ``node`` process; ``start()`` returns its endpoint once it answers HTTP."""

    name = "kinesalite"

    def __init__(self, host: str = "127.0.0.1", startup_timeout: float = 60.0, modules: Path | None = None,
                 port: int = 0) -> None:
        super().__init__(startup_timeout)
        self.host = host
        self.modules = modules
        self.port = port  # 0: a free one (a restart passes the port it had, so its endpoint stays)

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        modules = self.modules or ensure_kinesalite()
        env = {**os.environ, "NODE_PATH": str(modules)}
        return [shutil.which("node") or "node", "-e", _LAUNCHER, self.host, str(self.port)], env

