"""One module per Kafka API; each registers itself with ``broker.dispatch.handler``."""
