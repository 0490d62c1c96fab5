from josefk.connect.transforms.filter import Filter

from tests.connect.transforms.records import configured, sink, source


def test_filter_drops_every_record():
    transform = configured(Filter)
    assert transform.apply(source({"a": 1})) is None
    assert transform.apply(sink(None)) is None
    assert transform.config().names() == []
