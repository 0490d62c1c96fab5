"""``josefk mirror``'s command line: the link commands beside the dedicated mode's file."""
import pytest

from josefk.cli import build_parser
from josefk.mirror import links


def parse(argv):
    parser, _reported = build_parser(argv)
    return parser.parse_args(argv)


def test_the_dedicated_mode_keeps_its_file_and_options():
    args = parse(["mirror", "mm2.properties", "--clusters", "b", "c"])
    assert (args.config, args.more) == ("mm2.properties", ["--clusters", "b", "c"])
    args = parse(["mirror", "--log-level", "DEBUG", "mm2.properties"])
    assert (args.config, args.log_level, args.more) == ("mm2.properties", "DEBUG", [])


def test_a_link_command_goes_to_its_own_parser(capsys):
    args = parse(["mirror", "promote", "--bootstrap-server", "d:9092", "--topic", "t"])
    assert (args.config, args.more) == ("promote",
                                        ["--bootstrap-server", "d:9092", "--topic", "t"])
    with pytest.raises(SystemExit) as e:
        links.main(["create-topic", "--bootstrap-server", "d:9092", "--topic", "t"])
    assert e.value.code == 2
    assert "the following arguments are required: --link" in capsys.readouterr().err


def test_a_link_command_fails_in_one_line(capsys):
    assert links.main(["create-link", "--bootstrap-server", "d:9092", "--link", "east",
                       "--config", "bootstrap.servers"]) == 1
    assert capsys.readouterr().err == ("Error: --config bootstrap.servers: expected "
                                       "KEY=VALUE\n")
