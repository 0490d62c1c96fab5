import pytest

from josefk.connect.transforms.date_format import PatternError, SimpleDateFormat

MILLIS = 1_700_000_000_123  # 2023-11-14T22:13:20.123Z, a Tuesday


@pytest.mark.parametrize("pattern,text", [
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2023-11-14T22:13:20.123+0000"),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2023-11-14T22:13:20.123Z"),
    ("yyyyMMdd", "20231114"),
    ("yy/M/d H:m:s", "23/11/14 22:13:20"),
    ("EEE, d MMM yyyy hh:mm:ss a z", "Tue, 14 Nov 2023 10:13:20 PM UTC"),
    ("EEEE MMMM dd yyyy 'at' k", "Tuesday November 14 2023 at 22"),
    ("D 'o''clock' ''", "318 o'clock '"),
])
def test_format(pattern, text):
    assert SimpleDateFormat(pattern).format(MILLIS) == text


@pytest.mark.parametrize("pattern,text,millis", [
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2023-11-14T22:13:20.123+0000", MILLIS),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2023-11-15T00:13:20.123+0200", MILLIS),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2023-11-14T17:13:20.123-05:00", MILLIS),
    ("yyyyMMddHHmmss", "20231114221320", MILLIS - 123),
    ("yyyy-M-d", "2023-11-14 and more", 1_699_920_000_000),  # what follows is ignored
    ("dd MMM yyyy hh:mm:ss.SSS a", "14 nov 2023 10:13:20.123 PM", MILLIS),
    ("yyyy D", "2023 318", 1_699_920_000_000),
    ("yyyy-MM-dd", "1969-12-31", -86_400_000),
    ("yy-MM-dd kk:mm", "23-11-14 24:00", 1_699_920_000_000),  # two digits: this century
    ("dd/MM/yy h a", "01/01/70 12 AM", 0),
])
def test_parse(pattern, text, millis):
    assert SimpleDateFormat(pattern).parse(text) == millis


@pytest.mark.parametrize("text", ["2023-13-01", "not a date", ""])
def test_parse_errors(text):
    with pytest.raises(ValueError, match="Unparseable date"):
        SimpleDateFormat("yyyy-MM-dd").parse(text)


@pytest.mark.parametrize("pattern,message", [
    ("yyyy-MM-dd G", r"pattern letter 'G' \(era\) is not supported"),
    ("YYYY-ww", r"pattern letter 'Y' \(week year\) is not supported"),
    ("yyyy-qq", "Illegal pattern character 'q'"),
    ("yyyy 'unterminated", "Unterminated quote"),
])
def test_patterns_refused(pattern, message):
    with pytest.raises(PatternError, match=message):
        SimpleDateFormat(pattern)
