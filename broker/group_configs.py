"""Group configs (Kafka's ``GroupConfig``, ConfigResource type GROUP = 32): per-group settings, kept and described.

Kafka 4.x lets IncrementalAlterConfigs and AlterConfigs set five INT keys on
a group, and DescribeConfigs show them: ``consumer.session.timeout.ms`` and
``consumer.heartbeat.interval.ms`` for KIP-848 consumer groups,
``share.session.timeout.ms``, ``share.heartbeat.interval.ms`` and
``share.record.lock.duration.ms`` for KIP-932 share groups. This broker serves
KIP-848 consumer groups but no share groups: the two consumer keys set a
consumer group's session timeout and heartbeat interval (``value``, read by
``GroupManager`` at each heartbeat, as Kafka does); the share keys
are checked, stored and described as Kafka does, and take effect for nothing.

**Describing** (``describe``) works for any group name, whether the group
exists or not, as in Kafka: every key with its value, source and one
synonym, the key itself: DYNAMIC_GROUP_CONFIG (8) when set for the group,
else DEFAULT_CONFIG (5) with the broker's default, which is
``group.consumer.session.timeout.ms``, ``group.consumer.heartbeat.interval.ms``
and ``group.share.record.lock.duration.ms`` for three keys and the built-in
45000 and 5000 for ``share.session.timeout.ms`` and
``share.heartbeat.interval.ms`` (Kafka's ``extractGroupConfigMap`` leaves the
broker's ``group.share.session.timeout.ms`` and heartbeat out).

**Checking** a group's complete new set of configs (``check``, Kafka's
``GroupConfigManager.validate``), each refusal an ``InvalidGroupConfig``
(INVALID_CONFIG) with Kafka's message, in Kafka's order:

1. a key that is not one of the five: "Unknown group config name: k";
2. each key's type and lower bound, in Kafka's definition order: "Invalid value
   soon for configuration consumer.session.timeout.ms: Not a number of type
   INT", "...: Value must be at least 1" (1000 for the lock duration);
3. the broker's bounds, ``group.consumer.min.heartbeat.interval.ms`` ...:
   "consumer.heartbeat.interval.ms must be greater than or equal to
   group.consumer.min.heartbeat.interval.ms", "... must be less than or equal to ...";
4. "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
   and the same for the share keys.

Keys the set leaves out count, as in Kafka, as the broker's
``group.consumer.*`` defaults for the two consumer keys and as the built-in
defaults for the share keys. Values stored before the broker's bounds
changed are kept and described as they are (Kafka checks only on change).

**Storing**: every group's configs live in ``__group_configs.json`` in the
first log dir (``{"<group>": {"<key>": "<value as given>"}}``), replaced
atomically, owner-only, on every change, and read at start; Kafka keeps them
in its metadata log. A file that cannot be read or holds anything but known
keys with INT values stops the start (``StorageError``). A change the file
cannot take (a full or failing disk) is not made (``NotStored``). Changes
are made one at a time, each worked out from the configs the one before it
left, saved on a worker thread, then made and answered (``store_saves.py``).
Deleting a group leaves its configs, as Kafka's DeleteGroups does.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Callable

import attrs

from storage import StorageError
from storage.config import ConfigEntry
from storage.topic_store import atomic_write

from .config import ConfigError
from .config_values import INT, at_least, parse_value
from .store_saves import StoreSaves

log = logging.getLogger("minibroker")
FILE_NAME = "__group_configs.json"
GROUP_CONFIG, DEFAULT_CONFIG = "GROUP_CONFIG", "DEFAULT_CONFIG"


class InvalidGroupConfig(Exception):
    """A group config Kafka refuses: INVALID_CONFIG with this message."""


@attrs.frozen
class GroupKey:
    name: str
    default: int  # Kafka's built-in default
    low: int  # its ConfigDef lower bound
    broker_default: str | None  # the broker key whose value DescribeConfigs gives as the default
    bounds: tuple[str, str]  # the broker keys of its lowest and highest value
    doc: str


def _key(name: str, default: int, low: int, broker_default: str | None, doc: str) -> GroupKey:
    kind, _, rest = name.partition(".")  # consumer.session.timeout.ms: group.consumer.min/max.session.timeout.ms
    return GroupKey(name, default, low, broker_default, (f"group.{kind}.min.{rest}", f"group.{kind}.max.{rest}"), doc)


GROUP_KEYS: tuple[GroupKey, ...] = (  # Kafka's definition order: the order values are parsed and checked in
    _key("consumer.session.timeout.ms", 45_000, 1, "group.consumer.session.timeout.ms",
         "a consumer group member is dropped after this long without a heartbeat (KIP-848)"),
    _key("consumer.heartbeat.interval.ms", 5_000, 1, "group.consumer.heartbeat.interval.ms",
         "how often consumer group members heartbeat (KIP-848)"),
    _key("share.session.timeout.ms", 45_000, 1, None,
         "a share group member is dropped after this long without a heartbeat (KIP-932; not served here)"),
    _key("share.heartbeat.interval.ms", 5_000, 1, None,
         "how often share group members heartbeat (KIP-932; not served here)"),
    _key("share.record.lock.duration.ms", 30_000, 1_000, "group.share.record.lock.duration.ms",
         "how long a share group member holds the records it got (KIP-932; not served here)"),
)  # fmt: skip
_BY_NAME = {k.name: k for k in GROUP_KEYS}
# Kafka's order of the bound checks, and the session timeouts that must exceed their heartbeat intervals.
_BOUND_ORDER = ("consumer.heartbeat.interval.ms", "consumer.session.timeout.ms", "share.heartbeat.interval.ms",
                "share.session.timeout.ms", "share.record.lock.duration.ms")  # fmt: skip
_SESSIONS = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
             ("share.session.timeout.ms", "share.heartbeat.interval.ms"))  # fmt: skip
_CHECKED_WITH_BROKER_DEFAULT = ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms")


def _setting(config: Any, broker_key: str) -> int:
    return getattr(config, broker_key.replace(".", "_"))


def parse(key: GroupKey, text: str) -> int:
    """A value as Kafka's ConfigDef reads it (trimmed INT, at least ``key.low``); ``InvalidGroupConfig`` if not."""
    try:
        return parse_value(key.name, text.strip(), INT, at_least(key.low))
    except ConfigError as exc:
        raise InvalidGroupConfig(str(exc)) from None


def check(props: dict[str, str], config: Any) -> None:
    """Kafka's checks of a group's complete new set of configs against the broker ``config``."""
    unknown = [name for name in props if name not in _BY_NAME]
    if unknown:
        raise InvalidGroupConfig(f"Unknown group config name: {unknown[0]}")
    values = {}
    for key in GROUP_KEYS:
        if key.name in props:
            values[key.name] = parse(key, props[key.name])
        elif key.name in _CHECKED_WITH_BROKER_DEFAULT:
            values[key.name] = _setting(config, key.broker_default)
        else:
            values[key.name] = key.default
    for name in _BOUND_ORDER:
        lowest, highest = _BY_NAME[name].bounds
        if values[name] < _setting(config, lowest):
            raise InvalidGroupConfig(f"{name} must be greater than or equal to {lowest}")
        if values[name] > _setting(config, highest):
            raise InvalidGroupConfig(f"{name} must be less than or equal to {highest}")
    for session, heartbeat in _SESSIONS:
        if values[session] <= values[heartbeat]:
            raise InvalidGroupConfig(f"{session} must be greater than {heartbeat}")


# Kafka's startup requirements on the broker keys (GroupCoordinatorConfig, ShareGroupConfig): (a, relation, b).
_BROKER_RULES = tuple(
    rule for kind in ("consumer", "share") for rule in (
        (f"group.{kind}.max.heartbeat.interval.ms", ">=", f"group.{kind}.min.heartbeat.interval.ms"),
        (f"group.{kind}.heartbeat.interval.ms", ">=", f"group.{kind}.min.heartbeat.interval.ms"),
        (f"group.{kind}.heartbeat.interval.ms", "<=", f"group.{kind}.max.heartbeat.interval.ms"),
        (f"group.{kind}.max.session.timeout.ms", ">=", f"group.{kind}.min.session.timeout.ms"),
        (f"group.{kind}.session.timeout.ms", ">=", f"group.{kind}.min.session.timeout.ms"),
        (f"group.{kind}.session.timeout.ms", "<=", f"group.{kind}.max.session.timeout.ms"),
        (f"group.{kind}.heartbeat.interval.ms", "<", f"group.{kind}.session.timeout.ms"),
    )
) + (("group.share.record.lock.duration.ms", ">=", "group.share.min.record.lock.duration.ms"),
     ("group.share.max.record.lock.duration.ms", ">=", "group.share.record.lock.duration.ms"))  # fmt: skip
_RELATIONS = {">=": ("greater than or equal to", int.__ge__), "<=": ("less than or equal to", int.__le__),
              "<": ("less than", int.__lt__)}  # fmt: skip


def check_group_protocol_keys(config: Any) -> None:
    """Kafka's startup checks of ``group.consumer.*`` and ``group.share.*``; ``ConfigError`` with its message."""
    for a, relation, b in _BROKER_RULES:
        words, holds = _RELATIONS[relation]
        if not holds(_setting(config, a), _setting(config, b)):
            raise ConfigError(f"{a} must be {words} {b}")


class GroupConfigs:
    """Every group's configs: ``describe`` one group's, ``replace`` one group's whole set."""

    def __init__(self, path: Path, config: Any, groups: dict[str, dict[str, str]]) -> None:
        self.path, self.config, self.groups = path, config, groups
        self.saves = StoreSaves()  # one change at a time, saved on a worker thread
        self.on_metadata_change: Callable[[], None] = lambda: None  # after each save (on its thread)

    @classmethod
    def load(cls, config: Any) -> "GroupConfigs":
        """Read ``__group_configs.json`` from the first log dir; ``StorageError`` if it is damaged."""
        path = Path(config.log_dir_list()[0]) / FILE_NAME
        try:
            data = json.loads(path.read_text()) if path.exists() else {}
            groups = {group: dict(props.items()) for group, props in data.items() if props}
            for props in groups.values():
                for name, value in props.items():
                    if name not in _BY_NAME or not isinstance(value, str):
                        raise ValueError(f"not a group config: {name}={value!r}")
                    parse(_BY_NAME[name], value)
        except (OSError, ValueError, AttributeError, InvalidGroupConfig) as exc:
            raise StorageError(f"{path} is damaged ({exc}): mend or remove it") from None
        return cls(path, config, groups)

    def names(self) -> list[str]:
        """The groups that have configs."""
        return sorted(self.groups)

    def current(self, group: str) -> dict[str, str]:
        return dict(self.groups.get(group, {}))

    def value(self, group: str, name: str) -> int:
        """The group's own value of key ``name``, else the broker's default (or the key's built-in one)."""
        key, own = _BY_NAME[name], self.groups.get(group, {})
        if name in own:
            return parse(key, own[name])
        return _setting(self.config, key.broker_default) if key.broker_default else key.default

    def describe(self, group: str) -> list[ConfigEntry]:
        """DescribeConfigs' entries of a group, by name."""
        own = self.groups.get(group, {})
        entries = []
        for key in sorted(GROUP_KEYS, key=lambda k: k.name):
            value = self.value(group, key.name)
            source = GROUP_CONFIG if key.name in own else DEFAULT_CONFIG
            entries.append(ConfigEntry(key.name, str(value), source, type="INT", doc=key.doc,
                                       synonyms=((key.name, str(value), source),)))  # fmt: skip
        return entries

    async def replace(self, group: str, change: Callable[[dict[str, str]], dict[str, str]],
                      validate_only: bool) -> None:  # fmt: skip
        """Make ``change(current)`` the group's complete set of configs (none: the group has no configs), after
        ``check``; in the store's turn, saved on a worker thread before it is made (``StoreSaves``)."""
        async with self.saves:
            props = change(self.current(group))
            check(props, self.config)
            if validate_only:
                return
            groups = {name: own for name, own in self.groups.items() if name != group}
            if props:
                groups[group] = dict(props)
            if groups == self.groups:  # Kafka writes a ConfigRecord only for a value that changes
                return
            await self.saves.save_or_refuse("group configs", self.path, self._write, groups)
            self.groups = groups
        log.info("configs of group %r are now: %s", group, props)

    def _write(self, groups: dict[str, dict[str, str]]) -> None:
        """Save every group's configs (any thread: it fsyncs), and count the change in the metadata quorum."""
        atomic_write(self.path, json.dumps(groups, indent=2, sort_keys=True) + "\n", private=True)
        self.on_metadata_change()
