"""The repository's tests load the development kit's fixtures here (``spark``, ``kafka_broker``, ``moto_server``
...): installing the runtime wheel never adds a pytest plugin to anyone else's test suite."""

pytest_plugins = ["samza_devkit.pytest_plugin"]

# Property tests check what is computed, never how fast: hypothesis's default 200 ms deadline per example fails
# them at random on a shared, loaded machine (seen: DeadlineExceeded in a Kinesis offset property test while other
# suites ran). Speed lives in benchmarks/.
from hypothesis import settings  # noqa: E402

settings.register_profile("samza", deadline=None)
settings.load_profile("samza")
