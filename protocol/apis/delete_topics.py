"""DeleteTopics (key 20): versions 0-6; flexible from v4."""

from ..schema import Api, F, Struct, INT16, INT32, STRING, UUID

API = Api(
    20,
    'DeleteTopics',
    (0, 6),
    flexible=4,
    request=Struct(
        F('topics', [Struct(
                F('name', STRING, v='6+', null='6+', default=None),
                F('topic_id', UUID, v='6+'),
            name='DeleteTopicState')], v='6+'),
        F('topic_names', [STRING], v='0-5'),
        F('timeout_ms', INT32),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='1+'),
        F('responses', [Struct(
                F('name', STRING, null='6+'),
                F('topic_id', UUID, v='6+'),
                F('error_code', INT16),
                F('error_message', STRING, v='5+', null='5+', default=None),
            name='DeletableTopicResult')]),
    ),
)
