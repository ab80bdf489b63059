"""Messages per rank and latency rounds of every reference implementation against its model.

The bytes invariant (measured wire bytes equal the volume term) has a latency twin: the
coefficient of alpha in a variant's time is the number of latency rounds its schedule takes,
and each rank's messages follow the algorithm's own rules. Each implementation's real code runs
on p simulated ranks in one process (sim_world: threads over an in-memory transport standing in
for torch.distributed), for p = 1..8 and a few larger p, and the test checks:

1. every rank sends exactly the messages the algorithm prescribes (message_cases and
   message_cases_training: an independent count per rank and role; the collectives' counts are
   also measured on real gloo ranks for p <= 8 in test_collectives_dist.py);
2. the critical path of those messages, in rounds of one alpha under the variant's port model,
   equals the variant's alpha coefficient (alpha = 1, every other rate 0); for the hierarchical
   all-reduce the intra-node and network rounds are told apart by weighting network hops;
3. single-port schedules: the busiest rank is busy (sending or receiving) in every round, so its
   messages sent plus its receive-only rounds equal the alpha coefficient: "messages per rank
   equal alpha" generalised to rounds in which a rank only receives (a tree root's reduce
   phase, the partner's fold-in round of recursive doubling).

Not covered, with reasons: the pipeline schedules (the model's alpha counts fill and drain
transfers under compute that hides the rest, which a zero-compute simulation cannot show); the
SSP parameter server, error feedback and the scheduling wrappers (no cost model of their own).
"""

from __future__ import annotations

import functools

import pytest
from message_cases import Case, collective_cases
from message_cases_training import other_cases
from sim_world import SimulationError, simulate

import costmodels

PS = [1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 16]
NETWORK_HOP = 1000  # alphas of one network hop when intra-node and network rounds are split
LATENCIES = ("alpha", "alpha_intra")


def alpha_coefficient(model: costmodels.CostModel, variant: str, latency: str, **counts) -> float:
    """The time with ``latency`` = 1 s and every other rate, latency and compute time 0.

    Sizes and widths are set to 1 and then to 7: an alpha coefficient must not depend on them.
    """
    return _alpha_coefficient(model.id, variant, latency, tuple(sorted(counts.items())))


@functools.cache
def _alpha_coefficient(model_id: str, variant: str, latency: str, items: tuple) -> float:
    model, counts = costmodels.get(model_id), dict(items)
    found = []
    for size in (1.0, 7.0):
        values = {}
        for info in model.symbols:
            if info.name in counts:
                values[info.name] = counts[info.name]
            elif info.name == latency:
                values[info.name] = 1.0
            elif "second" in info.unit:
                values[info.name] = 0.0
            else:
                values[info.name] = size
        found.append(float(model.evaluate(variant, **values)))
    assert found[0] == pytest.approx(found[1]), (model.id, variant, "alpha term depends on sizes")
    return found[0]


def all_cases(p: int) -> dict[str, Case]:
    return {**collective_cases(p), **other_cases(p)}


def cases_at(p: int) -> list[tuple[int, str]]:
    return [(p, label) for label in all_cases(p)]


@pytest.mark.parametrize(("p", "label"), [c for p in PS for c in cases_at(p)])
def test_messages_and_rounds_match_the_alpha_term(p: int, label: str) -> None:
    case: Case = all_cases(p)[label]
    processes = case.processes(p)
    sim = simulate(case.run, processes, port=case.port)
    sent = [rank.messages_sent for rank in sim.ranks]
    assert sent == [case.messages(p, r) for r in range(processes)], (label, p, "messages")
    model = costmodels.get(case.record)  # model ids equal record ids (test_invariants)
    counts = {"p": p, **case.counts(p)}
    used = {info.name for info in model.symbols}
    latencies = {lat: alpha_coefficient(model, case.variant, lat, **counts) for lat in LATENCIES}
    latencies = {lat: c * case.per_model_unit for lat, c in latencies.items() if lat in used}
    total = sum(latencies.values())
    assert sim.rounds == pytest.approx(total), (label, p, "rounds", sim.rounds, latencies)
    if case.port == "single-port":
        assert max((r.busy for r in sim.ranks), default=0) == pytest.approx(total), (label, p)
    if case.same_node is not None and p > 1:  # tell network rounds from intra-node ones
        weighted = simulate(
            case.run,
            processes,
            port=case.port,
            link_weight=lambda a, b: 1 if case.same_node(p, a, b) else NETWORK_HOP,
        )
        network, intra = divmod(weighted.rounds, NETWORK_HOP)
        assert (intra, network) == (latencies["alpha_intra"], latencies["alpha"]), (label, p)


# Implementations priced by a model but not simulated here, with the reason (module docstring).
NOT_SIMULATED = {
    "gpipe": "its transfer terms depend on compute order and are held against a "
    "discrete-event simulation of each schedule (test_llm_comm_pipeline.py)"
}


def test_every_modelled_implementation_has_a_case() -> None:
    """Every registered entry point whose record has a cost model is run above (its declared
    variant, when it declares one), or listed in NOT_SIMULATED with a reason."""
    from reference_impls.entry_points import entries
    from taxonomy import load_taxonomy

    records = load_taxonomy().records
    covered = {(c.record, c.variant) for p in (4, 6) for c in all_cases(p).values()}
    for target, entry in entries().items():
        owner = entry.record or next(r for r in records.values() if r.reference_impl == target).id
        if records[owner].cost_model is None or owner in NOT_SIMULATED:
            continue
        variants = {v for record, v in covered if record == owner}
        assert variants, f"{target}: no message case for {owner}"
        assert entry.variant is None or entry.variant in variants, (target, entry.variant)


def test_simulated_world_matches_the_rules_it_states() -> None:
    """The clock itself: single-port serialises a rank's sends; multi-port overlaps them."""
    import torch

    from reference_impls.comm.wire import irecv, isend, wait_all

    def star(rank: int, p: int) -> None:  # rank 0 sends to everyone at once
        if rank == 0:
            wait_all([isend(torch.ones(2), peer) for peer in range(1, p)])
        else:
            wait_all([irecv(torch.empty(2), 0)])

    single, multi = simulate(star, 5), simulate(star, 5, port="multi-port")
    assert single.rounds == 4 and multi.rounds == 1
    assert [r.messages_sent for r in single.ranks] == [4, 0, 0, 0, 0]
    assert single.ranks[0].busy == 4 and single.ranks[4].finish == 4

    def funnel(rank: int, p: int) -> None:  # everyone sends to rank 0 at once
        if rank == 0:
            wait_all([irecv(torch.empty(2), peer) for peer in range(1, p)])
        else:
            wait_all([isend(torch.ones(2), 0)])

    assert simulate(funnel, 4).rounds == 3  # one receive per round
    assert simulate(funnel, 4, port="multi-port").rounds == 1

    def stuck(rank: int, p: int) -> None:  # both wait first: no one ever sends
        wait_all([irecv(torch.empty(2), 1 - rank)])
        wait_all([isend(torch.ones(2), 1 - rank)])

    with pytest.raises(SimulationError):
        simulate(stuck, 2, timeout_s=5.0)
