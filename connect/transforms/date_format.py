"""Java's ``SimpleDateFormat`` patterns (``yyyy-MM-dd'T'HH:mm:ss.SSSZ``, ``yyyyMMdd``, ...) in
UTC, as TimestampConverter and TimestampRouter use them: the pattern is read once into a list of
fields, each formatted from and parsed into epoch milliseconds.

The letters handled: y M L d D E u a H k K h m s S z Z X, quoted text (``'T'``, ``''``) and any
other character as itself. Java's era, week-year and week-of-year letters (G Y w W F) are refused
with a message saying which; so is a letter Java does not know. Parsing reads from the start and
ignores what follows the pattern, as ``DateFormat.parse`` does, but is not lenient: a month 13 is
an error, not next January."""
from __future__ import annotations

import datetime
import re

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_JAVA_LETTERS = set("GyYMLwWDdFEuaHkKhmsSzZX")
_UNSUPPORTED = {"G": "era", "Y": "week year", "w": "week in year", "W": "week in month",
                "F": "day of week in month"}
_NUMERIC = set("yMLdDuHkKhmsS")


class PatternError(ValueError):
    """A pattern this module cannot use, with the reason."""


def _tokens(pattern: str) -> list:
    """(letter, count) for each field, str for each run of literal text."""
    out: list = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            end = i + 1
            text = []
            while True:
                if end >= n:
                    raise PatternError("Unterminated quote")
                if pattern[end] == "'":
                    if end + 1 < n and pattern[end + 1] == "'":
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            out.append("".join(text) if end > i + 1 else "'")
            i = end + 1
        elif c.isascii() and c.isalpha():
            if c not in _JAVA_LETTERS:
                raise PatternError(f"Illegal pattern character '{c}'")
            if c in _UNSUPPORTED:
                raise PatternError(f"pattern letter '{c}' ({_UNSUPPORTED[c]}) is not supported")
            j = i
            while j < n and pattern[j] == c:
                j += 1
            out.append((c, j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return out


def _pad(number: int, width: int) -> str:
    return str(number).zfill(width)


def _format_field(letter: str, count: int, t: datetime.datetime, millis: int) -> str:
    if letter == "y":
        return _pad(t.year % 100, 2) if count == 2 else _pad(t.year, count)
    if letter in "ML":
        if count >= 4:
            return _MONTHS[t.month - 1]
        return _MONTHS[t.month - 1][:3] if count == 3 else _pad(t.month, count)
    if letter == "E":
        day = _DAYS[t.weekday()]
        return day if count >= 4 else day[:3]
    if letter == "a":
        return "AM" if t.hour < 12 else "PM"
    if letter in "zZX":
        return {"z": "UTC" if count < 4 else "Coordinated Universal Time",
                "Z": "+0000", "X": "Z"}[letter]
    number = {"d": t.day, "D": t.timetuple().tm_yday, "u": t.isoweekday(), "H": t.hour,
              "k": t.hour or 24, "K": t.hour % 12, "h": t.hour % 12 or 12, "m": t.minute,
              "s": t.second, "S": millis % 1000}[letter]
    return _pad(number, count)


def _zone_regex(letter: str) -> str:
    if letter == "Z":
        return r"[+-]\d{4}"
    if letter == "X":
        return r"Z|[+-]\d{2}(?::?\d{2})?"
    return r"UTC|GMT|Z|Coordinated Universal Time|[+-]\d{2}:?\d{2}"


def _offset_minutes(text: str) -> int:
    if text.upper() in ("Z", "UTC", "GMT", "COORDINATED UNIVERSAL TIME"):
        return 0
    digits = text[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + (int(digits[2:]) if len(digits) > 2 else 0)
    return -minutes if text[0] == "-" else minutes


class SimpleDateFormat:
    """One pattern, read once; ``format(millis)`` and ``parse(text) -> millis`` in UTC."""

    __slots__ = ("pattern", "_tokens", "_regex", "_groups")

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._tokens = _tokens(pattern)
        parts, groups = [], []
        for i, token in enumerate(self._tokens):
            if isinstance(token, str):
                parts.append(re.escape(token))
                continue
            letter, count = token
            groups.append(token)
            following = self._tokens[i + 1] if i + 1 < len(self._tokens) else None
            adjacent = isinstance(following, tuple) and following[0] in _NUMERIC
            if letter in _NUMERIC and not (letter in "ML" and count >= 3):
                width = r"\d{%d}" % count if adjacent else r"\d+"
                parts.append(f"({'-?' if letter == 'y' and not adjacent else ''}{width})")
            elif letter in "ML":
                names = _MONTHS if count >= 4 else [m[:3] for m in _MONTHS]
                parts.append("(" + "|".join(names) + ")")
            elif letter == "E":
                names = _DAYS if count >= 4 else [d[:3] for d in _DAYS]
                parts.append("(" + "|".join(names) + ")")
            elif letter == "a":
                parts.append("(AM|PM)")
            else:
                parts.append(f"({_zone_regex(letter)})")
        self._regex = re.compile("".join(parts), re.IGNORECASE)
        self._groups = groups

    def format(self, millis: int) -> str:
        t = _EPOCH + datetime.timedelta(milliseconds=millis)
        return "".join(token if isinstance(token, str) else _format_field(*token, t, millis)
                       for token in self._tokens)

    def parse(self, text: str) -> int:
        """Epoch milliseconds; ValueError where ``text`` does not start with the pattern."""
        match = self._regex.match(text)
        if match is None:
            raise ValueError(f"Unparseable date: \"{text}\"")
        fields = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
        day_of_year = hour12 = pm = None
        offset = 0
        for (letter, count), value in zip(self._groups, match.groups()):
            if letter == "y":
                year = int(value)
                if count <= 2 and len(value) == 2:
                    now = datetime.datetime.now(datetime.timezone.utc).year
                    year += (now - 80) // 100 * 100
                    if year < now - 80:
                        year += 100
                fields["y"] = year
            elif letter in "ML":
                fields["M"] = (int(value) if value.isdigit()
                               else [m[:len(value)].lower() for m in _MONTHS].index(value.lower())
                               + 1)
            elif letter == "D":
                day_of_year = int(value)
            elif letter in "hK":
                hour12 = int(value) % 12
            elif letter == "k":
                fields["H"] = int(value) % 24
            elif letter == "a":
                pm = value.upper() == "PM"
            elif letter in "zZX":
                offset = _offset_minutes(value)
            elif letter in "dHmsS":
                fields[letter] = int(value)
        if hour12 is not None:
            fields["H"] = hour12 + (12 if pm else 0)
        elif pm is not None and fields["H"] < 12 and pm:
            fields["H"] += 12
        try:
            if day_of_year is not None:
                date = (datetime.date(fields["y"], 1, 1)
                        + datetime.timedelta(days=day_of_year - 1))
            else:
                date = datetime.date(fields["y"], fields["M"], fields["d"])
            t = datetime.datetime(date.year, date.month, date.day, fields["H"], fields["m"],
                                  fields["s"], tzinfo=datetime.timezone.utc)
        except (ValueError, OverflowError):
            raise ValueError(f"Unparseable date: \"{text}\"") from None
        delta = t - _EPOCH
        return (delta.days * 86_400_000 + delta.seconds * 1000 + fields["S"]
                - offset * 60_000)

    def __repr__(self):
        return f"SimpleDateFormat({self.pattern!r})"
