"""What Kafka's request constructors refuse beyond the schema: the connection is closed."""

from __future__ import annotations

import pytest

from kgroup.broker.concerns import SERVED
from kgroup.wire.codec import decode_request, encode_request, request_class
from kgroup.wire.errors import MalformedRequest
from kgroup.wire.kio_build import build, item


def frame(api_key: int, version: int, request) -> bytes:
    return encode_request(api_key, version, 3, "t", request)[4:]


def describe_acls(**codes):
    fields = dict(resource_type_filter=2, resource_name_filter=None, pattern_type_filter=3,
                  principal_filter=None, host_filter=None, operation=1, permission_type=1)
    fields.update(codes)
    return build(request_class(29, 3), **fields)


@pytest.mark.parametrize("field", ["resource_type_filter", "pattern_type_filter", "operation", "permission_type"])
def test_acl_requests_with_an_unknown_element_are_refused_as_kafka_refuses_them(field):
    with pytest.raises(MalformedRequest, match="UNKNOWN"):
        decode_request(frame(29, 3, describe_acls(**{field: 0})), SERVED)
    # Any other code, even one Kafka does not know (127), is parsed and answered.
    decode_request(frame(29, 3, describe_acls(**{field: 127})), SERVED)


def test_create_and_delete_acls_check_each_entry():
    cls = request_class(30, 3)
    creation = dict(resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:a",
                    host="*", operation=2, permission_type=3)
    good = build(item(cls, "creations"), **creation)
    bad = build(item(cls, "creations"), **{**creation, "operation": 0})
    decode_request(frame(30, 3, build(cls, creations=(good,))), SERVED)
    with pytest.raises(MalformedRequest):
        decode_request(frame(30, 3, build(cls, creations=(good, bad))), SERVED)
    dcls = request_class(31, 3)
    flt = dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
               host_filter=None, operation=1, permission_type=0)
    with pytest.raises(MalformedRequest):
        decode_request(frame(31, 3, build(dcls, filters=(build(item(dcls, "filters"), **flt),))), SERVED)
