"""SaslHandshake (key 17): versions 0-1; flexible from never."""

from ..schema import Api, F, Struct, INT16, STRING

API = Api(
    17,
    'SaslHandshake',
    (0, 1),
    flexible=None,
    request=Struct(
        F('mechanism', STRING),
    ),
    response=Struct(
        F('error_code', INT16),
        F('mechanisms', [STRING]),
    ),
)
