"""``make demo`` prints only its own narrative: no Spark, librdkafka or broker log line on the terminal.

The demo sends its process's standard error (which the JVM, the Python workers and the broker inherit) to a log
file it names in its first line; this runs it as ``make demo`` does and reads both streams.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LOG_LINE = re.compile(r"\b(WARN|WARNING|ERROR)\b|%\d\|")  # log4j / Python levels; librdkafka's "%4|..." lines


def test_the_demo_prints_its_narrative_only_and_names_its_log(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-m", "samza_devkit.demo"], capture_output=True, text=True, env=env,
                          timeout=540, cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert lines and all(line.startswith("[demo] ") for line in lines), [x for x in lines if not x.startswith("[demo]")]
    assert done.stderr == "", done.stderr[-3000:]
    assert not [line for line in lines if LOG_LINE.search(line)]
    assert lines[-1].startswith("[demo] OK")
    log = Path(re.search(r"go to (\S+)", lines[0]).group(1))
    assert log.is_file() and log.stat().st_size > 0, "the log the demo names holds Spark's output"
    assert "replaced a statically registered data source" not in log.read_text()
