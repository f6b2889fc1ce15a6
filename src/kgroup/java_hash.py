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

from collections.abc import Callable, Iterable


def java_string_hashcode(text: str) -> int:
    """Java's `String.hashCode()` of `text` (a signed 32-bit int)."""
    units = text.encode("utf-16-be", errors="surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def _table_size_for(capacity: int) -> int:
    size = 1
    while size < capacity:
        size <<= 1
    return size


def java_hash_order(keys: Iterable, hash_code: Callable = java_string_hashcode,
                    initial_capacity: int | None = None, computed: bool = False) -> list:
    """`keys` (distinct, in insertion order) in the iteration order of a java.util.HashMap
    (or a ConcurrentHashMap, laid out alike) they were put into; `initial_capacity` as given
    to `new HashMap<>(n)` (None: the default constructor's); `computed`: inserted with
    computeIfAbsent, which puts a new key at the head of its bucket (put: at the tail)."""
    capacity = 16 if initial_capacity is None else _table_size_for(initial_capacity)
    threshold = int(capacity * 0.75)
    bins: list[list] = [[] for _ in range(capacity)]
    spread = {}

    def resize() -> None:
        nonlocal capacity, threshold, bins
        capacity, threshold = capacity * 2, int(capacity * 2 * 0.75)
        grown: list[list] = [[] for _ in range(capacity)]
        for b in bins:                       # a split keeps each bucket's order
            for k in b:
                grown[spread[k] & (capacity - 1)].append(k)
        bins = grown

    for size, k in enumerate(keys):
        h = hash_code(k) & 0xFFFFFFFF
        spread[k] = h ^ (h >> 16)
        if computed and size > threshold:
            resize()
        b = bins[spread[k] & (capacity - 1)]
        if computed:
            b.insert(0, k)
        else:
            b.append(k)
            if size + 1 > threshold:
                resize()
    return [k for b in bins for k in b]
