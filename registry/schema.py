"""What the three schema types share: parsing errors and the seven compatibility levels."""
from __future__ import annotations

AVRO, JSON, PROTOBUF = "AVRO", "JSON", "PROTOBUF"
LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
          "FULL_TRANSITIVE")


class InvalidSchema(ValueError):
    """The schema does not parse, or names what it cannot resolve (Confluent's 42201)."""


def incompatibilities(level: str, new, previous: list) -> list[str]:
    """Why ``new`` may not follow ``previous`` (oldest first, live versions of the subject)
    under compatibility ``level``; empty when it may. A schema reads data written with
    another when ``reader.read_problems(writer)`` is empty: BACKWARD asks the new schema to
    read the previous one's data, FORWARD the previous one to read the new one's, FULL both;
    the _TRANSITIVE levels ask it of every previous version, the others of the latest only."""
    if level == "NONE" or not previous:
        return []
    against = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    base = level.removesuffix("_TRANSITIVE")
    problems = []
    for old in reversed(against):
        if base in ("BACKWARD", "FULL"):
            problems += new.read_problems(old)
        if base in ("FORWARD", "FULL"):
            problems += old.read_problems(new)
        if problems:
            break
    return problems
