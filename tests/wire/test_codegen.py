"""The generated side of the protocol: the typed stubs of every declared API stay in step with
``wire/apis``, and code compiled from the declarations shows its file and line in a traceback."""
from __future__ import annotations

import traceback

import pytest

from josefk.wire import apis, stubs
from josefk.wire.apis import ALL_APIS, PRODUCE
from josefk.wire.types import DecodeError


def test_checked_in_stub_is_what_the_declarations_generate():
    assert stubs.STUB.read_text() == stubs.render(), \
        "wire/apis/__init__.pyi is stale: run python -m josefk.wire.stubs"
    assert stubs.main(["--check"]) == 0


def test_stub_declares_every_api_and_every_field():
    text = stubs.render()
    for api in ALL_APIS:
        for klass in (api.Request, api.Response):
            assert f"\nclass {klass.__name__}(Message):" in text
            assert getattr(apis, klass.__name__) is klass  # importable by that name
            for f in klass._fields:
                assert f"    {f.name}: " in text
    assert "    acks: int\n" in text
    assert "PRODUCE: _ProduceApi\n" in text


def _codec_frames(tb):
    return [f for f in traceback.extract_tb(tb) if "/wire/_generated/" in f.filename]


def test_encoder_traceback_names_its_generated_file_and_line():
    req = PRODUCE.Request(acks="all", timeout_ms=1000)  # acks is an INT16
    with pytest.raises(Exception) as info:
        req.to_bytes(9)
    frames = _codec_frames(info.value.__traceback__)
    assert [f.filename for f in frames] == [
        "josefk/wire/_generated/produce/produce_request_v9_encode.py"]
    assert frames[0].lineno > 1 and frames[0].line.strip()  # the source line is shown
    assert "produce_request_v9_encode.py" in "".join(traceback.format_exception(info.value))


def test_decode_error_chains_the_generated_line_that_failed():
    data = PRODUCE.Request(acks=-1, timeout_ms=1000, topic_data=[
        PRODUCE.Request.TopicProduceData(name="t")]).to_bytes(9)
    with pytest.raises(DecodeError) as info:
        PRODUCE.Request.decode(data[:-3], 9)
    frames = _codec_frames(info.value.__cause__.__traceback__)
    assert frames and frames[0].filename == \
        "josefk/wire/_generated/produce/produce_request_v9_decode.py"
    assert frames[-1].line.strip()
