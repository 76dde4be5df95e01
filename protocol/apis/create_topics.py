"""CreateTopics (key 19): versions 0-7; flexible from v5."""

from ..schema import Api, F, Struct, BOOL, INT16, INT32, INT8, STRING, UUID

API = Api(
    19,
    'CreateTopics',
    (0, 7),
    flexible=5,
    request=Struct(
        F('topics', [Struct(
                F('name', STRING),
                F('num_partitions', INT32),
                F('replication_factor', INT16),
                F('assignments', [Struct(
                        F('partition_index', INT32),
                        F('broker_ids', [INT32]),
                    name='CreatableReplicaAssignment')]),
                F('configs', [Struct(
                        F('name', STRING),
                        F('value', STRING, null='0+'),
                    name='CreatableTopicConfig')]),
            name='CreatableTopic')]),
        F('timeout_ms', INT32, default=60000),
        F('validate_only', BOOL, v='1+'),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='2+'),
        F('topics', [Struct(
                F('name', STRING),
                F('topic_id', UUID, v='7+'),
                F('error_code', INT16),
                F('error_message', STRING, v='1+', null='0+'),
                F('topic_config_error_code', INT16, v='5+', tag=0),
                F('num_partitions', INT32, v='5+', default=-1),
                F('replication_factor', INT16, v='5+', default=-1),
                F('configs', [Struct(
                        F('name', STRING, v='5+'),
                        F('value', STRING, v='5+', null='5+'),
                        F('read_only', BOOL, v='5+'),
                        F('config_source', INT8, v='5+', default=-1),
                        F('is_sensitive', BOOL, v='5+'),
                    name='CreatableTopicConfigs')], v='5+', null='5+'),
            name='CreatableTopicResult')]),
    ),
)
