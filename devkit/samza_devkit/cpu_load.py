"""Run a command beside a CPU hog: the suite on a busy machine, on purpose.

``python -m samza_devkit.cpu_load [--per-core 3] [--max-seconds 5400] [--log FILE] -- COMMAND...`` holds the
machine's run queue at about ``per-core x cores`` runnable threads while COMMAND runs: busy processes at the same
priority as everything else (a machine shared with other builds does not nice them either) make up whatever
COMMAND and the machine's other work leave short of that. Every 5 s it reads how many threads were runnable
(``procs_running`` of ``/proc/stat``, sampled 10 times a second) and starts or pauses (SIGSTOP / SIGCONT) hogs
accordingly, so the load is the one asked for whether the machine was quiet or already busy; already past it, no
hog runs. The hogs stop when COMMAND ends, when this process dies (each watches its parent), or after
``--max-seconds`` at the latest. It exits with COMMAND's status and prints the load seen while it ran (min, median
and max of the 1-minute load average, sampled every 15 s), so a run's figures carry the load they ran under.

Pure Python on purpose: nothing to install (``stress-ng`` would be a Debian package on every machine that runs
it), and a loop of bytecode keeps a core as busy as any other runnable thread does.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import threading
import time


def _spin(parent: int, deadline: float) -> None:
    """Keep one core busy until ``deadline`` or until ``parent`` is gone (never outlive the run). A hog the holder
    has paused cannot look at its parent: the kernel kills it when the parent dies (Linux's PR_SET_PDEATHSIG)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
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
        with contextlib.suppress(ProcessLookupError):
            os.kill(hog.pid, signal.SIGCONT)  # a paused hog must run to see its SIGTERM
        hog.terminate()
    for hog in hogs:
        hog.join(5)


def runnable_threads() -> int:
    """Threads runnable right now on the machine (``procs_running``), this one included."""
    with open("/proc/stat") as stat:
        for line in stat:
            if line.startswith("procs_running "):
                return int(line.split()[1])
    return 0


class LoadHolder(threading.Thread):
    """Keeps ``target`` threads runnable: as many of ``hogs`` running as the rest of the machine leaves short."""

    def __init__(self, hogs: list[multiprocessing.Process], target: float, period: float = 5.0):
        super().__init__(daemon=True, name="load-holder")
        self.hogs, self.target, self.period = hogs, target, period
        self.running = len(hogs)
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            samples = []
            for _ in range(int(self.period * 10)):
                if self._stop_event.wait(0.1):
                    return
                samples.append(runnable_threads() - 1)  # not this sampling thread itself
            others = statistics.mean(samples) - self.running
            self._set_running(max(0, min(len(self.hogs), round(self.target - others))))

    def _set_running(self, count: int) -> None:
        for index, hog in enumerate(self.hogs):
            with contextlib.suppress(ProcessLookupError):
                os.kill(hog.pid, signal.SIGCONT if index < count else signal.SIGSTOP)
        self.running = count

    def stop(self) -> None:
        self._stop_event.set()


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
    print(f"cpu_load: up to {count} busy processes holding about {count} runnable threads beside: "
          f"{' '.join(command)}", flush=True)
    sampler = LoadSampler(log=args.log)
    hogs = start_hogs(count, args.max_seconds)
    holder = LoadHolder(hogs, target=args.per_core * (os.cpu_count() or 1))
    sampler.start()
    holder.start()
    started = time.monotonic()
    child = subprocess.Popen(command)

    def stop_command(signum, _frame):  # a run stopped from outside stops its command too, not only the hogs
        child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop_command)
    try:
        status = child.wait()
    finally:
        holder.stop()
        stop_hogs(hogs)
        summary = sampler.stop()
    print(f"cpu_load: command exited {status} after {time.monotonic() - started:.0f} s; {summary}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
