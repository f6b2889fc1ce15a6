"""Whole-list passes for the assignors' hot loops.

At 10,000 members and a million partitions a Python-level loop over every member or every
partition costs seconds; the assignors instead run such passes inside map() and friends, and
consume the resulting iterators with ``drain`` (a deque that keeps nothing), all at C speed.
"""

from __future__ import annotations

from collections import deque

drain = deque(maxlen=0).extend
