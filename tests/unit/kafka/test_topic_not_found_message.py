"""A topic of ``subscribe`` the cluster no longer lists: deleted under a job that read it, it leaves only through
``dropTopics``, so the error shows the exact option line to add (``kafka/errors.py``)."""

from __future__ import annotations

from spark_samza_source.kafka.errors import TOPIC_NOT_FOUND, topics_not_found
from spark_samza_source.kafka.options import ASSIGN, DROP_TOPICS, SUBSCRIBE


def test_a_missing_topic_names_drop_topics_and_the_option_line_to_add():
    """Backs Guarantees (docs/guarantees.md, mistakes caught where they are made)."""
    error = topics_not_found(["orders", "refunds"], "(bootstrap servers b:9092)", subscribe_option=SUBSCRIBE.name,
                             assign_option=ASSIGN.name, drop_topics_option=DROP_TOPICS.name)
    assert error.condition == TOPIC_NOT_FOUND
    message = str(error)
    assert "'orders', 'refunds' not found (bootstrap servers b:9092)" in message
    assert "add the line .option('dropTopics', 'orders,refunds')" in message
    assert "remove it from 'subscribe' / 'assign'" in message

