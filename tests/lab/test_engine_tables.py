"""The engine's tables cover every kind they dispatch on, so nothing a member or a scenario
produces is dropped on the floor."""

from __future__ import annotations

from typing import get_args

import pytest

from kgroup.lab.engine import Engine
from kgroup.lab.loop import EngineEvent, EventLoop
from kgroup.lab.scenario import scenario_from_dict
from kgroup.member import classic_events, consumer_member
from tests.lab.labctx import scenario


def test_the_member_driver_has_a_handler_for_every_action_a_member_returns():
    engine = Engine(scenario_from_dict(scenario()))
    returned = set(get_args(classic_events.Action)) | set(get_args(consumer_member.Action))
    assert returned == set(engine.members.action_table)


def test_the_event_loop_refuses_a_table_without_a_handler_for_every_event():
    handlers = {kind: (lambda payload, t: None) for kind in EngineEvent if kind is not EngineEvent.FIND}
    with pytest.raises(ValueError, match="FIND"):
        EventLoop.table(handlers)
