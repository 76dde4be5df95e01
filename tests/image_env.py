"""Environments from the apache/kafka image's docker examples, shared by the ``--kafka-env`` unit and e2e tests."""

SSL_EXAMPLE = {  # the SSL variables of the image's single-node SSL example
    "KAFKA_ADVERTISED_LISTENERS": "SSL://localhost:9093,SSL-INTERNAL://broker:19093",
    "KAFKA_SSL_KEYSTORE_FILENAME": "kafka01.keystore.jks",
    "KAFKA_SSL_KEYSTORE_CREDENTIALS": "kafka_keystore_creds",
    "KAFKA_SSL_KEY_CREDENTIALS": "kafka_ssl_key_creds",
    "KAFKA_SSL_TRUSTSTORE_FILENAME": "kafka.truststore.jks",
    "KAFKA_SSL_TRUSTSTORE_CREDENTIALS": "kafka_truststore_creds",
    "KAFKA_SSL_CLIENT_AUTH": "required",
    "KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM": "",
}  # fmt: skip
