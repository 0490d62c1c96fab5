"""The inter-broker channel against a real broker: large responses read whole into their own
buffers, pipelined requests matched by correlation id, a lost connection failing what was in
flight and reopened by the next request."""
import asyncio

import pytest
from confluent_kafka import Producer

from josefk.broker.channel import BrokerChannel, ChannelError
from josefk.wire.apis import API_VERSIONS, FETCH
from josefk.wire.batch import iter_headers

Q = FETCH.Request


def _fetch(topic, partitions):
    return Q(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=64 << 20, isolation_level=0,
             session_id=0, session_epoch=-1, topics=[Q.FetchTopic(topic=topic, partitions=[
                 Q.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=0,
                                  last_fetched_epoch=-1, log_start_offset=-1,
                                  partition_max_bytes=64 << 20) for p in partitions])],
             forgotten_topics_data=[], rack_id="")


@pytest.mark.josefk_topic(partitions=2)
def test_large_pipelined_responses_and_a_lost_connection(josefk_broker, josefk_topic):
    p = Producer({"bootstrap.servers": josefk_broker.bootstrap_servers, "linger.ms": 50,
                  "batch.size": 1 << 20})
    value = bytes(range(256)) * 40  # 10 KiB
    for i in range(600):  # about 3 MB per partition
        p.produce(josefk_topic, value, partition=i % 2)
    assert p.flush(60) == 0
    host, port = josefk_broker.bootstrap_servers.rsplit(":", 1)

    async def run():
        ch = BrokerChannel(0, host, int(port), "test-channel")
        try:
            answers = await asyncio.gather(
                *(ch.request(FETCH, 12, _fetch(josefk_topic, [k % 2]), timeout=30)
                  for k in range(6)),
                ch.request(API_VERSIONS, 3, API_VERSIONS.Request(
                    client_software_name="t", client_software_version="1"), timeout=30))
            for k, resp in enumerate(answers[:6]):
                [pd] = resp.responses[0].partitions
                assert (pd.partition_index, pd.error_code) == (k % 2, 0)
                batches = list(iter_headers(pd.records))
                assert sum(h.count for h in batches) == 300
                assert len(pd.records) > 3_000_000
            assert answers[6].error_code == 0 and answers[6].api_keys
            in_flight = asyncio.ensure_future(ch.request(
                FETCH, 12, _fetch(josefk_topic, [0, 1]), timeout=30))
            await asyncio.sleep(0)
            ch._writer.abort()  # the connection breaks under the request
            with pytest.raises(ChannelError):
                await in_flight
            again = await ch.request(FETCH, 12, _fetch(josefk_topic, [1]), timeout=30)
            assert again.responses[0].partitions[0].error_code == 0
        finally:
            ch.close()
    asyncio.run(run())
