"""Java Kafka client settings translated to librdkafka's, in one place for every way options arrive.

Users of Spark's Kafka source and of Samza write Java client settings (``sasl.jaas.config``, JKS stores,
``fetch.max.wait.ms`` ...). librdkafka spells some differently, has others under another shape (the JAAS line's
user name and password are ``sasl.username`` / ``sasl.password``) and has no equivalent at all for a few (Java
trust stores). :func:`translate_java_settings` maps a ``kafka.*`` configuration (prefix removed) to librdkafka's
and says, for each setting it cannot map, why and what to write instead. Two callers use it:

* ``KafkaSourceOptions.parse`` (``kafka/options.py``): a query's ``kafka.*`` options; anything rejected fails
  the query's start with the reason;
* the ``job.properties`` importer (``samza_config/kafka.py``): ``systems.<s>.consumer.*``; rejected keys are
  reported in the import result.

Pure: no I/O. Values are never put into notes or reasons (a JAAS line holds a password).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.errors import extra_install_hint
from . import errors
from .errors import JaasError

__all__ = ["JAVA_ONLY", "JavaTranslation", "RENAMED", "parse_jaas_config", "translate_java_settings"]

# Java consumer names librdkafka spells differently, same meaning.
RENAMED = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
}
# Java consumer settings librdkafka has no equivalent for: dropping them changes no record read.
JAVA_ONLY = frozenset({
    "default.api.timeout.ms", "exclude.internal.topics", "interceptor.classes", "internal.leave.group.on.close",
    "metric.reporters", "metrics.num.samples", "metrics.sample.window.ms", "metrics.recording.level",
    "rebalance.timeout.ms", "sasl.login.class", "sasl.login.callback.handler.class", "security.providers",
    "ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.protocol",
    "ssl.secure.random.implementation", "ssl.provider", "sasl.client.callback.handler.class",
    "client.dns.lookup.config",
})
_JAVA_ONLY_WHY = "a Java Kafka client setting librdkafka does not have; it changes no record read. Remove it"

_TRUSTSTORE_WHY = ("Java trust stores are not supported by librdkafka: export the CA certificate(s) to a PEM file "
                   "(keytool -exportcert -rfc) and set kafka.ssl.ca.location to it instead")
_JKS_KEYSTORE_WHY = ("librdkafka cannot read JKS key stores: convert it to PKCS#12 (keytool -importkeystore "
                     "-deststoretype PKCS12) for kafka.ssl.keystore.location / kafka.ssl.keystore.password, or give "
                     "PEM files as kafka.ssl.certificate.location and kafka.ssl.key.location")

_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_MSK_IAM_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
_KERBEROS_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
_SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")

_JAAS_LINE = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)"
                        r"(?P<rest>.*?)\s*;?\s*$", re.S | re.I)
_JAAS_OPTION = re.compile(r'\s*(?P<key>[\w.-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s";]+))', re.S)


@dataclass
class JavaTranslation:
    """The librdkafka configuration, where each translated setting came from, and what could not be mapped."""

    conf: dict[str, str]
    #: librdkafka key -> the Java key it was derived from (only for keys that changed name or shape)
    derived_from: dict[str, str] = field(default_factory=dict)
    #: Java key -> why it cannot be used and what to write instead (never its value)
    rejected: dict[str, str] = field(default_factory=dict)


def parse_jaas_config(value: str) -> tuple[str, dict[str, str]]:
    """``(login module class, options)`` of a one-module JAAS line such as
    ``org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";``."""
    match = _JAAS_LINE.match(value)
    if match is None:
        raise errors.jaas_config_invalid("expected '<LoginModule class> required key=\"value\" ...;'")
    rest, options, pos = match.group("rest"), {}, 0
    while pos < len(rest):
        if not rest[pos:].strip():
            break
        option = _JAAS_OPTION.match(rest, pos)
        if option is None:
            raise errors.jaas_config_invalid("expected key=\"value\" pairs after the control flag")
        quoted = option.group("quoted")
        options[option.group("key")] = (re.sub(r"\\(.)", r"\1", quoted) if quoted is not None
                                        else option.group("bare"))
        pos = option.end()
    return match.group("module"), options


def translate_java_settings(conf: Mapping[str, str], *, token_provider_option: str) -> JavaTranslation:
    """librdkafka settings for a ``kafka.*`` configuration (without the prefix) that may hold Java client names.

    Names librdkafka knows pass through unchanged. ``token_provider_option``: the option that names an
    OAUTHBEARER token provider, suggested where a JAAS login module needs one.
    """
    out = JavaTranslation(conf={str(k): str(v) for k, v in conf.items()})
    c = out.conf
    for java, native in RENAMED.items():
        if java in c:
            value = c.pop(java)
            if native in c:
                out.rejected[java] = f"the same setting as kafka.{native} (librdkafka's name), which is also set; " \
                                     "keep one"
            else:
                c[native] = value
                out.derived_from[native] = java
    for key in sorted(k for k in c if k in JAVA_ONLY):
        del c[key]
        out.rejected[key] = _JAVA_ONLY_WHY
    if c.get("ssl.endpoint.identification.algorithm", None) == "":  # Java's way of saying "none"
        c["ssl.endpoint.identification.algorithm"] = "none"
        out.derived_from["ssl.endpoint.identification.algorithm"] = "ssl.endpoint.identification.algorithm"
    _stores(c, out)
    if "sasl.jaas.config" in c:
        _jaas(c.pop("sasl.jaas.config"), c, out, token_provider_option)
    return out


def _stores(c: dict[str, str], out: JavaTranslation) -> None:
    for key in ("ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
                "ssl.truststore.certificates"):
        if key in c:
            del c[key]
            out.rejected[key] = _TRUSTSTORE_WHY
    store_type = c.get("ssl.keystore.type")
    if store_type is not None:
        del c["ssl.keystore.type"]
        if store_type.strip().upper() in ("PKCS12", "P12"):
            pass  # librdkafka's ssl.keystore.location is PKCS#12: the type is implied
        elif store_type.strip().upper() == "PEM":
            out.rejected["ssl.keystore.type"] = ("librdkafka takes PEM keys as kafka.ssl.certificate.location and "
                                                 "kafka.ssl.key.location (or .pem), not as a key store")
        else:
            out.rejected["ssl.keystore.type"] = _JKS_KEYSTORE_WHY
    elif c.get("ssl.keystore.location", "").strip().lower().endswith(".jks"):
        out.rejected["ssl.keystore.location"] = _JKS_KEYSTORE_WHY
    if "ssl.keystore.location" in out.rejected or out.rejected.get("ssl.keystore.type") == _JKS_KEYSTORE_WHY:
        for key in ("ssl.keystore.location", "ssl.keystore.password"):
            c.pop(key, None)


def _jaas(value: str, c: dict[str, str], out: JavaTranslation, token_provider_option: str) -> None:
    key = "sasl.jaas.config"
    try:
        module, options = parse_jaas_config(value)
    except JaasError as err:
        out.rejected[key] = f"cannot read the JAAS line ({err}); or set kafka.sasl.mechanism, kafka.sasl.username " \
                            "and kafka.sasl.password instead"
        return
    simple = module.rsplit(".", 1)[-1]
    mechanism = c.get("sasl.mechanism", c.get("sasl.mechanisms", "")).strip().upper()
    if module == _PLAIN_MODULE or module == _SCRAM_MODULE:
        expected = ("PLAIN",) if module == _PLAIN_MODULE else _SCRAM_MECHANISMS
        if mechanism and mechanism not in expected:
            out.rejected[key] = (f"{simple} goes with kafka.sasl.mechanism {' or '.join(expected)}, but "
                                 f"kafka.sasl.mechanism is {mechanism}; make them agree")
            return
        if not mechanism and module == _SCRAM_MODULE:
            out.rejected[key] = ("ScramLoginModule needs kafka.sasl.mechanism SCRAM-SHA-256 or SCRAM-SHA-512 "
                                 "(the Java client needs it too); set it")
            return
        missing = [k for k in ("username", "password") if not options.get(k)]
        if missing:
            out.rejected[key] = f"the JAAS line has no {' or '.join(missing)}; {simple} needs both"
            return
        for name in ("username", "password"):
            native = f"sasl.{name}"
            if native in c:
                out.rejected[key] = f"kafka.{native} is set too; keep either it or the JAAS line"
                return
            c[native] = options[name]
            out.derived_from[native] = key
        if not mechanism:
            c["sasl.mechanism"] = "PLAIN"
            out.derived_from["sasl.mechanism"] = key
        return
    if module == _OAUTH_MODULE:
        if options.get("clientId") and c.get("sasl.oauthbearer.token.endpoint.url"):
            # OIDC client credentials (KIP-768): librdkafka has the same flow built in.
            for java, native in (("clientId", "sasl.oauthbearer.client.id"),
                                 ("clientSecret", "sasl.oauthbearer.client.secret"),
                                 ("scope", "sasl.oauthbearer.scope")):
                if options.get(java):
                    c[native] = options[java]
                    out.derived_from[native] = key
            c["sasl.oauthbearer.method"] = "oidc"
            out.derived_from["sasl.oauthbearer.method"] = key
            return
        out.rejected[key] = ("OAuthBearerLoginModule gets its token from a Java callback handler; give a Python "
                             f"token provider instead: option '{token_provider_option}' = 'package.module.function' "
                             "(called as librdkafka's oauth_cb), or for OIDC client credentials set "
                             "kafka.sasl.oauthbearer.token.endpoint.url with clientId/clientSecret in the JAAS line")
        return
    if module == _MSK_IAM_MODULE:
        out.rejected[key] = (f"Amazon MSK IAM authentication: install {extra_install_hint('msk-iam')} and "
                             "set kafka.sasl.mechanism=OAUTHBEARER, kafka.security.protocol=SASL_SSL and option "
                             f"'{token_provider_option}' = 'spark_samza_source.kafka.msk_iam.token_provider' "
                             "(kafka.sasl.oauthbearer.config='aws_region=<the cluster's AWS region>')")
        return
    if module == _KERBEROS_MODULE:
        out.rejected[key] = ("Kerberos: librdkafka uses kafka.sasl.mechanism=GSSAPI with kafka.sasl.kerberos.keytab "
                             "and kafka.sasl.kerberos.principal (from the JAAS keyTab and principal) instead")
        return
    out.rejected[key] = (f"the login module {simple} is a Java class that cannot run here; use librdkafka's "
                         "kafka.sasl.* settings (PLAIN/SCRAM: kafka.sasl.username and kafka.sasl.password)")
