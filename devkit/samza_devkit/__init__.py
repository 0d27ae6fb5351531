"""spark-samza-source's development kit: test and demo tooling, never part of the runtime wheel.

- ``kafka_broker``: the Kafka wire-protocol development broker (``python -m samza_devkit.kafka_broker``);
- ``moto_server``, ``kinesis_helpers``: moto in server mode on loopback, with its Kinesis fixes;
- ``pytest_plugin`` and the ``*_fixtures`` modules: pytest fixtures backed by those real local parts;
- ``kafka_helpers``, ``query_harness``, ``fault_driver``: what integration tests, benchmarks and the notebook use;
- ``kafka_query_harness``, ``kinesis_query_harness`` (fixtures ``kq``, ``ks``), ``fault_harness``,
  ``checkpoint_log``, ``cuttable_proxy``: the live-query harnesses and checks of the integration tests;
- ``fault_hooks``: the fault-injection hooks a query loads with the option ``testing.faultHooks``;
- ``demo``: ``make demo``.
"""
