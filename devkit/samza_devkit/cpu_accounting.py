"""Where the suite's CPU goes: CPU seconds of each test module, this process and everything under it.

``pytest --cpu-report=FILE`` (the devkit's plugin adds the option) appends one line per test module to FILE (each
pytest-xdist worker its own lines): the module, its wall seconds and the CPU seconds that the worker process and its
descendants (Spark's JVM, Python workers, brokers, emulators) used while it ran. The CPU of a process is read from
``/proc``: its own time, plus what its children that already ended and were waited for used. A module is charged
what the tree used between its first test's start and its last test's end, so a server a module fixture started
(and the session's JVM, shared by all modules) is charged to whichever module was running then: a figure for
finding where the time goes, not an invoice.

``python -m samza_devkit.cpu_accounting FILE`` sums a report up; ``--module-times FILE`` turns it into
``tests/module_times.tsv``, the order in which ``make test`` starts the modules (:mod:`samza_devkit.module_order`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, own + reaped children's CPU seconds) of ``pid``, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after the command: state, ppid, ... utime is field 14 of the full line, i.e. index 11 here
    return int(fields[1]), sum(int(v) for v in fields[11:15]) / _TICKS


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds used so far by ``root`` (this process) and every live descendant of it."""
    root = os.getpid() if root is None else root
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                parents[int(entry)], cpu[int(entry)] = stat
    total = 0.0
    for pid, seconds in cpu.items():
        node = pid
        while node > 1 and node != root:
            node = parents.get(node, 0)
        if node == root:
            total += seconds
    return total


class ModuleCpu:
    """Charges each test module the tree's CPU between its first test and its last."""

    def __init__(self, report: str):
        self.report = Path(report)
        self.module: str | None = None
        self.started = (0.0, 0.0)

    def test_starts(self, module: str) -> None:
        if module != self.module:
            self.flush()
            self.module, self.started = module, (time.monotonic(), tree_cpu_seconds())

    def flush(self) -> None:
        if self.module is None:
            return
        wall, cpu = time.monotonic() - self.started[0], tree_cpu_seconds() - self.started[1]
        with open(self.report, "a") as out:
            out.write(f"{self.module}\t{wall:.1f}\t{cpu:.1f}\n")
        self.module = None


def summary(report: str, top: int = 25) -> str:
    """The report's modules by CPU seconds, largest first, with the total."""
    rows = []
    for line in Path(report).read_text().splitlines():
        module, wall, cpu = line.split("\t")
        rows.append((float(cpu), float(wall), module))
    rows.sort(reverse=True)
    total_cpu, total_wall = sum(r[0] for r in rows), sum(r[1] for r in rows)
    lines = [f"{cpu:8.1f} CPU-s {wall:8.1f} s  {module}" for cpu, wall, module in rows[:top]]
    lines.append(f"{total_cpu:8.1f} CPU-s {total_wall:8.1f} s  all {len(rows)} modules (wall summed over workers)")
    return "\n".join(lines)


def module_times(report: str) -> str:
    """The report as ``tests/module_times.tsv`` (:mod:`samza_devkit.module_order`): each module's wall seconds,
    longest first."""
    walls: dict[str, float] = {}
    for line in Path(report).read_text().splitlines():
        module, wall, _cpu = line.split("\t")
        walls[module] = walls.get(module, 0.0) + float(wall)
    header = ("# test module<TAB>wall seconds in a whole `make test` (--cpu-report): the longest start first "
              "(samza_devkit.module_order)\n")
    return header + "".join(f"{module}\t{wall:.0f}\n" for module, wall in sorted(walls.items(), key=lambda kv: -kv[1]))


if __name__ == "__main__":
    import sys

    if sys.argv[1] == "--module-times":
        sys.stdout.write(module_times(sys.argv[2]))
    else:
        print(summary(sys.argv[1]))
