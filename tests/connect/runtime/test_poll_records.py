"""poll_records: the Java consumer's poll over librdkafka's calls, on a real broker."""
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from josefk.connect.runtime.sink_task import poll_records


def test_returns_what_is_fetched_without_waiting_for_a_full_batch(josefk_broker, josefk_topic):
    bootstrap = josefk_broker.bootstrap_servers
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "poll-records",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(josefk_topic, 0, 0)])
    try:
        started = time.monotonic()
        assert poll_records(c, 500, 0.3) == []  # nothing there: the timeout
        assert time.monotonic() - started >= 0.25
        p = Producer({"bootstrap.servers": bootstrap})
        for i in range(3):
            p.produce(josefk_topic, str(i).encode(), partition=0)
        assert p.flush(10) == 0
        got, started = [], time.monotonic()
        while len(got) < 3 and time.monotonic() - started < 10:
            got += poll_records(c, 500, 5.0)
        # three records, long before the 5 s a batch of 500 would have waited for
        assert [m.value() for m in got] == [b"0", b"1", b"2"]
        assert time.monotonic() - started < 4
        p.produce(josefk_topic, b"3", partition=0)
        p.produce(josefk_topic, b"4", partition=0)
        assert p.flush(10) == 0
        time.sleep(0.5)
        assert [m.value() for m in poll_records(c, 1, 5.0)] == [b"3"]
        assert [m.value() for m in poll_records(c, 1, 5.0)] == [b"4"]
    finally:
        c.close()
