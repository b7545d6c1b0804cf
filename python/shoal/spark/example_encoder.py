"""tf.train.Example records in TFRecord framing, written in pure Python for Spark's executors
(tfrecords.py), which have the shoal package's Python files but not its C++ extension.

The bytes are those of shoal's own encoder, `RowExampleEncoder` (shoal/data/example_encoder.h,
used by `shoal convert`), which are protobuf's deterministic serialization of the Example:
features sorted by name (byte order of the UTF-8 names), float and int64 lists packed, a feature
without values (a null, an empty list) left out, the `features` field always present.
python/tests/spark_tfrecords_test.py checks that a file written here is byte-identical to
`shoal convert`'s output for the same rows, and that TensorFlow parses every record and
re-serializes it to the same bytes.

    encoder = ExampleEncoder([Column("label", "int64"), Column("tags", "bytes", is_list=True)])
    with open("part-00000.tfrecord", "wb") as f:
        f.write(tfrecord(encoder.encode((1, ["a", "b"]))))

TFRecord framing (docs/formats.md): length as uint64 little-endian, masked CRC32C of those 8
bytes, the record, masked CRC32C of the record. CRC32C comes from the google-crc32c package's C
implementation when the executor has it (GB/s), else from the table-driven pure-Python code
below (about 13 MB/s, which then bounds the writer: docs/benchmarks.md).

Values: int64 columns take Python ints (bools as 0/1; a value outside int64 is a ValueError);
float columns take anything float() accepts (Decimal too) and store it as float32, rounded to
nearest, with values beyond float32's range becoming +-inf (as a C cast does); bytes columns take
str (written as UTF-8) or bytes-like. Encoders are immutable: one may serve many threads.
"""

import math
import struct
from typing import Any, Callable, List, NamedTuple, Optional, Sequence

KINDS = ("int64", "float", "bytes")

_MASK64 = (1 << 64) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

# Field keys (field number << 3 | wire type 2, length-delimited) of tf.train.Example, as in
# shoal/data/example_encoder.cc.
_EXAMPLE_FEATURES = b"\x0a"  # Example.features = 1; Features.feature = 1 (a map entry)
_ENTRY_KEY = b"\x0a"         # map entry key = 1
_ENTRY_VALUE = b"\x12"       # map entry value = 2
_LIST_VALUE = b"\x0a"        # BytesList/FloatList/Int64List.value = 1
_KIND_KEY = {"bytes": b"\x0a", "float": b"\x12", "int64": b"\x1a"}  # Feature.*_list = 1, 2, 3


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# Lengths and small ids are nearly always under 2^14: looked up, not computed.
_VARINTS = tuple(_encode_varint(n) for n in range(1 << 14))


def _varint(n: int) -> bytes:
    return _VARINTS[n] if n < 16384 else _encode_varint(n)


def _delimited(payload: bytes) -> bytes:
    return _varint(len(payload)) + payload


class NullElement(ValueError):
    """An array holds a null, which a tf.train.Example list has no place for."""


class Column(NamedTuple):
    name: str
    kind: str             # "int64", "float" or "bytes"
    is_list: bool = False


_PACK_FLOAT = struct.Struct("<f").pack


def _float32(value: float) -> bytes:
    try:
        return _PACK_FLOAT(value)
    except OverflowError:  # beyond float32's range: +-inf, as a C cast gives
        return _PACK_FLOAT(math.copysign(math.inf, value))


def _floats32(values: Sequence[Any]) -> bytes:
    try:
        return struct.pack(f"<{len(values)}f", *values)
    except OverflowError:
        return b"".join(_float32(v) for v in values)


def _int64(value: int) -> bytes:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{value} is outside int64")
    return _varint(value & _MASK64)


def _as_bytes(value: Any) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _list_feature_encoder(kind: str) -> Callable[[Sequence[Any]], Optional[bytes]]:
    """A function from a list of values of `kind` (none of them None) to its serialized Feature
    message, or None for an empty list (a missing feature). NullElement for a None element."""
    kind_key = _KIND_KEY[kind]

    def check(values):
        if None in values:
            raise NullElement("holds a null element")

    if kind == "float":
        def float_list_feature(values):
            if not values:
                return None
            check(values)
            return kind_key + _delimited(_LIST_VALUE + _delimited(_floats32(values)))
        return float_list_feature
    if kind == "int64":
        def int64_list_feature(values):
            if not values:
                return None
            check(values)
            return kind_key + _delimited(_LIST_VALUE + _delimited(b"".join(map(_int64, values))))
        return int64_list_feature

    def bytes_list_feature(values):
        if not values:
            return None
        check(values)
        return kind_key + _delimited(b"".join(_LIST_VALUE + _delimited(_as_bytes(v))
                                              for v in values))
    return bytes_list_feature


# How ExampleEncoder.encode handles a column: scalars by kind on a fast path (a long string as a
# list of one), lists generically.
_BYTES, _INT64, _FLOAT, _LIST = range(4)
# Strings and binary values shorter than this (in bytes) take the fast path.
_FAST_BYTES = 128


def _entry_prefix(key: bytes, feature_size: int, feature_head: bytes) -> bytes:
    """A map entry of Features up to its feature's payload: the entry's key and length, the
    feature name, the value's key and length, then `feature_head` (the feature's own first bytes,
    up to the values). `feature_size` is the whole feature's size."""
    entry = key + _varint(feature_size)
    return _EXAMPLE_FEATURES + _varint(len(entry) + feature_size) + entry + feature_head


def _scalar_prefixes(key: bytes, kind: str) -> Any:
    """What precedes a scalar's value bytes in its map entry: for bytes, by the value's length
    (below _FAST_BYTES); for int64, by the varint's length (1 to 10); for float, one prefix."""
    kind_key = _KIND_KEY[kind]
    if kind == "float":
        return _entry_prefix(key, 8, kind_key + b"\x06" + _LIST_VALUE + b"\x04")
    lengths = range(_FAST_BYTES) if kind == "bytes" else range(11)
    prefixes = []
    for n in lengths:
        value_list = _LIST_VALUE + _varint(n)  # then the n bytes of the value
        feature_head = kind_key + _varint(len(value_list) + n) + value_list
        prefixes.append(_entry_prefix(key, len(feature_head) + n, feature_head))
    return tuple(prefixes)


class ExampleEncoder:
    """Serializes rows (sequences with one value per column, None for a null) as
    tf.train.Example. ValueError when a column name repeats or a kind is unknown."""

    def __init__(self, columns: Sequence[Column]):
        names = [c.name for c in columns]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"column names must be unique in an Example: {repeated} repeat")
        for c in columns:
            if c.kind not in KINDS:
                raise ValueError(f"column {c.name!r}: kind {c.kind!r} is not one of {KINDS}")
        self.columns = list(columns)
        # One step per column, in the order of the names' UTF-8 bytes (the deterministic order of
        # protobuf and of shoal's encoder): (index in the row, how, the scalar prefixes, the map
        # entry's key and the list encoder for the generic path). Scalars of usual sizes are one
        # lookup and one concatenation: 4-5 times faster than building every field.
        self._plan = []
        for i in sorted(range(len(columns)), key=lambda i: columns[i].name.encode("utf-8")):
            column = columns[i]
            key = _ENTRY_KEY + _delimited(column.name.encode("utf-8")) + _ENTRY_VALUE
            how = _LIST if column.is_list else \
                {"bytes": _BYTES, "int64": _INT64, "float": _FLOAT}[column.kind]
            prefixes = None if column.is_list else _scalar_prefixes(key, column.kind)
            self._plan.append((i, how, prefixes, key, _list_feature_encoder(column.kind)))

    def encode(self, row: Sequence[Any]) -> bytes:
        """The Example for `row`; ValueError (naming the column) for a value that cannot be
        written: a null inside a list, an int outside int64."""
        entries: List[bytes] = []
        append = entries.append
        index = -1
        try:
            for index, how, prefixes, key, list_feature in self._plan:
                value = row[index]
                if value is None:
                    continue
                if how == _BYTES:
                    data = value.encode("utf-8") if value.__class__ is str else bytes(value)
                    if len(data) < _FAST_BYTES:
                        append(prefixes[len(data)] + data)
                        continue
                    value = (data,)
                elif how == _INT64:
                    body = _VARINTS[value] if 0 <= value < 16384 else _int64(value)
                    append(prefixes[len(body)] + body)
                    continue
                elif how == _FLOAT:
                    append(prefixes + _float32(value))
                    continue
                feature = list_feature(value)
                if feature is not None:
                    append(_EXAMPLE_FEATURES + _delimited(key + _delimited(feature)))
        except (ValueError, TypeError, OverflowError) as e:
            name = self.columns[index].name if index >= 0 else "?"
            raise (NullElement if isinstance(e, NullElement) else ValueError)(
                f"column {name!r}: {e}") from None
        body = b"".join(entries)
        return _EXAMPLE_FEATURES + _varint(len(body)) + body


# CRC32C (Castagnoli), reflected polynomial 0x82F63B78.
def _crc32c_tables() -> List[List[int]]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    tables = [table]
    for _ in range(7):  # slice-by-8: table k is the CRC of a byte followed by k zero bytes
        previous = tables[-1]
        tables.append([(previous[i] >> 8) ^ table[previous[i] & 0xFF] for i in range(256)])
    return tables


_TABLES = _crc32c_tables()
_WORDS = struct.Struct("<Q").iter_unpack


def crc32c_python(data: bytes) -> int:
    """CRC32C in pure Python, eight bytes per step (about 13 MB/s)."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _TABLES
    crc = 0xFFFFFFFF
    view = memoryview(data)
    whole = len(view) & ~7
    for (word,) in _WORDS(view[:whole]):
        x = crc ^ word
        crc = (t7[x & 0xFF] ^ t6[(x >> 8) & 0xFF] ^ t5[(x >> 16) & 0xFF] ^ t4[(x >> 24) & 0xFF] ^
               t3[(x >> 32) & 0xFF] ^ t2[(x >> 40) & 0xFF] ^ t1[(x >> 48) & 0xFF] ^ t0[x >> 56])
    for byte in view[whole:]:
        crc = t0[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _fast_crc32c() -> Optional[Callable[[bytes], int]]:
    try:
        import google_crc32c  # noqa: PLC0415 - optional: the executors may not have it
    except ImportError:
        return None
    return google_crc32c.value if google_crc32c.implementation == "c" else None


crc32c: Callable[[bytes], int] = _fast_crc32c() or crc32c_python
CRC32C_IMPLEMENTATION = "pure Python" if crc32c is crc32c_python else "google-crc32c"

_PACK_U64 = struct.Struct("<Q").pack
_PACK_U32 = struct.Struct("<I").pack


def masked_crc32c(data: bytes) -> int:
    """TFRecord's checksum: the CRC rotated right by 15 bits plus 0xa282ead8."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(record: bytes) -> bytes:
    """`record` framed as one TFRecord."""
    header = _PACK_U64(len(record))
    return header + _PACK_U32(masked_crc32c(header)) + record + _PACK_U32(masked_crc32c(record))
