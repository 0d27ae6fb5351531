"""Printing and recording shared by the benchmark scripts (``kafka_source.py``, ``kinesis_source.py``).

Each script prints its figures as it goes (``say``), keeps them with their targets (``record``) and ends with one
summary table (``print_summary``); ``load`` says what else the shared machine was doing. The Spark parts read
``query.recentProgress`` (``progress_dicts``, ``iso_ts``) and print every batch's phases (``print_batches``).
Imported as a sibling module: the scripts are run as ``python benchmarks/<name>.py``.
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import resource
from dataclasses import dataclass
from datetime import datetime


@dataclass
class Row:
    figure: str
    value: str
    target: str
    met: bool | None  # None: for information, no target


RESULTS: list[Row] = []
PHASES = ("latestOffset", "queryPlanning", "getBatch", "walCommit", "addBatch", "commitOffsets")


def say(text: str = "") -> None:
    print(text, flush=True)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on {os.cpu_count()} CPUs"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def record(figure: str, value: str, target: str, met: bool | None) -> None:
    RESULTS.append(Row(figure, value, target, met))


def profile_text(fn, top: int = 20, sort: str = "cumulative") -> str:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats(sort).print_stats(top)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    return "\n".join("    " + ln for ln in lines)


def progress_dicts(query) -> list[dict]:
    out = []
    for p in query.recentProgress:
        if isinstance(p, dict):
            out.append(p)
        elif hasattr(p, "json"):
            out.append(json.loads(p.json))
        else:
            out.append(json.loads(str(p)))
    return out


def iso_ts(text: str) -> float:
    """Epoch seconds of a progress ``timestamp`` (ISO 8601, 'Z' for UTC)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def print_batches(progress: list[dict]) -> None:
    say("      batch     rows  trigger ms  " + "  ".join(PHASES) + "  (ms)  processedRowsPerSecond")
    for p in progress:
        d = p["durationMs"]
        phases = "  ".join(f"{d.get(k, 0):>{len(k)},}" for k in PHASES)
        say(f"      {p['batchId']:>5} {p['numInputRows']:>8,} {d.get('triggerExecution', 0):>11,}  {phases}"
            f"        {p.get('processedRowsPerSecond', 0):>10,.0f}")


def print_summary() -> None:
    say("== summary")
    width = max(len(r.figure) for r in RESULTS)
    vwidth = max(len(r.value) for r in RESULTS)
    say(f"  {'figure':<{width}}  {'value':>{vwidth}}  {'target':<9}  verdict")
    for r in RESULTS:
        verdict = "-" if r.met is None else ("MET" if r.met else "MISSED")
        say(f"  {r.figure:<{width}}  {r.value:>{vwidth}}  {r.target:<9}  {verdict}")
    say(f"  ({load()})")
