"""``josefk mirror`` with exactly-once sources (KIP-618, ``exactly.once.source.support =
enabled``, the source read committed): killed with SIGKILL while it mirrors, then started
again, it leaves every record on the target exactly once to a read_committed consumer, and
the source's aborted transactions are not mirrored."""
import subprocess
import sys
import threading
import time

from confluent_kafka import Producer

from compat_tests.mirror.mirroring import read_all, until
from josefk.testing import broker

N, PARTITIONS = 3000, 2


def mirror(conf, log):
    proc = subprocess.Popen([sys.executable, "-m", "josefk", "mirror", str(conf)],
                            stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    until(lambda: "primary->backup (enabled) on" in log.read_text() or proc.poll() is not None,
          timeout=60)
    assert proc.poll() is None, log.read_text()[-3000:]
    return proc


def produce(bootstrap):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(N):
        p.produce("orders", str(i).encode(), partition=i % PARTITIONS)
        if i % 100 == 99:
            p.flush(10)
            time.sleep(0.02)
    assert p.flush(15) == 0
    aborted = Producer({"bootstrap.servers": bootstrap, "transactional.id": "mm2-eos-abort"})
    aborted.init_transactions(15)
    aborted.begin_transaction()
    aborted.produce("orders", b"aborted", partition=0)
    aborted.abort_transaction(15)


def test_killed_and_restarted_the_mirror_writes_each_record_once(tmp_path):
    with broker() as primary, broker() as backup:
        primary.create_topic("orders", PARTITIONS)
        conf = tmp_path / "mm2.properties"
        conf.write_text(
            "clusters = primary, backup\n"
            f"primary.bootstrap.servers = {primary.bootstrap_servers}\n"
            f"backup.bootstrap.servers = {backup.bootstrap_servers}\n"
            "primary->backup.enabled = true\nprimary->backup.topics = orders\n"
            "exactly.once.source.support = enabled\n"
            "primary.consumer.isolation.level = read_committed\n"
            "offset.flush.interval.ms = 60000\n"  # no commit but the transactions' own
            "replication.factor = 1\n" + "".join(
                f"{t}.replication.factor = 1\n" for t in (
                    "offset-syncs.topic", "checkpoints.topic", "heartbeats.topic",
                    "config.storage", "offset.storage", "status.storage")))
        log = tmp_path / "mirror.log"
        proc = mirror(conf, log)
        producing = threading.Thread(target=produce, args=(primary.bootstrap_servers,))
        producing.start()
        try:
            until(lambda: len(read_all(backup.bootstrap_servers, "primary.orders",
                                       PARTITIONS, 3)) >= N // 3, timeout=90)
        finally:
            proc.kill()  # SIGKILL mid-stream: open transactions are aborted by the fencing
            proc.wait(10)
            producing.join(60)
        proc = mirror(conf, log)
        try:
            copies = until(lambda: len(m := read_all(
                backup.bootstrap_servers, "primary.orders", PARTITIONS, 5,
                isolation="read_committed")) >= N and m, timeout=120)
            time.sleep(3)  # anything written twice would show now
            copies = read_all(backup.bootstrap_servers, "primary.orders", PARTITIONS, 10,
                              isolation="read_committed")
        finally:
            proc.terminate()
            proc.wait(30)
        assert b"aborted" not in {m.value() for m in copies}
        values = sorted(int(m.value()) for m in copies)
        assert values == list(range(N)), (len(values), len(set(values)))
