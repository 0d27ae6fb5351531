"""Install a pinned npm package once into a cache directory, for the Node-based emulators (kinesalite, kinesis-mock).

The package goes to ``<cache>/<version>/node_modules`` (``npm install --prefix``), under a file lock so parallel
test processes install it once and the others find it installed. Nothing is installed globally, and a version
already in the cache is used without asking the registry again.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["NpmPackageNotAvailable", "cache_root", "install_npm_package"]


class NpmPackageNotAvailable(RuntimeError):
    """npm or node is missing, or installing the package failed (the message says which)."""


def cache_root(env_var: str, name: str) -> Path:
    """The cache directory of emulator ``name``: ``$env_var`` when set, else ``~/.cache/spark-samza-source/<name>``."""
    configured = os.environ.get(env_var, "").strip()
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "spark-samza-source" / name


def install_npm_package(package: str, version: str, cache: Path, *,
                        error: type[NpmPackageNotAvailable] = NpmPackageNotAvailable,
                        timeout_s: float = 300.0) -> Path:
    """The ``node_modules`` directory holding ``package@version`` under ``cache``, installed there if needed.

    Raises ``error`` (a subclass of :class:`NpmPackageNotAvailable`, so callers can name the emulator) when node or
    npm is missing, or npm fails or takes longer than ``timeout_s``."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise error(f"{'node' if node is None else 'npm'} is not installed (needed for the npm package {package})")
    prefix = Path(cache) / version
    modules = prefix / "node_modules"
    marker = modules / package / "package.json"
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time; the others find it installed
        if not marker.exists():
            _npm_install(npm, prefix, f"{package}@{version}", error, timeout_s)
            if not marker.exists():
                raise error(f"npm installed {package}@{version} but {marker} is missing")
    return modules


def _npm_install(npm: str, prefix: Path, spec: str, error: type[NpmPackageNotAvailable], timeout_s: float) -> None:
    cmd = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save", spec]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise error(f"'{' '.join(cmd)}' took longer than {timeout_s:.0f}s") from None
    if done.returncode != 0:
        raise error(f"'{' '.join(cmd)}' failed with code {done.returncode}: {(done.stderr or done.stdout)[-2000:]}")
