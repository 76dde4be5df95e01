"""ListOffsets (key 2): versions 0-8; flexible from v6."""

from ..schema import Api, F, Struct, INT16, INT32, INT64, INT8, STRING

API = Api(
    2,
    'ListOffsets',
    (0, 8),
    flexible=6,
    request=Struct(
        F('replica_id', INT32),
        F('isolation_level', INT8, v='2+'),
        F('topics', [Struct(
                F('name', STRING),
                F('partitions', [Struct(
                        F('partition_index', INT32),
                        F('current_leader_epoch', INT32, v='4+', default=-1),
                        F('timestamp', INT64),
                        F('max_num_offsets', INT32, v='0', default=1),
                    name='ListOffsetsPartition')]),
            name='ListOffsetsTopic')]),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='2+'),
        F('topics', [Struct(
                F('name', STRING),
                F('partitions', [Struct(
                        F('partition_index', INT32),
                        F('error_code', INT16),
                        F('old_style_offsets', [INT64], v='0'),
                        F('timestamp', INT64, v='1+', default=-1),
                        F('offset', INT64, v='1+', default=-1),
                        F('leader_epoch', INT32, v='4+', default=-1),
                    name='ListOffsetsPartitionResponse')]),
            name='ListOffsetsTopicResponse')]),
    ),
)
