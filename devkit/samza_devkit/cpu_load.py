"""Run a command beside a CPU hog: the suite on a busy machine, on purpose.

``python -m samza_devkit.cpu_load [--per-core 3] [--max-seconds 5400] [--log FILE] -- COMMAND...`` starts
``per-core x cores`` busy processes at the same priority as everything else (a machine shared with other builds
does not nice them either), runs COMMAND, and stops the hogs when it ends, when this process dies (each hog
watches its parent), or after ``--max-seconds`` at the latest. It exits with COMMAND's status and prints the load
seen while it ran (min, median and max of the 1-minute load average, sampled every 15 s), so a run's figures carry
the load they were measured under.

Pure Python on purpose: nothing to install (``stress-ng`` would be a Debian package on every machine that runs
it), and a loop of bytecode keeps a core as busy as any other runnable thread does.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import threading
import time


def _spin(parent: int, deadline: float) -> None:
    """Keep one core busy until ``deadline`` or until ``parent`` is gone (never outlive the run)."""
    while time.monotonic() < deadline and os.getppid() == parent:
        for _ in range(200_000):
            pass


def start_hogs(count: int, max_seconds: float) -> list[multiprocessing.Process]:
    """``count`` busy processes that end by themselves after ``max_seconds``."""
    context = multiprocessing.get_context("fork")
    deadline = time.monotonic() + max_seconds
    hogs = [context.Process(target=_spin, args=(os.getpid(), deadline), daemon=True, name=f"cpu-hog-{i}")
            for i in range(count)]
    for hog in hogs:
        hog.start()
    return hogs


def stop_hogs(hogs: list[multiprocessing.Process]) -> None:
    for hog in hogs:
        hog.terminate()
    for hog in hogs:
        hog.join(5)


class LoadSampler(threading.Thread):
    """Samples the 1-minute load average every ``interval`` s (and appends each sample to ``log`` if given)."""

    def __init__(self, interval: float = 15.0, log: str | None = None):
        super().__init__(daemon=True, name="load-sampler")
        self.interval, self.log, self.samples = interval, log, []
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            load = os.getloadavg()[0]
            self.samples.append(load)
            if self.log:
                with open(self.log, "a") as out:
                    out.write(f"{time.strftime('%H:%M:%S')} load1={load:.2f}\n")

    def stop(self) -> str:
        self._stop_event.set()
        if not self.samples:
            return "load: no sample (the command ended within the first interval)"
        return (f"load (1-minute average, {len(self.samples)} samples): min {min(self.samples):.1f}, "
                f"median {statistics.median(self.samples):.1f}, max {max(self.samples):.1f} "
                f"on {os.cpu_count()} cores")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-core", type=float, default=3.0, help="busy processes per core (default 3)")
    parser.add_argument("--max-seconds", type=float, default=5400.0, help="the hogs stop by then at the latest")
    parser.add_argument("--log", help="append every load sample to this file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given: python -m samza_devkit.cpu_load [options] -- COMMAND ARGS...")
    count = max(1, round(args.per_core * (os.cpu_count() or 1)))
    print(f"cpu_load: {count} busy processes beside: {' '.join(command)}", flush=True)
    sampler = LoadSampler(log=args.log)
    hogs = start_hogs(count, args.max_seconds)
    sampler.start()
    started = time.monotonic()
    try:
        status = subprocess.call(command)
    finally:
        stop_hogs(hogs)
        summary = sampler.stop()
    print(f"cpu_load: command exited {status} after {time.monotonic() - started:.0f} s; {summary}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
