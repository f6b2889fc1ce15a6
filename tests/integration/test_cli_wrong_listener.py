"""`kgroup` pointed at the wrong kind of listener names the real cause (issue 34, item 3):
kgroup's web console (and the Kafka listener to use instead), another HTTP server, a TLS
listener reached in plaintext, a SASL listener reached without credentials, a plaintext
listener reached with TLS; one broker with every kind of listener, one case per row."""

from __future__ import annotations

import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.integration.broker_process import KGROUP, free_port
from tests.integration.security_setup import secure_broker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def listeners(tmp_path_factory):
    """The security tests' broker (SASL_PLAINTEXT, SASL_SSL, SSL with client certificates)
    with a PLAINTEXT listener and the web console beside them, and an HTTP server of another
    kind."""
    tmp = tmp_path_factory.mktemp("wrong")
    plain, http = free_port(), free_port()
    sb = secure_broker(tmp, (), plaintext_port=plain, settings={"http_listen": f"127.0.0.1:{http}"})
    sb.proc.start()
    other = ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    ports = {"PLAIN": plain, "HTTP": http, "SASL": sb.sasl_port, "SECURE": sb.sasl_ssl_port, "MTLS": sb.ssl_port,
             "OTHER": other.server_address[1]}
    configs = {"ssl": tmp / "ssl.properties"}
    configs["ssl"].write_text(f"security.protocol=SSL\nssl.ca.location={sb.certs.ca}\n")
    yield ports, configs
    other.shutdown()
    sb.proc.finish()


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
                      "SCRAM-SHA-256, PLAIN"]),
    ("MTLS", None, ["speaks TLS", "client certificate", "security.protocol=SSL"]),
    ("SASL", None, ["is a SASL listener (SCRAM-SHA-512, PLAIN) and the command gave no credentials",
                    "security.protocol=SASL_PLAINTEXT"]),
    ("PLAIN", "ssl", ["speaks Kafka in plaintext, not TLS", "security.protocol=PLAINTEXT"]),
    ("SECURE", "ssl", ["wants SASL authentication (SCRAM-SHA-256, PLAIN)", "security.protocol=SASL_SSL"]),
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
