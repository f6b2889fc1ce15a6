"""Streams groups (KIP-1071) on the wire: their APIs (apis.py), handlers
(streams_group_api.py) and authorization guards (guards.py)."""
