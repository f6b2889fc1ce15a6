"""One Kafka error-code enum for every layer: Kafka's names and numbers, all of them."""

from __future__ import annotations

from kio.schema.errors import ErrorCode as KioErrorCode

from kgroup.core.errors import ErrorCode as CoreErrorCode
from kgroup.error_codes import RETRIABLE, ErrorCode
from kgroup.member import Fatal


def test_every_kafka_code_is_there_with_kafkas_number_name_and_retriability() -> None:
    for kio_code in KioErrorCode:
        ours = ErrorCode[kio_code.name.upper()]
        assert int(ours) == int(kio_code)
        assert ours.retriable == kio_code.retriable
    # Kafka 4.4's codes past kio's list (kio 0.6.5 was generated from an older Kafka).
    newer = {ErrorCode.GROUP_DELETION_FAILED: 134, ErrorCode.STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED: 135,
             ErrorCode.CONTROLLER_ID_NOT_REGISTERED: 136}
    assert {code: int(code) for code in newer} == newer
    assert len(ErrorCode) == len(KioErrorCode) + len(newer)


def test_codes_compare_as_numbers_and_as_members() -> None:
    assert ErrorCode(16) is ErrorCode.NOT_COORDINATOR
    assert ErrorCode.NOT_COORDINATOR == 16 == KioErrorCode.not_coordinator
    assert ErrorCode(KioErrorCode.not_coordinator) is ErrorCode.NOT_COORDINATOR
    assert ErrorCode.NONE == 0 and not ErrorCode.NONE.retriable
    assert ErrorCode.COORDINATOR_LOAD_IN_PROGRESS in RETRIABLE


def test_a_code_newer_than_the_list_is_a_stand_in_named_by_its_number() -> None:
    code = ErrorCode(31999)
    assert code == 31999 and code.name == "UNKNOWN_ERROR_CODE_31999"
    assert not code.retriable


def test_core_and_member_use_the_same_enum() -> None:
    assert CoreErrorCode is ErrorCode
    assert Fatal(ErrorCode.FENCED_INSTANCE_ID).error is ErrorCode.FENCED_INSTANCE_ID
