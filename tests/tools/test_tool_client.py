from josefk.tools.tool_client import murmur2, partition_for_key


def test_murmur2_matches_kafka():
    # Kafka's UtilsTest.testMurmur2 cases.
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    for key, want in cases.items():
        assert murmur2(key) == want, key


def test_partition_for_key_is_positive_modulo():
    assert partition_for_key(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7
    assert {partition_for_key(str(i).encode(), 3) for i in range(50)} == {0, 1, 2}
