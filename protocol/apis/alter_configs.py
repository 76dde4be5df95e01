"""AlterConfigs (key 33): versions 0-2; flexible from v2."""

from ..schema import Api, F, Struct, BOOL, INT16, INT32, INT8, STRING

API = Api(
    33,
    'AlterConfigs',
    (0, 2),
    flexible=2,
    request=Struct(
        F('resources', [Struct(
                F('resource_type', INT8),
                F('resource_name', STRING),
                F('configs', [Struct(
                        F('name', STRING),
                        F('value', STRING, null='0+'),
                    name='AlterableConfig')]),
            name='AlterConfigsResource')]),
        F('validate_only', BOOL),
    ),
    response=Struct(
        F('throttle_time_ms', INT32),
        F('responses', [Struct(
                F('error_code', INT16),
                F('error_message', STRING, null='0+'),
                F('resource_type', INT8),
                F('resource_name', STRING),
            name='AlterConfigsResourceResponse')]),
    ),
)
