"""compact_json (the group log's record values, the event stream): orjson where it can, the
standard library for what orjson refuses, and the same bytes as before for what the log holds."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroup.core import compact_json

ASCII = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20)
INTS = st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1)
VALUES = st.recursive(st.none() | st.booleans() | INTS | ASCII,
                      lambda inner: st.lists(inner, max_size=5) | st.dictionaries(ASCII, inner, max_size=4),
                      max_leaves=30)


@given(VALUES)
def test_the_bytes_are_the_standard_librarys_compact_output_for_what_the_log_holds(value):
    assert compact_json.dumps(value) == json.dumps(value, separators=(",", ":")).encode()
    assert compact_json.dumps(value, sort_keys=True) == \
        json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
    assert compact_json.loads(compact_json.dumps(value)) == value


def test_what_orjson_refuses_goes_to_the_standard_library():
    big = [2 ** 70, {1: "int key"}]
    assert compact_json.dumps(big) == b'[1180591620717411303424,{"1":"int key"}]'
    assert compact_json.loads(b"[1180591620717411303424]") == [2 ** 70]
    assert json.dumps(compact_json.loads(b"[NaN]")) == "[NaN]"


def test_a_non_ascii_string_is_utf8_and_reads_back_the_same_in_either_reader():
    value = ["gruppe-\u00e9", "\u6d88\u8cbb\u8005"]
    raw = compact_json.dumps(value)
    assert raw == '["gruppe-\u00e9","\u6d88\u8cbb\u8005"]'.encode()
    assert compact_json.loads(raw) == json.loads(raw) == value
    assert compact_json.loads(json.dumps(value).encode()) == value     # as written before: \\u escapes


def test_what_is_not_json_is_a_value_error():
    with pytest.raises(ValueError):
        compact_json.loads(b"[1,")
    with pytest.raises(ValueError):
        compact_json.loads(b"\xff\xfe")
