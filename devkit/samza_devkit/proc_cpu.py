"""CPU seconds per process over a query's life, sampled from /proc, and peak RSS (benchmarks/kafka_vs_spark.py).

Why not "the process tree's CPU (own + reaped children's) at two instants": Spark's Python workers are forked by the
Python daemon, and a worker that ends is credited to its parent's reaped-children time only if that parent reaps
it while still in the tree; workers that leave the tree (or a daemon that ends) take their CPU with them, and the
two-instant difference came out negative or implausible (issue #49). Here every process's *own* ``utime + stime``
(``/proc/<pid>/stat`` fields 14 and 15, no children's time) is read at ``hz`` and the last value seen is kept per
process (pid and start time, so a reused pid is a new process); a query's CPU is, per process, the last value
seen minus the value at the query's start (0 for a process born after it). A process that ends loses at most
the CPU of its last ``1 / hz`` seconds (at 5 Hz: 0.2 s of a worker's life; Spark reuses its Python workers, so
they rarely end mid-query). Processes are grouped: the Spark JVM, the Python processes under it (daemon, workers,
the streaming source runner) and each extra root (the broker) with its own descendants.
"""

from __future__ import annotations

import bisect
import os
import threading
import time

__all__ = ["CpuSampler"]

_CLK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_Key = tuple[int, int]  # (pid, start time in clock ticks): a pid the kernel reuses is another process


def _read_all() -> dict[int, tuple[int, str, int, float, int]]:
    """pid -> (parent pid, command, start ticks, own CPU seconds, RSS bytes) of every live process."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        # fields[0] is stat field 3 (state): ppid 4, utime 14, stime 15, starttime 22, rss 24 -> index n - 3
        own_cpu = (int(fields[11]) + int(fields[12])) / _CLK
        out[int(name)] = (int(fields[1]), comm, int(fields[19]), own_cpu, int(fields[21]) * _PAGE)
    return out


class CpuSampler:
    """Samples the own CPU of the processes under each root (``roots``: group name -> pid; the Spark JVM's group
    is split into ``<name>`` for the JVM itself and ``<name>-python`` for the Python processes under it)."""

    def __init__(self, roots: dict[str, int], spark_group: str = "spark", hz: float = 5.0) -> None:
        self.roots, self.spark_group, self.period = dict(roots), spark_group, 1.0 / hz
        self._last: dict[_Key, tuple[str, float]] = {}  # process -> (group, own CPU seconds last seen)
        self._times: list[float] = []  # epoch seconds of each sample, and the groups' totals then (see ``between``)
        self._totals: list[dict[str, float]] = []
        self.peak_jvm = self.peak_worker = self.peak_python = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.sample()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self._thread.start()

    def _groups(self, procs: dict) -> dict[int, str]:
        children: dict[int, list[int]] = {}
        for pid, st in procs.items():
            children.setdefault(st[0], []).append(pid)
        member: dict[int, str] = {}
        for group, root in self.roots.items():
            frontier = [root]
            while frontier:
                pid = frontier.pop()
                if pid in procs and pid not in member:
                    python = group == self.spark_group and pid != root and procs[pid][1].startswith("python")
                    member[pid] = f"{group}-python" if python else group
                    frontier.extend(children.get(pid, []))
        return member

    def sample(self) -> None:
        procs = _read_all()
        members = self._groups(procs)
        with self._lock:
            for pid, group in members.items():
                self._last[(pid, procs[pid][2])] = (group, procs[pid][3])
            totals: dict[str, float] = {}
            for group, cpu in self._last.values():  # ended processes stay at their last value: totals only grow
                totals[group] = totals.get(group, 0.0) + cpu
            self._times.append(time.time())
            self._totals.append(totals)
            spark_root = self.roots.get(self.spark_group)
            if spark_root in procs:
                self.peak_jvm = max(self.peak_jvm, procs[spark_root][4])
            python = [procs[p][4] for p, g in members.items() if g == f"{self.spark_group}-python"]
            self.peak_worker = max(self.peak_worker, max(python, default=0))
            self.peak_python = max(self.peak_python, sum(python))  # shared pages counted in each process

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.sample()

    def mark(self) -> dict[_Key, float]:
        """The start of a measured window: every known process's CPU now; peaks restart."""
        self.sample()
        with self._lock:
            self.peak_jvm = self.peak_worker = self.peak_python = 0
            return {key: cpu for key, (_, cpu) in self._last.items()}

    def since(self, mark: dict[_Key, float]) -> dict[str, float]:
        """CPU seconds per group since ``mark``: each process's last value seen minus its value at the mark."""
        self.sample()
        totals: dict[str, float] = {}
        with self._lock:
            for key, (group, cpu) in self._last.items():
                totals[group] = totals.get(group, 0.0) + cpu - mark.get(key, 0.0)
        return totals

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds per group from epoch time ``start`` to ``end`` (the last sample at or before ``start``, the
        first at or after ``end``: at most one sampling period wider on each side): a query's steady batches."""
        with self._lock:
            i = max(0, bisect.bisect_right(self._times, start) - 1)
            j = min(len(self._times) - 1, bisect.bisect_left(self._times, end))
            first, last = self._totals[i], self._totals[j]
        return {g: last[g] - first.get(g, 0.0) for g in last}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
