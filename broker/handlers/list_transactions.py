"""ListTransactions (key 66): v0-2, the transactional ids this coordinator knows (KIP-664, KIP-994, KIP-1152).

Behaviour (Kafka's ``TransactionStateManager.listTransactionStates``): every
id with its producer id and state name, kept when it passes every filter
given: ``state_filters`` (Kafka's state names; a name that is none of them is
echoed in ``unknown_state_filters``), ``producer_id_filters``, (v1)
``duration_filter``: only transactions started more than that many ms ago,
and (v2) ``transactional_id_pattern``: a Java regular expression the whole
id must match (``Pattern.matcher(id).matches()``; null or empty means no
filter). A pattern Java cannot compile makes the whole answer
INVALID_REGULAR_EXPRESSION with nothing listed, as Kafka's error response.
The pattern is evaluated with Python's ``re`` through ``broker.java_regex``,
which also refuses (INVALID_REGULAR_EXPRESSION) the Java constructs whose
meaning ``re`` does not share, where Kafka would list the matching ids.
What ``kafka-transactions.sh list`` and ``find-hanging`` read.

Authorization (Kafka's ``handleListTransactionsRequest``): only the ids the
principal may DESCRIBE (TRANSACTIONAL_ID) are listed; the others are left
out without an error.
"""

from __future__ import annotations

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext, error_answer, handler
from ..java_regex import JavaRegexError, compile_java
from ..transactions.state import TxnState
from ._error_answers import top_level

API_KEY = 66


@handler(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request) -> object:
    pattern = request.transactional_id_pattern if ctx.version >= 2 else None
    try:
        id_filter = compile_java(pattern) if pattern else None
    except JavaRegexError:
        return ctx.response(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION)
    resp = ctx.response(error_code=ErrorCode.NONE)
    states = {TxnState.by_kafka_name(n) for n in request.state_filters} - {None}
    resp.unknown_state_filters = [n for n in request.state_filters if TxnState.by_kafka_name(n) is None]
    pids = set(request.producer_id_filters)
    duration = request.duration_filter if ctx.version >= 1 else -1
    now = ctx.broker.clock()
    for txn_id, meta in sorted(ctx.broker.transactions.txns.items()):
        if (request.state_filters and meta.state not in states) or (pids and meta.producer_id not in pids):
            continue
        if duration >= 0 and now - meta.start_ms <= duration:
            continue
        if id_filter is not None and id_filter.fullmatch(txn_id) is None:
            continue
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id):
            continue
        resp.transaction_states.append(type(resp).TransactionState(
            transactional_id=txn_id, producer_id=meta.producer_id, transaction_state=meta.state.kafka_name))
    return resp

error_answer(API_KEY)(top_level)  # Kafka's getErrorResponse: ``error`` at the top alone
