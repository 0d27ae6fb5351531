"""What one metadata-store operation costs on each backend: ``file:``, ``dynamodb://`` and ``s3://`` (both on moto's
server on loopback, so the figures are the client's and the emulator's cost, not AWS's network).

    .venv/bin/python benchmarks/metadata_store_ops.py              # 200 rounds per backend, ~1 minute
    .venv/bin/python benchmarks/metadata_store_ops.py --rounds 50 --only s3

One round on one key: ``put_if_absent`` (wins), ``put_if_absent`` (loses), ``get``, ``put``,
``delete_if_equal`` (a mismatch, then the match), as the job lease and the Kinesis batch ends use them. Prints the
mean milliseconds per operation kind and per round, and for ``s3://`` the one-off cost of its probe (whether the
server honours conditional writes: four requests, once per process and bucket). No targets: figures only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "devkit"))

from samza_devkit.aws_fixtures import DUMMY_AWS_ENV, unique_aws_name  # noqa: E402
from samza_devkit.moto_server import MotoServerProcess  # noqa: E402
from samza_devkit.s3_fixtures import drop_s3_bucket, make_s3_bucket, s3_uri  # noqa: E402
from spark_samza_source.metadata import open_store  # noqa: E402

NS = "bench"
OPS = ("put_if_absent (wins)", "put_if_absent (loses)", "get", "put", "delete_if_equal (mismatch)",
       "delete_if_equal (match)")


def measure(uri: str, rounds: int) -> tuple[dict[str, float], float]:
    """Mean ms per operation kind, and the first conditional operation's extra ms (the s3:// probe)."""
    store = open_store(uri, "bench-job")
    started = time.perf_counter()
    store.put_if_absent(NS, "warm-up", 0)  # s3://: probes first; dynamodb://: checks (creates) the table
    first = (time.perf_counter() - started) * 1000
    times: dict[str, list[float]] = {op: [] for op in OPS}
    for i in range(rounds):
        key, value = f"k{i}", {"round": i, "pad": "x" * 200}
        other = {"other": i}
        steps = (  # (name, method, arguments): no closures over the loop variables
            (OPS[0], store.put_if_absent, (NS, key, value)),
            (OPS[1], store.put_if_absent, (NS, key, other)),
            (OPS[2], store.get, (NS, key)),
            (OPS[3], store.put, (NS, key, value)),
            (OPS[4], store.delete_if_equal, (NS, key, other)),
            (OPS[5], store.delete_if_equal, (NS, key, value)),
        )
        for name, method, call_args in steps:
            t0 = time.perf_counter()
            method(*call_args)
            times[name].append((time.perf_counter() - t0) * 1000)
    store.close()
    means = {op: statistics.fmean(v) for op, v in times.items()}
    return means, first - means[OPS[0]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--only", choices=("file", "dynamodb", "s3"), action="append", default=[])
    args = parser.parse_args()
    kinds = args.only or ["file", "dynamodb", "s3"]
    os.environ.update(DUMMY_AWS_ENV)
    os.environ.pop("AWS_PROFILE", None)
    results: dict[str, tuple[dict[str, float], float]] = {}
    with MotoServerProcess() as endpoint, tempfile.TemporaryDirectory() as tmp:
        region = DUMMY_AWS_ENV["AWS_REGION"]
        for kind in kinds:
            if kind == "file":
                results[kind] = measure(f"file://{tmp}/store", args.rounds)
            elif kind == "dynamodb":
                table = unique_aws_name("bench")
                results[kind] = measure(f"dynamodb://{table}?region={region}&endpoint={endpoint}", args.rounds)
            else:
                bucket = make_s3_bucket(endpoint, region)
                try:
                    results[kind] = measure(s3_uri(bucket, endpoint, region), args.rounds)
                finally:
                    drop_s3_bucket(endpoint, region, bucket)
    width = max(len(op) for op in OPS) + 2
    print(f"\nmean ms per operation, {args.rounds} rounds (moto on loopback for dynamodb:// and s3://)")
    print("operation".ljust(width) + "".join(k.rjust(12) for k in results))
    for op in OPS:
        print(op.ljust(width) + "".join(f"{results[k][0][op]:12.2f}" for k in results))
    print("one round".ljust(width) + "".join(f"{sum(results[k][0].values()):12.2f}" for k in results))
    print("first conditional op, extra".ljust(width) + "".join(f"{results[k][1]:12.2f}" for k in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
