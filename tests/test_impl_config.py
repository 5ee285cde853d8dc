"""impl/config.py: the ``.properties`` reader and Kafka's listener rules, one table per rule
(L-0..L-27 of kafka-behaviour.md section 3).  Each error case asserts the rule ID and Kafka's
message verbatim; cases marked "KafkaConfigTest" are Kafka's own test cases
(core/src/test/scala/unit/kafka/server/KafkaConfigTest.scala at the reference commit)."""
from typing import NamedTuple

import pytest

from impl.config import (
    DEFAULT_PRINCIPAL_BUILDER, ConfigError, Endpoint, PropertiesError, config_prefix,
    load_properties, parse_properties, process_roles, validate,
)

ZK = {"zookeeper.connect": "zk1.example.com:2181"}
KRAFT_BROKER = {"process.roles": "broker", "controller.listener.names": "CONTROLLER"}
KRAFT_CONTROLLER = {"process.roles": "controller", "controller.listener.names": "CONTROLLER",
                    "listeners": "CONTROLLER://:9093"}
COMBINED = {"process.roles": "broker,controller", "controller.listener.names": "CONTROLLER",
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"}
SEPARATED = {**ZK, "listeners": "CLIENT://:9092,INTERNAL://10.0.0.11:9093",
             "listener.security.protocol.map": "CLIENT:SASL_SSL,INTERNAL:SSL",
             "inter.broker.listener.name": "INTERNAL"}
MIGRATION = {**ZK, "zookeeper.metadata.migration.enable": "true"}
REQ = "requirement failed: "
BLANK = "The provided listener name is null or empty string"


class Err(NamedTuple):
    """An expected refusal: the rule ID and Kafka's message."""
    rule_id: str
    message: str


def outcome(props):
    """None if Kafka accepts the configuration, else Err(rule ID, Kafka's message)."""
    try:
        validate(props)
    except ConfigError as e:
        return Err(e.rule_id, e.message)
    return None


def check(props, expected, get):
    """``expected`` is an Err, or what ``get`` reads from the accepted configuration."""
    if isinstance(expected, Err):
        assert outcome(props) == expected
    else:
        assert get(validate(props)) == expected


def names(endpoints):
    return [e.listener_name for e in endpoints]


# ------------------------------------------------------------------------------------------
# the .properties reader (java.util.Properties.load; cross-checked against Java 17 on random
# inputs while it was written)


@pytest.mark.parametrize("text, expected", [
    ("a=1\nb = 2\nc:3\nd 4\n", {"a": "1", "b": "2", "c": "3", "d": "4"}),
    ("  # comment\n! comment\n\n\t key = value  \n", {"key": "value  "}),    # trailing kept
    ("listeners=A://:1,\\\n    B://:2\n", {"listeners": "A://:1,B://:2"}),  # continuation
    ("a=1\\\\\nb=2", {"a": "1\\", "b": "2"}),                # an even number: no continuation
    ("a=x\\\r\n  y\rb=z", {"a": "xy", "b": "z"}),            # \r\n and \r end lines too
    ("key\n", {"key": ""}),                                  # no separator: empty value
    ("a==b\n", {"a": "=b"}),                                 # one separator only
    ("a\\=b=c\n", {"a=b": "c"}),                             # escaped separator in the key
    ("k=\\t\\n\\u0041\\q\n", {"k": "\t\nAq"}),               # escapes; unknown: the char
    ("k=\\uD83D\\uDE00\n", {"k": "\U0001F600"}),             # a UTF-16 surrogate pair
    ("a=1\na=2\n", {"a": "2"}),                              # a later key wins
    ("# a comment ending in a backslash \\\nk=v\n", {"k": "v"}),   # comments never continue
    ("\\\n# not a comment?\nk=v", {"k": "v"}),    # Java: still a comment (the line is empty)
    ("k=v\\", {"k": "v"}),                                   # backslash at end of file dropped
    ("k=caf\xc3\xa9", {"k": "caf\xc3\xa9"}),                 # ISO-8859-1: UTF-8 arrives mangled
])
def test_properties_are_read_like_java(text, expected):
    assert parse_properties(text) == expected


@pytest.mark.parametrize("text, line", [
    ("a=1\nlisteners=\\u12G4\n", 2), ("k=\\u12", 1), ("a=1\\\n b=2\n\\uZZZZ=x", 3)])
def test_malformed_unicode_escape_is_the_only_error(text, line):
    with pytest.raises(PropertiesError) as e:
        parse_properties(text)
    assert (e.value.line, e.value.message) == (line, "Malformed \\uxxxx encoding.")


# ------------------------------------------------------------------------------------------
# L-0: the mode (kipcheck's ID for the checks Kafka makes before the listener rules)


@pytest.mark.parametrize("props, expected", [
    ({}, Err("L-0", "Missing required configuration `zookeeper.connect` which has no default "
                 "value.")),
    (ZK, None),
    ({**ZK, "process.roles": ""}, None),                       # empty: ZooKeeper mode
    (KRAFT_BROKER, None),
    ({**KRAFT_BROKER, "process.roles": "Broker"},
     Err("L-0", "Invalid value Broker for configuration process.roles: String must be one of: "
             "broker, controller")),
    ({**KRAFT_BROKER, "process.roles": "broker, controller ,"},
     Err("L-0", "Invalid value  for configuration process.roles: String must be one of: broker, "
             "controller")),
    ({**KRAFT_BROKER, "process.roles": "broker,broker"},
     Err("L-0", "Duplicate role names found in `process.roles`: ArrayBuffer(broker, broker)")),
    ({**KRAFT_BROKER, "zookeeper.metadata.migration.enable": "true"},
     Err("L-0", "If using `zookeeper.metadata.migration.enable` in KRaft mode, `zookeeper.connect` "
             "must also be set.")),
    ({**ZK, "zookeeper.metadata.migration.enable": "yes"},
     Err("L-0", "Invalid value yes for configuration zookeeper.metadata.migration.enable: Expected "
             "value to be either true or false")),
    # ConfigDef validates process.roles before security.inter.broker.protocol
    ({"process.roles": "nope", "security.inter.broker.protocol": "nope"},
     Err("L-0", "Invalid value nope for configuration process.roles: String must be one of: "
             "broker, controller")),
])
def test_L0_mode(props, expected):
    assert outcome(props) == expected
    if expected is None:
        assert validate(props).zk_mode == (not process_roles(props))


# ------------------------------------------------------------------------------------------
# L-1..L-8: a listener list


@pytest.mark.parametrize("listeners, expected", [
    ("PLAINTEXT://:9092", ["PLAINTEXT"]),
    (" SSL://:9093 ,, PLAINTEXT://:9092 , ", ["SSL", "PLAINTEXT"]),   # trimmed, empties dropped
    ("PLAINTEXT://:9092,\t\nSSL://:9093", ["PLAINTEXT", "SSL"]),
    ("", Err("L-14", REQ + "There must be at least one broker advertised listener.")),
    ("  ", Err("L-14", REQ + "There must be at least one broker advertised listener.")),
])
def test_L1_csv_list(listeners, expected):
    check({**ZK, "listeners": listeners}, expected, lambda cfg: names(cfg.listeners))


@pytest.mark.parametrize("props, expected", [
    ({**ZK, "listeners": "PLAINTEXT://broker1.example.com:9092"},
     Endpoint("PLAINTEXT", "broker1.example.com", 9092, "PLAINTEXT")),
    ({**ZK, "listeners": "PLAINTEXT://broker1.example.com"},
     Err("L-2", "Error creating broker listeners from 'PLAINTEXT://broker1.example.com': Unable "
                "to parse PLAINTEXT://broker1.example.com to a broker endpoint")),
    ({**ZK, "listeners": "PLAINTEXT:/host:9092"},
     Err("L-2", "Error creating broker listeners from 'PLAINTEXT:/host:9092': Unable to parse "
                "PLAINTEXT:/host:9092 to a broker endpoint")),
    ({**ZK, "listeners": "PLAINTEXT://host:9092/"},
     Err("L-2", "Error creating broker listeners from 'PLAINTEXT://host:9092/': Unable to parse "
                "PLAINTEXT://host:9092/ to a broker endpoint")),
    ({**ZK, "listeners": "PLAINTEXT://:9092,SSL://a b:9093"},
     Err("L-2", "Error creating broker listeners from 'PLAINTEXT://:9092,SSL://a b:9093': "
                "Unable to parse SSL://a b:9093 to a broker endpoint")),
    ({**ZK, "listeners": "PLAINTEXT://:+9092"},
     Err("L-2", "Error creating broker listeners from 'PLAINTEXT://:+9092': Unable to parse "
                "PLAINTEXT://:+9092 to a broker endpoint")),
    # group 1 is greedy: the listener name runs to the last "://"
    ({**ZK, "listeners": "A://B://host:9092,PLAINTEXT://:9093",
      "listener.security.protocol.map": "A://B:SSL,PLAINTEXT:PLAINTEXT"},
     Endpoint("A://B", "host", 9092, "SSL")),
])
def test_L2_endpoint_syntax(props, expected):
    check(props, expected, lambda cfg: cfg.listeners[0])


@pytest.mark.parametrize("props, expected", [
    ({**ZK, "listeners": "plaintext://:9092"}, ["PLAINTEXT"]),
    ({**SEPARATED, "listeners": "Client://:9092,internal://:9093"}, ["CLIENT", "INTERNAL"]),
    ({**ZK, "listeners": "://:9092"},
     Err("L-3", "Error creating broker listeners from '://:9092': " + BLANK)),
    ({**ZK, "listeners": "PLAINTEXT://:9092, ://:9093"},
     Err("L-3", "Error creating broker listeners from 'PLAINTEXT://:9092, ://:9093': " + BLANK)),
])
def test_L3_listener_names_are_upper_cased(props, expected):
    check(props, expected, lambda cfg: names(cfg.listeners))


@pytest.mark.parametrize("listeners, expected", [
    ("PLAINTEXT://:9092", None),                              # empty host: all interfaces
    ("PLAINTEXT://[::1]:9092", "::1"),                        # brackets stripped
    ("PLAINTEXT://::1:9092", "::1"),                          # and optional
    ("PLAINTEXT://[fe80::1%3]:9092", "fe80::1%3"),            # zone id kept
    ("PLAINTEXT://my_host.example.com:9092", "my_host.example.com"),   # underscores allowed
    ("PLAINTEXT://10.0.0.1:9092", "10.0.0.1"),
    ("PLAINTEXT://host!:9092",
     Err("L-2", "Error creating broker listeners from 'PLAINTEXT://host!:9092': Unable to parse "
             "PLAINTEXT://host!:9092 to a broker endpoint")),
])
def test_L4_hosts(listeners, expected):
    check({**ZK, "listeners": listeners}, expected, lambda cfg: cfg.listeners[0].host)


@pytest.mark.parametrize("port, expected", [
    ("9092", 9092), ("0", 0), ("-1", -1), ("70000", 70000), ("09092", 9092),   # no range check
    ("2147483647", 2147483647), ("-2147483648", -2147483648),
    ("2147483648", Err("L-5", "Error creating broker listeners from 'PLAINTEXT://:2147483648': "
                           'For input string: "2147483648"')),
    ("90920000000", Err("L-5", "Error creating broker listeners from 'PLAINTEXT://:90920000000': "
                            'For input string: "90920000000"')),
])
def test_L5_ports(port, expected):
    check({**ZK, "listeners": f"PLAINTEXT://:{port}"}, expected,
          lambda cfg: cfg.listeners[0].port)


@pytest.mark.parametrize("props, expected", [
    ({**ZK, "listeners": "CONTROLLER://localhost:9092"},            # KafkaConfigTest
     Err("L-6", "Error creating broker listeners from 'CONTROLLER://localhost:9092': No security "
             "protocol defined for listener CONTROLLER")),
    ({**SEPARATED, "advertised.listeners": "CLIENT://b1:9092,INTERNAL://b1:9093,TRACE://b1:1"},
     Err("L-6", "Error creating broker listeners from 'CLIENT://b1:9092,INTERNAL://b1:9093,"
             "TRACE://b1:1': No security protocol defined for listener TRACE")),
    ({**SEPARATED, "listener.security.protocol.map": "client:sasl_ssl,INTERNAL:Ssl"},
     ("SASL_SSL", "SSL")),                                   # protocols case-insensitive
])
def test_L6_security_protocol_of_each_listener(props, expected):
    check(props, expected, lambda cfg: tuple(e.security_protocol for e in cfg.listeners))


_DIFFERENT_PORT_UNLESS = ("Each listener must have a different port unless exactly one listener "
                          "has an IPv4 address and the other IPv6 address, listeners: ")
_IPV4_AND_IPV6 = ("If you have two listeners on the same port then one needs to be IPv4 and "
                  "the other IPv6, listeners: ")


@pytest.mark.parametrize("listeners, advertised, expected", [
    # KafkaConfigTest.testDuplicateListeners / testIPv4AndIPv6SamePortListeners
    ("PLAINTEXT://localhost:9091,SSL://localhost:9091", None,
     Err("L-7", REQ + "Each listener must have a different port, listeners: "
                   "PLAINTEXT://localhost:9091,SSL://localhost:9091")),
    ("PLAINTEXT://localhost:9091,PLAINTEXT://localhost:9092", None,
     Err("L-7", REQ + "Each listener must have a different name, listeners: "
                   "PLAINTEXT://localhost:9091,PLAINTEXT://localhost:9092")),
    ("PLAINTEXT://localhost:9091,plaintext://localhost:9092", None,     # after upper-casing
     Err("L-7", REQ + "Each listener must have a different name, listeners: "
                   "PLAINTEXT://localhost:9091,plaintext://localhost:9092")),
    ("PLAINTEXT://[::1]:9092,SSL://[::1]:9092", None,
     Err("L-7", REQ + _IPV4_AND_IPV6 + "PLAINTEXT://[::1]:9092,SSL://[::1]:9092, port: 9092")),
    ("PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092", None,
     Err("L-7", REQ + _IPV4_AND_IPV6 + "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092, "
                                    "port: 9092")),
    # an IPv4/IPv6 pair plus a third, non-IP listener: thrown without "requirement failed"
    ("SSL://[::1]:9096,PLAINTEXT://127.0.0.1:9096,SASL_SSL://:9096", None,
     Err("L-7", _IPV4_AND_IPV6 + "SSL://[::1]:9096,PLAINTEXT://127.0.0.1:9096,SASL_SSL://:9096, "
                              "port: 9096")),
    ("PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092,SASL_SSL://127.0.0.1:9092", None,
     Err("L-7", _DIFFERENT_PORT_UNLESS + "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9092,"
                                      "SASL_SSL://127.0.0.1:9092, port: 9092")),
    ("PLAINTEXT://apache.org:9092,SSL://[::1]:9092", None,
     Err("L-7", _DIFFERENT_PORT_UNLESS + "PLAINTEXT://apache.org:9092,SSL://[::1]:9092, "
                                      "port: 9092")),
    ("PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092", None, None),
    ("PLAINTEXT://[::1]:9093,SSL://127.0.0.1:9093", None, None),
    ("PLAINTEXT://127.0.0.1:9094,SSL://[::1]:9094,SASL_SSL://127.0.0.1:9095,"
     "SASL_PLAINTEXT://[::1]:9095", None, None),
    ("PLAINTEXT://:0,SSL://:0", None, None),                  # port 0 is never a duplicate
    # advertised.listeners may repeat ports, not names
    ("PLAINTEXT://b1:9092,SSL://b1:9093", "PLAINTEXT://lb:9092,SSL://lb:9092", None),
    ("PLAINTEXT://b1:9092,SSL://b1:9093", "PLAINTEXT://lb:9092,PLAINTEXT://lb:9093",
     Err("L-7", REQ + "Each listener must have a different name, listeners: "
                   "PLAINTEXT://lb:9092,PLAINTEXT://lb:9093")),
])
def test_L7_distinct_names_and_ports(listeners, advertised, expected):
    props = {**ZK, "listeners": listeners}
    if advertised is not None:
        props["advertised.listeners"] = advertised
    assert outcome(props) == expected


@pytest.mark.parametrize("props, expected", [
    ({**KRAFT_BROKER, "listeners": "PLAINTEXT"},
     Err("L-8", "Unable to parse a listener name from PLAINTEXT")),
    ({**KRAFT_BROKER, "listeners": "PLAINTEXT://:9092,SSL"},
     Err("L-8", "Unable to parse a listener name from SSL")),
    # only the KRaft default-map heuristic (L-10) reads names this way: elsewhere it is L-2
    ({**KRAFT_BROKER, "listeners": "PLAINTEXT",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"},
     Err("L-2", "Error creating broker listeners from 'PLAINTEXT': Unable to parse PLAINTEXT to a "
             "broker endpoint")),
    ({**ZK, "listeners": "PLAINTEXT"},
     Err("L-2", "Error creating broker listeners from 'PLAINTEXT': Unable to parse PLAINTEXT to a "
             "broker endpoint")),
    # an SSL controller listener name stops the heuristic before it reads the listeners
    ({**KRAFT_BROKER, "controller.listener.names": "SSL", "listeners": "PLAINTEXT"},
     Err("L-2", "Error creating broker listeners from 'PLAINTEXT': Unable to parse PLAINTEXT to a "
             "broker endpoint")),
    # the heuristic reads "SSL" and stops; the endpoint itself does not parse
    ({**KRAFT_BROKER, "listeners": "ssl:/whatever"},
     Err("L-2", "Error creating broker listeners from 'ssl:/whatever': Unable to parse "
                "ssl:/whatever to a broker endpoint")),
])
def test_L8_listener_name_before_the_first_colon(props, expected):
    assert outcome(props) == expected


# ------------------------------------------------------------------------------------------
# L-9, L-10: the security-protocol map


@pytest.mark.parametrize("value, expected", [
    ("CLIENT:SASL_SSL,INTERNAL:SSL", {"CLIENT": "SASL_SSL", "INTERNAL": "SSL"}),
    (" client : sasl_ssl ,internal:Ssl, ", {"CLIENT": "SASL_SSL", "INTERNAL": "SSL"}),
    ("CLIENT:PLAINTEXT,CLIENT:SASL_SSL,INTERNAL:SSL",               # a later key overwrites
     {"CLIENT": "SASL_SSL", "INTERNAL": "SSL"}),
    ("CLIENT", Err("L-9", "Error parsing configuration property 'listener.security.protocol.map': "
                       "begin 0, end -1, length 6")),
    (",CLIENT:SSL", Err("L-9", "Error parsing configuration property "
                            "'listener.security.protocol.map': begin 0, end -1, length 0")),
    ("CLIENT:TLS,INTERNAL:SSL", Err("L-9", "Invalid security protocol `TLS` defined in "
                                        "listener.security.protocol.map")),
    ("CLIENT:,INTERNAL:SSL", Err("L-9", "Invalid security protocol `` defined in "
                                     "listener.security.protocol.map")),
    (":SSL,INTERNAL:SSL", Err("L-9", BLANK)),
])
def test_L9_security_protocol_map(value, expected):
    check({**SEPARATED, "listener.security.protocol.map": value}, expected,
          lambda cfg: dict(cfg.security_protocol_map))


_DEFAULT_MAP = {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
_CONTROLLER_NOT_MAPPED = Err(
    "L-21", "Controller listener with name CONTROLLER defined in controller.listener.names not "
            "found in listener.security.protocol.map  (an explicit security mapping for each "
            "controller listener is required if listener.security.protocol.map is non-empty, or "
            "if there are security protocols other than PLAINTEXT in use)")


@pytest.mark.parametrize("props, expected", [
    # KafkaConfigTest.testControllerListenerNameMapsToPlaintextByDefaultForKRaft
    (KRAFT_BROKER, {**_DEFAULT_MAP, "CONTROLLER": "PLAINTEXT"}),
    ({**KRAFT_BROKER, "controller.listener.names": "CONTROLLER,SSL"}, _CONTROLLER_NOT_MAPPED),
    ({**KRAFT_BROKER, "listeners": "SSL://localhost:9092"}, _CONTROLLER_NOT_MAPPED),
    ({**KRAFT_BROKER, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"},
     {"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "SSL"}),
    ({**KRAFT_BROKER, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"},
     _CONTROLLER_NOT_MAPPED),
    ({**KRAFT_BROKER, "listener.security.protocol.map": ",".join(
        f"{p}:{p}" for p in _DEFAULT_MAP)}, _CONTROLLER_NOT_MAPPED),   # set = explicit
    ({**KRAFT_BROKER, "controller.listener.names": "SSL"}, _DEFAULT_MAP),
    # KafkaConfigTest.testMultipleControllerListenerNamesMapToPlaintextByDefaultForKRaft
    ({**KRAFT_CONTROLLER, "controller.listener.names": "CONTROLLER1,CONTROLLER2",
      "listeners": "CONTROLLER1://localhost:9092,CONTROLLER2://localhost:9093"},
     {**_DEFAULT_MAP, "CONTROLLER1": "PLAINTEXT", "CONTROLLER2": "PLAINTEXT"}),
    # raw names are added: a lower-case entry adds a lower-case key the listener cannot use
    ({**COMBINED, "controller.listener.names": "controller"},
     Err("L-6", "Error creating broker listeners from 'PLAINTEXT://:9092,CONTROLLER://:9093': No "
             "security protocol defined for listener CONTROLLER")),
    # ZooKeeper mode: no default (KafkaConfigTest ...DoesNotMapToPlaintextByDefaultForNonKRaft)
    ({**ZK, "zookeeper.metadata.migration.enable": "true",
      "controller.listener.names": "CONTROLLER"}, _DEFAULT_MAP),
])
def test_L10_kraft_maps_controller_listeners_to_plaintext(props, expected):
    check(props, expected, lambda cfg: dict(cfg.security_protocol_map))


# ------------------------------------------------------------------------------------------
# L-11..L-16: the inter-broker listener, advertised listeners


_ONLY_ONE = Err("L-11", "Only one of inter.broker.listener.name and security.inter.broker.protocol "
                     "should be set.")


@pytest.mark.parametrize("props, expected", [
    (SEPARATED, None),
    ({**SEPARATED, "security.inter.broker.protocol": "SSL"}, _ONLY_ONE),
    ({**SEPARATED, "security.inter.broker.protocol": "PLAINTEXT"}, _ONLY_ONE),  # the default
    ({**ZK, "security.inter.broker.protocol": "PLAINTEXT"}, None),
    # evaluated for every role: a controller too
    ({**KRAFT_CONTROLLER, "inter.broker.listener.name": "CONTROLLER",
      "security.inter.broker.protocol": "SSL"}, _ONLY_ONE),
])
def test_L11_listener_name_or_protocol(props, expected):
    assert outcome(props) == expected


@pytest.mark.parametrize("props, expected", [
    ({**SEPARATED, "inter.broker.listener.name": "internal"}, ("INTERNAL", "SSL")),
    ({**SEPARATED, "inter.broker.listener.name": "REPLICATION"},
     Err("L-12", "Listener with name REPLICATION defined in inter.broker.listener.name not found "
              "in listener.security.protocol.map.")),
    ({**SEPARATED, "inter.broker.listener.name": ""}, Err("L-12", BLANK)),
    ({**KRAFT_CONTROLLER, "inter.broker.listener.name": "REPLICATION"},
     Err("L-12", "Listener with name REPLICATION defined in inter.broker.listener.name not found "
              "in listener.security.protocol.map.")),
])
def test_L12_inter_broker_listener_name(props, expected):
    check(props, expected,
          lambda cfg: (cfg.inter_broker_listener_name, cfg.inter_broker_security_protocol))


@pytest.mark.parametrize("props, expected", [
    (ZK, ("PLAINTEXT", "PLAINTEXT")),                          # the default
    ({**ZK, "listeners": "SSL://:9093", "security.inter.broker.protocol": "SSL"},
     ("SSL", "SSL")),
    ({**ZK, "listeners": "SSL://:9093", "security.inter.broker.protocol": " SSL "},
     ("SSL", "SSL")),                                          # trimmed
    ({**ZK, "listeners": "SSL://:9093", "security.inter.broker.protocol": "ssl"},
     Err("L-13", "Invalid value ssl for configuration security.inter.broker.protocol: String must "
              "be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")),
    ({**ZK, "security.inter.broker.protocol": ""},
     Err("L-13", "Invalid value  for configuration security.inter.broker.protocol: String must be "
              "one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")),
])
def test_L13_inter_broker_protocol_names_the_listener(props, expected):
    check(props, expected,
          lambda cfg: (cfg.inter_broker_listener_name, cfg.inter_broker_security_protocol))


@pytest.mark.parametrize("props, expected", [
    (SEPARATED, None),
    ({**SEPARATED, "advertised.listeners": ""},            # set but empty: nothing advertised
     Err("L-14", REQ + "There must be at least one broker advertised listener.")),
    # KafkaConfigTest.testSeparateControllerListenerDefinedForKRaftBrokerController
    ({**COMBINED, "listeners": "SSL://localhost:9093", "controller.listener.names": "SSL"},
     Err("L-14", REQ + "There must be at least one broker advertised listener. Perhaps all "
                    "listeners appear in controller.listener.names?")),
    ({**SEPARATED, "advertised.listeners": "CLIENT://b1.example.com:9092"},
     Err("L-14", REQ + "inter.broker.listener.name must be a listener name defined in "
                    "advertised.listeners. The valid options based on currently configured "
                    "listeners are CLIENT")),
    ({**SEPARATED, "listener.security.protocol.map": "CLIENT:SASL_SSL,INTERNAL:SSL,TRACE:SSL",
      "advertised.listeners": "CLIENT://b1:9092,INTERNAL://b1:9093,TRACE://b1:9094"},
     Err("L-14", REQ + "advertised.listeners listener names must be equal to or a subset of the "
                    "ones defined in listeners. Found CLIENT,INTERNAL,TRACE. The valid options "
                    "based on the current configuration are CLIENT,INTERNAL")),
    # a controller has no broker listener to advertise
    (KRAFT_CONTROLLER, None),
])
def test_L14_broker_advertised_listeners(props, expected):
    assert outcome(props) == expected


_NONROUTABLE = Err("L-15", REQ + "advertised.listeners cannot use the nonroutable meta-address "
                              "0.0.0.0. Use a routable IP address.")


@pytest.mark.parametrize("props, expected", [
    ({**ZK, "listeners": "PLAINTEXT://0.0.0.0:9092"}, _NONROUTABLE),   # listeners advertised
    ({**ZK, "listeners": "PLAINTEXT://0.0.0.0:9092",
      "advertised.listeners": "PLAINTEXT://b1.example.com:9092"}, None),
    ({**ZK, "listeners": "PLAINTEXT://:9092"}, None),                 # empty host allowed
    ({**ZK, "listeners": "PLAINTEXT://[::]:9092"}, None),             # only "0.0.0.0" itself
    ({**KRAFT_CONTROLLER, "listeners": "CONTROLLER://0.0.0.0:9093"}, _NONROUTABLE),
    ({**KRAFT_CONTROLLER, "listeners": "CONTROLLER://0.0.0.0:9093",
      "advertised.listeners": "CONTROLLER://c1.example.com:9093"}, None),
])
def test_L15_no_advertised_wildcard(props, expected):
    assert outcome(props) == expected


_SASL = {**SEPARATED, "listener.security.protocol.map": "CLIENT:SASL_SSL,INTERNAL:SASL_SSL"}
_MECHANISM = Err("L-16", REQ + "sasl.mechanism.inter.broker.protocol must be included in "
                            "sasl.enabled.mechanisms when SASL is used for inter-broker "
                            "communication")


@pytest.mark.parametrize("props, expected", [
    (_SASL, None),                                             # GSSAPI and GSSAPI by default
    ({**_SASL, "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"}, _MECHANISM),
    ({**_SASL, "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
      "sasl.enabled.mechanisms": "PLAIN, SCRAM-SHA-512"}, None),
    ({**_SASL, "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",      # L-26 override
      "sasl.enabled.mechanisms": "SCRAM-SHA-512",
      "listener.name.internal.sasl.enabled.mechanisms": "PLAIN"}, _MECHANISM),
    ({**_SASL, "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
      "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512"}, None),
    ({**_SASL, "sasl.enabled.mechanisms": ""}, _MECHANISM),
    ({**SEPARATED, "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"}, None),  # SSL
])
def test_L16_sasl_mechanism_enabled_on_the_inter_broker_listener(props, expected):
    assert outcome(props) == expected


# ------------------------------------------------------------------------------------------
# L-17..L-19: control plane, privileged listener, data plane


_WITH_CONTROL = {**ZK, "listeners": "CLIENT://:9092,INTERNAL://10.0.0.11:9093,"
                                    "CONTROL://10.0.0.11:9094",
                 "listener.security.protocol.map": "CLIENT:SASL_SSL,INTERNAL:SSL,CONTROL:SSL",
                 "inter.broker.listener.name": "INTERNAL",
                 "control.plane.listener.name": "CONTROL"}


@pytest.mark.parametrize("props, expected", [
    (_WITH_CONTROL, None),
    # KafkaConfigTest.testControlPlaneListenerName
    ({**ZK, "listeners": "PLAINTEXT://localhost:0,CONTROLLER://localhost:5000",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
      "control.plane.listener.name": "CONTROLLER"}, None),
    ({**_WITH_CONTROL, "control.plane.listener.name": "REPLICATION"},
     Err("L-17", "Listener with REPLICATION defined in control.plane.listener.name not found in "
              "listener.security.protocol.map.")),
    ({**_WITH_CONTROL, "control.plane.listener.name": " "}, Err("L-17", BLANK)),
    ({**_WITH_CONTROL, "advertised.listeners": "CLIENT://b1:9092,INTERNAL://10.0.0.11:9093"},
     Err("L-17", REQ + "control.plane.listener.name must be a listener name defined in "
                    "advertised.listeners. The valid options based on currently configured "
                    "listeners are CLIENT,INTERNAL")),
    ({**_WITH_CONTROL, "control.plane.listener.name": "INTERNAL"},
     Err("L-17", REQ + "control.plane.listener.name, when defined, should have a different value "
                    "from the inter broker listener name. Currently they both have the value "
                    "ListenerName(INTERNAL)")),
    # KafkaConfigTest.testControlPlaneListenerNameNotAllowedWithKRaft
    ({**COMBINED, "listeners": "PLAINTEXT://localhost:9092,SSL://localhost:9093",
      "controller.listener.names": "SSL", "control.plane.listener.name": "SSL"},
     Err("L-17", REQ + "control.plane.listener.name is not supported in KRaft mode.")),
    ({**KRAFT_CONTROLLER, "control.plane.listener.name": "CONTROLLER"},
     Err("L-17", REQ + "control.plane.listener.name is not supported in KRaft mode.")),
    ({**KRAFT_BROKER, "control.plane.listener.name": "CONTROL"},   # looked up first
     Err("L-17", "Listener with CONTROL defined in control.plane.listener.name not found in "
              "listener.security.protocol.map.")),
])
def test_L17_control_plane_listener(props, expected):
    assert outcome(props) == expected


@pytest.mark.parametrize("props, expected", [
    # KafkaConfigTest / SocketServerTest: testControlPlaneAsPrivilegedListener,
    # testInterBrokerListenerAsPrivilegedListener,
    # testControlPlaneTakePrecedenceOverInterBrokerListenerAsPrivilegedListener
    (_WITH_CONTROL, "CONTROL"),
    ({k: v for k, v in _WITH_CONTROL.items() if k != "control.plane.listener.name"}, "INTERNAL"),
    (ZK, "PLAINTEXT"),
    ({**KRAFT_BROKER, "listeners": "CLIENT://:9092,REPLICATION://:9093",
      "listener.security.protocol.map": "CLIENT:SSL,REPLICATION:SSL,CONTROLLER:SSL",
      "inter.broker.listener.name": "REPLICATION"}, "REPLICATION"),
    (KRAFT_CONTROLLER, None),                 # no controller listener named PLAINTEXT
    ({**KRAFT_CONTROLLER, "controller.listener.names": "PLAINTEXT",
      "listeners": "PLAINTEXT://:9093"}, "PLAINTEXT"),
])
def test_L18_privileged_listener(props, expected):
    assert validate(props).privileged_listener_name == expected


@pytest.mark.parametrize("props, expected", [
    (_WITH_CONTROL, ["CLIENT", "INTERNAL"]),
    # the raw value is compared: a lower-case name stays in the data plane as well
    ({**_WITH_CONTROL, "control.plane.listener.name": "control"},
     ["CLIENT", "INTERNAL", "CONTROL"]),
    (COMBINED, ["PLAINTEXT"]),
    (ZK, ["PLAINTEXT"]),
])
def test_L19_data_plane_listeners(props, expected):
    assert names(validate(props).data_plane_listeners) == expected


# ------------------------------------------------------------------------------------------
# L-20..L-25: controller.listener.names by role


@pytest.mark.parametrize("props, expected", [
    # split on ",", untrimmed, empty entries kept except trailing ones
    ({**MIGRATION, "controller.listener.names": ",CONTROLLER,"}, ("", "CONTROLLER")),
    ({**MIGRATION, "controller.listener.names": " CONTROLLER , SSL "}, ("CONTROLLER ", " SSL")),
    # the KRaft default map (L-10) adds the raw names, so a broker accepts them...
    ({**KRAFT_BROKER, "controller.listener.names": "CONTROLLER , SSL"}, ("CONTROLLER ", " SSL")),
    # ...but an explicit map has trimmed keys
    ({**KRAFT_BROKER, "controller.listener.names": "CONTROLLER, SSL",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL, SSL:SSL"},
     Err("L-21", "Controller listener with name  SSL defined in controller.listener.names not "
                 "found in listener.security.protocol.map  (an explicit security mapping for "
                 "each controller listener is required if listener.security.protocol.map is "
                 "non-empty, or if there are security protocols other than PLAINTEXT in use)")),
    ({**KRAFT_CONTROLLER, "controller.listener.names": ",CONTROLLER"}, Err("L-20", BLANK)),
    # lower case does not match the (upper-cased) listener
    ({**COMBINED, "controller.listener.names": "controller",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"},
     Err("L-23", REQ + "controller.listener.names must contain at least one value appearing in "
                       "the 'listeners' configuration when running the KRaft controller role")),
])
def test_L20_controller_listener_names_are_raw(props, expected):
    check(props, expected, lambda cfg: cfg.controller_listener_names)


@pytest.mark.parametrize("props, expected", [
    (KRAFT_BROKER, None),
    ({**KRAFT_BROKER, "controller.listener.names": ""},
     Err("L-21", REQ + "controller.listener.names must contain at least one value when running "
                    "KRaft with just the broker role")),
    ({"process.roles": "broker"},                   # KafkaConfigTest
     Err("L-21", REQ + "controller.listener.names must contain at least one value when running "
                    "KRaft with just the broker role")),
    ({**KRAFT_BROKER, "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"},
     Err("L-21", REQ + "controller.listener.names must not contain a value appearing in the "
                    "'listeners' configuration when running KRaft with just the broker role")),
    ({**KRAFT_BROKER, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"},
     _CONTROLLER_NOT_MAPPED),
    ({**KRAFT_BROKER, "controller.listener.names": "CONTROLLER, ,CONTROLLER2"},
     Err("L-21", BLANK)),
    ({**KRAFT_BROKER, "controller.listener.names": "CONTROLLER,SSL",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL,SSL:SSL"}, None),
])
def test_L21_broker_only(props, expected):
    assert outcome(props) == expected


@pytest.mark.parametrize("props, expected", [
    (KRAFT_CONTROLLER, None),
    # KafkaConfigTest.testControllerListenerDefinedForKRaftController
    ({"process.roles": "controller", "listeners": "SSL://localhost:9093"},
     Err("L-22", REQ + "The listeners config must only contain KRaft controller listeners from "
                    "controller.listener.names when process.roles=controller")),
    ({"process.roles": "controller", "listeners": "SSL://localhost:9093",
      "controller.listener.names": "SSL"}, None),
    ({**KRAFT_CONTROLLER, "listeners": "CONTROLLER://:9093,CLIENT://:9092",
      "listener.security.protocol.map": "CONTROLLER:SSL,CLIENT:SSL"},
     Err("L-22", REQ + "The listeners config must only contain KRaft controller listeners from "
                    "controller.listener.names when process.roles=controller")),
    ({**KRAFT_CONTROLLER, "listeners": ""},
     Err("L-22", REQ + "controller.listener.names must contain at least one value appearing in the "
                    "'listeners' configuration when running the KRaft controller role")),
    ({**KRAFT_CONTROLLER, "controller.listener.names": "CONTROLLER,OTHER"},
     Err("L-22", REQ + "controller.listener.names must only contain values appearing in the "
                    "'listeners' configuration when running the KRaft controller role")),
])
def test_L22_controller_only(props, expected):
    assert outcome(props) == expected


@pytest.mark.parametrize("props, expected", [
    (COMBINED, None),
    # KafkaConfigTest.testPortInQuorumVotersNotRequiredToMatchFirstControllerListenerPort...
    ({**COMBINED, "listeners": "PLAINTEXT://localhost:9092,SSL://localhost:9093,"
                               "SASL_SSL://localhost:9094",
      "controller.listener.names": "SSL,SASL_SSL"}, None),
    ({**COMBINED, "listeners": "PLAINTEXT://:9092"},
     Err("L-23", REQ + "controller.listener.names must contain at least one value appearing in the "
                    "'listeners' configuration when running the KRaft controller role")),
    ({**COMBINED, "controller.listener.names": "CONTROLLER,OTHER"},
     Err("L-23", REQ + "controller.listener.names must only contain values appearing in the "
                    "'listeners' configuration when running the KRaft controller role")),
])
def test_L23_combined(props, expected):
    assert outcome(props) == expected


@pytest.mark.parametrize("props, expected", [
    (ZK, None),
    ({**ZK, "controller.listener.names": "CONTROLLER"},
     Err("L-24", REQ + "controller.listener.names must be empty when not running in KRaft mode: "
                    "[CONTROLLER]")),
    ({**ZK, "controller.listener.names": "A, B"},
     Err("L-24", REQ + "controller.listener.names must be empty when not running in KRaft mode: "
                    "[A,  B]")),
    (MIGRATION,
     Err("L-24", REQ + "controller.listener.names must not be empty when running in ZooKeeper "
                    "migration mode: []")),
    ({**MIGRATION, "controller.listener.names": "CONTROLLER"}, None),
])
def test_L24_zookeeper_mode(props, expected):
    assert outcome(props) == expected


@pytest.mark.parametrize("props, broker, controller", [
    # KafkaConfigTest.testEffectAdvertiseControllerListenerForControllerWith(out)Advertisement
    ({**KRAFT_CONTROLLER, "listeners": "CONTROLLER://localhost:9093",
      "advertised.listeners": "CONTROLLER://lb1.example.com:9000"},
     [], [Endpoint("CONTROLLER", "lb1.example.com", 9000, "PLAINTEXT")]),
    ({**KRAFT_CONTROLLER, "listeners": "CONTROLLER://localhost:9093"},
     [], [Endpoint("CONTROLLER", "localhost", 9093, "PLAINTEXT")]),
    # ...WithMixedAdvertisement: in controller.listener.names order
    ({**KRAFT_CONTROLLER, "controller.listener.names": "CONTROLLER_NEW,CONTROLLER",
      "listeners": "CONTROLLER://localhost:9093,CONTROLLER_NEW://localhost:9094",
      "advertised.listeners": "CONTROLLER://lb1.example.com:9000"},
     [], [Endpoint("CONTROLLER_NEW", "localhost", 9094, "PLAINTEXT"),
          Endpoint("CONTROLLER", "lb1.example.com", 9000, "PLAINTEXT")]),
    ({**COMBINED, "advertised.listeners": "PLAINTEXT://b1:9092,CONTROLLER://c1:9093"},
     [Endpoint("PLAINTEXT", "b1", 9092, "PLAINTEXT")],
     [Endpoint("CONTROLLER", "c1", 9093, "PLAINTEXT")]),
])
def test_L25_effective_advertised_listeners(props, broker, controller):
    cfg = validate(props)
    assert list(cfg.advertised_broker_listeners) == broker
    assert list(cfg.advertised_controller_listeners) == controller


# ------------------------------------------------------------------------------------------
# L-26, L-27


_OVERRIDES = {**SEPARATED, "ssl.keystore.location": "/etc/kafka/broker.jks",
              "listener.name.client.ssl.keystore.location": "/etc/kafka/client.jks",
              "listener.name.client.plain.sasl.jaas.config": "PlainLoginModule required;",
              "principal.builder.class": "com.example.Builder",
              "listener.name.internal.principal.builder.class": DEFAULT_PRINCIPAL_BUILDER}
_DECLARED = {**_OVERRIDES, "kipcheck.principal.builder.serde.classes": "com.example.Other, "
                                                                      "com.example.Builder"}


def _value(listener, key):
    return lambda cfg: cfg.listener_value(listener, key)


def _builder(listener):
    return lambda cfg: (cfg.principal_builder_class(listener), cfg.has_principal_serde(listener))


@pytest.mark.parametrize("props, read, expected", [
    (SEPARATED, lambda cfg: config_prefix("CLIENT"), "listener.name.client."),
    (_OVERRIDES, _value("CLIENT", "ssl.keystore.location"), "/etc/kafka/client.jks"),  # override
    (_OVERRIDES, _value("INTERNAL", "ssl.keystore.location"), "/etc/kafka/broker.jks"),  # fallback
    (_OVERRIDES, _value("INTERNAL", "ssl.truststore.location"), None),                  # neither
    (_OVERRIDES, _value("CLIENT", "plain.sasl.jaas.config"), "PlainLoginModule required;"),
    (_OVERRIDES, _value("INTERNAL", "plain.sasl.jaas.config"), None),
    # principal.builder.class per listener, and whether it brings a KafkaPrincipalSerde
    (_OVERRIDES, _builder("CLIENT"), ("com.example.Builder", False)),
    (_OVERRIDES, _builder("INTERNAL"), (DEFAULT_PRINCIPAL_BUILDER, True)),
    (SEPARATED, _builder("CLIENT"), (DEFAULT_PRINCIPAL_BUILDER, True)),               # default
    (_DECLARED, _builder("CLIENT"), ("com.example.Builder", True)),                   # declared
])
def test_L26_per_listener_override(props, read, expected):
    assert read(validate(props)) == expected


_B1 = {**SEPARATED,
       "advertised.listeners": "CLIENT://b1.example.com:9092,INTERNAL://10.0.0.11:9093"}
_B2 = {**SEPARATED, "listeners": "INTERNAL://10.0.0.12:9093"}                 # no CLIENT
_C1 = {**KRAFT_CONTROLLER, "advertised.listeners": "CONTROLLER://c1.example.com:9093"}


@pytest.mark.parametrize("listener, controller, expected", [
    # KafkaApisTest...OnDistinctListenerWithInconsistentListenersAcrossBrokers: B2 is left out
    ("CLIENT", False, [Endpoint("CLIENT", "b1.example.com", 9092, "SASL_SSL"), None, None]),
    ("INTERNAL", False, [Endpoint("INTERNAL", "10.0.0.11", 9093, "SSL"),
                         Endpoint("INTERNAL", "10.0.0.12", 9093, "SSL"), None]),
    ("CONTROLLER", False, [None, None, None]),          # a controller has no broker endpoint
    ("CONTROLLER", True, [None, None, Endpoint("CONTROLLER", "c1.example.com", 9093,
                                               "PLAINTEXT")]),
])
def test_L27_responses_list_nodes_with_the_request_listener(listener, controller, expected):
    """Metadata / DescribeCluster on a listener list only the nodes with an endpoint of that
    name: each node's ``advertised_endpoint`` (None: left out)."""
    nodes = [validate(p) for p in (_B1, _B2, _C1)]
    assert [n.advertised_endpoint(listener, controller) for n in nodes] == expected


# ------------------------------------------------------------------------------------------
# Boundaries and branches no table above reaches


@pytest.mark.parametrize("port, expected", [
    ("1", 1), ("65535", 65535),                       # the usable range's ends
    ("0", 0), ("65536", 65536), ("-1", -1), ("-0", 0),  # Integer.parseInt only: no range check
    ("-2147483649", Err("L-5", "Error creating broker listeners from 'PLAINTEXT://:-2147483649': "
                            'For input string: "-2147483649"')),
])
def test_L5_port_boundaries(port, expected):
    """``SocketServerConfigs.listenerListToEndPoints``: ``Integer.parseInt(group(3))`` and
    nothing else; a port outside 1..65535 fails later, when a registration serializes it
    (ListenerInfo, R-5) or the socket binds -- not in the configuration."""
    check({**ZK, "listeners": f"PLAINTEXT://:{port}"}, expected,
          lambda cfg: cfg.listeners[0].port)


@pytest.mark.parametrize("listeners, expected", [
    ("PLAINTEXT://:1,SSL://:65535", None),
    ("PLAINTEXT://:-1,SSL://:-1",                    # only port 0 is exempt, not negatives
     Err("L-7", REQ + "Each listener must have a different port, listeners: "
                   "PLAINTEXT://:-1,SSL://:-1")),
    ("PLAINTEXT://:65536,SSL://:65536",
     Err("L-7", REQ + "Each listener must have a different port, listeners: "
                   "PLAINTEXT://:65536,SSL://:65536")),
    ("PLAINTEXT://:0,SSL://:-0", None),              # "-0" is port 0 as well
])
def test_L7_duplicate_port_check_exempts_exactly_port_zero(listeners, expected):
    assert outcome({**ZK, "listeners": listeners}) == expected


@pytest.mark.parametrize("text, expected", [
    ("", {}),
    ("a=1\n   ", {"a": "1"}),                        # ends in blanks: no last line
    ("a=1\n# tail", {"a": "1"}),                     # ends in a comment without a newline
    ("# c\n  k=v", {"k": "v"}),                      # blanks after a comment line skipped
    ("\\\n\n  k=v\n", {"k": "v"}),                   # "\" alone, then an empty line: blank
    ("k=\\\n\nv", {"k": "", "v": ""}),                # a continuation onto an empty line ends
    ("k=a\\\n\\\nb", {"k": "ab"}),                  # a line that is only a continuation
    ("a=x\\\r\ny\n", {"a": "xy"}),                   # \r\n after the backslash: one break
    ("k=v\\\r", {"k": "v"}),                         # a continuation at the end of input
    ("k=v\\\n", {"k": "v"}),
])
def test_properties_end_of_input_and_empty_continuations(text, expected):
    """``Properties.LineReader``: the edges the table above does not reach."""
    assert parse_properties(text) == expected


@pytest.mark.parametrize("text, line", [
    ("\n\n  k=\\u12\n", 3),                          # blank lines before the logical line
    ("# c\n\nk=\\u12", 3),
    ("k=a\\\n  \\u12", 1),                           # a logical line counts from its start
])
def test_malformed_escape_reports_the_first_line_of_the_logical_line(text, line):
    with pytest.raises(PropertiesError) as e:
        parse_properties(text)
    assert e.value.line == line


def test_L19_control_plane_name_is_trimmed_before_the_comparison():
    """ConfigDef trims STRING values; the raw value compared in L-19 is the trimmed one."""
    props = {**_WITH_CONTROL, "control.plane.listener.name": " CONTROL "}
    assert names(validate(props).data_plane_listeners) == ["CLIENT", "INTERNAL"]


def test_load_properties_reads_bytes_as_iso_8859_1(tmp_path):
    path = tmp_path / "server.properties"
    path.write_bytes("listeners=PLAINTEXT://h\u00e9:9092\n".encode())
    assert load_properties(path) == {"listeners": "PLAINTEXT://h\u00c3\u00a9:9092"}


@pytest.mark.parametrize("props, description, bound", [
    (ZK, "ZooKeeper-mode broker", ["PLAINTEXT"]),
    (_WITH_CONTROL, "ZooKeeper-mode broker", ["CONTROL", "CLIENT", "INTERNAL"]),
    ({**KRAFT_BROKER, "listeners": "PLAINTEXT://:9092"}, "KRaft broker", ["PLAINTEXT"]),
    (KRAFT_CONTROLLER, "KRaft controller", ["CONTROLLER"]),
    (COMBINED, "KRaft combined broker and controller", ["PLAINTEXT", "CONTROLLER"]),
])
def test_roles_and_the_listeners_a_node_binds(props, description, bound):
    """SocketServer binds a broker's control plane then data plane, a controller's controller
    listeners; the control-plane listener is bound once."""
    cfg = validate(props)
    assert cfg.description == description
    assert cfg.is_controller == ("controller" in description)
    assert names(cfg.bound_listeners) == bound
