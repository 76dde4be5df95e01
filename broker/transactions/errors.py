"""What the transaction coordinator answers: its checks of a request's producer id and epoch, and a failed
``__transaction_state`` write mapped as Kafka's ``TransactionStateManager.appendTransactionToLog`` maps it
(``txn_log_error``); ``for_version`` turns PRODUCER_FENCED into what an old request version knows."""

from __future__ import annotations

from protocol import ErrorCode

from .state import EPOCH_MAX, TxnMetadata


def valid_expected(meta: TxnMetadata, expected: tuple[int, int]) -> bool:
    """Kafka's isValidProducerId for InitProducerId's KIP-360 (producer id, epoch)."""
    producer_id, epoch = expected
    return (meta.producer_epoch == -1 or producer_id == meta.producer_id
            or (producer_id == meta.previous_producer_id and epoch >= EPOCH_MAX - 1))  # fmt: skip


def producer_error(meta: TxnMetadata | None, producer_id: int, epoch: int) -> ErrorCode | None:
    if meta is None or meta.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != epoch:
        return ErrorCode.PRODUCER_FENCED
    return None


def writer_error(meta: TxnMetadata | None, producer_id: int, epoch: int) -> ErrorCode | None:
    """``producer_error``, or CONCURRENT_TRANSACTIONS while the transaction is being ended."""
    error = producer_error(meta, producer_id, epoch)
    if error is None and meta.state.is_prepare:
        return ErrorCode.CONCURRENT_TRANSACTIONS
    return error


def for_version(error: ErrorCode, version: int, fenced_since: int) -> ErrorCode:
    """PRODUCER_FENCED as INVALID_PRODUCER_EPOCH for request versions older than ``fenced_since``, whose
    clients do not know it (Kafka's KafkaApis does the same)."""
    if error == ErrorCode.PRODUCER_FENCED and version < fenced_since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def txn_log_error(error: ErrorCode | None) -> ErrorCode | None:
    """What InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn answer when their
    ``__transaction_state`` write failed (Kafka's ``TransactionStateManager.appendTransactionToLog``): the
    partition missing or short of replicas, or a timeout, is COORDINATOR_NOT_AVAILABLE; not being its leader
    or a storage error is NOT_COORDINATOR; a record too large is UNKNOWN_SERVER_ERROR; the rest as is."""
    return _TXN_LOG_ERRORS.get(error, error)


_TXN_LOG_ERRORS = {
    **dict.fromkeys((ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                     ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT),
                    ErrorCode.COORDINATOR_NOT_AVAILABLE),
    **dict.fromkeys((ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR), ErrorCode.NOT_COORDINATOR),
    **dict.fromkeys((ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE), ErrorCode.UNKNOWN_SERVER_ERROR),
}  # fmt: skip
