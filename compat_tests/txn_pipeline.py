"""An exactly-once consume-transform-produce loop with confluent-kafka, run as a separate process
so a test can SIGKILL it mid-transaction and start it again.

    python -m compat_tests.txn_pipeline BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID

Reads INPUT as member of GROUP (read_committed), writes each value upper-cased to OUTPUT in
transactions of up to 10 records together with the consumed offsets
(send_offsets_to_transaction), and prints "committed N" after each commit and "delivered" as
soon as a record of the open transaction is in the log. It pauses between produce calls so a
kill lands inside a transaction, and exits once INPUT has been idle for 3 s.
"""
from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

BATCH = 10
IDLE_EXIT_S = 3.0
MAX_RUN_S = 60.0


def main(bootstrap, input_topic, output_topic, group, transactional_id) -> int:
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "isolation.level": "read_committed", "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000, "fetch.wait.max.ms": 100})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 30000})
    producer.init_transactions(30)
    consumer.subscribe([input_topic])
    total = 0
    idle_since = time.monotonic()
    deadline = time.monotonic() + MAX_RUN_S
    while time.monotonic() < deadline:
        msgs = [m for m in consumer.consume(BATCH, 0.5) if not m.error()]
        if not msgs:
            if time.monotonic() - idle_since > IDLE_EXIT_S and consumer.assignment():
                break
            continue
        idle_since = time.monotonic()
        producer.begin_transaction()
        acked = []
        for m in msgs:
            producer.produce(output_topic, key=m.key(), value=m.value().upper(),
                             partition=m.partition(), on_delivery=lambda err, _m: acked.append(err))
            producer.poll(0)
            if None in acked:
                print("delivered", flush=True)
                acked.clear()
            time.sleep(0.01)
        offsets = {}
        for m in msgs:
            offsets[(m.topic(), m.partition())] = m.offset() + 1
        producer.send_offsets_to_transaction(
            [TopicPartition(t, p, o) for (t, p), o in offsets.items()],
            consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        total += len(msgs)
        print(f"committed {total}", flush=True)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
