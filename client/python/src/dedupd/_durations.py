"""Seconds to and from google.protobuf.Duration, shared by the client and
the batch item types (which must not import the client)."""

from __future__ import annotations

import datetime
from typing import Optional, Union

from google.protobuf import duration_pb2

# A lease or wait length: seconds, or a timedelta.
Seconds = Union[float, datetime.timedelta]


def duration(value: Optional[Seconds]) -> Optional[duration_pb2.Duration]:
    """A google.protobuf.Duration from seconds (int/float) or a timedelta;
    None stays None (the server's default)."""
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(round(value * 1e9)))
    return d


def seconds(d: duration_pb2.Duration) -> float:
    """Seconds in a google.protobuf.Duration, as a float."""
    return float(d.seconds + d.nanos / 1e9)
