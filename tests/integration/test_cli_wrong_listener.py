"""`kgroup` pointed at the wrong kind of listener names the real cause (issue 34, item 3):
kgroup's web console (and the Kafka listener to use instead), another HTTP server, a TLS
listener reached in plaintext, a SASL listener reached without credentials, a plaintext
listener reached with TLS; one broker with every kind of listener, one case per row."""

from __future__ import annotations

import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.integration.broker_process import KGROUP, BrokerProcess, free_port
from tests.integration.security_setup import make_certs

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def listeners(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wrong")
    certs = make_certs(tmp / "certs", ())
    ports = {name: free_port() for name in ("PLAIN", "SASL", "SECURE", "MTLS", "HTTP")}
    tables = f"""
[[listeners]]
name = "PLAIN"
address = "127.0.0.1:{ports['PLAIN']}"
protocol = "PLAINTEXT"

[[listeners]]
name = "SASL"
address = "127.0.0.1:{ports['SASL']}"
protocol = "SASL_PLAINTEXT"
sasl_mechanisms = ["SCRAM-SHA-512", "PLAIN"]

[[listeners]]
name = "SECURE"
address = "127.0.0.1:{ports['SECURE']}"
protocol = "SASL_SSL"
sasl_mechanisms = ["SCRAM-SHA-256"]
ssl_certfile = "{certs.server_cert}"
ssl_keyfile = "{certs.server_key}"

[[listeners]]
name = "MTLS"
address = "127.0.0.1:{ports['MTLS']}"
protocol = "SSL"
ssl_certfile = "{certs.server_cert}"
ssl_keyfile = "{certs.server_key}"
ssl_cafile = "{certs.ca}"
ssl_client_auth = "required"
"""
    proc = BrokerProcess(tmp / "data", extra={"http_listen": f"127.0.0.1:{ports['HTTP']}"}, tables=tables,
                         port=ports["PLAIN"], listen=False).start()
    # Another HTTP server, not kgroup's.
    other = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    ports["OTHER"] = other.server_address[1]
    configs = {}
    for name, text in (("ssl", f"security.protocol=SSL\nssl.ca.location={certs.ca}\n"),):
        configs[name] = tmp / f"{name}.properties"
        configs[name].write_text(text)
    yield ports, configs
    other.shutdown()
    proc.finish()


class _NotFound(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_error(404)

    def log_message(self, *args):
        pass


# (listener, --command-config or None, what the one line says)
CASES = [
    ("HTTP", None, ["answered HTTP — that is kgroup's web console; the Kafka listener is 127.0.0.1:{PLAIN} "
                    "(PLAINTEXT)", "use --bootstrap-server 127.0.0.1:{PLAIN}"]),
    ("OTHER", None, ["127.0.0.1:{OTHER} answered HTTP, not Kafka"]),
    ("SECURE", None, ["the broker wants TLS/SASL", "give --command-config with security.protocol=SASL_SSL",
                      "SCRAM-SHA-256"]),
    ("MTLS", None, ["speaks TLS", "client certificate", "security.protocol=SSL"]),
    ("SASL", None, ["is a SASL listener (SCRAM-SHA-512, PLAIN) and the command gave no credentials",
                    "security.protocol=SASL_PLAINTEXT"]),
    ("PLAIN", "ssl", ["speaks Kafka in plaintext, not TLS", "security.protocol=PLAINTEXT"]),
    ("SECURE", "ssl", ["wants SASL authentication (SCRAM-SHA-256)", "security.protocol=SASL_SSL"]),
]


@pytest.mark.parametrize(("listener", "config", "says"), CASES,
                         ids=[f"{c[0].lower()}-{c[1] or 'plaintext'}" for c in CASES])
def test_the_wrong_listener_is_named_with_what_to_give(listeners, listener, config, says):
    ports, configs = listeners
    argv = [KGROUP, "groups", "list", "--bootstrap-server", f"127.0.0.1:{ports[listener]}",
            # A long timeout: the cause is found by asking, not by waiting it out.
            "--request-timeout-ms", "120000"]
    if config:
        argv += ["--command-config", str(configs[config])]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for part in says:
        assert part.format(**ports) in lines[0], lines[0]


def test_the_right_listener_still_works(listeners):
    ports, _ = listeners
    done = subprocess.run([KGROUP, "groups", "list", "--bootstrap-server", f"127.0.0.1:{ports['PLAIN']}"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
