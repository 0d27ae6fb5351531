"""A hand-run mutation check of the rules that set this project apart: flip one key condition at a time in
``core/``, the Kafka planner and the Kinesis planner, run the fast tests that should notice, report survivors.

    .venv/bin/python benchmarks/mutation_check.py            # every mutant (~5 minutes on 2 cores)
    .venv/bin/python benchmarks/mutation_check.py --only kinesis-lineage-ignores-retired --keep

It never touches the working tree: the repository is copied to a temporary directory (without .git, .venv and
caches), each mutant is applied to the copy's file (the original put back between mutants), and pytest runs in
the copy with ``PYTHONPATH`` pointing at it, so the copy's ``spark_samza_source`` and ``samza_devkit`` are the
ones imported (checked before any mutant runs). Tests are unit tests, plus the moto-backed reader tests (no
Spark) for the batch-end recording. A mutant is *killed* when its tests fail (or time out), *survived* when they
pass, *stale* when its original text is no longer in the file (the code moved on: update the table).

The table below is the whole tool: each entry names the rule, the file, the exact text and its mutation, and
the tests to run. Results and survivors explained: docs/mutation-report.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = "spark_samza_source/core/"
KAFKA = "spark_samza_source/kafka/"
KIN = "spark_samza_source/kinesis/"
# core's tests and the Kafka planner's: the planner plans with core's grouper and expansion algorithm, so its
# tests kill mutants of core too
UNIT_CORE = ["tests/unit/core", "tests/unit/kafka"]
UNIT_KIN = ["tests/unit/kinesis"]
READER = ["tests/integration/kinesis/test_kinesis_reader.py", "-k",
          "record or retried or race or winner or attempts or streamed"]
READER_COMPACTED = ["tests/integration/kafka/test_reader_compacted.py"]
S3_RACES = ["tests/integration/metadata/test_metadata_fs_concurrency.py", "-k",
            "s3 and (one_winner or threads or keep_every)"]
BROKER_TXN = ["tests/integration/broker/test_broker_transactions.py"]
S3_PROBE = ["tests/integration/metadata/test_metadata_fs_concurrency.py", "-k", "conditional or conditions"]


@dataclass(frozen=True)
class Mutant:
    """One rule broken on purpose: ``old`` replaced by ``new`` in ``path`` (tuples: several edits, each in the
    file at the same place of ``path`` when that is a tuple too, else all in ``path``)."""

    name: str
    rule: str
    path: str | tuple[str, ...]
    old: str | tuple[str, ...]
    new: str | tuple[str, ...]
    tests: tuple[str, ...]

    def edits(self) -> list[tuple[str, str, str]]:
        """(path, old, new) of every edit."""
        olds = self.old if isinstance(self.old, tuple) else (self.old,)
        news = self.new if isinstance(self.new, tuple) else (self.new,)
        paths = self.path if isinstance(self.path, tuple) else (self.path,) * len(olds)
        return list(zip(paths, olds, news, strict=True))


def m(name, rule, path, old, new, tests):
    return Mutant(name, rule, path, old, new, tuple(tests))


MUTANTS = [
    # ---- barrier release (kafka/driver/planner.py) ------------------------------------------------------------------
    m("release-ignores-feeder-targets", "barrier release: a barrier is released only when every feeder reached its "
      "target", KAFKA + "driver/planner.py",
      "if start is not None and start < target:\n                return False",
      "if False:\n                return False", UNIT_CORE),
    m("release-ignores-earlier-growth", "barrier release: a feeder still held by an earlier growth is not drained",
      KAFKA + "driver/planner.py",
      "if any(other.grown_to < b.grown_to for other in barriers.get(feeder, ())):",
      "if False:", UNIT_CORE),
    m("release-while-settling", "barrier release: a settling barrier (targets unknown) is never released",
      KAFKA + "driver/planner.py", "        if b.settling:\n            return False",
      "        if False:\n            return False", UNIT_CORE),
    m("hold-ignored", "barriers hold new partitions at the cut", KAFKA + "driver/planner.py",
      "holds = [b.hold_at for b in barriers.get(ssp, ()) if b.hold_at is not None]", "holds = []", UNIT_CORE),
    m("no-barriers", "drain-first makes barriers for every growth", KAFKA + "driver/planner.py",
      "            barriers[held] = barriers.get(held, ()) + (barrier,)\n",
      "            pass\n", UNIT_CORE),
    # ---- feeders (core/expansion.py) --------------------------------------------------------------------------
    m("feeders-single-sibling", "feeders under hash % N: every r = q (mod gcd), not only q % previous",
      CORE + "expansion.py", "return frozenset(range(partition % step, previous_count, step))",
      "return frozenset({partition % previous_count})", UNIT_CORE),
    m("feeders-base-none", "the base feeder rule names every previous partition of the same task",
      CORE + "expansion.py",
      "            if self.partition_before_expansion(p, previous_count, initial_count) == target\n",
      "            if False\n", UNIT_CORE),
    m("old-partitions-not-held", "a new partition is held at the cut (old ones only by feeders)",
      KAFKA + "driver/planner.py", "hold_at = start if partition >= before else None", "hold_at = None", UNIT_CORE),
    # ---- settle cut (kafka/driver/planner.py) ------------------------------------------------------------------------
    m("settle-time-ignored", "a growth is cut expansion.settleTime after it is seen", KAFKA + "driver/planner.py",
      "prev_counts, inputs.job_model, rules.expansion_algorithm, lowest.get, inputs.now_ms + rules.settle_ms",
      "prev_counts, inputs.job_model, rules.expansion_algorithm, lowest.get, inputs.now_ms", UNIT_CORE),
    m("never-cut", "the plan that ends the settle time cuts the growth", KAFKA + "driver/planner.py",
      "if any(settled(b) for b in chain):", "if False:", UNIT_CORE),
    m("cut-at-start", "the cut is at the feeders' high watermark when the settle time ends",
      KAFKA + "driver/planner.py",
      "        if ssp in inputs.watermarks and ssp not in starts.missing:\n"
      "            return inputs.watermarks[ssp].high",
      "        if False:\n            return inputs.watermarks[ssp].high", UNIT_CORE),
    # ---- data-loss detection (kafka/driver/planner.py) ---------------------------------------------------------------
    m("no-loss-below-log-start", "a start below the log start is data loss", KAFKA + "driver/planner.py",
      "if marks.low <= position <= marks.high:", "if position <= marks.high:", UNIT_CORE),
    m("no-loss-offsets-backwards", "offsets gone backwards (topic re-created) are data loss",
      KAFKA + "driver/planner.py",
      "if marks.low <= position <= marks.high:", "if marks.low <= position:", UNIT_CORE),
    m("loss-never-fails", "failOnDataLoss=true stops the query", KAFKA + "driver/planner.py",
      "    if fail_on_data_loss:\n        raise (errors.planned_data_loss",
      "    if False:\n        raise (errors.planned_data_loss", UNIT_CORE),
    # ---- compacted topics (kafka/executor/reader.py; no Spark: read_ranges over the dev broker's compaction) ---------
    # A range ending in a gap is finished by either of two paths (a record at or past its end, or the consumer's
    # position reaching it); each alone keeps the rule, so the mutant breaks both.
    m("reader-waits-for-last-offset", "a range ending inside a compaction gap finishes without the stall timeout",
      (KAFKA + "executor/reader.py", KAFKA + "executor/read_control.py"),
      ("        if last >= end - 1:", "            if offset >= self.ranges[i].end:"),
      ("        if last == end - 1:", "            if self.b.state(i)[0] >= self.ranges[i].end:"), READER_COMPACTED),
    m("reader-any-jump-is-loss", "a compaction gap is not data loss: only a log start past the range start is",
      KAFKA + "executor/read_control.py",
      "        if low > nxt:\n            self._data_loss(i, nxt, min(low, first, self.ranges[i].end)",
      "        if first > nxt:\n            self._data_loss(i, nxt, min(first, self.ranges[i].end)", READER_COMPACTED),
    # ---- startpoints (kafka/driver/planner.py, core/startpoint_manager.py) -------------------------------------------
    m("startpoint-applied-twice", "a startpoint is applied once", KAFKA + "driver/planner.py",
      "if sp is not None and sp.creation_timestamp > inputs.previous.applied.get(key, -1):",
      "if sp is not None:", UNIT_CORE),
    m("delete-even-if-changed", "a startpoint is deleted only if unchanged", CORE + "startpoint_manager.py",
      "        if current.creation_timestamp != creation_timestamp:\n            log.info(",
      "        if False:\n            log.info(", UNIT_CORE),
    m("delete-not-conditional", "the deletion is a compare-and-delete (delete_if_equal)",
      CORE + "startpoint_manager.py",
      "        return self._store.delete_if_equal(NAMESPACE, key, raw)\n\n    def purge_expired",
      "        self._store.delete(NAMESPACE, key)\n        return True\n\n    def purge_expired", UNIT_CORE),
    # ---- Kinesis lineage (kinesis/driver/planner.py, kinesis/driver/mapper.py) ---------------------------------------
    m("kinesis-children-before-parents", "a child is readable only when every parent is drained",
      KIN + "driver/planner.py", "ready = all(p == sid or p not in starts or starts[p].is_shard_end for p in",
      "ready = all(True or p == sid or p not in starts or starts[p].is_shard_end for p in", UNIT_KIN),
    m("kinesis-children-never-released", "liveness: children of drained parents become readable",
      KIN + "driver/planner.py", "        out[sid] = READABLE if ready else BLOCKED",
      "        out[sid] = READABLE if ready and not listed[sid].parent_ids else BLOCKED", UNIT_KIN),
    m("kinesis-lineage-ignores-retired", "lineage lookup of a parent drained earlier (retired, lastTask)",
      KIN + "driver/mapper.py", "elif p in retired and 0 <= retired[p] < self._num_tasks:", "elif False:", UNIT_KIN),
    m("kinesis-last-task-not-learnt", "the task a shard is drained in is remembered (lastTask)",
      KIN + "driver/planner.py", "    if task is not None:\n        last_task[sid] = task",
      "    if False:\n        pass", UNIT_KIN),
    m("kinesis-last-task-not-carried", "lastTask is carried in the offset from plan to plan", KIN + "driver/planner.py",
      "last_task = {sid: state.last_task for sid, state in previous.shards.items() if state.last_task is not None}",
      "last_task = {}", UNIT_KIN),
    m("kinesis-lineage-highest-hash", "a merged child joins the parent with the lower starting hash key",
      KIN + "driver/mapper.py", "first = min(known, key=lambda p: (info[p].hash_start if p in info else _NO_HASH, p))",
      "first = max(known, key=lambda p: (info[p].hash_start if p in info else _NO_HASH, p))", UNIT_KIN),
    m("kinesis-lost-shard-ignored", "a shard gone before it was drained is data loss", KIN + "driver/planner.py",
      "    if inputs.fail_on_data_loss:\n        raise errors.planned_data_loss(",
      "    if False:\n        raise errors.planned_data_loss(", UNIT_KIN),
    m("kinesis-startpoint-applied-twice", "a Kinesis startpoint is applied once", KIN + "driver/planner.py",
      "        if sp.creation_timestamp <= previous.applied.get(key, -1):\n            continue",
      "        if False:\n            continue", UNIT_KIN),
    # ---- batch-end recording (kinesis/executor/recorded_reads.py, kinesis/microbatch_ends.py) ------------------------
    m("retry-ignores-recorded-end", "a retried attempt reads exactly to the recorded end",
      KIN + "executor/recorded_reads.py",
      "reading = open_shard_reader(client, replace(read, recorded_end=recorded), settings)",
      "reading = open_shard_reader(client, replace(read, recorded_end=None), settings)",
      READER),
    m("record-overwrites", "the first attempt's end wins (put-if-absent)", KIN + "microbatch_ends.py",
      "        if self.store.put_if_absent(self.namespace, key, value):\n            return end",
      "        self.store.put(self.namespace, key, value)\n        if True:\n            return end", READER),
    m("passed-end-not-failed", "an attempt that yielded rows past the recorded end fails",
      KIN + "executor/recorded_reads.py",
      "if result.records and not _after(winner, result.end):", "if False:", READER),
    # ---- s3:// metadata store conditional writes (metadata/s3.py), on moto's S3 server ---------------------------
    m("s3-put-if-absent-unconditional", "two racing put_if_absent on s3:// never both win (If-None-Match: *)",
      "spark_samza_source/metadata/s3.py", 'ContentType="application/json", IfNoneMatch="*")',
      'ContentType="application/json")', S3_RACES),
    m("s3-if-equal-unconditional", "delete_if_equal and replace_if_equal on s3:// never delete or overwrite a "
      "value replaced since the read (If-Match)", "spark_samza_source/metadata/s3.py",
      'write({"IfMatch": found[1]} if exact else {})', "write({})", S3_RACES),
    m("s3-probe-trusts-every-store", "an S3-compatible store without conditional writes is found and used best "
      "effort", "spark_samza_source/metadata/s3.py", "known = self._probe()",
      'known = (True, "")', S3_PROBE),
    # ---- over-strict parsers (the fuzzers' fair share) --------------------------------------------------------
    m("offset-parser-refuses-all", "the Kafka offset parser accepts valid documents", KAFKA + "driver/offset.py",
      "    def from_json(cls, value: Any) -> KafkaOffset:\n",
      "    def from_json(cls, value: Any) -> KafkaOffset:\n        raise OffsetFormatError('mutant')\n",
      ["tests/unit/test_fuzz_inputs.py", "-k", "kafka_offset"]),
    # ---- the development broker's transactions (devkit): what the read_committed tests stand on -----------------
    m("broker-lso-is-high-watermark", "dev broker: the last stable offset is the first offset of the earliest open "
      "transaction", "devkit/samza_devkit/kafka_broker/transactions.py",
      "return min(self.ongoing.values(), default=high_watermark)", "return high_watermark", BROKER_TXN),
    m("broker-lists-no-aborted-transactions", "dev broker: read_committed fetches list the range's aborted "
      "transactions", "devkit/samza_devkit/kafka_broker/transactions.py",
      "return [(pid, first) for pid, first, last in self.aborted if last >= start and first < end]",
      "return []", BROKER_TXN),
]


def copy_repo(dest: Path) -> Path:
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache",
                                    "build", "dist", "*.egg-info", "node_modules")
    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)
    return dest


def env_for(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(copy), str(copy / "devkit"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def check_imports(copy: Path) -> None:
    code = "import spark_samza_source, samza_devkit; print(spark_samza_source.__file__); print(samza_devkit.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=copy, env=env_for(copy), capture_output=True, text=True,
                         check=True).stdout.split()
    for path in out:
        if not Path(path).resolve().is_relative_to(copy.resolve()):
            raise SystemExit(f"the copy would import {path}, not its own code: refusing to run")


def run_tests(copy: Path, tests: tuple[str, ...], timeout: float) -> tuple[str, float]:
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not spark", *tests]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=copy, env=env_for(copy), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started
    took = time.monotonic() - started
    if proc.returncode == 0:
        return "passed", took
    if proc.returncode == 1:
        return "failed", took
    return f"error {proc.returncode}: {(proc.stdout + proc.stderr).strip().splitlines()[-1:]}", took


def stale_mutants(root: Path, mutants=MUTANTS) -> list[str]:
    """The mutants whose edits no longer apply to the code under ``root``, each with why: a file moved, or a text
    found not exactly once (the code changed under the rule: update the mutant to what now keeps it)."""
    stale = []
    for mu in mutants:
        for path, old, _ in mu.edits():
            target = root / path
            if not target.is_file():
                stale.append(f"{mu.name}: {path} does not exist")
            elif (count := target.read_text().count(old)) != 1:
                stale.append(f"{mu.name}: its text is found {count} times in {path}: {old[:60]!r}")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="run only these mutants (by name)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per mutant's test run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy (its path is printed)")
    args = parser.parse_args(argv)
    chosen = [mu for mu in MUTANTS if not args.only or mu.name in args.only]
    if not chosen:
        raise SystemExit(f"no mutant named {args.only}")
    stale = stale_mutants(Path(__file__).resolve().parents[1], chosen)
    if stale:
        raise SystemExit("mutants that no longer apply to the code:\n  " + "\n  ".join(stale))
    tmp = Path(tempfile.mkdtemp(prefix="samza-mutation-"))
    copy = copy_repo(tmp / "repo")
    print(f"copy: {copy}", flush=True)
    results: list[tuple[Mutant, str]] = []
    try:
        check_imports(copy)
        suites = sorted({mu.tests for mu in chosen})
        for tests in suites:  # every suite must pass unmutated, or its verdicts mean nothing
            status, took = run_tests(copy, tests, args.timeout)
            print(f"baseline {' '.join(tests)}: {status} ({took:.0f}s)", flush=True)
            if status != "passed":
                raise SystemExit("a baseline run failed: fix the tests first")
        for mu in chosen:
            # a mutant is one edit, or several (tuples) when one rule is kept by redundant code paths
            edits = mu.edits()
            originals = {path: (copy / path).read_text() for path, _, _ in edits}
            counts = [originals[path].count(old) for path, old, _ in edits]
            if counts != [1] * len(edits):
                verdict = f"stale ({counts} matches)"
            else:
                mutated = dict(originals)
                for path, old, new in edits:
                    mutated[path] = mutated[path].replace(old, new)
                for path, text in mutated.items():
                    (copy / path).write_text(text)
                try:
                    status, took = run_tests(copy, mu.tests, args.timeout)
                finally:
                    for path, text in originals.items():
                        (copy / path).write_text(text)
                verdict = {"failed": "killed", "timeout": "killed (timeout)", "passed": "SURVIVED"}.get(status, status)
                verdict += f" ({took:.0f}s)"
            results.append((mu, verdict))
            print(f"{mu.name:36} {verdict}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    killed = sum(1 for _, v in results if v.startswith("killed"))
    survived = [mu for mu, v in results if v.startswith("SURVIVED")]
    other = [(mu, v) for mu, v in results if not v.startswith(("killed", "SURVIVED"))]
    print(f"\n{len(results)} mutants: {killed} killed, {len(survived)} survived, {len(other)} stale or errors")
    for mu in survived:
        print(f"  survived: {mu.name}: {mu.rule} ({mu.path})")
    for mu, v in other:
        print(f"  {v}: {mu.name} ({mu.path})")
    return 1 if survived or other else 0


if __name__ == "__main__":
    sys.exit(main())
