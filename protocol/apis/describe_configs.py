"""DescribeConfigs (key 32): versions 0-4; flexible from v4."""

from ..schema import Api, F, Struct, BOOL, INT16, INT32, INT8, STRING

API = Api(
    32,
    'DescribeConfigs',
    (0, 4),
    flexible=4,
    request=Struct(
        F('resources', [Struct(
                F('resource_type', INT8),
                F('resource_name', STRING),
                F('configuration_keys', [STRING], null='0+'),
            name='DescribeConfigsResource')]),
        F('include_synonyms', BOOL, v='1+'),
        F('include_documentation', BOOL, v='3+'),
    ),
    response=Struct(
        F('throttle_time_ms', INT32),
        F('results', [Struct(
                F('error_code', INT16),
                F('error_message', STRING, null='0+'),
                F('resource_type', INT8),
                F('resource_name', STRING),
                F('configs', [Struct(
                        F('name', STRING),
                        F('value', STRING, null='0+'),
                        F('read_only', BOOL),
                        F('config_source', INT8, v='1+', default=-1),
                        F('is_default', BOOL, v='0'),
                        F('is_sensitive', BOOL),
                        F('synonyms', [Struct(
                                F('name', STRING, v='1+'),
                                F('value', STRING, v='1+', null='0+'),
                                F('source', INT8, v='1+'),
                            name='DescribeConfigsSynonym')], v='1+'),
                        F('config_type', INT8, v='3+'),
                        F('documentation', STRING, v='3+', null='0+'),
                    name='DescribeConfigsResourceResult')]),
            name='DescribeConfigsResult')]),
    ),
)
