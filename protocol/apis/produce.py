"""Produce (key 0): versions 0-11; flexible from v9."""

from ..schema import Api, F, Struct, INT16, INT32, INT64, RECORDS, STRING

API = Api(
    0,
    'Produce',
    (0, 11),
    flexible=9,
    request=Struct(
        F('transactional_id', STRING, v='3+', null='3+', default=None),
        F('acks', INT16),
        F('timeout_ms', INT32),
        F('topic_data', [Struct(
                F('name', STRING),
                F('partition_data', [Struct(
                        F('index', INT32),
                        F('records', RECORDS, null='0+'),
                    name='PartitionProduceData')]),
            name='TopicProduceData')]),
    ),
    response=Struct(
        F('responses', [Struct(
                F('name', STRING),
                F('partition_responses', [Struct(
                        F('index', INT32),
                        F('error_code', INT16),
                        F('base_offset', INT64),
                        F('log_append_time_ms', INT64, v='2+', default=-1),
                        F('log_start_offset', INT64, v='5+', default=-1),
                        F('record_errors', [Struct(
                                F('batch_index', INT32, v='8+'),
                                F('batch_index_error_message', STRING, v='8+', null='8+', default=None),
                            name='BatchIndexAndErrorMessage')], v='8+'),
                        F('error_message', STRING, v='8+', null='8+', default=None),
                        F('current_leader', Struct(
                                F('leader_id', INT32, v='10+', default=-1),
                                F('leader_epoch', INT32, v='10+', default=-1),
                            name='LeaderIdAndEpoch'), v='10+', tag=0),
                    name='PartitionProduceResponse')]),
            name='TopicProduceResponse')]),
        F('throttle_time_ms', INT32, v='1+'),
        F('node_endpoints', [Struct(
                F('node_id', INT32, v='10+'),
                F('host', STRING, v='10+'),
                F('port', INT32, v='10+'),
                F('rack', STRING, v='10+', null='10+', default=None),
            name='NodeEndpoint')], v='10+', tag=0),
    ),
)
