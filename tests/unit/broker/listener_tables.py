"""TOML tables the listener tests share: the mutual-TLS listener (SSL, client certificate
required) that both the listener and the inter-node configuration tests open beside their
SASL_SSL one."""

from __future__ import annotations

MTLS_LISTENER = '''
[[listeners]]
name = "MTLS"
address = "127.0.0.1:9094"
protocol = "SSL"
ssl_certfile = "server.pem"
ssl_keyfile = "server.key"
ssl_cafile = "ca.pem"
ssl_client_auth = "required"
'''
