"""Metadata (key 3): versions 0-12; flexible from v9."""

from ..schema import Api, F, Struct, BOOL, INT16, INT32, STRING, UUID

API = Api(
    3,
    'Metadata',
    (0, 12),
    flexible=9,
    request=Struct(
        F('topics', [Struct(
                F('topic_id', UUID, v='10+'),
                F('name', STRING, null='10+'),
            name='MetadataRequestTopic')], null='1+'),
        F('allow_auto_topic_creation', BOOL, v='4+', default=True),
        F('include_cluster_authorized_operations', BOOL, v='8-10'),
        F('include_topic_authorized_operations', BOOL, v='8+'),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='3+'),
        F('brokers', [Struct(
                F('node_id', INT32),
                F('host', STRING),
                F('port', INT32),
                F('rack', STRING, v='1+', null='1+', default=None),
            name='MetadataResponseBroker')]),
        F('cluster_id', STRING, v='2+', null='2+', default=None),
        F('controller_id', INT32, v='1+', default=-1),
        F('topics', [Struct(
                F('error_code', INT16),
                F('name', STRING, null='12+'),
                F('topic_id', UUID, v='10+'),
                F('is_internal', BOOL, v='1+'),
                F('partitions', [Struct(
                        F('error_code', INT16),
                        F('partition_index', INT32),
                        F('leader_id', INT32),
                        F('leader_epoch', INT32, v='7+', default=-1),
                        F('replica_nodes', [INT32]),
                        F('isr_nodes', [INT32]),
                        F('offline_replicas', [INT32], v='5+'),
                    name='MetadataResponsePartition')]),
                F('topic_authorized_operations', INT32, v='8+', default=-2147483648),
            name='MetadataResponseTopic')]),
        F('cluster_authorized_operations', INT32, v='8-10', default=-2147483648),
    ),
)
