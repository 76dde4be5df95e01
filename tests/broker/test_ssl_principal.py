"""``ssl.principal.mapping.rules``: Kafka's SslPrincipalMapper grammar and results.

Rules are split on commas, tried in order, and the first that applies gives
the name; RULE patterns must match the whole subject; ``$n`` and ``\\``
in replacements work as in Java's ``replaceAll``, with Kafka's handling of
references past the pattern's groups; ``L``/``U`` change the case; bad
rules stop the start naming the key.
"""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.ssl_config import ssl_context
from broker.ssl_principal import InvalidRule, NoMatchingRule, map_name, parse_rules

DN = "CN=Kafka Server,OU=Platform,O=Acme\\, Inc.,C=US"


@pytest.mark.parametrize(("rules", "expected"), [
    ("DEFAULT", DN),
    ("", None),
    ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/", "Kafka Server@Platform"),
    ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L", "kafka server@platform"),
    ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U", "KAFKA SERVER@PLATFORM"),
    ("RULE:^CN=(.*?),OU=Other,.*$/$1/, RULE:^CN=([^ ]*) .*$/$1/", "Kafka"),
    ("RULE:^CN=(.*?),OU=Other,.*$/$1/,DEFAULT", DN),
    ("  RULE:^CN=(.*?),.*$/$1/L  ,  DEFAULT  ", "kafka server"),
    ("RULE:^CN=(.*?),.*$/$12/", "Kafka Server2"),  # one group: $12 is $1 and a 2
    ("RULE:^CN=(.*?),.*$/$2/", "$2"),  # no such group: read literally
    ("RULE:^CN=(.*?),.*$/\\$1 and \\\\/", "$1 and \\"),
    ("RULE:^(CN)=Kafka (Server),.*$/$2\\/$1/", "Server/CN"),
    ("RULE:^CN=Kafka Server,.*$/fixed/", "fixed"),
    ("RULE:^CN=Kafka Server$/x/,DEFAULT", DN),  # must match the whole name
])  # fmt: skip
def test_rules_map_names_as_kafka_does(rules, expected):
    parsed = parse_rules(rules)
    if expected is None:
        with pytest.raises(NoMatchingRule, match="No rules apply to"):
            map_name(parsed, DN)
    else:
        assert map_name(parsed, DN) == expected


@pytest.mark.parametrize("rules", ["DEFAULTS", "RULE:^CN=(.*)$/$1/X", "RULE:^CN=(.*)$/$1", "whatever",
                                   "RULE:^CN=(?P<n>.*)$/x/"])  # fmt: skip
def test_rules_that_cannot_be_parsed_are_refused(rules):
    with pytest.raises(InvalidRule, match="Invalid rule"):
        parse_rules(rules)


def test_bad_rules_stop_the_start_naming_the_listener_key(tmp_path):
    from tests.tls_pki import make_pki

    pki = make_pki(tmp_path)
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.broker_pair_pem,
             "listener.name.ssl.ssl.principal.mapping.rules": "RULE:broken"}  # fmt: skip
    with pytest.raises(ConfigError, match="listener.name.ssl.ssl.principal.mapping.rules: Invalid rule"):
        ssl_context(BrokerConfig.from_props(props), "SSL")
