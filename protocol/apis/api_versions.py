"""ApiVersions (key 18): versions 0-4; flexible from v3."""

from ..schema import Api, F, Struct, BOOL, INT16, INT32, INT64, STRING

API = Api(
    18,
    'ApiVersions',
    (0, 4),
    flexible=3,
    request=Struct(
        F('client_software_name', STRING, v='3+'),
        F('client_software_version', STRING, v='3+'),
    ),
    response=Struct(
        F('error_code', INT16),
        F('api_keys', [Struct(
                F('api_key', INT16),
                F('min_version', INT16),
                F('max_version', INT16),
            name='ApiVersion')]),
        F('throttle_time_ms', INT32, v='1+'),
        F('supported_features', [Struct(
                F('name', STRING, v='3+'),
                F('min_version', INT16, v='3+'),
                F('max_version', INT16, v='3+'),
            name='SupportedFeatureKey')], v='3+', tag=0),
        F('finalized_features_epoch', INT64, v='3+', tag=1, default=-1),
        F('finalized_features', [Struct(
                F('name', STRING, v='3+'),
                F('max_version_level', INT16, v='3+'),
                F('min_version_level', INT16, v='3+'),
            name='FinalizedFeatureKey')], v='3+', tag=2),
        F('zk_migration_ready', BOOL, v='3+', tag=3),
    ),
)
