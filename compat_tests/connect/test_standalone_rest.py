"""A standalone worker (StandaloneHerder behind the REST API) driven with plain httpx as
Kafka's quickstart drives Connect: FileStreamSource and FileStreamSink created with the JSON
configs of Kafka's documentation, the data file -> topic -> file, validation answered in
Connect's body, a connector paused, its offsets read."""
import asyncio
import time

import httpx

from josefk.connect.rest.server import RestServer
from josefk.connect.runtime.plugins import Plugins
from josefk.connect.runtime.standalone import StandaloneHerder
from josefk.connect.runtime.worker_config import WorkerConfig


async def until(check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = await check()
        if result:
            return result
        await asyncio.sleep(0.2)
    raise AssertionError("timed out")


def test_kafkas_quickstart_through_the_rest_api(josefk_broker, josefk_topic, tmp_path):
    src, out = tmp_path / "test.txt", tmp_path / "test.sink.txt"
    src.write_text("foo\nbar\n")
    props = {"bootstrap.servers": josefk_broker.bootstrap_servers,
             "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
             "listeners": "http://127.0.0.1:0", "offset.flush.interval.ms": "500",
             "key.converter": "org.apache.kafka.connect.json.JsonConverter",
             "value.converter": "org.apache.kafka.connect.json.JsonConverter"}

    async def run():
        config = WorkerConfig(props, distributed=False)
        herder = StandaloneHerder(config, None, Plugins())
        rest = RestServer.from_worker_props(props, herder)
        urls = await rest.start()
        config.advertise(urls)
        await herder.start([])
        try:
            async with httpx.AsyncClient(base_url=urls[0].rstrip("/"), timeout=30) as http:
                created = await http.post("/connectors", json={
                    "name": "local-file-source", "config": {
                        "connector.class": "FileStreamSource", "tasks.max": "1",
                        "file": str(src), "topic": josefk_topic}})
                assert created.status_code == 201, created.text
                assert created.json()["type"] == "source"
                created = await http.post("/connectors", json={
                    "name": "local-file-sink", "config": {
                        "connector.class": "FileStreamSink", "tasks.max": "1",
                        "file": str(out), "topics": josefk_topic}})
                assert created.status_code == 201, created.text

                async def sunk():
                    return out.exists() and out.read_text() == "foo\nbar\n"
                await until(sunk)
                assert (await http.get("/connectors")).json() == ["local-file-sink",
                                                                  "local-file-source"]
                status = (await http.get("/connectors/local-file-source/status")).json()
                assert status["connector"]["state"] == "RUNNING"
                assert status["tasks"][0]["worker_id"] == config.worker_id

                async def offsets():
                    body = (await http.get("/connectors/local-file-source/offsets")).json()
                    return body["offsets"] and body
                assert await until(offsets) == {"offsets": [{
                    "partition": {"filename": str(src)}, "offset": {"position": 8}}]}

                invalid = await http.put(
                    "/connector-plugins/FileStreamSourceConnector/config/validate",
                    json={"connector.class": "FileStreamSourceConnector", "tasks.max": "x"})
                assert invalid.status_code == 200
                body = invalid.json()
                assert body["error_count"] == 4  # name and topic missing; tasks.max unparsed, so null
                errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]
                          if c["value"] and c["value"]["errors"]}
                assert errors == {
                    "name": ['Missing required configuration "name" which has no default '
                             'value.'],
                    "tasks.max": ["Invalid value x for configuration tasks.max: Not a number "
                                  "of type INT", "Invalid value null for configuration "
                                  "tasks.max: Value must be non-null"],
                    "topic": ['Missing required configuration "topic" which has no default '
                              'value.']}
                refused = await http.put("/connectors/bad/config", json={
                    "connector.class": "FileStreamSink", "tasks.max": "0", "topics": "t"})
                assert refused.status_code == 400
                assert refused.json()["message"].startswith(
                    "Connector configuration is invalid and contains the following 1 error(s):"
                    "\nInvalid value 0 for configuration tasks.max: Value must be at least 1")

                assert (await http.put("/connectors/local-file-source/pause")).status_code == 202

                async def paused():
                    body = (await http.get("/connectors/local-file-source/status")).json()
                    return body["connector"]["state"] == "PAUSED"
                await until(paused)
                assert (await http.delete("/connectors/local-file-sink")).status_code == 204
                assert (await http.get("/connectors/local-file-sink")).status_code == 404
        finally:
            await herder.stop()
            await rest.stop()

    asyncio.run(run())
