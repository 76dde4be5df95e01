"""ConsumerGroupHeartbeat (key 68): we serve v0-1; flexible in every version.

The one request of KIP-848's consumer rebalance protocol: a member joins
(epoch 0), heartbeats, leaves (epoch -1, or -2 for a static member that will
come back) and learns its assignment from the answer.

Version notes:

* v0 is the first version; the coordinator makes up the member id of a
  member that joins without one.
* v1 adds ``subscribed_topic_regex`` and requires the client to make up its
  own member id (KIP-1082).

Fields marked "null if unchanged" in Kafka's schema are null (or -1) on a
heartbeat that changes nothing.
"""

from ..schema import INT16, INT32, STRING, UUID, Api, F, Struct


def _topic_partitions(name: str) -> Struct:
    return Struct(F("topic_id", UUID), F("partitions", [INT32]), name=name)


API = Api(
    68,
    "ConsumerGroupHeartbeat",
    (0, 1),
    flexible=0,
    request=Struct(
        F("group_id", STRING),
        F("member_id", STRING),
        F("member_epoch", INT32),
        F("instance_id", STRING, null="0+", default=None),
        F("rack_id", STRING, null="0+", default=None),
        F("rebalance_timeout_ms", INT32, default=-1),
        F("subscribed_topic_names", [STRING], null="0+", default=None),
        F("subscribed_topic_regex", STRING, v="1+", null="1+", default=None),
        F("server_assignor", STRING, null="0+", default=None),
        F("topic_partitions", [_topic_partitions("TopicPartitions")], null="0+", default=None),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, null="0+", default=None),
        F("member_id", STRING, null="0+", default=None),
        F("member_epoch", INT32),
        F("heartbeat_interval_ms", INT32),
        F("assignment", Struct(F("topic_partitions", [_topic_partitions("TopicPartitions")]), name="Assignment"),
          null="0+", default=None),  # fmt: skip
    ),
)
