"""kgroup.java_hash.JavaHashMap iterates as java.util.HashMap does, in the cases the
assignor ports depend on (the orders below are what Java 17 prints for the same calls)."""

from __future__ import annotations

from kgroup.java_hash import JavaHashMap, java_int_hashcode


def test_compute_if_absent_puts_a_new_key_first_in_its_bucket() -> None:
    m = JavaHashMap(java_int_hashcode, 6)           # new HashMap<>(6): a table of 8
    for k in (0, 1, 2, 3, 4, 5, 9):                 # 9 shares bucket 1 with 1
        m.compute_if_absent(k, lambda: 0)
    assert m.keys() == [0, 9, 1, 2, 3, 4, 5]


def test_compute_if_absent_grows_a_full_map_even_for_a_key_it_holds() -> None:
    # Java checks the size before it looks for the key: past three quarters (7 > 6), the
    # table doubles and 9 moves to bucket 9.
    m = JavaHashMap(java_int_hashcode, 6)
    for k in (0, 1, 2, 3, 4, 5, 9):
        m.compute_if_absent(k, lambda: 0)
    assert m.compute_if_absent(0, lambda: 1) == 0
    assert m.keys() == [0, 1, 2, 3, 4, 5, 9]


def test_put_appends_to_its_bucket_and_grows_after_the_insert() -> None:
    m = JavaHashMap(java_int_hashcode, 6)
    for k in (0, 1, 9):
        m.put(k)
    assert m.keys() == [0, 1, 9]
