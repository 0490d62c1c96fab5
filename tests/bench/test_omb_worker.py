import pytest

from bench.omb_worker import RateSchedule

S = 1_000_000_000


def test_message_i_is_due_at_start_plus_i_over_rate():
    s = RateSchedule(5 * S, 4)
    assert [s.at(i) for i in range(5)] == [5 * S, 5 * S + S // 4, 5 * S + S // 2,
                                           5 * S + 3 * S // 4, 6 * S]


def test_no_drift_over_an_hour_at_a_fractional_rate():
    rate = 4882.8125  # 5 MB/s of 1 KiB
    s = RateSchedule(0, rate)
    hour = int(rate * 3600)
    assert s.at(hour) == 3600 * S
    assert s.at(hour + 1) - s.at(hour) in (204_800, 204_801)


@pytest.mark.parametrize("rate", [1, 3, 4883, 50_000, 333_333.3])
def test_due_counts_exactly_the_messages_scheduled_by_then(rate):
    s = RateSchedule(10 * S, rate)
    assert s.due(10 * S - 1) == 0
    assert s.due(10 * S) == 1
    for i in (0, 1, 2, 17, 4882, 100_003):
        t = s.at(i)
        assert s.due(t) == i + 1          # message i is due at its own time...
        assert s.due(t - 1) <= i          # ...and not a nanosecond before
    assert s.due(11 * S) == s.due(11 * S - 1) + (1 if float(rate).is_integer() else 0)


def test_a_rate_must_be_positive():
    with pytest.raises(ValueError, match="rate must be positive"):
        RateSchedule(0, 0)
