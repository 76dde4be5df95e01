"""OffsetFetch (key 9): versions 0-8; flexible from v6."""

from ..schema import Api, F, Struct, BOOL, INT16, INT32, INT64, STRING

API = Api(
    9,
    'OffsetFetch',
    (0, 8),
    flexible=6,
    request=Struct(
        F('group_id', STRING, v='0-7'),
        F('topics', [Struct(
                F('name', STRING, v='0-7'),
                F('partition_indexes', [INT32], v='0-7'),
            name='OffsetFetchRequestTopic')], v='0-7', null='2-7'),
        F('groups', [Struct(
                F('group_id', STRING, v='8+'),
                F('topics', [Struct(
                        F('name', STRING, v='8+'),
                        F('partition_indexes', [INT32], v='8+'),
                    name='OffsetFetchRequestTopics')], v='8+', null='8+'),
            name='OffsetFetchRequestGroup')], v='8+'),
        F('require_stable', BOOL, v='7+'),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='3+'),
        F('topics', [Struct(
                F('name', STRING, v='0-7'),
                F('partitions', [Struct(
                        F('partition_index', INT32, v='0-7'),
                        F('committed_offset', INT64, v='0-7'),
                        F('committed_leader_epoch', INT32, v='5-7', default=-1),
                        F('metadata', STRING, v='0-7', null='0-7'),
                        F('error_code', INT16, v='0-7'),
                    name='OffsetFetchResponsePartition')], v='0-7'),
            name='OffsetFetchResponseTopic')], v='0-7'),
        F('error_code', INT16, v='2-7'),
        F('groups', [Struct(
                F('group_id', STRING, v='8+'),
                F('topics', [Struct(
                        F('name', STRING, v='8+'),
                        F('partitions', [Struct(
                                F('partition_index', INT32, v='8+'),
                                F('committed_offset', INT64, v='8+'),
                                F('committed_leader_epoch', INT32, v='8+', default=-1),
                                F('metadata', STRING, v='8+', null='8+'),
                                F('error_code', INT16, v='8+'),
                            name='OffsetFetchResponsePartitions')], v='8+'),
                    name='OffsetFetchResponseTopics')], v='8+'),
                F('error_code', INT16, v='8+'),
            name='OffsetFetchResponseGroup')], v='8+'),
    ),
)
