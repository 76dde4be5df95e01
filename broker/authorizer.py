"""The ACL authorizer: Kafka's ``StandardAuthorizer`` rules over bindings kept in the first log dir.

Switched on by ``authorizer.class.name`` (``AUTHORIZER_CLASSES``); without it
``Broker.authorizer`` is None, every action is allowed and the ACL APIs
answer SECURITY_DISABLED, as in Kafka.

**Deciding** (``authorize``; Kafka's ``StandardAuthorizerData.authorize``):

1. a principal listed in ``super.users`` (``User:admin;User:ops``) may do
   anything;
2. the bindings that apply to the resource are the LITERAL ones of its name
   or of ``*`` and the PREFIXED ones whose name starts it. If none applies
   (whoever it names), ``allow.everyone.if.no.acl.found`` decides (default:
   no);
3. of those, the ones naming the principal (or ``User:*``) and the client's
   host address (or ``*``) count: any DENY of the operation (or ALL) denies;
   otherwise an ALLOW allows. An ALLOW of READ, WRITE, DELETE or ALTER also
   allows DESCRIBE, and one of ALTER_CONFIGS allows DESCRIBE_CONFIGS. A DENY
   implies nothing;
4. otherwise denied.

``authorize_by_type`` is Kafka's ``Authorizer.authorizeByResourceType``:
may the principal do the operation to *some* resource of a type (for
example InitProducerId of an idempotent producer: WRITE to any topic)?

``authorized_operations`` is the bitfield of Metadata, DescribeCluster and
DescribeGroups: each operation the resource type has that ``authorize``
allows.

Decisions are cached until the bindings change. Every denial a request asked
for is logged at INFO on ``kafka.authorizer.logger`` in Kafka's words. Every
decision, cached or not, is counted in ``metrics`` (``authorizer_metrics.py``:
StandardAuthorizer's request, allowed and denied rates per minute, and the
ACL count).

**Keeping.** Kafka keeps ACLs in its metadata log; here they live in
``<first log dir>/__acls.json``, rewritten whole through a temporary file,
fsynced and renamed on every change (``atomic_write``), so a crash leaves the
old or the new set. A file that cannot be read stops the start. Changes are
made one at a time, each saved on a worker thread before the bindings change
in memory (``store_saves.py``): until then every decision uses the old set,
and a save the disk refuses changes nothing (``NotStored``: CreateAcls and
DeleteAcls answer KAFKA_STORAGE_ERROR, as a config or quota change the disk
refused); one in doubt stops the broker unanswered (``MetadataDirFailed``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable, Iterable

from storage.topic_store import atomic_write

from .acl_model import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from .authorizer_metrics import AuthorizerMetrics
from .clock import wall_clock_ms
from .sampled_stat import KAFKA_METRIC_WINDOWS
from .store_saves import StoreSaves

log = logging.getLogger(__name__)
audit = logging.getLogger("kafka.authorizer.logger")
ACLS_FILE = "__acls.json"
AUTHORIZER_CLASSES = frozenset({
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",  # ZooKeeper-era name, still in many compose files
})  # fmt: skip
IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                              AclOperation.ALTER})  # fmt: skip
IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})
_CACHE_LIMIT = 100_000


class AclFileError(ValueError):
    """The ACL file exists but cannot be read; the message names it."""


def parse_super_users(text: str) -> frozenset[str]:
    """``super.users``: principals separated by semicolons."""
    return frozenset(p.strip() for p in text.split(";") if p.strip())


def _names_client(acl: AclBinding, principals: tuple[str, str], host: str) -> bool:
    """Does ``acl`` name this principal (or ``User:*``) and this host (or ``*``)?"""
    return acl.principal in principals and acl.host in (WILDCARD, host)


def _applies(acl: AclBinding, principals: tuple[str, str], host: str, op: AclOperation) -> bool:
    """Kafka's ``findResult`` apart from the permission: does ``acl`` speak about this action?"""
    if not _names_client(acl, principals, host):
        return False
    if acl.operation in (AclOperation.ALL, op):
        return True
    if acl.permission_type != PermissionType.ALLOW:
        return False
    if op == AclOperation.DESCRIBE:
        return acl.operation in IMPLIES_DESCRIBE
    return op == AclOperation.DESCRIBE_CONFIGS and acl.operation in IMPLIES_DESCRIBE_CONFIGS


class Authorizer:
    def __init__(self, path: Path | None, super_users: frozenset[str], allow_if_no_acl: bool,
                 clock: Callable[[], float] = wall_clock_ms,
                 metric_windows: tuple[int, int] = KAFKA_METRIC_WINDOWS) -> None:  # fmt: skip
        self.path = path  # None: kept in memory only
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self.acls: list[AclBinding] = []
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._cache: dict[tuple, str] = {}  # the deciding rule of each action asked about
        self.metrics = AuthorizerMetrics(clock, metric_windows)
        self.saves = StoreSaves()  # one change at a time, saved on a worker thread
        self.on_metadata_change: Callable[[], None] = lambda: None  # after each save (on its thread)

    @classmethod
    def load(cls, log_dir: str | Path | None, super_users: str, allow_if_no_acl: bool,
             clock: Callable[[], float] = wall_clock_ms,
             metric_windows: tuple[int, int] = KAFKA_METRIC_WINDOWS) -> "Authorizer":  # fmt: skip
        auth = cls(None if log_dir is None else Path(log_dir) / ACLS_FILE, parse_super_users(super_users),
                   allow_if_no_acl, clock, metric_windows)  # fmt: skip
        if auth.path is not None:
            auth._set(auth._read())
        log.info("authorizer: %d ACLs, super.users=%s, allow.everyone.if.no.acl.found=%s", len(auth.acls),
                 ",".join(sorted(auth.super_users)), allow_if_no_acl)  # fmt: skip
        return auth

    def _read(self) -> list[AclBinding]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))  # type: ignore[union-attr]
            return [AclBinding.from_json(entry) for entry in raw["acls"]]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise AclFileError(f"{self.path}: cannot read the ACLs ({exc!r})") from None

    def _set(self, acls: Iterable[AclBinding]) -> None:
        self.acls = list(dict.fromkeys(acls))
        self._literal, self._prefixed = {}, {}
        for acl in self.acls:
            index = self._literal if acl.pattern_type == PatternType.LITERAL else self._prefixed
            index.setdefault((acl.resource_type, acl.resource_name), []).append(acl)
        self._cache = {}

    def _write(self, acls: list[AclBinding]) -> None:
        """Save ``acls`` (any thread: it fsyncs), and count the change in the metadata quorum."""
        if self.path is not None:
            text = json.dumps({"version": 1, "acls": [acl.to_json() for acl in acls]}, indent=1)
            atomic_write(self.path, text + "\n")
            self.on_metadata_change()

    def _with(self, acls: list[AclBinding]) -> list[AclBinding]:
        return list(dict.fromkeys([*self.acls, *acls]))

    async def create(self, acls: list[AclBinding]) -> None:
        """Add bindings (one already there is left as it is): in the store's turn, saved on a worker thread,
        then made (``StoreSaves``); ``NotStored`` if the disk refused the save (nothing changed). None new:
        nothing saved, no metadata record, as Kafka's ``AclControlManager.createAcls`` writes none for a
        binding it has."""
        async with self.saves:
            new = self._with(acls)
            if new != self.acls:
                await self.saves.save_or_refuse("ACLs", self.path, self._write, new)
                self._set(new)

    def create_in_line(self, acls: list[AclBinding]) -> None:
        """``create`` on the calling thread, for a broker not serving (its setup): nothing else changes it."""
        new = self._with(acls)
        self._write(new)
        self._set(new)

    async def delete(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches, as ``create`` saves; per filter, the bindings it removed."""
        async with self.saves:
            removed = [[acl for acl in self.acls if f.matches(acl)] for f in filters]
            gone = {acl for matched in removed for acl in matched}
            if gone:
                rest = [acl for acl in self.acls if acl not in gone]
                await self.saves.save_or_refuse("ACLs", self.path, self._write, rest)
                self._set(rest)
        return removed

    def describe(self, acl_filter: AclFilter) -> list[AclBinding]:
        return [acl for acl in self.acls if acl_filter.matches(acl)]

    def _resource_acls(self, rtype: ResourceType, name: str) -> Iterable[AclBinding]:
        yield from self._literal.get((rtype, name), ())
        if name != WILDCARD:
            yield from self._literal.get((rtype, WILDCARD), ())
        if self._prefixed:
            for end in range(len(name), 0, -1):
                yield from self._prefixed.get((rtype, name[:end]), ())

    def decide(self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str) -> str:
        """The rule that decides: ``SuperUser``, ``Deny``, ``Allow``, ``DefaultAllow`` or ``DefaultDeny``."""
        if principal in self.super_users:
            return "SuperUser"
        principals, found, allowed = (principal, WILDCARD_PRINCIPAL), False, False
        for acl in self._resource_acls(rtype, name):
            found = True
            if _applies(acl, principals, host, op):
                if acl.permission_type == PermissionType.DENY:
                    return "Deny"
                allowed = True
        if allowed:
            return "Allow"
        return "DefaultAllow" if not found and self.allow_if_no_acl else "DefaultDeny"

    def authorize(self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str,
                  request: str = "", log_denied: bool = True) -> bool:  # fmt: skip
        key = (principal, host, op, rtype, name)
        rule = self._cache.get(key)
        if rule is None:
            rule = self.decide(principal, host, op, rtype, name)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache = {}
            self._cache[key] = rule
        allowed = rule in ("SuperUser", "Allow", "DefaultAllow")
        self.metrics.record(allowed)
        if allowed:
            return True
        if log_denied:  # every denied request, as Kafka's audit log has it
            audit.info("Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s "
                       "for request = %s based on rule %s", principal, op.name, host, _camel(rtype.name),
                       name, request, rule)  # fmt: skip
        return False

    def authorize_by_type(self, principal: str, host: str, op: AclOperation, rtype: ResourceType) -> bool:
        """May ``principal`` do ``op`` to some resource of ``rtype``? (Kafka's ``authorizeByResourceType``.)"""
        if self.authorize(principal, host, op, rtype, "hardcode", log_denied=False):
            return True
        principals, wildcard_allow = (principal, WILDCARD_PRINCIPAL), False
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        for acl in self.acls:
            if acl.resource_type != rtype or not _names_client(acl, principals, host):
                continue
            if acl.operation not in (op, AclOperation.ALL):
                continue
            literal_wildcard = acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD
            if acl.permission_type == PermissionType.DENY:
                if literal_wildcard:
                    return False
                deny[acl.pattern_type].add(acl.resource_name)
            elif literal_wildcard:
                wildcard_allow = True  # allows unless a wildcard DENY comes up
            else:
                allow[acl.pattern_type].add(acl.resource_name)
        return wildcard_allow or _some_allow_undominated(allow, deny)

    def metric_samples(self):
        """The authorizer's gauges for the metrics endpoint (``authorizer_metrics.py``)."""
        return self.metrics.metric_samples(len(self.acls))

    def authorized_operations(self, principal: str, host: str, rtype: ResourceType, name: str) -> int:
        """The ``authorized_operations`` bitfield of one resource."""
        ops = SUPPORTED_OPERATIONS[rtype]
        return sum(1 << op for op in ops if self.authorize(principal, host, op, rtype, name, log_denied=False))


def _some_allow_undominated(allow: dict[PatternType, set[str]], deny: dict[PatternType, set[str]]) -> bool:
    for pattern_type, names in allow.items():
        for name in names:
            if pattern_type == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                continue
            if not any(name[:end] in deny[PatternType.PREFIXED] for end in range(1, len(name) + 1)):
                return True
    return False


def _camel(name: str) -> str:
    """A resource type as Kafka's audit log names it: TRANSACTIONAL_ID is ``TransactionalId``."""
    return "".join(part.title() for part in name.split("_"))
