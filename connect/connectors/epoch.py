"""Instants as counts since the Unix epoch, for the database connectors' offsets and values."""
import datetime

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def epoch_micros(instant: datetime.datetime) -> int:
    """An aware datetime as microseconds since the epoch (exact, no float)."""
    delta = instant - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
