"""DescribeTransactions (key 65): v0, the coordinator's state of transactional ids (KIP-664).

Behaviour (Kafka's ``TransactionCoordinator.handleDescribeTransactions``):
per id, its state under Kafka's name, timeout, the start time of the open
transaction (-1 when none), producer id and epoch, and the partitions of the
transaction by topic (``__consumer_offsets`` included when offsets were
added). An unknown id is TRANSACTIONAL_ID_NOT_FOUND, the empty id
INVALID_REQUEST. What ``kafka-transactions.sh describe`` prints.

Authorization (Kafka's ``handleDescribeTransactionsRequest``), per id and
first: DESCRIBE on the TRANSACTIONAL_ID; a refused id is
TRANSACTIONAL_ID_AUTHORIZATION_FAILED with every other field at its default
(empty state, zeros). Of an id described, only the topics the principal may
DESCRIBE are listed among the transaction's partitions.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler

API_KEY = 65


@handler(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request) -> object:
    resp = ctx.response()
    State = type(resp).TransactionState
    for txn_id in request.transactional_ids:
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id):
            resp.transaction_states.append(State(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                                 transactional_id=txn_id))  # fmt: skip
            continue
        meta = ctx.broker.transactions.txns.get(txn_id)
        if meta is None:
            error = ErrorCode.INVALID_REQUEST if txn_id == "" else ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
            resp.transaction_states.append(State(error_code=error, transactional_id=txn_id, transaction_state="",
                                                 producer_id=-1, producer_epoch=-1))  # fmt: skip
            continue
        resp.transaction_states.append(State(
            error_code=ErrorCode.NONE, transactional_id=txn_id, transaction_state=meta.state.kafka_name,
            transaction_timeout_ms=meta.timeout_ms, transaction_start_time_ms=meta.start_ms,
            producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
            topics=[State.TopicData(topic=t, partitions=ps) for t, ps in meta.partitions_by_topic().items()
                    if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, t)],
        ))  # fmt: skip
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` for every transactional id asked."""
    resp = ctx.response()
    State = type(resp).TransactionState
    resp.transaction_states = [State(transactional_id=t, error_code=error) for t in request.transactional_ids]
    return resp
