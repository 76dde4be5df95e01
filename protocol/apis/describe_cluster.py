"""DescribeCluster (key 60): we serve v0-2; flexible from v0 (always).

Describes the cluster: its id, controller, brokers and, on request, the
cluster's authorized operations (KIP-700, which moved them out of Metadata).

Version notes:

* v1 (KIP-919) adds ``endpoint_type`` in both directions: 1 asks for the
  brokers, 2 for the controllers; a broker answers other values with
  UNSUPPORTED_ENDPOINT_TYPE or MISMATCHED_ENDPOINT_TYPE.
* v2 (KIP-1073) adds ``include_fenced_brokers`` to the request and each
  broker's ``is_fenced`` to the answer: fenced brokers are listed only when
  asked for.

``cluster_authorized_operations`` is -2147483648 when not computed.
"""

from ..schema import BOOL, INT8, INT16, INT32, STRING, Api, F, Struct

API = Api(
    60,
    "DescribeCluster",
    (0, 2),
    flexible=0,
    request=Struct(
        F("include_cluster_authorized_operations", BOOL),
        F("endpoint_type", INT8, v="1+", default=1),
        F("include_fenced_brokers", BOOL, v="2+"),
    ),
    response=Struct(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, null="0+", default=None),
        F("endpoint_type", INT8, v="1+", default=1),
        F("cluster_id", STRING),
        F("controller_id", INT32, default=-1),
        F("brokers", [Struct(
            F("broker_id", INT32),
            F("host", STRING),
            F("port", INT32),
            F("rack", STRING, null="0+", default=None),
            F("is_fenced", BOOL, v="2+"),
            name="DescribeClusterBroker",
        )]),
        F("cluster_authorized_operations", INT32, default=-2147483648),
    ),
)
