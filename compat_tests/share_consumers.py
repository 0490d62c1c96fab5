"""Share consumers for the share-group tests: confluent-kafka's ``ShareConsumer`` (KIP-932) in a
thread, or in a process of its own that a test can kill, recording every delivery."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

from confluent_kafka import AcknowledgeType, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from josefk.faults.processes import REPO_ROOT

ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


def set_group_configs(bootstrap: str, group: str, **configs) -> None:
    """IncrementalAlterConfigs SET on the GROUP resource (share.auto.offset.reset=...)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource("GROUP", group, incremental_configs=[
        ConfigEntry(name.replace("_", "."), str(v), incremental_operation=AlterConfigOpType.SET)
        for name, v in configs.items()])
    for fut in admin.incremental_alter_configs([res]).values():
        fut.result(15)


def share_consumer(bootstrap: str, group: str, topics, **conf) -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                       **{k.replace("_", "."): v for k, v in conf.items()}})
    c.subscribe(list(topics))
    return c


class Member(threading.Thread):
    """A share consumer polling in a thread. ``decide(message)`` returns the acknowledge type
    (explicit mode; without it every record is accepted at the next poll). ``deliveries``
    lists (partition, offset, delivery count, value) in order."""

    def __init__(self, bootstrap, group, topics, decide=None, stop_after=None, **conf):
        super().__init__(daemon=True)
        self.stop_after = stop_after  # deliveries after which it closes, polling no more
        if decide is not None:
            conf["share_acknowledgement_mode"] = "explicit"
        self.consumer = share_consumer(bootstrap, group, topics, **conf)
        self.decide = decide
        self.deliveries: list[tuple] = []
        self.errors: list = []
        self._halt = threading.Event()
        self.start()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                msgs = self.consumer.poll(0.2)
            except Exception as e:  # noqa: BLE001 - reported by check()
                self.errors.append(e)
                return
            for m in msgs:
                if m.error():
                    self.errors.append(m.error())
                    continue
                self.deliveries.append((m.partition(), m.offset(), m.delivery_count(),
                                        m.value()))
                if self.decide is not None:
                    self.consumer.acknowledge(m, self.decide(m))
            if self.stop_after is not None and len(self.deliveries) >= self.stop_after:
                break
        self.consumer.close()

    def offsets(self) -> list[int]:
        return [d[1] for d in self.deliveries]

    def close(self, timeout: float = 30) -> None:
        self._halt.set()
        self.join(timeout)
        assert not self.is_alive(), "share consumer did not close"


def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


# A share consumer in a process of its own (to be killed holding records): it acknowledges
# nothing and prints each delivery as a JSON line.
_CHILD = """
import json, sys
from confluent_kafka import ShareConsumer
bootstrap, group, topic, max_records = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                   "share.acknowledgement.mode": "explicit", "max.poll.records": max_records})
c.subscribe([topic])
while True:
    for m in c.poll(0.5):
        if not m.error():
            print(json.dumps([m.offset(), m.delivery_count()]), flush=True)
"""


class ChildConsumer:
    def __init__(self, bootstrap, group, topic, max_records: int = 500):
        self.proc = subprocess.Popen([sys.executable, "-c", _CHILD, bootstrap, group, topic,
                                      str(max_records)], cwd=str(REPO_ROOT),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.deliveries: list[tuple[int, int]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.deliveries.append(tuple(json.loads(line)))

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
