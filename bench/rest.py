"""``python -m bench.rest``: the REST proxy and the Schema Registry next to confluent-kafka
direct, on one josefk broker (all on 127.0.0.1).

* produce: N records (JSON values of ~100 bytes) to a 4-partition topic; direct = one
  confluent-kafka producer (linger.ms=5) from the first produce() to flush(); REST = POST
  /topics/{t} with the JSON embedded format, batches of 100 records, C requests in flight
  (aiohttp), until every answer is in. Records/s, and REST / direct.
* consume: the N records back; direct = one consumer assign()ed from the beginning; REST = a
  v2 consumer instance (assignments + GET records, max_bytes 4 MB). Records/s.
* registry lookups: GET /schemas/ids/{id} of registered schemas (answered from memory:
  "cached") and POST /subjects/{s} lookups of schemas the registry has not parsed yet
  ("uncached": parse + canonical form each time), C requests in flight. Lookups/s.

``--before DIR`` runs a second REST proxy from another checkout (``git archive <rev> | tar -x
-C DIR``) beside this one, on the same broker, and measures both in every round (alternating
which goes first): a change's before/after in one run.

Medians over the rounds are printed. Every loop is bounded in count and time."""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.brokers import Josefk, cleanup_dir
from bench.loads import send
from compat_tests.http_services import ServiceProcess, wait_primary

PARTITIONS = 4
BATCH = 100
DEADLINE = 300.0


def _value(i: int) -> dict:
    return {"id": i, "user": f"user-{i % 1000}", "page": "/products/42", "ms": 1700000000000 + i}


def _topic(bootstrap: str) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(30)
    return name


def direct_produce(bootstrap: str, topic: str, n: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    start = time.perf_counter()
    for i in range(n):
        send(p, topic, json.dumps(_value(i)).encode())
    assert p.flush(DEADLINE) == 0
    return n / (time.perf_counter() - start)


async def rest_produce(url: str, topic: str, n: int, concurrency: int) -> float:
    bodies = [json.dumps({"records": [{"value": _value(i)} for i in range(s, min(n, s + BATCH))]})
              for s in range(0, n, BATCH)]
    queue = list(reversed(bodies))
    headers = {"Content-Type": "application/vnd.kafka.json.v2+json"}

    async def worker(session):
        while queue:
            body = queue.pop()
            async with session.post(f"{url}/topics/{topic}", data=body, headers=headers) as r:
                answer = await r.json(content_type=None)
                assert r.status == 200 and all(o["error_code"] is None
                                               for o in answer["offsets"]), answer

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=DEADLINE)) as s:
        start = time.perf_counter()
        await asyncio.gather(*(worker(s) for _ in range(concurrency)))
        return n / (time.perf_counter() - start)


def direct_consume(bootstrap: str, topic: str, n: int) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                  "fetch.queue.backoff.ms": 10})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    got, start = 0, time.perf_counter()
    while got < n and time.perf_counter() - start < DEADLINE:
        got += sum(1 for m in c.consume(1000, 1.0) if not m.error())
    elapsed = time.perf_counter() - start
    c.close()
    return got / elapsed


async def rest_consume(url: str, topic: str, n: int) -> float:
    v2 = {"Content-Type": "application/vnd.kafka.v2+json"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=DEADLINE)) as s:
        async with s.post(f"{url}/consumers/bench-{uuid.uuid4().hex[:6]}", headers=v2, json={
                "format": "json", "auto.offset.reset": "earliest"}) as r:
            base = (await r.json(content_type=None))["base_uri"]
        async with s.post(f"{base}/assignments", headers=v2, json={"partitions": [
                {"topic": topic, "partition": p} for p in range(PARTITIONS)]}) as r:
            assert r.status == 204
        got, start = 0, time.perf_counter()
        accept = {"Accept": "application/vnd.kafka.json.v2+json"}
        while got < n and time.perf_counter() - start < DEADLINE:
            async with s.get(f"{base}/records?timeout=1000&max_bytes=4194304",
                             headers=accept) as r:
                got += len(await r.json(content_type=None))
        elapsed = time.perf_counter() - start
        await s.delete(base)
        return got / elapsed


async def registry_lookups(url: str, n: int, concurrency: int) -> tuple[float, float]:
    sr = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
    run = uuid.uuid4().hex[:6]
    subject = f"bench-{run}"

    def schema(i):
        return json.dumps({"type": "record", "name": f"R{run}{i}", "fields": [
            {"name": "a", "type": "string"}, {"name": f"f{i}", "type": "long"}]})

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=DEADLINE)) as s:
        await s.put(f"{url}/config/{subject}", headers=sr, json={"compatibility": "NONE"})
        ids = []
        for i in range(20):
            async with s.post(f"{url}/subjects/{subject}/versions", headers=sr,
                              json={"schema": schema(i)}) as r:
                ids.append((await r.json())["id"])

        async def timed(requests):
            queue = list(requests)

            async def worker():
                while queue:
                    method, path, body = queue.pop()
                    async with s.request(method, url + path, headers=sr, json=body) as r:
                        await r.read()
                        assert r.status in (200, 404), r.status

            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return len(requests) / (time.perf_counter() - start)

        cached = await timed([("GET", f"/schemas/ids/{ids[i % len(ids)]}", None)
                              for i in range(n)])
        uncached = await timed([("POST", f"/subjects/{subject}", {"schema": schema(1000 + i)})
                                for i in range(n)])
        return cached, uncached


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--lookups", type=int, default=5000)
    ap.add_argument("--before", type=Path, metavar="DIR",
                    help="another checkout whose REST proxy is measured beside this one")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-rest-"))
    broker = Josefk(work, {"offsets.topic.replication.factor": 1,
                           "group.initial.rebalance.delay.ms": 0})
    services = []
    try:
        broker.start()
        sr = ServiceProcess("registry", {"kafkastore.bootstrap.servers": broker.bootstrap,
                                         "kafkastore.topic.replication.factor": 1},
                            work / "registry.log").start()
        services.append(sr)
        wait_primary(sr.url)
        proxies = {"": ServiceProcess("rest", {"bootstrap.servers": broker.bootstrap,
                                               "schema.registry.url": sr.url},
                                      work / "rest.log").start()}
        services.append(proxies[""])
        if args.before:
            proxies[" (before)"] = ServiceProcess(
                "rest", {"bootstrap.servers": broker.bootstrap, "schema.registry.url": sr.url},
                work / "rest-before.log", root=args.before.resolve()).start()
            services.append(proxies[" (before)"])
        figures: dict[str, list[float]] = {}
        for r in range(args.rounds):
            topic = _topic(broker.bootstrap)
            figures.setdefault("direct produce", []).append(
                direct_produce(broker.bootstrap, topic, args.records))
            figures.setdefault("direct consume", []).append(
                direct_consume(broker.bootstrap, topic, args.records))
            for name, proxy in (list(proxies.items()) if r % 2 == 0 else
                                reversed(proxies.items())):
                topic = _topic(broker.bootstrap)
                figures.setdefault(f"REST produce{name}", []).append(asyncio.run(
                    rest_produce(proxy.url, topic, args.records, args.concurrency)))
                figures.setdefault(f"REST consume{name}", []).append(asyncio.run(
                    rest_consume(proxy.url, topic, args.records)))
            cached, uncached = asyncio.run(registry_lookups(sr.url, args.lookups,
                                                            args.concurrency))
            figures.setdefault("registry lookups, cached", []).append(cached)
            figures.setdefault("registry lookups, uncached", []).append(uncached)
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}/s"
                                                 for k, v in figures.items()), flush=True)
        med = {k: statistics.median(v) for k, v in figures.items()}
        print(f"\nmedians of {args.rounds} rounds, {args.records:,} records, "
              f"{args.concurrency} requests in flight:")
        for k, v in med.items():
            print(f"  {k:28s} {v:12,.0f} /s")
        for name in proxies:
            print(f"  REST{name} / direct: "
                  f"produce {med[f'REST produce{name}'] / med['direct produce']:.2f}, "
                  f"consume {med[f'REST consume{name}'] / med['direct consume']:.2f}")
        return 0
    finally:
        for s in services:
            s.stop()
        broker.stop()
        cleanup_dir(work)


if __name__ == "__main__":
    raise SystemExit(main())
