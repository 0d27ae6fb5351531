"""The repository's tests load the development kit's fixtures here (``spark``, ``kafka_broker``, ``moto_server``
...): installing the runtime wheel never adds a pytest plugin to anyone else's test suite."""

pytest_plugins = ["samza_devkit.pytest_plugin"]
