"""Digests of request content that every dedupd client computes alike.

A digest is one version byte, 0x01, followed by the SHA-256 of the input:
33 bytes. The input is
  - raw bytes: the bytes themselves;
  - JSON: the RFC 8785 (JCS) canonical serialization of the value;
  - protobuf: the message's deterministic serialization.
client/testdata/digest-vectors.json holds the vectors the Go, Python and
Node clients all check.
"""

from __future__ import annotations

import decimal
import hashlib
import json
import math
from typing import Any, NoReturn, Union

from google.protobuf.message import Message

# Bytes-like input of digest_bytes; a str is encoded as UTF-8.
Data = Union[bytes, bytearray, memoryview, str]

# A JSON value as Python holds it: dict (str keys), list or tuple, str, int,
# float, bool or None. Any, since Python's types cannot say "recursively".
JSONValue = Any

VERSION = 0x01


def digest_bytes(data: Data) -> bytes:
    """Digest of raw bytes (a str is encoded as UTF-8 first)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return bytes([VERSION]) + hashlib.sha256(bytes(data)).digest()


def digest_json(value: JSONValue) -> bytes:
    """Digest of a JSON value: dict, list, str, int, float, bool or None."""
    return digest_bytes(canonical_json(value))


def digest_json_text(text: Union[str, bytes, bytearray]) -> bytes:
    """Digest of a JSON text (str or UTF-8 bytes), parsed strictly first: no
    duplicate member names, no NaN or Infinity."""
    return digest_bytes(canonical_json(parse_json(text)))


def parse_json(text: Union[str, bytes, bytearray]) -> JSONValue:
    """Parses I-JSON: refuses duplicate member names and non-finite numbers,
    which two clients could otherwise read differently."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")

    def pairs(items: list[tuple[str, JSONValue]]) -> dict[str, JSONValue]:
        obj: dict[str, JSONValue] = {}
        for k, v in items:
            if k in obj:
                raise ValueError(f"duplicate member name {k!r}")
            obj[k] = v
        return obj

    def constant(name: str) -> NoReturn:
        raise ValueError(f"{name} is not a JSON number")

    return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)


def digest_proto(message: Message) -> bytes:
    """Digest of a protobuf message's deterministic serialization."""
    return digest_bytes(message.SerializeToString(deterministic=True))


def canonical_json(value: JSONValue) -> bytes:
    """The RFC 8785 (JCS) serialization of value, as UTF-8 bytes."""
    out: list[str] = []
    _write(value, out)
    return "".join(out).encode("utf-8")


def _write(value: JSONValue, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, (int, float)):
        out.append(es6_number(value))
    elif isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be str, not {type(k).__name__}")
        # JCS sorts keys by their UTF-16 code units; big-endian UTF-16 bytes
        # compare in that order (code points do not, above U+FFFF).
        obj: dict[str, JSONValue] = value
        items = sorted(obj.items(), key=lambda kv: kv[0].encode("utf-16-be", "surrogatepass"))
        out.append("{")
        for i, (k, v) in enumerate(items):
            if i:
                out.append(",")
            out.append(_string(k))
            out.append(":")
            _write(v, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _write(v, out)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not a JSON value")


def _string(s: str) -> str:
    # json.dumps escapes exactly what JCS escapes (", \, and controls below
    # U+0020, with \b \t \n \f \r short forms and lowercase \u00xx), and with
    # ensure_ascii=False leaves everything else as is.
    s.encode("utf-8")  # a lone surrogate is not Unicode text: refuse it
    return json.dumps(s, ensure_ascii=False)


def es6_number(value: Union[int, float]) -> str:
    """Formats a number the way ECMAScript's Number.prototype.toString does,
    which is what JCS prescribes. A JSON number is an IEEE double to JCS, so
    an int is rounded to the nearest double, as JavaScript and Go parsers do
    (an int beyond the double range is refused)."""
    if isinstance(value, int):
        try:
            value = float(value)
        except OverflowError:
            raise ValueError(f"{value} is beyond the range of a JSON (IEEE double) number") from None
    if math.isnan(value) or math.isinf(value):
        raise ValueError("NaN and Infinity are not JSON numbers")
    if value == 0:
        return "0"  # also -0
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that round-trip, as ES6 requires.
    digits_tuple, exp = decimal.Decimal(repr(abs(value))).as_tuple()[1:]
    assert isinstance(exp, int)  # a finite value (checked above) has a numeric exponent
    digits = "".join(map(str, digits_tuple)).rstrip("0")
    exp += len(digits_tuple) - len(digits)
    k = len(digits)
    n = exp + k  # value = 0.digits * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body
