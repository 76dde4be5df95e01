"""SaslHandshake (key 17): we serve v0-1; never flexible.

The client names its SASL ``mechanism``; the answer lists the enabled
``mechanisms`` (UNSUPPORTED_SASL_MECHANISM if the named one is not among
them).

Version notes:

* v0: the SASL tokens that follow are raw, size-prefixed frames outside the
  Kafka protocol.
* v1 has the v0 layout; the tokens then travel in SaslAuthenticate requests
  (KIP-152).

Kafka cannot add a v2 (KAFKA-9577: clients up to 2.4 negotiate it wrongly),
so this API stays non-flexible.
"""

from ..schema import INT16, STRING, Api, F, Struct

API = Api(
    17,
    "SaslHandshake",
    (0, 1),
    flexible=None,
    request=Struct(
        F("mechanism", STRING),
    ),
    response=Struct(
        F("error_code", INT16),
        F("mechanisms", [STRING]),
    ),
)
