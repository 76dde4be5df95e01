"""The README keeps its promises: two set-up commands first, tables generated from the code, and its\nproperties examples load."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.properties import read_properties
from tests.tls_pki import STORE_PASSWORD, Pki, make_pki

ROOT = Path(__file__).resolve().parent.parent


def test_readme_starts_with_the_two_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    block = lines[lines.index("```sh") + 1 : lines.index("```")]
    commands = [line.split("#")[0].strip() for line in block]
    assert commands == ["./scripts/serve", "./scripts/test"]
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_readme_tables_match_the_registry_and_config_model():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_docs.py"), "--check"], capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


_PROPERTIES_BLOCK = re.compile(r"^( *)```properties\n(.*?)^\1```", re.S | re.M)
_STORES = {"PKCS12": "broker_p12", "PEM": "broker_pair_pem", "JKS": "broker_p12"}  # keystore file per type
_TRUSTSTORES = {"PKCS12": "truststore_p12", "PEM": "ca_pem", "JKS": "truststore_p12"}


def _readme_properties_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [textwrap.dedent(block) for _indent, block in _PROPERTIES_BLOCK.findall(text)]


def _with_test_stores(props: dict[str, str], pki: Pki) -> dict[str, str]:
    """``props`` with its keystores and truststores replaced by the test PKI's files of the same type."""
    result = dict(props)
    for key, value in props.items():
        prefix = key[: key.find("ssl.")] if "ssl." in key else ""
        if key.endswith("ssl.keystore.location"):
            result[key] = getattr(pki, _STORES[props.get(f"{prefix}ssl.keystore.type", "JKS")])
        elif key.endswith("ssl.truststore.location"):
            result[key] = getattr(pki, _TRUSTSTORES[props.get(f"{prefix}ssl.truststore.type", "JKS")])
        elif key.endswith(("ssl.keystore.password", "ssl.truststore.password")):
            result[key] = STORE_PASSWORD
    return result


def test_the_readme_has_properties_examples():
    assert len(_readme_properties_blocks()) >= 4


@pytest.mark.parametrize("block", _readme_properties_blocks(), ids=lambda block: block.splitlines()[0][:40])
def test_each_properties_example_of_the_readme_loads(tmp_path, block):
    """Each ```properties block of the README is read as Kafka reads the file and passes every check the
    broker makes before it binds a port (its stores replaced by test ones). A ``# ...`` after a value is no
    comment in Java's format but part of the value: no example has one."""
    props = read_properties(block)
    assert not [f"{k}={v}" for k, v in props.items() if re.search(r"\s[#!]", v)], "a comment after a value"
    props = {**_with_test_stores(props, make_pki(tmp_path)), "log.dirs": str(tmp_path / "data")}
    BrokerConfig.from_props(props).validate()
