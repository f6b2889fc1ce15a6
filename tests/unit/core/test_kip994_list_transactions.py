"""KIP-994: ListTransactions' duration filter, on a manual clock (the transactional-id
pattern of v2, KIP-1152, is read by the broker: scenario list_transactions_filters)."""

from __future__ import annotations

from kgroup.core.transactions.messages import ListTransactionsRequest

from tests.unit.core.txnctx import TxnContext


def listed(ctx: TxnContext, duration_ms: int) -> list[tuple[str, str]]:
    done = ctx.call(ctx.coord.list_transactions, ListTransactionsRequest(min_duration_ms=duration_ms))
    return [(t.transactional_id, t.state) for t in done.response]


def test_kip994_lists_only_transactions_running_longer_than_the_duration():
    ctx = TxnContext()
    ctx.now = 1_000
    pid, epoch = ctx.producer("open")
    assert ctx.add("open", pid, epoch, ("t", 0)).response.errors[0][2].name == "NONE"     # started at 1000
    ctx.now = 1_500
    assert ("open", "Ongoing") in listed(ctx, 499)
    assert ("open", "Ongoing") not in listed(ctx, 500)           # running exactly as long: not longer
    assert listed(ctx, -1) == listed(ctx, -5) and ("open", "Ongoing") in listed(ctx, -1)


def test_kip994_a_transaction_never_started_counts_as_running_since_the_epoch():
    # Kafka compares now - txnStartTimestamp with the duration, and an Empty transaction's
    # start is -1: it is listed under any duration the clock has passed.
    ctx = TxnContext()
    ctx.now = 10_000
    ctx.producer("idle")
    assert ("idle", "Empty") in listed(ctx, 9_000)
    assert ("idle", "Empty") not in listed(ctx, 10_001)
