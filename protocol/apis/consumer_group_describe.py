"""ConsumerGroupDescribe (key 69): we serve v0-1; flexible in every version.

Describes KIP-848 consumer groups: epochs, the assignor, and each member
with its subscription, current assignment and target assignment.

Version notes:

* v0 is the first version.
* v1 (KIP-1099) adds each member's ``member_type``: 0 for a member of the
  classic protocol, 1 for one of the consumer protocol, -1 unknown.
"""

from ..schema import BOOL, INT8, INT16, INT32, STRING, UUID, Api, F, Struct


def _assignment(name: str) -> Struct:
    return Struct(
        F("topic_partitions", [Struct(
            F("topic_id", UUID),
            F("topic_name", STRING),
            F("partitions", [INT32]),
            name="TopicPartitions",
        )]),
        name=name,
    )  # fmt: skip


API = Api(
    69,
    "ConsumerGroupDescribe",
    (0, 1),
    flexible=0,
    request=Struct(
        F("group_ids", [STRING]),
        F("include_authorized_operations", BOOL),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("groups", [Struct(
            F("error_code", INT16),
            F("error_message", STRING, null="0+", default=None),
            F("group_id", STRING),
            F("group_state", STRING),
            F("group_epoch", INT32),
            F("assignment_epoch", INT32),
            F("assignor_name", STRING),
            F("members", [Struct(
                F("member_id", STRING),
                F("instance_id", STRING, null="0+", default=None),
                F("rack_id", STRING, null="0+", default=None),
                F("member_epoch", INT32),
                F("client_id", STRING),
                F("client_host", STRING),
                F("subscribed_topic_names", [STRING]),
                F("subscribed_topic_regex", STRING, null="0+", default=None),
                F("assignment", _assignment("Assignment")),
                F("target_assignment", _assignment("Assignment")),
                F("member_type", INT8, v="1+", default=-1),
                name="Member",
            )]),
            F("authorized_operations", INT32, default=-(2**31)),
            name="DescribedGroup",
        )]),
    ),
)
