"""DeleteRecords (key 21): versions 0-2; flexible from v2."""

from ..schema import Api, F, Struct, INT16, INT32, INT64, STRING

API = Api(
    21,
    'DeleteRecords',
    (0, 2),
    flexible=2,
    request=Struct(
        F('topics', [Struct(
                F('name', STRING),
                F('partitions', [Struct(
                        F('partition_index', INT32),
                        F('offset', INT64),
                    name='DeleteRecordsPartition')]),
            name='DeleteRecordsTopic')]),
        F('timeout_ms', INT32),
    ),
    response=Struct(
        F('throttle_time_ms', INT32),
        F('topics', [Struct(
                F('name', STRING),
                F('partitions', [Struct(
                        F('partition_index', INT32),
                        F('low_watermark', INT64),
                        F('error_code', INT16),
                    name='DeleteRecordsPartitionResult')]),
            name='DeleteRecordsTopicResult')]),
    ),
)
