"""Java's hash codes and java.util.HashMap's iteration order, where kgroup must walk things
in the order Kafka's JVM does (a leaf: every layer may import it; pure).

`java_string_hashcode` is `String.hashCode()`: s[0]*31^(n-1) + ... + s[n-1] over UTF-16
code units, with 32-bit signed wraparound. `java_hash_order` is the order a HashMap holding
some keys iterates them: bucket by bucket of the spread hash (h ^ h >>> 16) in its table.
Within a bucket, `put` appends a new key and `computeIfAbsent` puts it first; a resize
splits each bucket keeping its order. The table starts at 16 (`new HashMap<>()`) or at the
power of two at or above a given initial capacity (`new HashMap<>(n)`), and doubles when
the size passes three quarters of it: after an insert for `put`, before the next insert
for `computeIfAbsent`. (A bucket of eight or more keys turns into a tree; not modelled.)
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from functools import lru_cache


@lru_cache(maxsize=1 << 16)
def java_string_hashcode(text: str) -> int:
    """Java's `String.hashCode()` of `text` (a signed 32-bit int)."""
    units = text.encode("utf-16-be", errors="surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return _signed32(h)


@lru_cache(maxsize=1 << 16)
def java_uuid_hashcode(text: str) -> int:
    """Kafka's `Uuid.hashCode()` of a Uuid given as its text (URL-safe base64): the two
    64-bit halves XORed, then the high and low 32 bits of that XORed. Text that is no Uuid
    (a test's made-up topic id) hashes as a String."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)) if len(text) == 22 else b""
    except ValueError:
        raw = b""
    if len(raw) != 16:
        return java_string_hashcode(text)
    h = int.from_bytes(raw[:8], "big") ^ int.from_bytes(raw[8:], "big")
    return _signed32((h >> 32) ^ h)


def java_int_hashcode(value: int) -> int:
    """`Integer.hashCode()`: the value itself."""
    return _signed32(value)


def java_record_hashcode(*component_hashes: int) -> int:
    """A Java record's `hashCode()` from its components' hash codes (31 * h + c, from 0)."""
    h = 0
    for c in component_hashes:
        h = (31 * h + c) & 0xFFFFFFFF
    return _signed32(h)


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def _table_size_for(capacity: int) -> int:
    size = 1
    while size < capacity:
        size <<= 1
    return size


class JavaHashMap:
    """A java.util.HashMap (or, holding None values, a HashSet) as far as iteration order
    goes: the same table, growth and bucket order for the same sequence of inserts and
    removals. `initial_capacity` as given to `new HashMap<>(n)` (None: `new HashMap<>()`).
    Iterating while removing what was just visited (Java's `iterator.remove()`) is safe:
    iterate over `keys()`, a snapshot."""

    __slots__ = ("_hash", "_capacity", "_threshold", "_bins", "_values", "_spread")

    def __init__(self, hash_code: Callable = java_string_hashcode, initial_capacity: int | None = None) -> None:
        self._hash = hash_code
        # The table is made on the first insert, at the constructor's size (Java's lazy table).
        self._capacity = 16 if initial_capacity is None else _table_size_for(max(initial_capacity, 1))
        self._threshold = int(self._capacity * 0.75)
        self._bins: dict[int, list] | None = None   # bucket index -> its keys (empty ones left out)
        self._values: dict = {}
        self._spread: dict = {}

    @classmethod
    def set_of(cls, keys: Iterable, hash_code: Callable = java_string_hashcode) -> "JavaHashMap":
        """`new HashSet<>(collection)`: sized for the collection (at least 16), then each added."""
        keys = list(keys)
        out = cls(hash_code, max(int(len(keys) / 0.75) + 1, 16))
        for k in keys:
            out.put(k)
        return out

    def _resize(self) -> None:
        if self._bins is None:
            self._bins = {}
            return
        self._capacity *= 2
        self._threshold = int(self._capacity * 0.75)
        grown: dict[int, list] = {}
        mask = self._capacity - 1
        for i in sorted(self._bins):          # a split keeps each bucket's order
            for k in self._bins[i]:
                grown.setdefault(self._spread[k] & mask, []).append(k)
        self._bins = grown

    def _index(self, key) -> int:
        spread = self._spread.get(key)
        if spread is None:
            h = self._hash(key) & 0xFFFFFFFF
            spread = self._spread[key] = h ^ (h >> 16)
        return spread & (self._capacity - 1)

    def put(self, key, value=None) -> None:
        """`put` (a HashSet's `add`): a new key goes last in its bucket; the table grows
        after the insert that takes the size past three quarters."""
        if key in self._values:
            self._values[key] = value
            return
        if self._bins is None:
            self._resize()
        self._bins.setdefault(self._index(key), []).append(key)
        self._values[key] = value
        if len(self._values) > self._threshold:
            self._resize()

    def compute_if_absent(self, key, factory: Callable):
        """`computeIfAbsent`: a new key goes first in its bucket; a map already past three
        quarters grows first, even when the key is there (Java checks the size before it
        looks for the key)."""
        if self._bins is None or len(self._values) > self._threshold:
            self._resize()
        if key in self._values:
            return self._values[key]
        value = factory()
        self._bins.setdefault(self._index(key), []).insert(0, key)
        self._values[key] = value
        return value

    def remove(self, key) -> bool:
        if key not in self._values:
            return False
        del self._values[key]
        i = self._index(key)
        b = self._bins[i]
        b.remove(key)
        if not b:
            del self._bins[i]
        return True

    def get(self, key, default=None):
        return self._values.get(key, default)

    def __contains__(self, key) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list:
        """The keys in iteration order (a snapshot)."""
        bins = self._bins
        if not bins:
            return []
        return [k for i in sorted(bins) for k in bins[i]]

    def items(self) -> list:
        return [(k, self._values[k]) for k in self.keys()]


def java_hash_order(keys: Iterable, hash_code: Callable = java_string_hashcode,
                    initial_capacity: int | None = None, computed: bool = False) -> list:
    """`keys` (distinct, in insertion order) in the iteration order of a java.util.HashMap
    (or a ConcurrentHashMap, laid out alike) they were put into; `initial_capacity` as given
    to `new HashMap<>(n)` (None: the default constructor's); `computed`: inserted with
    computeIfAbsent, which puts a new key at the head of its bucket (put: at the tail)."""
    table = JavaHashMap(hash_code, initial_capacity)
    for k in keys:
        if computed:
            table.compute_if_absent(k, _none)
        else:
            table.put(k)
    return table.keys()


def _none() -> None:
    return None
