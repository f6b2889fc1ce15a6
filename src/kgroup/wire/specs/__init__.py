"""Apache Kafka's JSON message specs for the versions kio 0.6.5 lacks or has differently.

The ``*.json`` files are Apache Kafka's message definitions (Apache License 2.0, see
NOTICE), copied unchanged from kafka-clients 4.4.0's jar (``common/message/``) by
``tools/kiogen.py`` (``make schema``), which also writes ``index.json``: which (api, version)
kgroup builds from which spec. ``kgroup.wire.spec_classes`` turns a spec and a version into
a class in kio's format; ``kgroup.wire.schemas`` does it on first use of each.
"""
