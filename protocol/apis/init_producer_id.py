"""InitProducerId (key 22): versions 0-4; flexible from v2."""

from ..schema import Api, F, Struct, INT16, INT32, INT64, STRING

API = Api(
    22,
    'InitProducerId',
    (0, 4),
    flexible=2,
    request=Struct(
        F('transactional_id', STRING, null='0+'),
        F('transaction_timeout_ms', INT32),
        F('producer_id', INT64, v='3+', default=-1),
        F('producer_epoch', INT16, v='3+', default=-1),
    ),
    response=Struct(
        F('throttle_time_ms', INT32),
        F('error_code', INT16),
        F('producer_id', INT64, default=-1),
        F('producer_epoch', INT16),
    ),
)
