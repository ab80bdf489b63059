"""The continuous-batching scheduler on cases small enough to follow by hand: every iteration
takes exactly one second (a stub cost), so the times below are iteration counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from costmodels.serving.constants import ServingConstants
from costmodels.serving.engine import EngineConfig, EngineError, KVPool
from costmodels.serving.iteration import Batch
from costmodels.serving.requests import RequestSet, make_requests
from costmodels.serving.scheduler import simulate_engine


class OneSecond:
    """An iteration cost of one second whatever it holds; it records each batch."""

    def __init__(self) -> None:
        self.engine = ServingConstants(
            kernel_gap_s=0, iteration_overhead_s=0, sequence_overhead_s=0
        )
        self.batches: list[tuple[int, int, int]] = []  # (steps, decode seqs, prefill tokens)

    def decode_parts(self, b: Batch, steps: int) -> tuple[np.ndarray, np.ndarray]:
        self.batches.append((steps, b.decode_seqs, b.prefill_tokens))
        return np.ones(steps), np.zeros(steps)

    def launched_s(self, b: Batch, busy, launches):  # noqa: ANN001, ANN201 - as IterationCost's
        return busy + launches * self.engine.kernel_gap_s

    def overhead_s(self, b: Batch) -> float:
        return 0.0

    def moe_token_layers(self, b: Batch) -> float:
        return 0.0


def pool(blocks: int, block: int = 16) -> KVPool:
    return KVPool(blocks, block, 1.0, float(blocks * block))


def two(prompt: int, output: int) -> RequestSet:
    return make_requests(2, prompt_len=prompt, output_len=output)


def test_two_requests_batched_prefill_then_decodes() -> None:
    """Both 4-token prompts fit the 8-token budget: one prefill iteration for both (their first
    tokens at t = 1), then two decode iterations of both (finish at t = 3)."""
    cost = OneSecond()
    trace = simulate_engine(two(4, 3), cost, EngineConfig(2, 8, 16), pool(100))
    assert trace.first_token_s.tolist() == [1.0, 1.0]
    assert trace.finish_s.tolist() == [3.0, 3.0]
    assert cost.batches[0] == (1, 0, 8)  # one iteration: no decodes, 8 prompt tokens
    assert trace.iterations == 3 and trace.peak_running == 2


def test_chunked_prefill_shares_the_budget_with_decodes() -> None:
    """Budget 6: A's prompt (4) and 2 tokens of B's; next iteration A decodes (1 token) beside
    the rest of B's prompt (2); A has its 3 tokens at t = 3, B (first at t = 2) at t = 4."""
    cost = OneSecond()
    trace = simulate_engine(two(4, 3), cost, EngineConfig(2, 6, 16), pool(100))
    assert trace.first_token_s.tolist() == [1.0, 2.0]
    assert trace.finish_s.tolist() == [3.0, 4.0]
    assert cost.batches[:2] == [(1, 0, 6), (1, 1, 2)]


def test_without_chunking_a_prompt_waits_for_room() -> None:
    """Budget 6 and whole prompts only: B's 4 tokens do not fit beside A's, so B starts in the
    next iteration next to A's first decode (first tokens at 1 and 2)."""
    cost = OneSecond()
    engine = EngineConfig(2, 6, 16, chunked_prefill=False)
    trace = simulate_engine(two(4, 3), cost, engine, pool(100))
    assert trace.first_token_s.tolist() == [1.0, 2.0]
    assert cost.batches[:2] == [(1, 0, 4), (1, 1, 4)]


def test_one_block_of_kv_serves_one_request_at_a_time() -> None:
    """One block of 16 tokens holds one request of 8 + 8 tokens. B waits until A is done (A:
    prefill then 7 decodes, t = 8); B's prefill runs at t = 9, it ends at t = 16. Reserved, B
    cannot reserve its block; live, B's prompt block is not free beside A's, so the same."""
    for policy in ("reserve", "live"):
        trace = simulate_engine(
            two(8, 8), OneSecond(), EngineConfig(4, 64, 16, policy=policy), pool(1)
        )
        assert trace.first_token_s.tolist() == [1.0, 9.0]
        assert trace.finish_s.tolist() == [8.0, 16.0]
        assert trace.preemptions == 0 and trace.peak_running == 1 and trace.peak_blocks == 1


def test_a_preemption_by_hand() -> None:
    """Blocks of 4 tokens, 2 of them; two requests of 3 prompt + 4 output tokens (live policy).

    t=1: both prompts (1 block each, 3 tokens), first tokens out. t=2: both decode (4th token in
    each block). t=3 needs a 5th token each: no free block, so B (newest) is preempted, A takes
    B's block and decodes; t=4 A's last token: A finishes (4 tokens) and frees 2 blocks. B is
    recomputed: prompt + its 2 tokens = 5 tokens (2 blocks) at t=5, its 3rd token; t=6 its 4th.
    """
    trace = simulate_engine(two(3, 4), OneSecond(), EngineConfig(2, 64, 4), pool(2, 4))
    assert trace.preemptions == 1
    assert trace.first_token_s.tolist() == [1.0, 1.0]  # B's first token is not re-counted
    assert trace.finish_s.tolist() == [4.0, 6.0]


def test_max_num_seqs_and_decode_windows() -> None:
    """max_num_seqs 1 runs requests one after another; a decode-only stretch is advanced in one
    window (fewer recorded batches than iterations) with the same times."""
    cost = OneSecond()
    trace = simulate_engine(two(4, 100), cost, EngineConfig(1, 64, 16), pool(100))
    assert trace.finish_s.tolist() == [100.0, 200.0]
    assert trace.first_token_s.tolist() == [1.0, 101.0]
    assert trace.iterations == 200 and len(cost.batches) < 10


def test_prefix_caching_computes_the_shared_prefix_once() -> None:
    """Four prompts of 40 tokens sharing 32 (two blocks of 16): with caching the three later
    requests compute 8 tokens each (40 + 3 x 8 = 64 prompt tokens), without it 160."""
    requests = make_requests(4, prompt_len=40, output_len=2, prefix_len=32)
    computed = {}
    for caching in (False, True):
        cost = OneSecond()
        simulate_engine(requests, cost, EngineConfig(1, 64, 16, prefix_caching=caching), pool(100))
        computed[caching] = sum(steps * tokens for steps, _, tokens in cost.batches)
    assert computed == {False: 160, True: 64}


def test_server_mode_waits_for_arrivals() -> None:
    """Arrivals at 0 and 10 s: the second request's first token comes one iteration after it
    arrives, not before."""
    requests = RequestSet(np.array([0.0, 10.0]), np.array([4, 4]), np.array([2, 2]))
    trace = simulate_engine(requests, OneSecond(), EngineConfig(2, 64, 16), pool(100))
    assert trace.first_token_s.tolist() == [1.0, 11.0]
    assert trace.finish_s.tolist() == [2.0, 12.0]


def test_a_request_larger_than_the_cache_is_an_error() -> None:
    with pytest.raises(EngineError, match="KV blocks"):
        simulate_engine(
            two(100, 100), OneSecond(), EngineConfig(2, 4096, 16, policy="reserve"), pool(2)
        )


def test_decode_windows_match_step_by_step_times() -> None:
    """The real cost model: a window of decode steps costs what the steps cost one by one."""
    from costmodels.hardware import get_gpu
    from costmodels.llm.intra_link import gpu_intra_link
    from costmodels.llm.presets import preset_shape
    from costmodels.llm.shapes import LLMCluster
    from costmodels.serving.iteration import IterationCost
    from costmodels.serving.layout import ServingLayout

    gpu = get_gpu("h100")
    cluster = LLMCluster(gpu, 8, gpu_intra_link(gpu).bandwidth_Bps, 25e9)
    cost = IterationCost(preset_shape("Llama 3.1 8B", 4096), ServingLayout(tp=1), cluster, 512)
    b = Batch(tokens=64, sampled=64, seqs=64, decode_seqs=64, decode_context=64 * 700.0)
    window = cost.decode_steps(b, 50)
    one_by_one = [
        cost.seconds(Batch(**{**b.__dict__, "decode_context": 64 * (700.0 + j)})) for j in range(50)
    ]
    assert window.sum() == pytest.approx(sum(one_by_one), rel=1e-3)
    assert math.isclose(window[0], one_by_one[0], rel_tol=1e-12)


def test_reserve_holds_what_is_cached_not_one_token_more() -> None:
    """Issue 42: a request of P prompt and O output tokens caches P + O - 1 tokens (the last
    sampled token is never fed back). Blocks of 4, two of them, requests of 4 + 5: 8 tokens
    are cached, two blocks, so each runs alone (A: prefill at t = 1, 4 decodes to t = 5; B
    from t = 6 to 10); ceil((P + O) / B) = 3 blocks would not fit at all."""
    trace = simulate_engine(
        two(4, 5), OneSecond(), EngineConfig(2, 64, 4, policy="reserve"), pool(2, 4)
    )
    assert trace.first_token_s.tolist() == [1.0, 6.0]
    assert trace.finish_s.tolist() == [5.0, 10.0]
    assert trace.peak_blocks == 2 and trace.peak_running == 1


def test_memory_concurrency_counts_whole_blocks() -> None:
    """The closed form's memory limit (costmodels.serving.capacity) in blocks: reserve P + O - 1
    tokens rounded up to blocks; live, the blocks held on average over the decodes (a 1-token
    prompt with 32 outputs holds 1 block for 16 steps and 2 for the other 16: 1.5, so 100
    blocks hold 66 sequences, where tokens / (P + O / 2) said 94)."""
    from costmodels.serving.capacity import mean_live_blocks, memory_concurrency

    live, reserve = EngineConfig(512, 4096, 16), EngineConfig(512, 4096, 16, policy="reserve")
    assert mean_live_blocks(1, 32, 16) == 1.5
    assert memory_concurrency(pool(100), live, 1, 32) == 66
    assert memory_concurrency(pool(100), reserve, 1, 32) == 50  # 32 tokens: 2 blocks
    assert memory_concurrency(pool(100), reserve, 16, 1) == 100  # 16 tokens: 1 block
    assert memory_concurrency(pool(100), reserve, 16, 2) == 50
    brute = [sum(-(-t // 16) for t in range(p, p + o)) / o for p, o in ((7, 50), (300, 129))]
    assert [mean_live_blocks(7, 50, 16), mean_live_blocks(300, 129, 16)] == pytest.approx(brute)
