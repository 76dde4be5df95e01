"""Fetch (key 1): versions 0-12; flexible from v12."""

from ..schema import Api, F, Struct, INT16, INT32, INT64, INT8, RECORDS, STRING

API = Api(
    1,
    'Fetch',
    (0, 12),
    flexible=12,
    request=Struct(
        F('cluster_id', STRING, v='12+', null='12+', tag=0, default=None),
        F('replica_id', INT32, default=-1),
        F('max_wait_ms', INT32),
        F('min_bytes', INT32),
        F('max_bytes', INT32, v='3+', default=2147483647),
        F('isolation_level', INT8, v='4+'),
        F('session_id', INT32, v='7+'),
        F('session_epoch', INT32, v='7+', default=-1),
        F('topics', [Struct(
                F('topic', STRING),
                F('partitions', [Struct(
                        F('partition', INT32),
                        F('current_leader_epoch', INT32, v='9+', default=-1),
                        F('fetch_offset', INT64),
                        F('last_fetched_epoch', INT32, v='12+', default=-1),
                        F('log_start_offset', INT64, v='5+', default=-1),
                        F('partition_max_bytes', INT32),
                    name='FetchPartition')]),
            name='FetchTopic')]),
        F('forgotten_topics_data', [Struct(
                F('topic', STRING, v='7+'),
                F('partitions', [INT32], v='7+'),
            name='ForgottenTopic')], v='7+'),
        F('rack_id', STRING, v='11+'),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='1+'),
        F('error_code', INT16, v='7+'),
        F('session_id', INT32, v='7+'),
        F('responses', [Struct(
                F('topic', STRING),
                F('partitions', [Struct(
                        F('partition_index', INT32),
                        F('error_code', INT16),
                        F('high_watermark', INT64),
                        F('last_stable_offset', INT64, v='4+', default=-1),
                        F('log_start_offset', INT64, v='5+', default=-1),
                        F('diverging_epoch', Struct(
                                F('epoch', INT32, v='12+', default=-1),
                                F('end_offset', INT64, v='12+', default=-1),
                            name='EpochEndOffset'), v='12+', tag=0),
                        F('current_leader', Struct(
                                F('leader_id', INT32, v='12+', default=-1),
                                F('leader_epoch', INT32, v='12+', default=-1),
                            name='LeaderIdAndEpoch'), v='12+', tag=1),
                        F('snapshot_id', Struct(
                                F('end_offset', INT64, default=-1),
                                F('epoch', INT32, default=-1),
                            name='SnapshotId'), v='12+', tag=2),
                        F('aborted_transactions', [Struct(
                                F('producer_id', INT64, v='4+'),
                                F('first_offset', INT64, v='4+'),
                            name='AbortedTransaction')], v='4+', null='4+'),
                        F('preferred_read_replica', INT32, v='11+', default=-1),
                        F('records', RECORDS, null='0+'),
                    name='PartitionData')]),
            name='FetchableTopicResponse')]),
    ),
)
