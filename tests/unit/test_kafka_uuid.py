"""Ids in Kafka's Uuid text form never start with '-' (kgroup/kafka_uuid.py).

`kgroup client-metrics --alter --generate-name` once named a subscription with a UUID whose
base64 began with '-' (1 draw in 64), and `--delete --name <it>` then failed: the parser read
the name as an option. Kafka's Uuid.randomUuid draws again in that case, and so do we, for
every id made in that form.
"""

from __future__ import annotations

import os

from kgroup.kafka_uuid import random_uuid_text, uuid_text

LEADING_DASH = bytes([0xF8]) + bytes(15)        # 0b111110.. -> '-' in URL-safe base64
PLAIN = bytes([0x10]) + bytes(range(1, 16))


def _draws(*values: bytes):
    it = iter(values)
    return lambda n: next(it)


def test_a_uuid_prints_as_kafka_prints_it():
    assert uuid_text(bytes(range(16))) == "AAECAwQFBgcICQoLDA0ODw"


def test_a_draw_starting_with_a_dash_is_drawn_again():
    assert uuid_text(LEADING_DASH).startswith("-")
    text = random_uuid_text(_draws(LEADING_DASH, LEADING_DASH, PLAIN))
    assert not text.startswith("-") and len(text) == 22 and text[0] == "E"


def test_many_fresh_ids_never_start_with_a_dash():
    assert not any(random_uuid_text(os.urandom).startswith("-") for _ in range(5000))
