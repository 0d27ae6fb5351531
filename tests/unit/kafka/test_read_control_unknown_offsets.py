"""The executor's reaction to "offset out of range" asks the broker for the log's start and end. librdkafka may
answer -1001 ("offset not known") without an error while a leader is elected: that answer must never be taken as a
log end (it would read as the rest of the range truncated). It is asked again until known, or the read fails naming
the answer, within the query timeout. The back-end here is a script of the broker's answers; the Kafka read paths
meet the real case in tests/integration/kafka_cluster."""

from __future__ import annotations

import pytest

from spark_samza_source.kafka.errors import KafkaSourceError
from spark_samza_source.kafka.executor.read_control import RangeReadControl
from spark_samza_source.kafka.executor.read_settings import KafkaReadSettings
from spark_samza_source.kafka.input_partition import KafkaRange

NOT_KNOWN = -1001


class ScriptedBroker:
    """A read back-end whose only live parts are the watermark answers and what the control does with them."""

    query_errors = (ConnectionError,)

    def __init__(self, answers, next_offset: int) -> None:
        self.answers, self.next_offset = list(answers), next_offset
        self.asked = 0
        self.repositioned: list[int] = []
        self.finished: list[int] = []

    def state(self, i):
        return self.next_offset, 0, 0, False, False

    def watermarks(self, i, timeout_ms):
        self.asked += 1
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def reposition(self, i, offset):
        self.repositioned.append(offset)

    def finish(self, i):
        self.finished.append(i)

    def set_next(self, i, offset):
        self.next_offset = offset


def control(broker, fail_on_data_loss=True, poll_timeout_ms=2000):
    settings = KafkaReadSettings(include_headers=False, fail_on_data_loss=fail_on_data_loss,
                                 poll_timeout_ms=poll_timeout_ms)
    return RangeReadControl(broker, "Partition 0", [KafkaRange("orders", 0, 0, 100)], settings)


def test_unknown_offsets_are_asked_again_and_the_known_answer_repositions_without_data_loss():
    broker = ScriptedBroker([(NOT_KNOWN, NOT_KNOWN), (0, NOT_KNOWN), (0, 120)], next_offset=50)
    control(broker)._out_of_range(0)
    assert broker.asked == 3
    assert broker.repositioned == [50] and broker.finished == []  # inside the log: the leader moved, fetch again


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_offsets_never_known_fail_the_read_naming_the_answer_and_skip_nothing(fail_on_data_loss):
    broker = ScriptedBroker([(NOT_KNOWN, NOT_KNOWN)], next_offset=50)
    with pytest.raises(KafkaSourceError) as caught:
        control(broker, fail_on_data_loss=fail_on_data_loss, poll_timeout_ms=1000)._out_of_range(0)
    text = str(caught.value)
    assert "orders[0]" in text and "no offsets (log start -1001, end -1001)" in text
    assert broker.asked >= 2 and broker.finished == [] and broker.repositioned == []
