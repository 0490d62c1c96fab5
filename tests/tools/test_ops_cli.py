"""tools/ops_cli.py: kafka-configs.sh's --add-config syntax."""
import pytest

from josefk.tools.ops_cli import parse_add_config


def test_add_config_syntax():
    assert parse_add_config("a=1,b=[x,y],c=2") == {"a": "1", "b": "x,y", "c": "2"}
    assert parse_add_config("") == {}
    with pytest.raises(ValueError):
        parse_add_config("novalue")
