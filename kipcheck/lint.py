"""``kipcheck lint-config``: an operator's broker or controller ``.properties`` file checked with
the reference implementation's listener rules (``impl/config.py``, L-0..L-27), then for the
security problems of KIP-590 forwarding and KIP-103 listeners that Kafka accepts silently.

Kafka stops at the first invalid setting, so an invalid file gives one error (the one Kafka
would report at startup) and no findings beyond it; docs/lint-config.md lists every rule.

A finding of a valid file is a *warning* when it is a security problem: it lets someone reach
or do what the file's authentication or authorization is there to prevent.  Otherwise it is a
*note* (advice on listener separation, a setting Kafka reads differently from how it is
written): Kafka's quickstart files get notes, not warnings.  Exit codes: 0 valid (notes
allowed), 1 security warnings (with ``--strict``: any finding), 2 an error or an unreadable file.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from impl.config import (
    BROKER, CONTROL_PLANE_LISTENER_NAME, CONTROLLER_LISTENER_NAMES, PRINCIPAL_BUILDER_CLASS,
    PRINCIPAL_SERDE_CLASSES, PROCESS_ROLES, ZOOKEEPER_CONNECT, ConfigError, ListenerConfig,
    PropertiesError, load_properties, process_roles, validate,
)
from kipcheck.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_VIOLATION, BadInput

ERROR, WARNING, NOTE = "error", "warning", "note"
SECURE_PROTOCOLS = frozenset({"SSL", "SASL_PLAINTEXT", "SASL_SSL"})
AUTHORIZER_CLASS_NAME = "authorizer.class.name"
MAX_FILE_BYTES = 4 * 1024 * 1024        # a server.properties is a few KiB


@dataclass(frozen=True)
class Finding:
    rule_id: str                # L-n (Kafka refuses to start) or W-n (kipcheck's warning)
    severity: str               # ERROR | WARNING (a security problem) | NOTE
    message: str


def lint(props: dict[str, str]) -> tuple[ListenerConfig | None, list]:
    """The accepted configuration (None if Kafka refuses it) and the findings."""
    try:
        cfg = validate(props)
    except ConfigError as e:
        return None, [Finding(e.rule_id, ERROR, e.message)]
    return cfg, security_warnings(cfg)


def security_warnings(cfg: ListenerConfig) -> list[Finding]:
    """W-1..W-6 for a configuration Kafka accepts, in ID order, each a WARNING or a NOTE."""
    return [finding for check in (
        _shared_inter_broker_listener, _controller_listener_advertised, _envelope_on_plaintext,
        _principal_builder_without_serde, _several_controller_listeners,
        _control_plane_in_data_plane) for finding in check(cfg)]


def _shared_inter_broker_listener(cfg: ListenerConfig) -> list[Finding]:
    """W-1: clients get no broker listener of their own, so they are advertised (and connect
    to) the inter-broker listener, in ZK mode the privileged one (L-18) unless a control-plane
    listener is configured, which is then advertised to them as well."""
    if not cfg.is_broker:
        return []
    internal = {cfg.inter_broker_listener_name, cfg.control_plane_listener_name}
    if any(e.listener_name not in internal for e in cfg.advertised_broker_listeners):
        return []
    what = f"the inter-broker listener {cfg.inter_broker_listener_name} is"
    if cfg.control_plane_listener_name is not None:
        what = (f"the inter-broker listener {cfg.inter_broker_listener_name} and the "
                f"control-plane listener {cfg.control_plane_listener_name} are")
    return [Finding("W-1", NOTE, (
        f"{what} also advertised to clients: advertised.listeners has no other broker listener, "
        "so client traffic shares it with broker traffic (KIP-103: give clients a listener of "
        "their own)"))]


def _controller_listener_advertised(cfg: ListenerConfig) -> list[Finding]:
    """W-2: a controller listener that Kafka takes for a broker listener, because it compares
    ``controller.listener.names`` entries untrimmed and case-sensitively (L-20)."""
    meant = {n.strip().upper(): n for n in cfg.controller_listener_names}
    return [Finding("W-2", WARNING, (
        f"controller listener {e.listener_name} is also advertised to clients as a broker "
        f"listener: {CONTROLLER_LISTENER_NAMES} lists '{meant[e.listener_name]}', which Kafka "
        f"compares with listener names without trimming or upper-casing (L-20); write "
        f"{e.listener_name}"))
        for e in cfg.advertised_broker_listeners if e.listener_name in meant]


def _guards_anything(cfg: ListenerConfig) -> bool:
    """Whether the node authorizes requests or authenticates some listener: only then can an
    unauthenticated sender gain anything by naming another principal."""
    return bool(cfg.originals.get(AUTHORIZER_CLASS_NAME, "").strip()) or any(
        e.security_protocol in SECURE_PROTOCOLS for e in cfg.listeners)


def _envelope_on_plaintext(cfg: ListenerConfig) -> list[Finding]:
    """W-3: a listener that accepts EnvelopeRequest without authenticating its sender.  In ZK
    mode only the privileged listener does, and only with forwarding, which needs
    ``zookeeper.metadata.migration.enable`` (F-4, F-23, F-24); a KRaft controller accepts it
    on every controller listener (F-28); a KRaft broker never (F-22).  A security warning
    where the node has an authorizer or an authenticated listener; a note where it has
    neither (Kafka's quickstart): there every client is ANONYMOUS and may already do
    everything, so naming another principal gains nothing until security is switched on."""
    severity = WARNING if _guards_anything(cfg) else NOTE
    suffix = "" if severity == WARNING else (
        "; nothing is authenticated or authorized on this node yet, so this matters once "
        f"{AUTHORIZER_CLASS_NAME} or an SSL/SASL listener is added")
    found = []
    if cfg.zk_mode and cfg.migration_enabled and cfg.privileged_listener_name is not None:
        found += [(e, "the privileged listener of a ZooKeeper-mode broker with forwarding, F-24")
                  for e in cfg.listeners if e.listener_name == cfg.privileged_listener_name]
    if cfg.is_controller:
        found += [(e, "a KRaft controller accepts it on every controller listener, F-28")
                  for e in cfg.controller_listeners]
    return [Finding("W-3", severity, (
        f"listener {e.listener_name} accepts EnvelopeRequest on PLAINTEXT ({why}): the sender "
        "is not authenticated, so anyone who reaches it is checked for CLUSTER_ACTION as "
        f"ANONYMOUS and then names the client principal the request runs as (F-25, F-30)"
        f"{suffix}"))
        for e, why in found if e.security_protocol == "PLAINTEXT"]


def _principal_builder_without_serde(cfg: ListenerConfig) -> list[Finding]:
    """W-4: listeners whose principal builder is not known to implement KafkaPrincipalSerde:
    the default builder does; any other class only if listed in
    ``kipcheck.principal.builder.serde.classes`` (kipcheck cannot load Java classes)."""
    by_class: dict[str, list[str]] = {}
    for e in cfg.bound_listeners:
        if not cfg.has_principal_serde(e.listener_name):
            by_class.setdefault(cfg.principal_builder_class(e.listener_name), []).append(
                e.listener_name)
    return [Finding("W-4", NOTE, (
        f"{PRINCIPAL_BUILDER_CLASS} {cls} (listener{'s' if len(names) > 1 else ''} "
        f"{', '.join(names)}) is not known to implement KafkaPrincipalSerde: a forwarding broker "
        "cannot put the client's principal into an Envelope (F-12) and a controller cannot read "
        "it (F-29a); Kafka refuses to start if the unprefixed class lacks it. If the class "
        f"implements KafkaPrincipalSerde, list it in {PRINCIPAL_SERDE_CLASSES}"))
        for cls, names in by_class.items()]


def _several_controller_listeners(cfg: ListenerConfig) -> list[Finding]:
    """W-5: Kafka's own log warning, verbatim (``KafkaConfig.validateValues``, L-21)."""
    if cfg.process_roles != {BROKER} or len(cfg.controller_listener_names) < 2:
        return []
    return [Finding("W-5", NOTE, (
        f"{CONTROLLER_LISTENER_NAMES} has multiple entries; only the first will be used since "
        f"{PROCESS_ROLES}=broker: [{', '.join(cfg.controller_listener_names)}]"))]


def _control_plane_in_data_plane(cfg: ListenerConfig) -> list[Finding]:
    """W-6: Kafka drops the control-plane listener from the data plane by comparing the raw
    ``control.plane.listener.name`` (L-19), so a lower-case value leaves it in both."""
    name = cfg.control_plane_listener_name
    if name is None or all(e.listener_name != name for e in cfg.data_plane_listeners):
        return []
    return [Finding("W-6", NOTE, (
        f"the control-plane listener {name} is also a data-plane listener: Kafka compares "
        f"{CONTROL_PLANE_LISTENER_NAME} '{cfg.originals[CONTROL_PLANE_LISTENER_NAME].strip()}' "
        "with listener names case-sensitively there (L-19) and creates a second acceptor for "
        f"the same endpoint; write {name}"))]


def _with_role(props: dict[str, str], role: str | None, path: str) -> tuple[dict, str]:
    """Apply ``--role``: without ``process.roles`` the file is checked as
    ``process.roles=ROLE`` (unless it is a ZooKeeper-mode broker: ``zookeeper.connect`` set and
    ROLE broker); with it, ROLE must be one of its roles.  Returns the properties and a note."""
    if role is None:
        return props, ""
    try:
        roles = process_roles(props)
    except ConfigError:
        return props, ""                             # validate() reports it (L-0)
    if roles:
        if role not in roles:
            raise BadInput(f"--role {role}: {path} has {PROCESS_ROLES}="
                           f"{props[PROCESS_ROLES].strip()}")
        return props, ""
    if role == BROKER and ZOOKEEPER_CONNECT in props:
        return props, ""
    return {**props, PROCESS_ROLES: role}, f" ({PROCESS_ROLES}={role} from --role)"


def _one_line(text: str) -> str:
    """A message on one line: unprintable characters (a value may hold an escaped newline, or a
    lone surrogate) are written as escapes."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def cmd_lint_config(args) -> int:
    """``kipcheck lint-config FILE [--role broker|controller] [--strict]``."""
    try:
        size = Path(args.file).stat().st_size
    except OSError as e:
        raise BadInput(f"{args.file}: {e.strerror or e}") from None
    if size > MAX_FILE_BYTES:
        raise BadInput(f"{args.file}: too large for a properties file ({size:,} bytes; the "
                       f"limit is {MAX_FILE_BYTES:,})")
    try:
        props = load_properties(args.file)
    except OSError as e:
        raise BadInput(f"{args.file}: {e.strerror or e}") from None
    except PropertiesError as e:
        raise BadInput(f"{args.file}: {e}") from None
    props, note = _with_role(props, args.role, args.file)
    cfg, findings = lint(props)
    for f in findings:
        print(_one_line(f"{f.rule_id} {f.severity}: {f.message}"))
    if cfg is None:
        print(f"{args.file}: invalid, 1 error (Kafka stops at the first one)")
        return EXIT_BAD_INPUT
    warnings = sum(1 for f in findings if f.severity == WARNING)
    notes = len(findings) - warnings
    counts = [f"{n} {what}{'s' if n > 1 else ''}" for n, what in ((warnings, "warning"),
                                                                   (notes, "note")) if n]
    print(f"{args.file}: valid {cfg.description}{note}, "
          + (", ".join(counts) if counts else "no warnings"))
    return EXIT_VIOLATION if warnings or (args.strict and notes) else EXIT_OK
