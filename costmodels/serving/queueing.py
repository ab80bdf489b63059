"""Closed forms of single-server queues that the request simulator must reproduce.

With one sequence at a time (``max_num_seqs`` 1) and one-token outputs, an engine is a single
server whose service time is one prefill iteration, deterministic for equal prompts: Poisson
arrivals make it an M/D/1 queue. Pollaczek-Khinchine (M/G/1) mean waiting time in the queue::

    W_q = lambda E[S^2] / (2 (1 - rho)),   rho = lambda E[S]

which for a deterministic service time D is ``rho D / (2 (1 - rho))`` (Kleinrock, *Queueing
Systems* Vol. 1, 1975, Sec. 5.6; e.g. Gross and Harris, *Fundamentals of Queueing Theory*).
A request's time to first token is then W_q + D.
"""

from __future__ import annotations


def mg1_mean_wait(rate: float, mean_service: float, second_moment: float) -> float:
    """Mean time in queue of an M/G/1 queue (Pollaczek-Khinchine); infinite at rho >= 1."""
    rho = rate * mean_service
    if rho >= 1:
        return float("inf")
    return rate * second_moment / (2 * (1 - rho))


def md1_mean_wait(rate: float, service: float) -> float:
    """Mean time in queue of an M/D/1 queue: rho D / (2 (1 - rho))."""
    return mg1_mean_wait(rate, service, service * service)
