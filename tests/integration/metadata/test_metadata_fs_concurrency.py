"""``file:`` and ``s3://`` stores under concurrent writer PROCESSES and under SIGKILL.

``s3://`` runs on moto's S3 server (``s3_store_uri``), whose conditional writes (If-None-Match / If-Match) are what
make it exact; the same harness run through a proxy that ignores those conditions (an S3-compatible store without
them) shows two racing ``put_if_absent`` both winning, which is why the store probes for them and says so.

Invariants (each one fails for a store that is not atomic, see the ``naive`` store below, which the harness must
catch):

- every value any process reads parses and is internally consistent (a checksum over a large payload), so a
  torn or half-written file cannot pass;
- each ``put_if_absent`` claim has exactly one winner, and the stored value is the winner's;
- a counter advanced only by "``delete_if_equal(n)`` then ``put_if_absent(n + 1)``" ends at exactly the number
  of increments the processes report (two processes deleting the same ``n`` would both increment: lost
  update), and the ``put_if_absent`` after a won delete never finds the key taken;
- a second counter advanced only by ``replace_if_equal(n, n + 1)`` (compare-and-set) ends at exactly the number
  of increments the processes report;
- the final value of a key written with plain ``put`` is the last value some writer wrote.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import signal
import time
import traceback

import pytest

from samza_devkit.s3_fixtures import drop_s3_bucket, make_s3_bucket, s3_uri
from samza_devkit.s3_without_conditionals import S3WithoutConditionals
from samza_devkit.waits import deadline_after
from spark_samza_source.core.errors import MetadataStoreError
from spark_samza_source.kinesis.microbatch_ends import BatchEnds
from spark_samza_source.metadata import open_store

# fork: the workers below live in this test module, which --import-mode=importlib makes unimportable by name
CTX = multiprocessing.get_context("fork")
JOB = "concurrency-job"
NS = "shared"
PAD = 16_384


def _value(writer: int, seq: int, size: int = PAD) -> dict:
    body = (f"{writer}:{seq};" * (size // 4 + 1))[:size]
    return {"w": writer, "seq": seq, "body": body, "sha": hashlib.sha256(body.encode()).hexdigest()}


def _check(value, where: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict) or "body" not in value:
        raise AssertionError(f"{where}: malformed value {str(value)[:100]}")
    if hashlib.sha256(value["body"].encode()).hexdigest() != value["sha"]:
        raise AssertionError(f"{where}: checksum mismatch (torn value)")


class NaiveStore:
    """What the harness must catch: check-then-act without locks, and (``atomic_writes=False``, the default)
    overwriting in place without a temporary file."""

    def __init__(self, root: str, atomic_writes: bool = False) -> None:
        self.root = root
        self.atomic_writes = atomic_writes

    def _path(self, ns: str, key: str) -> str:
        return os.path.join(self.root, ns, key.replace("/", "_") + ".json")

    def get(self, ns: str, key: str):
        try:
            with open(self._path(ns, key)) as f:
                text = f.read()
        except FileNotFoundError:
            return None
        try:
            return json.loads(text)["value"]
        except ValueError as exc:
            raise MetadataStoreError(f"torn value for {key!r}: {exc}") from None

    def put(self, ns: str, key: str, value) -> None:
        os.makedirs(os.path.join(self.root, ns), exist_ok=True)
        data = json.dumps({"value": value})
        if self.atomic_writes:
            tmp = f"{self._path(ns, key)}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(data)
            os.replace(tmp, self._path(ns, key))
            return
        with open(self._path(ns, key), "w") as f:  # truncates, then writes in place: readers can see half
            for i in range(0, len(data), 16384):
                f.write(data[i:i + 16384])
                f.flush()
                time.sleep(0.0005)  # as on slow storage: the file spends real time half-written

    def put_if_absent(self, ns: str, key: str, value) -> bool:
        if os.path.exists(self._path(ns, key)):
            return False
        time.sleep(0.002)
        self.put(ns, key, value)
        return True

    def delete(self, ns: str, key: str) -> None:
        try:
            os.unlink(self._path(ns, key))
        except FileNotFoundError:
            pass

    def delete_if_equal(self, ns: str, key: str, expected) -> bool:
        if self.get(ns, key) != expected:
            return False
        time.sleep(0.002)
        try:
            os.unlink(self._path(ns, key))
        except FileNotFoundError:
            return False
        return True

    def replace_if_equal(self, ns: str, key: str, expected, value) -> bool:
        if self.get(ns, key) != expected:
            return False
        time.sleep(0.002)
        self.put(ns, key, value)
        return True

    def list(self, ns: str) -> dict:
        directory = os.path.join(self.root, ns)
        return {n[:-5]: self.get(ns, n[:-5]) for n in os.listdir(directory) if n.endswith(".json")}


def _open(uri: str, naive: bool | str):
    """The real store, or NaiveStore (``naive=True``), or NaiveStore with atomic writes (``naive="racy"``)."""
    if not naive:
        return open_store(uri, JOB)
    return NaiveStore(uri, atomic_writes=naive == "racy")


def _writer(uri: str, naive: bool, writer: int, ops: int, n_claims: int, n_shared: int, claim_gate, out) -> None:
    report = {"writer": writer, "claims": [], "increments": 0, "cas_increments": 0, "last_put": {}, "errors": [],
              "reads": 0}
    try:
        store = _open(uri, naive)
        rng = random.Random(writer)
        claim = 0
        for i in range(ops):
            op = i % 4
            if op == 0:  # plain put on a shared key
                key = f"put-{rng.randrange(n_shared)}"
                store.put(NS, key, _value(writer, i))
                report["last_put"][key] = i
            elif op == 1 and claim < n_claims:  # everybody races for the same claims, in the same order
                # all writers arrive before anyone claims: the race is certain, not left to the scheduler (under
                # load the counter loop below spreads writers apart so far that a racy store could go unseen)
                claim_gate.wait(timeout=120)
                if store.put_if_absent(NS, f"claim-{claim}", _value(writer, i)):
                    report["claims"].append(claim)
                claim += 1
            elif op == 2:  # one counter increment, by delete_if_equal + put_if_absent
                while True:
                    current = store.get(NS, "counter")
                    report["reads"] += 1
                    if current is None:
                        continue  # another process is between its delete and its re-create
                    _check(current, "counter")
                    if store.delete_if_equal(NS, "counter", current):
                        nxt = _value(writer, current["n"] + 1, 512) | {"n": current["n"] + 1}
                        if not store.put_if_absent(NS, "counter", nxt):
                            report["errors"].append(f"counter taken after winning delete of n={current['n']}")
                        report["increments"] += 1
                        break
                while True:  # and one of a second counter, by compare-and-set
                    current = store.get(NS, "cas-counter")
                    report["reads"] += 1
                    _check(current, "cas-counter")
                    nxt = _value(writer, current["n"] + 1, 512) | {"n": current["n"] + 1}
                    if store.replace_if_equal(NS, "cas-counter", current, nxt):
                        report["cas_increments"] += 1
                        break
            else:  # read and list while the others write
                for key, value in store.list(NS).items():
                    _check(value, key)
                report["reads"] += 1
    except BaseException:
        claim_gate.abort()  # the others must not wait for a writer that is gone
        report["errors"].append(traceback.format_exc(limit=4))
    out.put(report)


def _reader(uri: str, naive: bool, stop, out) -> None:
    report = {"reads": 0, "errors": []}
    try:
        store = _open(uri, naive)
        while not stop.is_set():
            for key in ("put-0", "put-1", "claim-0", "counter"):
                _check(store.get(NS, key), key)
                report["reads"] += 1
    except BaseException:
        report["errors"].append(traceback.format_exc(limit=4))
    out.put(report)


def run_harness(uri: str, *, naive: bool | str, writers: int = 8, ops: int = 200) -> list[str]:
    """Run the workload and return every invariant violation found (empty: the store behaved)."""
    n_claims, n_shared = ops // 4, 3
    setup = _open(uri, naive)
    setup.put(NS, "counter", _value(-1, 0, 512) | {"n": 0})
    setup.put(NS, "cas-counter", _value(-1, 0, 512) | {"n": 0})
    results, stop, claim_gate = CTX.Queue(), CTX.Event(), CTX.Barrier(writers)
    procs = [CTX.Process(target=_writer, args=(uri, naive, w, ops, n_claims, n_shared, claim_gate, results))
             for w in range(writers)]
    readers = [CTX.Process(target=_reader, args=(uri, naive, stop, results)) for _ in range(2)]
    for p in procs + readers:
        p.start()
    reports = [results.get(timeout=300) for _ in procs]
    stop.set()
    reports += [results.get(timeout=60) for _ in readers]
    for p in procs + readers:
        p.join(timeout=60)
    problems = [e for r in reports for e in r["errors"]]
    writer_reports = [r for r in reports if "writer" in r]
    if any(r["reads"] == 0 for r in reports):
        problems.append("a reader or writer never read anything")
    try:
        final = setup.list(NS)
        for key, value in final.items():
            _check(value, key)
    except Exception as exc:  # noqa: BLE001 - a torn final value is a finding, not a crash
        return [*problems, f"final list failed: {exc}"]
    for c in range(n_claims):
        winners = [r["writer"] for r in writer_reports if c in r["claims"]]
        if len(winners) != 1:
            problems.append(f"claim-{c}: winners {winners}")
        elif final.get(f"claim-{c}", {}).get("w") != winners[0]:
            problems.append(f"claim-{c}: stored value is not the winner's")
    increments = sum(r["increments"] for r in writer_reports)
    if final["counter"]["n"] != increments:
        problems.append(f"counter is {final['counter']['n']} after {increments} increments (lost update)")
    cas_increments = sum(r["cas_increments"] for r in writer_reports)
    if final["cas-counter"]["n"] != cas_increments:
        problems.append(f"cas-counter is {final['cas-counter']['n']} after {cas_increments} compare-and-set "
                        "increments (lost update)")
    for s in range(n_shared):
        key, value = f"put-{s}", final.get(f"put-{s}")
        lasts = {r["writer"]: r["last_put"].get(key) for r in writer_reports}
        if value is not None and lasts.get(value["w"]) != value["seq"]:
            problems.append(f"{key}: final value {value['w']}:{value['seq']} is nobody's last put")
    return problems


@pytest.fixture(params=["file", "s3"])
def store_uri(request: pytest.FixtureRequest, tmp_path) -> str:
    """A real store every writer process opens by URI: local files, or a fresh bucket on moto's S3 server."""
    if request.param == "file":
        return f"file://{tmp_path}/store"
    return request.getfixturevalue("s3_store_uri")


def test_concurrent_writer_processes_keep_every_invariant(store_uri, tmp_path) -> None:
    """Backs docs/guarantees.md: racing writer processes keep every invariant, on file: and s3://."""
    started = time.monotonic()
    # S3 over HTTP on moto, one Python server process on a 2-core machine: four writers with fewer operations each
    # meet the same races (every claim is contended by all of them) in a fifth of the time
    on_s3 = not store_uri.startswith("file:")
    assert run_harness(store_uri, naive=False, writers=4 if on_s3 else 8, ops=40 if on_s3 else 200) == []
    if store_uri.startswith("file:"):
        leftovers = [n for n in os.listdir(tmp_path / "store" / JOB / NS) if n.startswith(".tmp-")]
        assert leftovers == [], "temporary files left behind by writers that were not killed"
    print(f"concurrent writers: {time.monotonic() - started:.0f}s")  # a figure; pytest's timeout bounds a hang


def test_the_harness_catches_torn_values(tmp_path) -> None:
    problems = run_harness(str(tmp_path / "naive"), naive=True, writers=8, ops=120)
    assert any("checksum" in p or "torn value" in p for p in problems), problems[:3]


def test_the_harness_catches_racy_conditionals(tmp_path) -> None:
    """Atomic writes alone are not enough: check-then-act put_if_absent/delete_if_equal must be caught."""
    problems = run_harness(str(tmp_path / "racy"), naive="racy", writers=8, ops=120)
    assert any("winners" in p for p in problems), problems[:5]
    assert any("lost update" in p or "counter taken" in p for p in problems), problems[:5]
    assert any(p.startswith("cas-counter") for p in problems), problems[:5]  # check-then-act CAS is caught too


# -- SIGKILL ---------------------------------------------------------------------------------------------------

def _crash_writer(uri: str, naive: bool, writer: int, ready) -> None:
    store = _open(uri, naive)
    rng = random.Random(os.getpid())
    ready.set()
    i = 0
    while True:  # until SIGKILL
        i += 1
        key = f"k{rng.randrange(6)}"
        value = _value(writer, i, 262_144)
        try:
            _crash_step(store, rng, key, value, i)
        except MetadataStoreError:
            if not naive:
                raise  # the real store must never meet a torn value: die with exit code 1, which the test sees
            # the naive store reads torn values of its siblings all the time; keep writing


def _crash_step(store, rng: random.Random, key: str, value: dict, i: int) -> None:
    r = rng.random()
    if r < 0.5:
        store.put(NS, key, value)
    elif r < 0.7:
        store.put_if_absent(NS, f"{key}-claim-{i % 5}", value)
    elif r < 0.85:
        current = store.get(NS, key)
        if current is not None:
            store.replace_if_equal(NS, key, current, value)
    else:
        current = store.get(NS, key)
        if current is not None:
            store.delete_if_equal(NS, key, current)


def kill_rounds(uri: str, *, naive: bool, rounds: int, writers: int = 4) -> list[str]:
    """Kill writers at random moments, ``rounds`` times; return the problems found after each round."""
    problems: list[str] = []
    checker = _open(uri, naive)
    rng = random.Random(1234)
    for round_ in range(rounds):
        events = [CTX.Event() for _ in range(writers)]
        procs = [CTX.Process(target=_crash_writer, args=(uri, naive, w, events[w])) for w in range(writers)]
        for p in procs:
            p.start()
        for e in events:
            assert e.wait(30)
        time.sleep(0.05)
        for p in procs:
            time.sleep(rng.uniform(0.0, 0.15))
            os.kill(p.pid, signal.SIGKILL)
        for p in procs:
            p.join(10)
            assert p.exitcode == -signal.SIGKILL
        try:
            values = checker.list(NS)
            for key, value in values.items():
                _check(value, f"round {round_} {key}")
                _check(checker.get(NS, key), f"round {round_} get {key}")
        except (AssertionError, MetadataStoreError) as exc:
            problems.append(str(exc)[:200])
    return problems


def test_sigkilled_writers_never_leave_a_torn_value_or_a_stuck_lock(store_uri) -> None:
    """Backs docs/guarantees.md: a SIGKILLed writer never leaves a torn value (nor, on file:, a stuck lock)."""
    uri = store_uri
    assert kill_rounds(uri, naive=False, rounds=6) == []
    store = open_store(uri, JOB)
    listed = store.list(NS)
    assert listed, "the writers never wrote anything before being killed"
    deadline = deadline_after(10)  # the locks of killed writers are gone: every operation completes
    for key, value in listed.items():
        assert store.delete_if_equal(NS, key, value) is True
        store.put(NS, key, {"after": "crash"})
    assert store.list(NS) == {key: {"after": "crash"} for key in listed}
    assert time.monotonic() < deadline


def test_sigkill_check_catches_non_atomic_writes(tmp_path) -> None:
    assert kill_rounds(str(tmp_path / "naive"), naive=True, rounds=6) != []


@pytest.mark.parametrize("threads", [4])
def test_threads_in_one_process_are_atomic_too(store_uri, threads: int) -> None:
    import threading

    store = open_store(store_uri, JOB)
    store.put(NS, "counter", {"n": 0})
    increments = [0] * threads

    def bump(t: int) -> None:
        own = open_store(store_uri, JOB) if t % 2 else store  # shared and separate instances
        while increments[t] < 20:
            current = own.get(NS, "counter")
            if current is not None and own.delete_if_equal(NS, "counter", current):
                assert own.put_if_absent(NS, "counter", {"n": current["n"] + 1})
                increments[t] += 1

    workers = [threading.Thread(target=bump, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert store.get(NS, "counter") == {"n": sum(increments)} and sum(increments) == 20 * threads


def _racer(uri: str, naive: bool | str, writer: int, rounds: int, barrier, out) -> None:
    wins, errors = [], []
    try:
        store = _open(uri, naive)
        for r in range(rounds):
            barrier.wait(30)  # everybody fires at the same instant, every round
            if store.put_if_absent(NS, f"race-{r}", {"w": writer}):
                wins.append(r)
            barrier.wait(30)
            if store.delete_if_equal(NS, f"race-{r}", {"w": writer}):  # only the winner's value matches
                wins.append(-1 - r)
    except BaseException:
        errors.append(traceback.format_exc(limit=4))
    out.put((writer, wins, errors))


def race_claims(uri: str, *, naive: bool | str, racers: int = 8, rounds: int = 60) -> list[str]:
    barrier, results = CTX.Barrier(racers), CTX.Queue()
    procs = [CTX.Process(target=_racer, args=(uri, naive, w, rounds, barrier, results)) for w in range(racers)]
    for p in procs:
        p.start()
    reports = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(30)
    problems = [e for _, _, errors in reports for e in errors]
    for r in range(rounds):
        winners = [w for w, wins, _ in reports if r in wins]
        deleters = [w for w, wins, _ in reports if -1 - r in wins]
        if len(winners) != 1 or deleters != winners:
            problems.append(f"race-{r}: put_if_absent winners {winners}, delete_if_equal winners {deleters}")
    return problems


def test_synchronized_put_if_absent_races_have_exactly_one_winner(store_uri) -> None:
    """Backs docs/guarantees.md: racing put_if_absent (eight processes at once on file:, four on s3://) never both
    win; only the winner's delete_if_equal matches."""
    # four racers on s3:// (each round's requests queue in moto's one process anyway), eight on file:
    assert race_claims(store_uri, naive=False, racers=8 if store_uri.startswith("file:") else 4) == []
    assert open_store(store_uri, JOB).list(NS) == {}


def test_the_race_check_catches_check_then_act(tmp_path) -> None:
    assert race_claims(str(tmp_path / "racy"), naive="racy", rounds=20) != []


# -- S3-compatible stores without conditional writes -----------------------------------------------------------

@pytest.fixture
def bucket_behind(moto_server, aws_region):
    """``behind(mode)`` -> the URI of a fresh bucket reached through a proxy that ignores (``"ignore"``) or refuses
    with 501 (``"refuse"``) S3's conditional writes; the proxy, for its record of conditional requests."""
    made: list[tuple[str, S3WithoutConditionals]] = []

    def behind(mode: str) -> tuple[str, S3WithoutConditionals]:
        proxy = S3WithoutConditionals(moto_server, mode)
        endpoint = proxy.start()
        bucket = make_s3_bucket(moto_server, aws_region)
        made.append((bucket, proxy))
        return s3_uri(bucket, endpoint, aws_region), proxy

    yield behind
    for bucket, proxy in made:
        proxy.stop()
        drop_s3_bucket(moto_server, aws_region, bucket)


@pytest.mark.parametrize("mode", ["ignore", "refuse"])
def test_a_store_without_conditional_writes_is_detected_and_said_once(bucket_behind, mode, caplog) -> None:
    """Backs the README line: on an S3-compatible store without conditional writes, s3:// is best effort and
    says so once in the log."""
    uri, proxy = bucket_behind(mode)
    store = open_store(uri, JOB)
    assert store.put_if_absent(NS, "k", 1) is True and store.put_if_absent(NS, "k", 2) is False
    assert store.delete_if_equal(NS, "k", 2) is False and store.delete_if_equal(NS, "k", 1) is True
    assert store.atomic_conditionals is False
    again = open_store(uri, JOB)
    BatchEnds(again)  # asks atomic_conditionals before any operation: the probe's answer, not a default
    assert "two attempts of a Kinesis batch" in caplog.text
    assert again.put_if_absent(NS, "k", 3) is True and again.atomic_conditionals is False
    warnings = [r for r in caplog.records if "does not honour conditional writes" in r.getMessage()]
    assert len(warnings) == 1 and "best effort" in warnings[0].getMessage()
    assert "testing" not in caplog.text  # the credentials in the URI
    assert proxy.conditional_requests  # the probe did ask


def test_the_race_check_catches_a_store_that_ignores_conditions(bucket_behind) -> None:
    """The harness is able to fail on S3: the same store through a proxy that drops If-None-Match / If-Match (the
    store's probe then switches to check-then-act) lets two racers win one claim."""
    uri, _ = bucket_behind("ignore")
    assert race_claims(uri, naive=False, racers=4, rounds=20) != []
