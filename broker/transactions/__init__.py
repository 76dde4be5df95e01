"""Kafka transactions (KIP-98) on one broker: the coordinator, its state records and the markers it writes."""

from .coordinator import TXN_TOPIC, TransactionCoordinator
from .errors import for_version

__all__ = ["TXN_TOPIC", "TransactionCoordinator", "for_version"]
