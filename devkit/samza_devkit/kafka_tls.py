"""Apache Kafka as production runs it, for tests: TLS, client certificates, SASL_SSL with SCRAM, and ACLs.

:class:`DevCertificates` makes a certificate authority, the broker's certificate and client certificates at run
time with the ``openssl`` binary (nothing is checked into the repository, no Python package is needed):

- the broker's certificate names only ``IP:127.0.0.1``, so a client that reaches it as ``localhost`` meets a host
  name mismatch (librdkafka verifies the host name by default);
- client certificates are signed by the CA with the subject ``CN=<name>``; ``expired=True`` makes one whose
  validity ended years ago, ``key_password`` one whose key is encrypted (PKCS#8, AES-256);
- ``stranger_ca`` is a second CA the broker never heard of (the "unknown CA" case).

:class:`SecuredKafkaBroker` is :class:`~samza_devkit.apache_kafka.ApacheKafkaBroker` with two more listeners:
``SSL`` (client certificates *requested*: a client without one connects as ``User:ANONYMOUS``, one with a
certificate as ``User:<CN>``) and ``SASL_SSL`` with SCRAM-SHA-512 for ``scram_users``. KRaft's
``StandardAuthorizer`` guards every listener; ``User:ANONYMOUS`` is a super user, which makes the PLAINTEXT
listener the test harness's door (topics, ACLs, producing) and the broker's own (inter-broker and controller
traffic are PLAINTEXT on loopback), and makes a TLS client without a certificate all-powerful: ACL tests use
client certificates or SCRAM users. :meth:`SecuredKafkaBroker.grant` sets ACLs through the Admin API
(``create_acls``).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .apache_kafka import ApacheKafkaBroker

__all__ = ["ClientCertificate", "DevCertificates", "SecuredKafkaBroker"]

SSL_LISTENER, SASL_SSL_LISTENER = "SSL", "SASL_SSL"
SCRAM_MECHANISM = "SCRAM-SHA-512"
_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_DAYS = "2"
#: an openssl ``ca`` configuration: the only way OpenSSL 3.0 signs with an end date in the past (expired certs)
_CA_CONFIG = """[ca]
default_ca = devkit
[devkit]
database = {dir}/index.txt
serial = {dir}/serial
new_certs_dir = {dir}
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = copy
[anything]
commonName = supplied
"""


@dataclass(frozen=True)
class ClientCertificate:
    """A client's certificate and key as files (PEM), and the key's password when it is encrypted."""

    name: str
    certificate: Path
    key: Path
    key_password: str | None = None

    @property
    def certificate_pem(self) -> str:
        return self.certificate.read_text()

    @property
    def key_pem(self) -> str:
        return self.key.read_text()


def _openssl(*args: str, cwd: Path) -> None:
    binary = shutil.which("openssl")
    if binary is None:
        raise RuntimeError("the secured Kafka broker needs the 'openssl' binary on PATH to make its certificates")
    done = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr[-1500:]}")


class DevCertificates:
    """A CA, the broker's key store and trust store, and client certificates, made in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.store_password = secrets.token_hex(12)
        self.ca = self._make_ca("samza-devkit-ca")
        self.stranger_ca = self._make_ca("stranger-ca")
        self.broker_keystore = self._broker_keystore()
        self._clients: dict[tuple, ClientCertificate] = {}

    # ---- authorities ---------------------------------------------------------------------------------------
    def _make_ca(self, name: str) -> Path:
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem",
                 "-days", _DAYS, "-subj", f"/CN={name}", cwd=self.dir)
        return self.dir / f"{name}.pem"

    def _sign(self, name: str, csr: str, *, expired: bool, extensions: str | None = None) -> Path:
        config = self.dir / "ca.cnf"
        if not config.exists():
            config.write_text(_CA_CONFIG.format(dir=self.dir))
            (self.dir / "index.txt").write_text("")
            (self.dir / "serial").write_text("1000\n")
        dates = (["-startdate", "20200101000000Z", "-enddate", "20200102000000Z"] if expired else ["-days", _DAYS])
        ext = ["-extfile", extensions] if extensions else []
        _openssl("ca", "-batch", "-config", str(config), "-cert", "samza-devkit-ca.pem", "-keyfile",
                 "samza-devkit-ca.key", "-in", csr, "-out", f"{name}.pem", "-notext", *dates, *ext,
                 cwd=self.dir)
        return self.dir / f"{name}.pem"

    # ---- the broker ----------------------------------------------------------------------------------------
    def _broker_keystore(self) -> Path:
        (self.dir / "broker.ext").write_text("subjectAltName=IP:127.0.0.1\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "broker.key", "-out", "broker.csr",
                 "-subj", "/CN=broker", cwd=self.dir)
        self._sign("broker", "broker.csr", expired=False, extensions="broker.ext")
        _openssl("pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.key", "-name", "broker",
                 "-out", "broker.p12", "-passout", f"pass:{self.store_password}", cwd=self.dir)
        return self.dir / "broker.p12"

    # ---- clients -------------------------------------------------------------------------------------------
    def client(self, name: str, *, expired: bool = False, key_password: str | None = None) -> ClientCertificate:
        """The certificate of ``CN=name`` (made once per arguments)."""
        wanted = (name, expired, key_password)
        if wanted not in self._clients:
            stem = f"client-{name}{'-expired' if expired else ''}{'-encrypted' if key_password else ''}"
            _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{stem}.plain.key", "-out", f"{stem}.csr",
                     "-subj", f"/CN={name}", cwd=self.dir)
            certificate = self._sign(stem, f"{stem}.csr", expired=expired)
            if key_password:
                _openssl("pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", f"{stem}.plain.key", "-out", f"{stem}.key",
                         "-passout", f"pass:{key_password}", cwd=self.dir)
            else:
                shutil.copyfile(self.dir / f"{stem}.plain.key", self.dir / f"{stem}.key")
            self._clients[wanted] = ClientCertificate(name, certificate, self.dir / f"{stem}.key", key_password)
        return self._clients[wanted]


class SecuredKafkaBroker(ApacheKafkaBroker):
    """One Apache Kafka node with SSL and SASL_SSL (SCRAM-SHA-512) listeners and KRaft's StandardAuthorizer.

    ``scram_users``: name -> password, added when the storage is formatted. Starts like ``ApacheKafkaBroker``
    (the certificates are made first, a second or two with openssl).
    """

    def __init__(self, data_dir=None, *, scram_users: dict[str, str] | None = None, **kwargs) -> None:
        super().__init__(data_dir, sasl_scram_users=dict(scram_users or {}), **kwargs)
        self.certificates: DevCertificates | None = None

    # ---- addresses -----------------------------------------------------------------------------------------
    @property
    def ssl_bootstrap_servers(self) -> str:
        return f"{self.host}:{self._ports[SSL_LISTENER]}"

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        return f"{self.host}:{self._ports[SASL_SSL_LISTENER]}"

    @property
    def ssl_port(self) -> int:
        return self._ports[SSL_LISTENER]

    # ---- client settings (librdkafka names) ------------------------------------------------------------------
    def tls_client(self) -> dict[str, str]:
        """TLS with the CA as a file: a client without a certificate (``User:ANONYMOUS``, a super user)."""
        assert self.certificates is not None
        return {"bootstrap.servers": self.ssl_bootstrap_servers, "security.protocol": "SSL",
                "ssl.ca.location": str(self.certificates.ca)}

    def mtls_client(self, name: str, **cert) -> dict[str, str]:
        """Mutual TLS as ``User:<name>``, certificate and key as files."""
        client = self.certificates.client(name, **cert)
        conf = {**self.tls_client(), "ssl.certificate.location": str(client.certificate),
                "ssl.key.location": str(client.key)}
        if client.key_password:
            conf["ssl.key.password"] = client.key_password
        return conf

    def scram_client(self, name: str) -> dict[str, str]:
        """SASL_SSL with SCRAM-SHA-512 as ``User:<name>``."""
        return {**self.tls_client(), "bootstrap.servers": self.sasl_ssl_bootstrap_servers,
                "security.protocol": "SASL_SSL", "sasl.mechanism": SCRAM_MECHANISM, "sasl.username": name,
                "sasl.password": self.sasl_scram_users[name]}

    # ---- ACLs ----------------------------------------------------------------------------------------------
    def grant(self, principal: str, resource: str, name: str, *operations: str, prefixed: bool = False) -> None:
        """Allow ``User:<principal>`` the ``operations`` (``READ``, ``DESCRIBE`` ...) on the ``resource``
        (``TOPIC``, ``GROUP``, ``CLUSTER``) ``name`` from any host, through the Admin API."""
        from confluent_kafka.admin import (
            AclBinding,
            AclOperation,
            AclPermissionType,
            AdminClient,
            ResourcePatternType,
            ResourceType,
        )

        pattern = ResourcePatternType.PREFIXED if prefixed else ResourcePatternType.LITERAL
        bindings = [AclBinding(ResourceType[resource], name, pattern, f"User:{principal}", "*",
                               AclOperation[operation], AclPermissionType.ALLOW) for operation in operations]
        admin = AdminClient({"bootstrap.servers": self.plaintext_bootstrap_servers})
        for future in admin.create_acls(bindings, request_timeout=30).values():
            future.result(30)

    # ---- the launcher's hooks ------------------------------------------------------------------------------
    def start(self) -> SecuredKafkaBroker:
        if self.certificates is None:
            self.certificates = DevCertificates(self._home / "tls")
        super().start()
        return self

    def _more_listeners(self) -> dict[str, str]:
        return {SSL_LISTENER: "SSL", SASL_SSL_LISTENER: "SASL_SSL"}

    def _more_settings(self) -> dict[str, str]:
        certs = self.certificates
        assert certs is not None  # made by start()
        settings = {"authorizer.class.name": _AUTHORIZER, "super.users": "User:ANONYMOUS",
                    "allow.everyone.if.no.acl.found": "false",
                    # User:<CN> rather than User:CN=<CN>,... for client certificates
                    "ssl.principal.mapping.rules": "RULE:^CN=([^,]+)$/$1/,DEFAULT"}
        for listener in (SSL_LISTENER, SASL_SSL_LISTENER):
            prefix = f"listener.name.{listener.lower()}."
            settings.update({
                f"{prefix}ssl.keystore.location": str(certs.broker_keystore),
                f"{prefix}ssl.keystore.password": certs.store_password,
                f"{prefix}ssl.keystore.type": "PKCS12",
                f"{prefix}ssl.truststore.location": str(certs.ca),
                f"{prefix}ssl.truststore.type": "PEM",
            })
        settings[f"listener.name.{SSL_LISTENER.lower()}.ssl.client.auth"] = "requested"
        settings[f"listener.name.{SASL_SSL_LISTENER.lower()}.sasl.enabled.mechanisms"] = SCRAM_MECHANISM
        settings[f"listener.name.{SASL_SSL_LISTENER.lower()}.{SCRAM_MECHANISM.lower()}.sasl.jaas.config"] = \
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        return settings
