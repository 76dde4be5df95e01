"""CreatePartitions (key 37): versions 0-3; flexible from v2."""

from ..schema import Api, F, Struct, BOOL, INT16, INT32, STRING

API = Api(
    37,
    'CreatePartitions',
    (0, 3),
    flexible=2,
    request=Struct(
        F('topics', [Struct(
                F('name', STRING),
                F('count', INT32),
                F('assignments', [Struct(
                        F('broker_ids', [INT32]),
                    name='CreatePartitionsAssignment')], null='0+'),
            name='CreatePartitionsTopic')]),
        F('timeout_ms', INT32),
        F('validate_only', BOOL),
    ),
    response=Struct(
        F('throttle_time_ms', INT32),
        F('results', [Struct(
                F('name', STRING),
                F('error_code', INT16),
                F('error_message', STRING, null='0+', default=None),
            name='CreatePartitionsTopicResult')]),
    ),
)
