"""The samza-kinesis source, laid out as samza-kafka is (``spark_samza_source/kafka/__init__.py`` says what its
``driver/`` and ``executor/`` folders and this folder hold; docs/architecture.md §2 the rules)."""
