"""Controller mutation quotas (KIP-599): ``controller_mutation_rate``, partitions created or deleted per second.

Kafka's controller charges every topic a CreateTopics, CreatePartitions or
DeleteTopics request would create, grow or delete the partitions it adds or
removes, against a token bucket per quota entity (found with the same eight
levels as the other client quotas, ``quotas.ClientQuotas.quota``): it holds
at most ``quota * controller.quota.window.num *
controller.quota.window.size.seconds`` tokens (Kafka's own windows for this
quota, apart from ``quota.window.*``), and refills at ``quota`` tokens a
second. The charge is made once a topic has passed its own checks (so a
refused topic costs nothing; validate-only requests are charged, as Kafka's
controller charges them).

Two modes, by request version (Kafka's ``newQuotaFor``): from CreateTopics
v6, CreatePartitions v3 and DeleteTopics v5 a client knows the error, so the
quota is *strict*: a topic that finds the bucket below zero is refused with
THROTTLING_QUOTA_EXCEEDED ("The throttling quota has been exceeded.") and
left as it is, while one that finds it at zero or above goes through even if
it takes the bucket below (one big topic is never refused outright). Older
versions are *permissive*: everything goes through and is charged. Either way
a bucket below zero makes the answer's ``throttle_time_ms`` the time the
bucket needs to come back to zero, ``-tokens / quota`` seconds, less the time
since then, and mutes the connection as other throttles do.

A bucket back at its burst is dropped with the idle measures
(``sampled_stat.prune_idle``; a new one starts full, so nothing changes),
as Kafka's expires with the client's idle quota sensor: client ids that
come and go leave none behind.

Metrics are Kafka's ``type=ControllerMutation,user=,client-id=``:
``mutation-rate`` (the partitions charged, on the quotas' ``Rate``),
``throttle-time`` and ``tokens`` (``ClientQuotas.metric_samples``).
"""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from .quotas import request_identity, throttle

KEY = "controller_mutation_rate"
THROTTLED = (ErrorCode.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded.")
STRICT_SINCE = {19: 6, 20: 5, 37: 3}  # CreateTopics, DeleteTopics, CreatePartitions


class TokenBucket:
    """Kafka's TokenBucket stat: starts full; refilled at the quota's rate up to its burst."""

    def __init__(self) -> None:
        self.tokens: float | None = None
        self.updated_ms = 0.0
        self.quota = self.burst = 0.0  # those it was last refilled with

    def tokens_at(self, quota: float, burst: float, now_ms: float) -> float:
        elapsed = max(now_ms - self.updated_ms, 0.0)
        self.tokens = burst if self.tokens is None else min(burst, self.tokens + quota * elapsed / 1000)
        self.updated_ms, self.quota, self.burst = now_ms, quota, burst
        return self.tokens

    def idle(self, now_ms: float) -> bool:
        """Back at its burst by ``now_ms``: the same as a new bucket, so ``prune_idle`` may drop it."""
        if self.tokens is None:
            return True
        return self.tokens + self.quota * max(now_ms - self.updated_ms, 0.0) / 1000 >= self.burst

    def take(self, permits: float, quota: float, burst: float, now_ms: float) -> float:
        self.tokens = min(burst, self.tokens_at(quota, burst, now_ms) - permits)
        return self.tokens


class MutationQuota:
    """One request's charges: ``charge`` per topic, then ``answer`` once the response is built."""

    def __init__(self, ctx: Any) -> None:
        self.ctx, quotas = ctx, ctx.broker.quotas
        self.identity = request_identity(ctx)
        self.quota, self.tags = quotas.quota(KEY, *self.identity) if KEY in quotas.keys else (None, ("", ""))
        self.strict = ctx.version >= STRICT_SINCE[ctx.request.header.api_key]
        windows = ctx.broker.config.controller_quota_window_num * ctx.broker.config.controller_quota_window_size_seconds
        self.burst = (self.quota or 0.0) * windows
        self.throttle_ms, self.throttled_at = 0, 0.0

    def charge(self, partitions: int) -> bool:
        """Charge ``partitions`` mutations; False when a strict quota refuses them (nothing is charged)."""
        if not self.quota:
            return True
        # looked up at each charge: a full bucket may be pruned while the request waits between its topics
        bucket = self.ctx.broker.quotas.buckets.setdefault((KEY, *self.tags), TokenBucket())
        now = self.ctx.broker.clock()
        if self.strict and self._below_zero(bucket.tokens_at(self.quota, self.burst, now), now):
            return False
        self._below_zero(bucket.take(partitions, self.quota, self.burst, now), now)
        self.ctx.broker.quotas.record(KEY, *self.identity, partitions, now, check=False)
        return True

    def _below_zero(self, tokens: float, now: float) -> bool:
        if tokens >= 0:
            return False
        self.throttle_ms, self.throttled_at = round(-tokens / self.quota * 1000), now
        return True

    def answer(self, resp: Any) -> None:
        """The throttle left, on the answer's ``throttle_time_ms`` and the connection."""
        left = max(0, self.throttle_ms - round(self.ctx.broker.clock() - self.throttled_at))
        if left > 0:
            self.ctx.broker.quotas.record_throttle(KEY, self.tags, left, self.ctx.broker.clock())
            resp.throttle_time_ms = max(resp.throttle_time_ms or 0, left)
            throttle(self.ctx, left)
