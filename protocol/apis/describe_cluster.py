"""DescribeCluster (key 60): versions 0-1; flexible from v0."""

from ..schema import Api, F, Struct, BOOL, INT16, INT32, INT8, STRING

API = Api(
    60,
    'DescribeCluster',
    (0, 1),
    flexible=0,
    request=Struct(
        F('include_cluster_authorized_operations', BOOL),
        F('endpoint_type', INT8, v='1+', default=1),
    ),
    response=Struct(
        F('throttle_time_ms', INT32),
        F('error_code', INT16),
        F('error_message', STRING, null='0+', default=None),
        F('endpoint_type', INT8, v='1+', default=1),
        F('cluster_id', STRING),
        F('controller_id', INT32, default=-1),
        F('brokers', [Struct(
                F('broker_id', INT32),
                F('host', STRING),
                F('port', INT32),
                F('rack', STRING, null='0+', default=None),
            name='DescribeClusterBroker')]),
        F('cluster_authorized_operations', INT32, default=-2147483648),
    ),
)
