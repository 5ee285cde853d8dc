"""Kafka's listener configuration (KIP-103), read and validated the way a broker does it.

Two steps, both ports of Kafka's code (commit 1eb7644349c, rules L-0..L-27 of
``docs/rules.md`` section 3):

- ``parse_properties`` / ``load_properties``: a ``.properties`` file as
  ``java.util.Properties.load(InputStream)`` reads it (Kafka's ``Utils.loadProps``), including
  its quirks: the bytes are ISO-8859-1, a line without a separator is a key with an empty value,
  and only a malformed ``\\uxxxx`` escape is an error.
- ``validate``: the listener part of ``KafkaConfig`` (``effectiveListenerSecurityProtocolMap``,
  ``listeners``, ``advertisedListeners``, ``validateValues``).  Kafka stops at the first
  problem, so ``validate`` raises one ``ConfigError``: the one Kafka reports, because every value
  is computed when ``validateValues`` first asks for it.  Messages are Kafka's exception
  messages verbatim; a failed Scala ``require`` keeps its ``"requirement failed: "`` prefix.

Not ported (not listener configuration): ``node.id`` / ``broker.id``, the quorum voters and
bootstrap servers (so the voter parts of L-21 / L-22), log settings and the IBP checks.
L-0 is kipcheck's name for the mode checks Kafka makes before the listener rules.
"""
from __future__ import annotations

import bisect
import ipaddress
import re
from dataclasses import dataclass
from functools import cached_property
from collections.abc import Mapping

LISTENERS = "listeners"
ADVERTISED_LISTENERS = "advertised.listeners"
LISTENER_SECURITY_PROTOCOL_MAP = "listener.security.protocol.map"
INTER_BROKER_LISTENER_NAME = "inter.broker.listener.name"
INTER_BROKER_SECURITY_PROTOCOL = "security.inter.broker.protocol"
CONTROL_PLANE_LISTENER_NAME = "control.plane.listener.name"
CONTROLLER_LISTENER_NAMES = "controller.listener.names"
PROCESS_ROLES = "process.roles"
ZOOKEEPER_CONNECT = "zookeeper.connect"
MIGRATION_ENABLE = "zookeeper.metadata.migration.enable"
SASL_ENABLED_MECHANISMS = "sasl.enabled.mechanisms"
SASL_MECHANISM_INTER_BROKER_PROTOCOL = "sasl.mechanism.inter.broker.protocol"
PRINCIPAL_BUILDER_CLASS = "principal.builder.class"

DEFAULT_LISTENERS = "PLAINTEXT://:9092"
DEFAULT_PRINCIPAL_BUILDER = \
    "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
# Python cannot load a Java class to see whether it implements KafkaPrincipalSerde: a
# configuration declares its own serde-capable builders here (Kafka ignores unknown keys).
PRINCIPAL_SERDE_CLASSES = "kipcheck.principal.builder.serde.classes"

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")   # enum order
BROKER, CONTROLLER = "broker", "controller"

# ``\s*,\s*`` with Java's \s; Java's ``.`` excludes every line terminator, Python's only \n
_COMMA = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
_ENDPOINT = re.compile(r"([^\n\r\u0085\u2028\u2029]*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_INT_MIN, _INT_MAX = -2 ** 31, 2 ** 31 - 1
_NONROUTABLE = ("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                "Use a routable IP address.")


# --------------------------------------------------------------------------------------------
# java.util.Properties.load


class PropertiesError(ValueError):
    """A file ``Properties.load`` rejects: a malformed ``\\uxxxx`` escape."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line, self.message = line, message


def load_properties(path) -> dict[str, str]:
    """Read a file as Kafka does: bytes decoded as ISO-8859-1, so UTF-8 text arrives mangled."""
    with open(path, "rb") as f:
        return parse_properties(f.read().decode("latin-1"))


def parse_properties(text: str) -> dict[str, str]:
    """``Properties.load``: logical lines, then key, separator and value; a later key wins."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    props = {}
    for offset, line in _logical_lines(text):
        lineno = bisect.bisect_right(starts, offset)
        key, value = _key_and_value(line, lineno)
        props[key] = value
    return props


def _logical_lines(text: str):
    """Port of ``Properties.LineReader.readLine``: yields (offset of the first character, line).

    Leading blanks of every natural line are skipped; a line whose first character is ``#`` or
    ``!`` is a comment (even the continuation of ``\\`` alone on a line); an odd number of
    trailing backslashes joins the next natural line; a backslash at the end of the file is
    dropped."""
    i, n = 0, len(text)
    while True:
        buf: list[str] = []
        first = i
        skip_blank, appended, backslash = True, False, False
        while True:
            if i >= n:
                if not buf:
                    return
                yield first, "".join(buf[:-1] if backslash else buf)
                return
            c = text[i]
            i += 1
            if skip_blank:
                if c in " \t\f" or (not appended and c in "\r\n"):
                    continue
                skip_blank = appended = False
            if not buf and c in "#!":
                while i < n and text[i] not in "\r\n":
                    i += 1
                i += 1                               # the terminator (\n of \r\n: skipped next)
                skip_blank = True
                continue
            if c not in "\r\n":
                if not buf:
                    first = i - 1
                buf.append(c)
                backslash = (not backslash) if c == "\\" else False
                continue
            if not buf:                              # a continuation onto a blank line
                skip_blank = True
                continue
            if i >= n:
                yield first, "".join(buf[:-1] if backslash else buf)
                return
            if not backslash:
                yield first, "".join(buf)
                break
            buf.pop()                                # the continuation backslash
            skip_blank, appended, backslash = True, True, False
            if c == "\r" and text[i] == "\n":
                i += 1


def _key_and_value(line: str, lineno: int) -> tuple[str, str]:
    """Port of ``Properties.load0``: the key ends at the first unescaped ``=``, ``:`` or blank;
    blanks and at most one ``=``/``:`` follow; the rest of the line is the value."""
    limit, key_len, value_start = len(line), 0, len(line)
    has_sep = backslash = False
    while key_len < limit:
        c = line[key_len]
        if c in "=:" and not backslash:
            value_start, has_sep = key_len + 1, True
            break
        if c in " \t\f" and not backslash:
            value_start = key_len + 1
            break
        backslash = (not backslash) if c == "\\" else False
        key_len += 1
    while value_start < limit:
        c = line[value_start]
        if c not in " \t\f":
            if has_sep or c not in "=:":
                break
            has_sep = True
        value_start += 1
    return _unescape(line[:key_len], lineno), _unescape(line[value_start:], lineno)


_ESCAPED = {"t": "\t", "r": "\r", "n": "\n", "f": "\f"}


def _unescape(s: str, lineno: int) -> str:
    """Port of ``Properties.loadConvert``; a Java string is UTF-16, so escaped surrogate pairs
    become one character.  (A segment never ends in a lone backslash: the reader removed it.)"""
    if "\\" not in s:
        return s
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        i += 1
        if c != "\\":
            out.append(c)
            continue
        c = s[i]
        i += 1
        if c != "u":
            out.append(_ESCAPED.get(c, c))
            continue
        digits = s[i:i + 4]
        if len(digits) < 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise PropertiesError(lineno, "Malformed \\uxxxx encoding.")
        out.append(chr(int(digits, 16)))
        i += 4
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


# --------------------------------------------------------------------------------------------
# the validated configuration


class ConfigError(Exception):
    """Kafka's refusal of a configuration: the rule (L-0..L-27) and Kafka's message verbatim."""

    def __init__(self, rule_id: str, message: str):
        super().__init__(f"{rule_id}: {message}")
        self.rule_id, self.message = rule_id, message


@dataclass(frozen=True)
class Endpoint:
    """``kafka.cluster.EndPoint``: a normalised listener name, a host (None: all interfaces)."""
    listener_name: str
    host: str | None
    port: int
    security_protocol: str


def config_prefix(listener_name: str) -> str:
    """``ListenerName.configPrefix`` (L-26): ``listener.name.`` + lower-cased name + ``.``."""
    return f"listener.name.{listener_name.lower()}."


@dataclass(frozen=True)
class ListenerConfig:
    """A configuration Kafka accepts, as the forwarding and registration code needs it."""
    originals: Mapping[str, str]                 # the properties as given
    process_roles: frozenset                     # {"broker"}, {"controller"}, both; empty: ZK
    migration_enabled: bool                      # zookeeper.metadata.migration.enable
    security_protocol_map: Mapping[str, str]     # effective map, KRaft defaults added (L-10)
    listeners: tuple                             # tuple[Endpoint] (L-1..L-7)
    advertised_listeners: tuple                  # advertised.listeners, else listeners
    advertised_broker_listeners: tuple           # minus controller listener names (L-25)
    advertised_controller_listeners: tuple       # per controller name, advertised first (L-25)
    controller_listener_names: tuple             # raw entries, untrimmed (L-20)
    controller_listeners: tuple                  # listeners named exactly in that list (L-20)
    inter_broker_listener_name: str              # L-12 / L-13
    inter_broker_security_protocol: str
    control_plane_listener_name: str | None      # ZK only (L-17)

    @property
    def zk_mode(self) -> bool:
        return not self.process_roles

    @property
    def is_broker(self) -> bool:
        return self.zk_mode or BROKER in self.process_roles

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.process_roles

    @property
    def description(self) -> str:
        if self.zk_mode:
            return "ZooKeeper-mode broker"
        if self.is_broker and self.is_controller:
            return "KRaft combined broker and controller"
        return "KRaft broker" if self.is_broker else "KRaft controller"

    @property
    def data_plane_listeners(self) -> tuple:
        """L-19: listeners minus the control-plane listener and the controller listeners.  Kafka
        compares the raw (trimmed) ``control.plane.listener.name`` here, not the normalised name,
        so a lower-case value leaves that listener in the data plane as well."""
        raw = self.originals.get(CONTROL_PLANE_LISTENER_NAME)
        raw = None if raw is None else _java_trim(raw)
        return tuple(e for e in self.listeners if e.listener_name != raw
                     and e.listener_name not in self.controller_listener_names)

    @property
    def bound_listeners(self) -> tuple:
        """The listeners this node accepts connections on: a broker's control plane and data
        plane, a controller's controller listeners (``SocketServer``, L175-179)."""
        bound = []
        if self.is_broker:
            bound += [e for e in self.listeners
                      if e.listener_name == self.control_plane_listener_name]
            bound += self.data_plane_listeners
        if self.is_controller:
            bound += self.controller_listeners
        return tuple(dict.fromkeys(bound))

    @property
    def privileged_listener_name(self) -> str | None:
        """L-18: the control-plane listener if configured, the only one; otherwise the bound
        listener named like the inter-broker listener.  In ZK mode only this listener accepts
        EnvelopeRequest (F-24)."""
        if self.control_plane_listener_name is not None:
            return self.control_plane_listener_name
        names = [e.listener_name for e in (self.data_plane_listeners if self.is_broker
                                           else self.controller_listeners)]
        return self.inter_broker_listener_name if self.inter_broker_listener_name in names \
            else None

    def advertised_endpoint(self, listener_name: str, controller: bool = False) -> Endpoint | None:
        """L-27: the endpoint this node registers for ``listener_name`` (its broker
        registration; with ``controller``, its controller registration, KIP-919), which Metadata
        and DescribeCluster list to a request that arrived on a listener of that name; None: the
        node is left out of such a response."""
        endpoints = self.advertised_controller_listeners if controller \
            else self.advertised_broker_listeners
        return next((e for e in endpoints if e.listener_name == listener_name), None)

    def listener_value(self, listener_name: str, key: str,
                       default: str | None = None) -> str | None:
        """L-26: ``listener.name.<name>.<key>`` if set, else ``<key>``, else ``default``; a SASL
        per-mechanism key is asked for as ``<mechanism>.<key>`` (``plain.sasl.jaas.config``).
        Kafka keeps a prefixed key only if its remainder is a config it defines; kipcheck does
        not carry that list and keeps every prefixed key."""
        return _listener_value(self.originals, listener_name, key, default)

    def principal_builder_class(self, listener_name: str) -> str:
        """The listener's ``principal.builder.class`` (it can be overridden per listener)."""
        return _java_trim(self.listener_value(listener_name, PRINCIPAL_BUILDER_CLASS,
                                              DEFAULT_PRINCIPAL_BUILDER))

    def has_principal_serde(self, listener_name: str) -> bool:
        """Whether connections on the listener carry a KafkaPrincipalSerde (F-12, F-23, F-29a):
        Kafka's default builder has one; another class only if it is listed in
        ``kipcheck.principal.builder.serde.classes``."""
        cls = self.principal_builder_class(listener_name)
        declared = _csv_list(_java_trim(self.originals.get(PRINCIPAL_SERDE_CLASSES, "")))
        return cls == DEFAULT_PRINCIPAL_BUILDER or cls in declared


def validate(originals: Mapping[str, str]) -> ListenerConfig:
    """The listener part of ``new KafkaConfig(props)``: the accepted configuration, or the first
    ``ConfigError`` Kafka raises."""
    return _KafkaConfig(dict(originals)).validate()


def process_roles(originals: Mapping[str, str]) -> frozenset:
    """``process.roles`` as Kafka parses it (L-0); empty means ZooKeeper mode."""
    roles = _list(originals, PROCESS_ROLES)
    _known_roles(roles)
    return _distinct_roles(roles)


def _known_roles(roles: list[str]) -> None:
    """The ``ValidList.in("broker", "controller")`` validator of ``process.roles``."""
    for role in roles:
        if role not in (BROKER, CONTROLLER):
            raise ConfigError("L-0", f"Invalid value {role} for configuration {PROCESS_ROLES}: "
                                     f"String must be one of: {BROKER}, {CONTROLLER}")


def _distinct_roles(roles: list[str]) -> frozenset:
    """``KafkaConfig.parseProcessRoles``: a role named twice is an error."""
    if len(set(roles)) != len(roles):
        raise ConfigError("L-0", f"Duplicate role names found in `{PROCESS_ROLES}`: "
                                 f"ArrayBuffer({', '.join(roles)})")
    return frozenset(roles)


class _KafkaConfig:
    """The listener part of ``KafkaConfig``.  Kafka's accessors are ``def``s recomputed on every
    use; computing each once, when ``validateValues`` first needs it, raises the same first
    error."""

    def __init__(self, originals: dict[str, str]):
        self.originals = originals
        # ConfigDef.parse validates in definition order (KRaftConfigs before ReplicationConfigs);
        # parseProcessRoles (the duplicate check) runs after it.
        roles = _list(originals, PROCESS_ROLES)
        _known_roles(roles)
        self.migration_enabled = self._boolean(MIGRATION_ENABLE)
        protocol = self._string(INTER_BROKER_SECURITY_PROTOCOL, "PLAINTEXT")
        if protocol not in SECURITY_PROTOCOLS:                  # ValidString: case-sensitive
            raise ConfigError("L-13", f"Invalid value {protocol} for configuration "
                                      f"{INTER_BROKER_SECURITY_PROTOCOL}: String must be one of: "
                                      f"{', '.join(SECURITY_PROTOCOLS)}")
        self.security_inter_broker_protocol = protocol
        self.process_roles = _distinct_roles(roles)

    # ---- ConfigDef value parsing

    def _string(self, key: str, default: str | None = None) -> str | None:
        """ConfigDef STRING: the value trimmed, or the default when the key is absent."""
        value = self.originals.get(key)
        return default if value is None else _java_trim(value)

    def _boolean(self, key: str) -> bool:
        """ConfigDef BOOLEAN (default false); the message quotes the value untrimmed."""
        value = self.originals.get(key)
        flag = "false" if value is None else _java_trim(value).lower()
        if flag not in ("true", "false"):
            raise ConfigError("L-0", f"Invalid value {value} for configuration {key}: "
                                     "Expected value to be either true or false")
        return flag == "true"

    # ---- the accessors validateValues uses

    @cached_property
    def security_protocol_map(self) -> dict[str, str]:
        """L-9 and L-10 (``effectiveListenerSecurityProtocolMap``)."""
        value = self._string(LISTENER_SECURITY_PROTOCOL_MAP,
                             ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS))
        result = {}
        for name, protocol in _parse_csv_map(value).items():
            result[_normalised(name, "L-9")] = _security_protocol(protocol)
        if self.process_roles and LISTENER_SECURITY_PROTOCOL_MAP not in self.originals:
            ssl_or_sasl = ("SSL", "SASL_SSL", "SASL_PLAINTEXT")
            names = self.controller_listener_names
            if not (any(n in ssl_or_sasl for n in names) or any(
                    _listener_name_of(entry) in ssl_or_sasl
                    for entry in _csv_list(self._string(LISTENERS, DEFAULT_LISTENERS)))):
                # raw names, not normalised: a lower-case entry adds a lower-case key
                result.update({n: "PLAINTEXT" for n in names if n != "PLAINTEXT"})
        return result

    @cached_property
    def listeners(self) -> tuple:
        return self._endpoints(self._string(LISTENERS, DEFAULT_LISTENERS), True)

    @cached_property
    def advertised_listeners(self) -> tuple:
        value = self._string(ADVERTISED_LISTENERS)
        return self.listeners if value is None else self._endpoints(value, False)

    @cached_property
    def controller_listener_names(self) -> tuple:
        """L-20: ``split(",")``, no trimming, no upper-casing, trailing empty entries dropped."""
        value = self._string(CONTROLLER_LISTENER_NAMES) or ""
        return tuple(_drop_trailing_empty(value.split(","))) if value else ()

    @cached_property
    def controller_listeners(self) -> tuple:
        return tuple(e for e in self.listeners
                     if e.listener_name in self.controller_listener_names)

    @cached_property
    def advertised_broker_listeners(self) -> tuple:
        return tuple(e for e in self.advertised_listeners
                     if e.listener_name not in self.controller_listener_names)

    @cached_property
    def advertised_controller_listeners(self) -> tuple:
        """L-25: for each controller listener name in order, its ``advertised.listeners`` entry,
        else its ``listeners`` entry.  A blank name fails only when there is something to
        compare it with (Scala's ``find`` on an empty list never calls the predicate)."""
        names = self.controller_listener_names
        advertised = [e for e in self.advertised_listeners if e.listener_name in names]
        own = self.controller_listeners

        def find(endpoints, name):
            return next((e for e in endpoints
                         if e.listener_name == _normalised(name, "L-20")), None)
        found = (find(advertised, name) or find(own, name) for name in names)
        return tuple(e for e in found if e is not None)

    @cached_property
    def inter_broker(self) -> tuple[str, str]:
        """L-11..L-13 (``getInterBrokerListenerNameAndSecurityProtocol``): (name, protocol)."""
        name = self._string(INTER_BROKER_LISTENER_NAME)
        if name is None:
            protocol = self.security_inter_broker_protocol
            return protocol, protocol
        if INTER_BROKER_SECURITY_PROTOCOL in self.originals:     # even with its default value
            raise ConfigError("L-11", f"Only one of {INTER_BROKER_LISTENER_NAME} and "
                                      f"{INTER_BROKER_SECURITY_PROTOCOL} should be set.")
        name = _normalised(name, "L-12")
        if name not in self.security_protocol_map:
            raise ConfigError("L-12", f"Listener with name {name} defined in "
                                      f"{INTER_BROKER_LISTENER_NAME} not found in "
                                      f"{LISTENER_SECURITY_PROTOCOL_MAP}.")
        return name, self.security_protocol_map[name]

    @cached_property
    def control_plane(self) -> str | None:
        """L-17 (``getControlPlaneListenerNameAndSecurityProtocol``; Kafka's message lacks the
        word "name")."""
        name = self._string(CONTROL_PLANE_LISTENER_NAME)
        if name is None:
            return None
        name = _normalised(name, "L-17")
        if name not in self.security_protocol_map:
            raise ConfigError("L-17", f"Listener with {name} defined in "
                                      f"{CONTROL_PLANE_LISTENER_NAME} not found in "
                                      f"{LISTENER_SECURITY_PROTOCOL_MAP}.")
        return name

    def _endpoints(self, value: str, require_distinct_ports: bool) -> tuple:
        """L-1..L-7 (``CoreUtils.listenerListToEndPoints``): parse errors are wrapped, the
        name and port checks are not."""
        protocols = self.security_protocol_map          # an argument: evaluated first
        try:
            endpoints = tuple(_endpoint(entry, protocols)
                              for entry in _csv_list(_java_trim(value)))
        except ConfigError as e:
            raise ConfigError(e.rule_id, f"Error creating broker listeners from '{value}': "
                                         f"{e.message}") from None
        _check_distinct(endpoints, value, require_distinct_ports)
        return endpoints

    # ---- validateValues

    def validate(self) -> ListenerConfig:
        roles = self.process_roles
        if not roles and self._string(ZOOKEEPER_CONNECT) is None:
            raise ConfigError("L-0", f"Missing required configuration `{ZOOKEEPER_CONNECT}` "
                                     "which has no default value.")
        if roles and self.migration_enabled and self._string(ZOOKEEPER_CONNECT) is None:
            raise ConfigError("L-0", f"If using `{MIGRATION_ENABLE}` in KRaft mode, "
                                     f"`{ZOOKEEPER_CONNECT}` must also be set.")
        advertised_broker_names = _distinct(e.listener_name
                                            for e in self.advertised_broker_listeners)
        names = self.controller_listener_names
        if roles == {BROKER}:
            self._no_control_plane_in_kraft()
            _require(names, "L-21", f"{CONTROLLER_LISTENER_NAMES} must contain at least one "
                                    "value when running KRaft with just the broker role")
            _require(not self.controller_listeners, "L-21",
                     f"{CONTROLLER_LISTENER_NAMES} must not contain a value appearing in the "
                     f"'{LISTENERS}' configuration when running KRaft with just the broker role")
            for name in names:
                name = _normalised(name, "L-21")
                if name not in self.security_protocol_map:
                    raise ConfigError("L-21", (
                        f"Controller listener with name {name} defined in "
                        f"{CONTROLLER_LISTENER_NAMES} not found in "
                        f"{LISTENER_SECURITY_PROTOCOL_MAP}  (an explicit security mapping for "
                        f"each controller listener is required if "
                        f"{LISTENER_SECURITY_PROTOCOL_MAP} is non-empty, or if there are "
                        "security protocols other than PLAINTEXT in use)"))
        elif roles == {CONTROLLER}:
            self._no_control_plane_in_kraft()
            _require(len(self.advertised_controller_listeners) == len(self.listeners), "L-22",
                     f"The {LISTENERS} config must only contain KRaft controller listeners from "
                     f"{CONTROLLER_LISTENER_NAMES} when {PROCESS_ROLES}=controller")
            self._controller_listeners_appear_in_listeners("L-22")
        elif roles:
            self._no_control_plane_in_kraft()
            self._controller_listeners_appear_in_listeners("L-23")
        elif self.migration_enabled:
            _require(names, "L-24", f"{CONTROLLER_LISTENER_NAMES} must not be empty when "
                                    f"running in ZooKeeper migration mode: {_java_list(names)}")
        else:
            _require(not names, "L-24", f"{CONTROLLER_LISTENER_NAMES} must be empty when not "
                                        f"running in KRaft mode: {_java_list(names)}")

        listener_names = _distinct(e.listener_name for e in self.listeners)
        if not roles or BROKER in roles:
            _require(advertised_broker_names, "L-14",
                     "There must be at least one broker advertised listener." + (
                         f" Perhaps all listeners appear in {CONTROLLER_LISTENER_NAMES}?"
                         if BROKER in roles else ""))
            _require(self.inter_broker[0] in advertised_broker_names, "L-14",
                     f"{INTER_BROKER_LISTENER_NAME} must be a listener name defined in "
                     f"{ADVERTISED_LISTENERS}. The valid options based on currently configured "
                     f"listeners are {','.join(advertised_broker_names)}")
            _require(set(advertised_broker_names) <= set(listener_names), "L-14",
                     f"{ADVERTISED_LISTENERS} listener names must be equal to or a subset of the "
                     f"ones defined in {LISTENERS}. Found {','.join(advertised_broker_names)}. "
                     f"The valid options based on the current configuration are "
                     f"{','.join(listener_names)}")
        _require(all(e.host != "0.0.0.0" for e in self.advertised_broker_listeners), "L-15",
                 _NONROUTABLE)
        _require(all(e.host != "0.0.0.0" for e in self.advertised_controller_listeners),
                 "L-15", _NONROUTABLE)
        if self.control_plane is not None:
            _require(self.control_plane in advertised_broker_names, "L-17",
                     f"{CONTROL_PLANE_LISTENER_NAME} must be a listener name defined in "
                     f"{ADVERTISED_LISTENERS}. The valid options based on currently configured "
                     f"listeners are {','.join(advertised_broker_names)}")
            _require(self.control_plane != self.inter_broker[0], "L-17",
                     f"{CONTROL_PLANE_LISTENER_NAME}, when defined, should have a different "
                     "value from the inter broker listener name. Currently they both have the "
                     f"value ListenerName({self.control_plane})")
        inter_broker_name, inter_broker_protocol = self.inter_broker    # every role (L-11)
        if inter_broker_protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            enabled = _list_value(_listener_value(self.originals, inter_broker_name,
                                                  SASL_ENABLED_MECHANISMS, "GSSAPI"))
            _require(self._string(SASL_MECHANISM_INTER_BROKER_PROTOCOL, "GSSAPI") in enabled,
                     "L-16", f"{SASL_MECHANISM_INTER_BROKER_PROTOCOL} must be included in "
                             f"{SASL_ENABLED_MECHANISMS} when SASL is used for inter-broker "
                             "communication")
        return ListenerConfig(
            originals=self.originals, process_roles=roles,
            migration_enabled=self.migration_enabled,
            security_protocol_map=self.security_protocol_map, listeners=self.listeners,
            advertised_listeners=self.advertised_listeners,
            advertised_broker_listeners=self.advertised_broker_listeners,
            advertised_controller_listeners=self.advertised_controller_listeners,
            controller_listener_names=names, controller_listeners=self.controller_listeners,
            inter_broker_listener_name=inter_broker_name,
            inter_broker_security_protocol=inter_broker_protocol,
            control_plane_listener_name=self.control_plane)

    def _no_control_plane_in_kraft(self) -> None:
        _require(self.control_plane is None, "L-17",
                 f"{CONTROL_PLANE_LISTENER_NAME} is not supported in KRaft mode.")

    def _controller_listeners_appear_in_listeners(self, rule: str) -> None:
        _require(self.advertised_controller_listeners, rule,
                 f"{CONTROLLER_LISTENER_NAMES} must contain at least one value appearing in the "
                 f"'{LISTENERS}' configuration when running the KRaft controller role")
        listener_names = {e.listener_name for e in self.listeners}
        _require(all(n in listener_names for n in self.controller_listener_names), rule,
                 f"{CONTROLLER_LISTENER_NAMES} must only contain values appearing in the "
                 f"'{LISTENERS}' configuration when running the KRaft controller role")


# --------------------------------------------------------------------------------------------
# Kafka's helpers


def _require(condition, rule: str, message: str) -> None:
    """Scala's ``require``: IllegalArgumentException("requirement failed: " + message)."""
    if not condition:
        raise ConfigError(rule, "requirement failed: " + message)


def _java_trim(s: str) -> str:
    """``String.trim``: every character up to U+0020 counts as blank."""
    return s.strip("".join(map(chr, range(33))))


def _drop_trailing_empty(parts: list[str]) -> list[str]:
    """``String.split`` with no limit drops trailing empty strings."""
    while parts and not parts[-1]:
        parts.pop()
    return parts


def _list(originals: Mapping[str, str], key: str) -> list[str]:
    """A ConfigDef LIST value (empty default)."""
    value = originals.get(key)
    return [] if value is None else _list_value(value)


def _list_value(value: str) -> list[str]:
    """ConfigDef LIST parsing: trimmed; empty -> []; else split on commas, empty items kept."""
    value = _java_trim(value)
    return _COMMA.split(value) if value else []


def _csv_list(value: str) -> list[str]:
    """``Csv.parseCsvList`` (L-1): split on commas with their surrounding whitespace, empty
    entries dropped."""
    return [v for v in _COMMA.split(value) if v] if value else []


def _parse_csv_map(value: str) -> dict[str, str]:
    """``Csv.parseCsvMap`` (L-9): each entry split at its last ':'; a later key overwrites.
    An entry without ':' fails in ``substring(0, -1)``."""
    result = {}
    for entry in (_drop_trailing_empty(_COMMA.split(value)) if value else []):
        colon = entry.rfind(":")
        if colon < 0:
            raise ConfigError("L-9", f"Error parsing configuration property "
                                     f"'{LISTENER_SECURITY_PROTOCOL_MAP}': begin 0, end -1, "
                                     f"length {len(entry)}")
        result[_java_trim(entry[:colon])] = _java_trim(entry[colon + 1:])
    return result


def _normalised(value: str, rule: str) -> str:
    """``ListenerName.normalised`` (L-3): upper case; blank is an error."""
    if not _java_trim(value):
        raise ConfigError(rule, "The provided listener name is null or empty string")
    return value.upper()


def _security_protocol(name: str) -> str:
    """``SecurityProtocol.forName`` (case-insensitive) as ``getSecurityProtocol`` uses it."""
    if name.upper() not in SECURITY_PROTOCOLS:
        raise ConfigError("L-9", f"Invalid security protocol `{name}` defined in "
                                 f"{LISTENER_SECURITY_PROTOCOL_MAP}")
    return name.upper()


def _listener_name_of(entry: str) -> str:
    """``EndPoint.parseListenerName`` (L-8): the text before the first ':', upper-cased."""
    if ":" not in entry:
        raise ConfigError("L-8", f"Unable to parse a listener name from {entry}")
    return entry[:entry.index(":")].upper()


def _endpoint(entry: str, protocols: Mapping[str, str]) -> Endpoint:
    """One entry of ``SocketServerConfigs.listenerListToEndPoints`` (L-2..L-6)."""
    m = _ENDPOINT.fullmatch(entry)
    if m is None:
        raise ConfigError("L-2", f"Unable to parse {entry} to a broker endpoint")
    name = _normalised(m[1], "L-3")
    port = int(m[3])
    if not _INT_MIN <= port <= _INT_MAX:                       # Integer.parseInt
        raise ConfigError("L-5", f'For input string: "{m[3]}"')
    if name not in protocols:
        raise ConfigError("L-6", f"No security protocol defined for listener {name}")
    return Endpoint(name, m[2] or None, port, protocols[name])


def _ip_version(host: str | None) -> int | None:
    """4 or 6 for an IP literal (commons-validator's ``InetAddressValidator``), else None."""
    try:
        return ipaddress.ip_address(host).version if host is not None else None
    except ValueError:
        return None


def _check_distinct(endpoints: tuple, value: str, require_distinct_ports: bool) -> None:
    """L-7 (``CoreUtils.listenerListToEndPoints.validate``).  Kafka groups the ports in a hash
    map, so with several duplicated ports the one reported is arbitrary; kipcheck reports the
    first in the list."""
    names = [e.listener_name for e in endpoints]
    _require(len(set(names)) == len(names), "L-7",
             f"Each listener must have a different name, listeners: {value}")
    if not require_distinct_ports:
        return
    by_port: dict[int, list[Endpoint]] = {}
    for e in endpoints:
        if e.port != 0:                                         # port 0: ephemeral, ignored
            by_port.setdefault(e.port, []).append(e)
    for port, group in by_port.items():
        if len(group) < 2:
            continue
        ips = [e for e in group if _ip_version(e.host)]
        others = [e for e in group if not _ip_version(e.host)]
        # checkDuplicateListenerPorts: "distinct ports" among the others, all on this port
        _require(len(others) < 2, "L-7", f"Each listener must have a different port, "
                                          f"listeners: {value}")
        if not ips:
            continue
        if len(ips) != 2:
            raise ConfigError("L-7", "Each listener must have a different port unless exactly "
                                     "one listener has an IPv4 address and the other IPv6 "
                                     f"address, listeners: {value}, port: {port}")
        message = (f"If you have two listeners on the same port then one needs to be IPv4 and "
                   f"the other IPv6, listeners: {value}, port: {port}")
        _require({_ip_version(e.host) for e in ips} == {4, 6}, "L-7", message)
        if others:                                   # Kafka throws this one without require
            raise ConfigError("L-7", message)


def _listener_value(originals: Mapping[str, str], listener_name: str, key: str,
                    default: str | None):
    prefixed = originals.get(config_prefix(listener_name) + key)
    if prefixed is not None:
        return prefixed
    return originals.get(key, default)


def _distinct(names) -> list[str]:
    """A Scala Set of names in insertion order (as Kafka prints it for up to 4 names)."""
    return list(dict.fromkeys(names))


def _java_list(items) -> str:
    """``java.util.List.toString``."""
    return "[" + ", ".join(items) + "]"
