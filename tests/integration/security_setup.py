"""What the security tests share: certificates made at test time, a broker with every kind
of listener, and each client library's settings for them."""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.integration.broker_process import KGROUP, BrokerProcess, free_port

ADMIN, ADMIN_PASSWORD = "admin", "admin-Pa55word"
SUPER_CN = "kgroup-operator"


@dataclass
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    clients: dict[str, tuple[Path, Path]]   # CN -> (certificate, key)


def make_certs(directory: Path, client_names: tuple[str, ...]) -> Certs:
    """A CA, a server certificate for 127.0.0.1/localhost, and one client certificate per name
    (subject CN=<name>,O=kgroup-test), all PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kgroup-test"),
                          x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def write(stem: str, cert, key) -> tuple[Path, Path]:
        cert_path, key_path = directory / f"{stem}.pem", directory / f"{stem}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        return cert_path, key_path

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("kgroup-test-ca")).issuer_name(name("kgroup-test-ca"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    ca_path, _ = write("ca", ca, ca_key)

    def issue(cn: str, server: bool) -> tuple[Path, Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=2))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                         else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return write(cn, builder.sign(ca_key, hashes.SHA256()), key)

    server_cert, server_key = issue("kgroup-broker", server=True)
    return Certs(ca_path, server_cert, server_key, {cn: issue(cn, server=False) for cn in client_names})


@dataclass
class SecureBroker:
    proc: BrokerProcess
    certs: Certs
    sasl_port: int       # SASL_PLAINTEXT: SCRAM-SHA-512, PLAIN
    sasl_ssl_port: int   # SASL_SSL: SCRAM-SHA-256, PLAIN
    ssl_port: int        # SSL with a required client certificate

    def address(self, port: int) -> str:
        return f"127.0.0.1:{port}"


def secure_broker(tmp: Path, client_cns: tuple[str, ...], *, plaintext_port: int | None = None,
                  settings: dict | None = None, **auth: object) -> SecureBroker:
    """A broker with three listeners and the authorizer on; User:admin (SCRAM, created offline
    with `kgroup users add --data-dir`) and the certificate CN=kgroup-operator are super users.
    ``plaintext_port``: a PLAINTEXT listener there too; ``settings``: top-level config keys."""
    certs = make_certs(tmp / "certs", (*client_cns, SUPER_CN))
    data = tmp / "data"
    sasl, sasl_ssl, tls = free_port(), free_port(), free_port()
    extra_auth = "".join(f"{k} = {v}\n" for k, v in auth.items())
    plaintext = "" if plaintext_port is None else f"""
[[listeners]]
name = "PLAIN"
address = "127.0.0.1:{plaintext_port}"
protocol = "PLAINTEXT"
"""
    tables = plaintext + f"""
[[listeners]]
name = "SASL"
address = "127.0.0.1:{sasl}"
protocol = "SASL_PLAINTEXT"
sasl_mechanisms = ["SCRAM-SHA-512", "PLAIN"]

[[listeners]]
name = "SECURE"
address = "127.0.0.1:{sasl_ssl}"
protocol = "SASL_SSL"
sasl_mechanisms = ["SCRAM-SHA-256", "PLAIN"]
ssl_certfile = "{certs.server_cert}"
ssl_keyfile = "{certs.server_key}"

[[listeners]]
name = "MTLS"
address = "127.0.0.1:{tls}"
protocol = "SSL"
ssl_certfile = "{certs.server_cert}"
ssl_keyfile = "{certs.server_key}"
ssl_cafile = "{certs.ca}"
ssl_client_auth = "required"

[auth]
authorizer = true
super_users = ["User:{ADMIN}", "User:CN={SUPER_CN},O=kgroup-test"]
{extra_auth}"""
    add_user_offline(data, ADMIN, ADMIN_PASSWORD, "SCRAM-SHA-512", "SCRAM-SHA-256")
    proc = BrokerProcess(data, group={"initial_rebalance_delay_ms": 0}, extra=settings, tables=tables, port=sasl,
                         listen=False)
    return SecureBroker(proc, certs, sasl, sasl_ssl, tls)


def add_user_offline(data: Path, user: str, password: str, *mechanisms: str) -> str:
    """`kgroup users add USER --password-stdin --data-dir DATA`; its output."""
    mechs = [arg for m in mechanisms for arg in ("--mechanism", m)]
    done = subprocess.run([KGROUP, "users", "add", user, "--password-stdin", "--data-dir", str(data), *mechs],
                          input=password + "\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def our_settings(protocol: str, mechanism: str | None = None, user: str | None = None,
                 password: str | None = None, certs: Certs | None = None, client_cn: str | None = None) -> dict:
    """Settings by Kafka's names: our client's, librdkafka's (and --command-config's)."""
    out: dict = {"security.protocol": protocol}
    if mechanism:
        out.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    if certs is not None:
        out["ssl.ca.location"] = str(certs.ca)
        if client_cn:
            cert, key = certs.clients[client_cn]
            out.update({"ssl.certificate.location": str(cert), "ssl.key.location": str(key)})
    return out


def library_options(kind: str, protocol: str, mechanism: str | None = None, user: str | None = None,
                    password: str | None = None, certs: Certs | None = None, client_cn: str | None = None) -> dict:
    """The same settings as each client library spells them."""
    if kind == "confluent-kafka":
        opts = our_settings(protocol, mechanism, user, password, certs, client_cn)
        if mechanism:
            opts["sasl.mechanisms"] = opts.pop("sasl.mechanism")
        return opts
    opts: dict = {"security_protocol": protocol}
    if mechanism:
        opts.update(sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
    if certs is not None:
        cert = key = None
        if client_cn:
            cert, key = (str(p) for p in certs.clients[client_cn])
        if kind == "aiokafka":
            from aiokafka.helpers import create_ssl_context

            opts["ssl_context"] = create_ssl_context(cafile=str(certs.ca), certfile=cert, keyfile=key)
        else:
            opts.update(ssl_cafile=str(certs.ca), ssl_certfile=cert, ssl_keyfile=key, ssl_check_hostname=True)
    return opts
