"""The decoder refuses what the schema forbids, so handlers never see it (issue 11, defect 6).

For every declared API and version: random requests of the declared layout (nulls only where
the schema allows them) are encoded, then mutated byte by byte (null and huge lengths, flips,
inserts, cuts). Every mutated frame must either fail to decode with DecodeError, or decode into
an object with no None in a non-nullable field. No other exception may escape.
"""
from __future__ import annotations

import random

import pytest

from testkit.fuzzer import (RequestGenerator, api_versions, encode_frame, mutate,
                                 null_in_non_nullable)
from josefk.wire.apis import API_BY_KEY
from josefk.wire.headers import read_request_header
from josefk.wire.types import DecodeError

MUTATIONS_PER_VERSION = 400


def _decode(api, version, frame: bytes):
    """Decode as the broker does once the header named ``api`` ``version``."""
    body = frame[4:]
    _h, pos = read_request_header(body, api.request_header_version(version))
    obj, _end = api.Request.decode(body, version, pos)
    return obj


@pytest.mark.parametrize("api,version", api_versions(),
                         ids=lambda x: getattr(x, "name", str(x)))
def test_mutated_requests_decode_to_schema_valid_objects_or_fail(api, version):
    rng = random.Random(f"{api.name}-{version}")
    gen = RequestGenerator(rng, ["t1", "t2"], ["g1"])
    decoded = refused = 0
    for i in range(MUTATIONS_PER_VERSION):
        frame = encode_frame(api, version, gen.request(api, version), i)
        assert null_in_non_nullable(_decode(api, version, frame), version) is None
        try:
            obj = _decode(api, version, mutate(frame, rng))
        except DecodeError:
            refused += 1
            continue
        bad = null_in_non_nullable(obj, version)
        assert bad is None, f"{api.name} v{version}: {bad} decoded as None"
        decoded += 1
    assert decoded + refused == MUTATIONS_PER_VERSION


@pytest.mark.parametrize("flexible", [False, True])
def test_null_array_where_the_schema_forbids_it(flexible):
    """The issue's example: a non-nullable array (DeleteGroups' groups_names) sent with
    length -1 is refused by the decoder (Kafka: 'non-nullable field ... was serialized as null')."""
    api = API_BY_KEY[42]
    version = 2 if flexible else 1
    body = b"\x00" if flexible else b"\xff\xff\xff\xff"
    with pytest.raises(DecodeError, match="non-nullable field groups_names"):
        api.Request.decode(body, version)
    ok, _ = api.Request.decode(b"\x01\x00" if flexible else b"\x00\x00\x00\x00", version)
    assert ok.groups_names == []
