"""Run by an installed release wheel's interpreter (a clean virtualenv, or an arm64 Python under emulation), never
by pytest: reads the first COUNT records of partition 0 of TOPIC through ``read_ranges`` with ``readPath=PATH``
and prints one line ``PROBE {json}``: the CPU, the Python, where the native reader was found (or null), the values
read or the error raised, and the INFO lines the package logged (the read path chosen and why).

Only the installed package and its dependencies are imported: no pytest, no development kit.

    python release_probe.py BOOTSTRAP TOPIC COUNT auto|native|python
"""

from __future__ import annotations

import importlib.util
import json
import logging
import platform
import sys


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def main() -> None:
    bootstrap, topic, count, read_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    kept = _Keep()
    logging.getLogger("spark_samza_source").addHandler(kept)  # before the import: its INFO line is said there
    logging.getLogger("spark_samza_source").setLevel(logging.INFO)

    from spark_samza_source.kafka.executor.reader import KafkaReadSettings, read_ranges
    from spark_samza_source.kafka.input_partition import KafkaRange

    spec = importlib.util.find_spec("spark_samza_source.kafka.executor._native_reader")
    out: dict = {"machine": platform.machine(), "python": platform.python_version(),
                 "extension": spec.origin if spec else None}
    try:
        batches = read_ranges({"bootstrap.servers": bootstrap}, "Partition 0", [KafkaRange(topic, 0, 0, count)],
                              KafkaReadSettings(False, True, read_path=read_path))
        out["values"] = [v.decode() for batch in batches for v in batch.column("value").to_pylist()]
    except Exception as err:  # reported, not raised: the caller asserts on it
        out["error"] = f"{type(err).__name__}: {err}"
    out["log"] = kept.lines
    print("PROBE " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
