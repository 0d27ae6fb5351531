"""A candidate dependency measured before adopting it: a Kafka client that decodes record batches straight into
Arrow (``kafkarrow``, Rust on rdkafka), against kcat and our ``read_ranges`` on the same broker, topic and run.

Why a separate interpreter: the candidate is not a dependency of the project, so it is never installed into the
project's virtualenv. Make a throwaway one and pass its interpreter::

    python3.11 -m venv /tmp/candidate && /tmp/candidate/bin/pip install kafkarrow
    .venv/bin/python benchmarks/kafka_arrow_candidate.py --candidate-python /tmp/candidate/bin/python

The candidate reads the whole partition from the beginning (it has no per-partition start or end offsets: its
policies are earliest / latest / a timestamp) with librdkafka's defaults and with ``fetch.queue.backoff.ms=10``
(the reader's default, see ``kafka_native.py``), in its own process; wall time and that process's CPU are
printed with the ratios to kcat, as for every other reader.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from bench_report import load, say
from kafka_native import KCAT, kcat_missing_reason, run_kcat, run_read_ranges

_CANDIDATE_LOOP = r"""
import json, resource, sys, time
from kafkarrow import ConsumerManager, SourceTopic

boot, topic, count, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

batch_size = extra.pop("batch_size", None)  # the candidate's own setting (rows per poll), not librdkafka's
manager = ConsumerManager(config={"bootstrap.servers": boot, "group.id": "bench-candidate", **extra},
                          topics=[SourceTopic.from_earliest(topic)], batch_size=batch_size)
got, cpu0, started = 0, cpu(), time.monotonic()
while got < count and time.monotonic() - started < 300:
    got += manager.poll(timeout_ms=1000).num_rows
print(json.dumps({"rows": got, "seconds": time.monotonic() - started, "cpu": cpu() - cpu0}))
"""


def run_candidate(python: str, bootstrap: str, topic: str, count: int, extra: dict) -> dict:
    """The candidate's consume loop in ``python`` (its own process): rows, wall seconds, its CPU, rate."""
    out = subprocess.run([python, "-c", _CANDIDATE_LOOP, bootstrap, topic, str(count), json.dumps(extra)],
                         check=True, capture_output=True, text=True, timeout=600).stdout
    res = json.loads(out.strip().splitlines()[-1])
    if res["rows"] < count:
        raise RuntimeError(f"the candidate read {res['rows']:,} of {count:,} records within 300 s")
    return {**res, "rate": res["rows"] / res["seconds"]}


def _line(label: str, res: dict, anchor: dict | None) -> str:
    text = (f"{label:<42} {res['rate']:>11,.0f} rec/s ({res['seconds']:.2f} s wall, "
            f"{1e6 * res['cpu'] / res['rows']:.2f} CPU-s per million)")
    if anchor:
        text += (f"  wall rate {res['rate'] / anchor['rate']:.2f}x kcat, CPU per record "
                 f"{(res['cpu'] / res['rows']) / (anchor['cpu'] / anchor['rows']):.2f}x kcat")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidate-python", required=True,
                        help="an interpreter (outside the project's virtualenv) with kafkarrow installed")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    from kafka_source import VALUE_SIZE, produce

    from samza_devkit.kafka_broker import KafkaDevBroker
    from samza_devkit.kafka_helpers import create_topic
    from spark_samza_source.kafka.executor.consumer_cache import ConsumerCache
    from spark_samza_source.kafka.input_partition import KafkaRange

    version = subprocess.run([args.candidate_python, "-c", "import kafkarrow; print(kafkarrow.__version__)"],
                             check=True, capture_output=True, text=True).stdout.strip()
    if not KCAT:
        say(kcat_missing_reason())
    say(f"== kafkarrow {version} vs kcat and read_ranges, 1 partition, {args.records:,} x {VALUE_SIZE} B; {load()}")
    with KafkaDevBroker() as broker:
        bootstrap, topic = broker.bootstrap_servers, f"bench-candidate-{int(time.time())}"
        create_topic(bootstrap, topic, 1)
        produce(bootstrap, topic, 1, args.records, VALUE_SIZE)
        cache = ConsumerCache(1)
        for i in range(args.repeat):
            say(f"  run {i + 1}/{args.repeat}; {load()}")
            anchor = run_kcat(bootstrap, topic, args.records, partition=0) if KCAT else None
            if anchor:
                say("    " + _line("kcat (native)", anchor, None))
            for label, extra in (("kafkarrow, librdkafka defaults", {}),
                                 ("kafkarrow, fetch.queue.backoff.ms=10", {"fetch.queue.backoff.ms": "10"}),
                                 ("kafkarrow, the same, batch_size=100000",
                                  {"fetch.queue.backoff.ms": "10", "batch_size": 100_000})):
                say("    " + _line(label, run_candidate(args.candidate_python, bootstrap, topic, args.records,
                                                        extra), anchor))
            res = run_read_ranges(bootstrap, [KafkaRange(topic, 0, 0, args.records)], None, cache)
            say("    " + _line("read_ranges (executor path)", res, anchor))
        cache.close_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
