"""FindCoordinator (key 10): versions 0-4; flexible from v3."""

from ..schema import Api, F, Struct, INT16, INT32, INT8, STRING

API = Api(
    10,
    'FindCoordinator',
    (0, 4),
    flexible=3,
    request=Struct(
        F('key', STRING, v='0-3'),
        F('key_type', INT8, v='1+'),
        F('coordinator_keys', [STRING], v='4+'),
    ),
    response=Struct(
        F('throttle_time_ms', INT32, v='1+'),
        F('error_code', INT16, v='0-3'),
        F('error_message', STRING, v='1-3', null='1-3'),
        F('node_id', INT32, v='0-3'),
        F('host', STRING, v='0-3'),
        F('port', INT32, v='0-3'),
        F('coordinators', [Struct(
                F('key', STRING, v='4+'),
                F('node_id', INT32, v='4+'),
                F('host', STRING, v='4+'),
                F('port', INT32, v='4+'),
                F('error_code', INT16, v='4+'),
                F('error_message', STRING, v='4+', null='4+'),
            name='Coordinator')], v='4+'),
    ),
)
