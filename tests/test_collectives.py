"""Collective costs (collectives.collective_terms) against hand arithmetic and "How to Scale Your Model".

Times are computed by roofline.score (the only place a time is computed); the expected values are
written out by hand in the comments next to them.
"""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from llm_roofline.errors import ShardingError
from llm_roofline.hardware import list_chips, load_chip
from llm_roofline.roofline import score
from llm_roofline.collectives import COLLECTIVES, collective_terms

MIB = 2**20


def t_comm(terms) -> np.ndarray:
    """Collective time from roofline.score: hops*latency + link_bytes/link_bytes_per_s."""
    return score(0.0, 0.0, peak_flops_per_s=1.0, hbm_bytes_per_s=1.0, comm_bytes=terms.link_bytes,
                 comm_hops=terms.hops, link_bytes_per_s=terms.link_bytes_per_s,
                 link_latency_s=terms.latency_s).t_comm_s


def bandwidth_s(terms) -> np.ndarray:
    return terms.link_bytes / terms.link_bytes_per_s


# ------------------------------------------------------------------------------------ TPU v5e ICI
V5E = load_chip("tpu-v5e")  # 16x16 torus, 4.5e10 B/s per link one way, wraparound only on a full 16 axis


def test_v5e_full_axis_all_gather_and_all_reduce_with_wraparound():
    v = 2**25  # 33,554,432 B (the book's bf16[2048, 8192])
    ag = collective_terms("all_gather", v, 16, V5E)
    # bidirectional ring, W_ici = 9e10: (15/16) * 33,554,432 / 9e10 = 31,457,280 / 9e10 = 3.495253e-4 s;
    # latency 16/2 = 8 hops x 1 us = 8e-6 s  ->  3.575253e-4 s
    assert ag.hops == 8
    assert float(t_comm(ag)) == pytest.approx(3.495253e-4 + 8e-6, rel=1e-6)
    ar = collective_terms("all_reduce", v, 16, V5E)
    # all-reduce = reduce-scatter + all-gather: 2 x 3.495253e-4 = 6.990507e-4 s, 16 hops -> 7.150507e-4 s
    assert ar.hops == 16
    assert float(t_comm(ar)) == pytest.approx(6.990507e-4 + 16e-6, rel=1e-6)
    assert ag.link == ar.link == "scaleup"


def test_v5e_sub_axis_without_wraparound_matches_book_pop_quiz():
    # book Part 3 Pop Quiz 2: AllGather_Y over Y=4 on a v5e 8x4, bf16[2048, 8192]: no wraparound, so
    # "T = 3 * 8.4e6 / 4.5e10 = 560us". Ours: (3/4) * 33,554,432 / 4.5e10 = 25,165,824 / 4.5e10 = 5.592405e-4 s
    v = 2048 * 8192 * 2
    ag = collective_terms("all_gather", v, 4, V5E)
    assert float(bandwidth_s(ag)) == pytest.approx(5.592405e-4, rel=1e-6)
    assert float(bandwidth_s(ag)) == pytest.approx(560e-6, rel=0.01)
    # a line of 4 chips: 3 hops x 1 us
    assert ag.hops == 3
    assert float(t_comm(ag)) == pytest.approx(5.592405e-4 + 3e-6, rel=1e-6)
    ar = collective_terms("all_reduce", v, 4, V5E)
    # 2 x 5.592405e-4 = 1.118481e-3 s + 6 hops x 1 us
    assert float(t_comm(ar)) == pytest.approx(1.118481e-3 + 6e-6, rel=1e-6)
    # the wraparound halves the time: 4 chips without wrap is 2 x (3/4)/(15/16) = 1.6x the full-axis gather
    full = collective_terms("all_gather", v, 16, V5E)
    assert float(bandwidth_s(ag) / bandwidth_s(full)) == pytest.approx(1.6)


def test_latency_bound_small_message():
    # book Part 3 Pop Quiz 2 (b): E = F = 256 bf16 -> V = 131,072 B over the 4-chip v5e axis:
    # bytes (3/4) * 131,072 / 4.5e10 = 98,304 / 4.5e10 = 2.18e-6 s < latency 3 hops x 1 us ("roughly 3us")
    ag = collective_terms("all_gather", 256 * 256 * 2, 4, V5E)
    assert ag.hops * ag.latency_s == pytest.approx(3e-6)
    assert float(bandwidth_s(ag)) == pytest.approx(2.184533e-6, rel=1e-5)
    assert ag.hops * ag.latency_s > float(bandwidth_s(ag))
    # book Part 3 Question 3: v4 axis of 4 with wraparound, 256 B: "the full gather in only 2 hops"
    v4 = collective_terms("all_gather", 256, 4, load_chip("tpu-v4"))
    assert v4.hops == 2
    # 2 hops x 1 us + (3/4) * 256 / (2 * 4.5e10) = 192 / 9e10 = 2.13e-9 s  ->  2.002133e-6 s
    assert float(t_comm(v4)) == pytest.approx(2.002133e-6, rel=1e-6)


def test_multi_axis_bandwidth_adds():
    # v5p (wraparound always) 320 chips = 16 x 20, both wrapped: book Part 3 V / (W_ici * n_axes), here with
    # the (n-1)/n factor: (319/320) * 2**30 / (2 * 1.8e11) = 1,070,386,381 / 3.6e11 = 2.973295e-3 s
    ag = collective_terms("all_gather", 2**30, 320, load_chip("tpu-v5p"))
    assert float(bandwidth_s(ag)) == pytest.approx(2.973295e-3, rel=1e-6)
    # latency: 16/2 + 20/2 = 18 hops (book: T_min * sum |X_i| / 2)
    assert ag.hops == 18
    # v5e 64 chips = 16 (wrap) x 4 (line, not a full axis): 2 + 1 link directions
    # all-reduce 2 * (63/64) * 2**26 / (3 * 4.5e10) = 132,120,576 / 1.35e11 = 9.786709e-4 s; hops 2*(8 + 3) = 22
    ar = collective_terms("all_reduce", 2**26, 64, V5E)
    assert float(bandwidth_s(ar)) == pytest.approx(9.786709e-4, rel=1e-6)
    assert ar.hops == 22


def test_torus_all_to_all_is_a_quarter_of_all_gather():
    # book Part 3: AllToAll = AllGather / 4 on a bidirectional ring. Each of 16 chips sends S = 1 MiB;
    # the gathered array would be 16 S. Per link one way: floor(16/2)*ceil(16/2)/16/2 = 8*8/16/2 = 2 S
    # -> 2 * 1,048,576 / 4.5e10 = 4.660338e-5 s = (16 S / 9e10) / 4
    s = 1 * MIB
    a2a = collective_terms("all_to_all", s, 16, V5E)
    assert float(bandwidth_s(a2a)) == pytest.approx(4.660338e-5, rel=1e-6)
    assert float(bandwidth_s(a2a)) == pytest.approx(16 * s / 9e10 / 4, rel=1e-9)


# ------------------------------------------------------------------------------ NVSwitch, PCIe, mesh
H100 = load_chip("h100-sxm")  # NVSwitch node of 8, 450e9 B/s egress one way, 2 us per ring step


def test_h100_node_all_reduce_64mib():
    v = 64 * MIB  # 67,108,864 B
    ar = collective_terms("all_reduce", v, 8, H100)
    # the NVSwitch reduces (NVLS): V out and V in per GPU, 67,108,864 / 450e9 = 1.491308e-4 s, 2 steps x 2e-6
    # (two-shot: 2 * 7/8 * V = 117,440,512 B -> 2.609789e-4 s; one-shot: 7 V -> 1.043916e-3 s)
    assert float(ar.link_bytes) == 67_108_864
    assert ar.hops == 2 and ar.switch_reduced == 1.0
    assert float(t_comm(ar)) == pytest.approx(1.491308e-4 + 4e-6, rel=1e-6)
    ag = collective_terms("all_gather", v, 8, H100)
    # 7/8 * 67,108,864 / 450e9 = 58,720,256 / 450e9 = 1.304895e-4 s; 1 direct step x 2e-6
    assert float(t_comm(ag)) == pytest.approx(1.304895e-4 + 2e-6, rel=1e-6)
    rs = collective_terms("reduce_scatter", v, 8, H100)
    assert float(t_comm(rs)) == float(t_comm(ag))


def test_a100_switch_without_reduction_runs_two_shot():
    a100 = load_chip("a100-80gb")  # NVSwitch gen 2: no NVLink SHARP, 300e9 B/s one way, 2 us per step
    ar = collective_terms("all_reduce", 64 * MIB, 8, a100)
    # two-shot: 2 * 7/8 * 67,108,864 = 117,440,512 B / 300e9 = 3.914684e-4 s + 2 x 2e-6
    assert float(ar.link_bytes) == 117_440_512 and ar.hops == 2 and ar.switch_reduced == 0.0
    assert float(t_comm(ar)) == pytest.approx(3.914684e-4 + 4e-6, rel=1e-6)


def test_h100_8kb_all_reduce_is_one_shot_by_hand():
    # 8 KB on 8 H100s: one-shot 1 x 2 us + 7 x 8,192 = 57,344 B / 450e9 = 1.274311e-7 s -> 2.127431e-6 s;
    # two-shot 2 x 2 us + 14,336 / 450e9 = 4.031858e-6; switch 2 x 2 us + 8,192 / 450e9 = 4.018204e-6
    ar = collective_terms("all_reduce", 8192, 8, H100)
    assert float(ar.link_bytes) == 57_344 and ar.hops == 1 and ar.switch_reduced == 0.0
    assert float(t_comm(ar)) == pytest.approx(2.127431e-6, rel=1e-6)
    # one-shot -> switch where 2 us + 7 V / 450e9 = 4 us + V / 450e9: V = 2e-6 * 450e9 / 6 = 150,000 B
    grid = collective_terms("all_reduce", np.array([149_000.0, 151_000.0]), 8, H100)
    np.testing.assert_array_equal(grid.hops, [1.0, 2.0])
    np.testing.assert_array_equal(grid.link_bytes, [7 * 149_000.0, 151_000.0])
    np.testing.assert_array_equal(grid.switch_reduced, [0.0, 1.0])
    # a calibrated fit by hand: per step 2 us + 0.25 us x log2(8) = 2.75 us beyond the link's 2 us, copies at
    # half the link, 0.5 us per call: 1 x (2 + 2.75) us + 57,344 / 225e9 = 2.548622e-7 s + 0.5 us = 5.504862e-6 s
    from llm_roofline.efficiency import FamilyFit
    from llm_roofline.roofline import score_collective
    fit = FamilyFit(comm_max=0.5, comm_switch_max=0.25, comm_step_s=2e-6, comm_step_per_doubling_s=0.25e-6,
                    overhead_s=0.5e-6)
    assert float(score_collective(ar, fit.efficiency(chips=8)).t_s) == pytest.approx(5.504862e-6, rel=1e-6)
    # and 64 MiB through the switch at a quarter of the link: 2 x 4.75 us + 67,108,864 / 112.5e9 = 5.965232e-4 s
    # + 0.5 us = 6.065232e-4 s
    big = collective_terms("all_reduce", 64 * MIB, 8, H100)
    assert float(score_collective(big, fit.efficiency(chips=8)).t_s) == pytest.approx(6.065232e-4, rel=1e-6)


def test_h100_matches_book_gpu_quizzes():
    # book Part 12 Pop Quiz 1: AllGather(bf16[1024, 16384]) on 8xH100: "more precisely, 65us"
    ag = collective_terms("all_gather", 2 * 1024 * 16384, 8, H100)
    assert float(bandwidth_s(ag)) == pytest.approx(65e-6, rel=0.01)  # 7/8 * 33,554,432 / 450e9 = 65.2 us
    # book Part 12 Quiz 2 Q3: bf16[4096, 65536] -> "1.04ms"
    ag = collective_terms("all_gather", 2 * 4096 * 65536, 8, H100)
    assert float(bandwidth_s(ag)) == pytest.approx(1.04e-3, rel=0.01)  # 7/8 * 536,870,912 / 450e9 = 1.0439 ms


def test_h100_small_all_reduce_is_latency_bound():
    # decode all-reduce of one token: 1 x 8192 x 2 B = 16,384 B
    ar = collective_terms("all_reduce", 16384, 8, H100)
    # one-shot: 7 x 16,384 = 114,688 B / 450e9 = 2.548622e-7 s; latency 1 x 2 us (two-shot: 4 us + 6.37e-8 s).
    # vLLM's custom all-reduce measures 4.3-4.7 us on 8 H100s up to 16 KB (the aic-vllm tables, see
    # benchmarks/CALIBRATION.md); a 14-step ring could not go below 28 us.
    assert float(t_comm(ar)) == pytest.approx(2e-6 + 2.548622e-7, rel=1e-6)
    assert ar.hops * ar.latency_s > 7 * float(bandwidth_s(ar))  # 2 us against 0.25 us


def test_h100_all_to_all_and_p2p():
    s = 8 * MIB  # 8,388,608 B per GPU
    a2a = collective_terms("all_to_all", s, 8, H100)
    # book Part 12: B (N-1) / (W N^2) with B = 8 S: 7/8 * 8,388,608 = 7,340,032 B / 450e9 = 1.631118e-5 s;
    # 1 direct hop x 2 us
    assert float(t_comm(a2a)) == pytest.approx(1.631118e-5 + 2e-6, rel=1e-6)
    p2p = collective_terms("p2p", s, 2, H100)
    # 8,388,608 / 450e9 = 1.864135e-5 s + 1 hop
    assert float(t_comm(p2p)) == pytest.approx(1.864135e-5 + 2e-6, rel=1e-6)


def test_pcie_switch_uses_pcie_bandwidth():
    l40s = load_chip("l40s")  # PCIe Gen4 x16: 32e9 one way, 2.5 us per step
    ag = collective_terms("all_gather", 64 * MIB, 8, l40s)
    # 7/8 * 67,108,864 / 32e9 = 58,720,256 / 32e9 = 1.835008e-3 s; 7 x 2.5 us = 1.75e-5 s
    assert float(t_comm(ag)) == pytest.approx(1.835008e-3 + 1.75e-5, rel=1e-6)


def test_mi300x_full_mesh_uses_only_the_groups_links():
    mi = load_chip("mi300x")  # 7 xGMI links x 64e9 = 448e9 one way
    v = 64 * MIB
    # 8 chips: 2V/8 per peer link at 64e9 = 16,777,216 / 64e9 = 2.621440e-4 s,
    # the same as a ring at the whole egress: 2 * 7/8 * V / 448e9 = 117,440,512 / 448e9 = 2.621440e-4 s
    ar8 = collective_terms("all_reduce", v, 8, mi)
    assert float(bandwidth_s(ar8)) == pytest.approx(2.62144e-4, rel=1e-9)
    # 4 chips use 3 of the 7 links: 2V/4 at 64e9 = 33,554,432 / 64e9 = 5.24288e-4 s; 6 steps x 2.3 us
    ar4 = collective_terms("all_reduce", v, 4, mi)
    assert float(t_comm(ar4)) == pytest.approx(5.24288e-4 + 6 * 2.3e-6, rel=1e-9)
    # p2p over one peer link: 67,108,864 / 64e9 = 1.048576e-3 s
    assert float(bandwidth_s(collective_terms("p2p", v, 2, mi))) == pytest.approx(1.048576e-3, rel=1e-9)


# ------------------------------------------------------------------------------------- scale-out
def test_two_h100_nodes_are_bound_by_nvlink():
    # book Part 12 Quiz 4 Q5: over 2 nodes the node-level ring bounds, not the leaf level
    v = 64 * MIB
    ar = collective_terms("all_reduce", v, 16, H100)
    # NVLink: 2 * 7/8 * V / 450e9 = 2.609789e-4 s; IB: each GPU's V/8 over 2 nodes at 50e9:
    # 2 * 1/2 * 8,388,608 / 50e9 = 1.677722e-4 s  ->  max = NVLink. Latency: 2 direct NVLink steps x 2 us +
    # an IB ring of 2 x (2 - 1) steps x 5 us = 1.4e-5 s
    assert ar.link == "scaleup"
    assert float(t_comm(ar)) == pytest.approx(2.609789e-4 + 1.4e-5, rel=1e-6)


def test_eight_h100_nodes_are_bound_by_infiniband():
    v = 64 * MIB
    ar = collective_terms("all_reduce", v, 64, H100)
    # IB: 2 * 7/8 * (67,108,864 / 8) / 50e9 = 14,680,064 / 50e9 = 2.936013e-4 s > NVLink 2.609789e-4 s
    # (book: bytes / W_node egress with W_node = 8 x 50e9 = 400e9). Latency: 2 NVLink steps x 2 us + an IB
    # ring over 8 nodes, 2 x 7 steps x 5 us = 7.4e-5 s
    assert ar.link == "scaleout"
    assert ar.link_bytes_per_s == 50e9
    assert float(t_comm(ar)) == pytest.approx(2.936013e-4 + 7.4e-5, rel=1e-6)


def test_all_to_all_across_tpu_slices_is_dcn_bound():
    s = 1 * MIB
    a2a = collective_terms("all_to_all", s, 512, V5E)  # 2 slices of 256
    # DCN: half of each chip's buffer leaves the slice: 1/2 * 1,048,576 / 3.125e9 = 1.677722e-4 s
    # ICI: S/2 over 16x16 (2 S per link one way per axis, both axes): 2 * 2 * 524,288 / 4.5e10 = 4.66e-5 s
    assert a2a.link == "scaleout"
    assert float(bandwidth_s(a2a)) == pytest.approx(1.677722e-4, rel=1e-6)


def test_scaleout_errors():
    with pytest.raises(ShardingError, match="12"):
        collective_terms("all_reduce", 1.0, 12, H100)  # 12 GPUs are not whole 8-GPU nodes
    lonely = replace(H100, scaleout=None)
    with pytest.raises(ShardingError, match="no scale-out"):
        collective_terms("all_reduce", 1.0, 16, lonely)
    with pytest.raises(ShardingError, match="unknown collective"):
        collective_terms("broadcast", 1.0, 8, H100)
    with pytest.raises(ShardingError):
        collective_terms("all_reduce", 1.0, 0, H100)
    with pytest.raises(ShardingError, match="factor"):
        collective_terms("all_gather", 1.0, 17 * 2, V5E)  # 34 = 2 x 17 does not fit 16x16


def test_one_chip_and_arrays():
    one = collective_terms("all_reduce", [1e6, 2e6], 1, H100)
    assert float(t_comm(one).max()) == 0.0
    grid = collective_terms("all_gather", np.array([[1e3], [1e9]]), 8, H100)
    assert grid.link_bytes.shape == (2, 1)
    np.testing.assert_allclose(grid.link_bytes[:, 0], [875.0, 875e6])  # 7/8 x V
    assert "7" in grid.formula or "n-1" in grid.formula


# ------------------------------------------------------------------------------------- properties
CHIPS = list_chips()


def _group_sizes(chip):
    d = chip.scaleup.domain_size
    return st.one_of(st.integers(2, min(d, 64)), st.integers(2, 6).map(lambda m: m * d))


@st.composite
def _chip_and_n(draw):
    chip = draw(st.sampled_from(CHIPS))
    n = draw(_group_sizes(chip))
    return chip, n


def _terms_or_skip(kind, v, n, chip):
    try:
        return collective_terms(kind, v, n, chip)
    except ShardingError:
        assume(False)


@settings(max_examples=300, deadline=None)
@given(_chip_and_n(), st.sampled_from(["all_gather", "reduce_scatter", "all_reduce"]),
       st.floats(1.0, 1e10))
def test_bytes_never_below_the_ring_lower_bound(chip_n, kind, v):
    # each chip must receive (n-1)/n of V (gather, scatter; twice for all-reduce) through its egress
    chip, n = chip_n
    terms = _terms_or_skip(kind, v, n, chip)
    egress = chip.scaleup.bytes_per_s + (chip.scaleout.bytes_per_s if n > chip.scaleup.domain_size else 0.0)
    rounds = 2 if kind == "all_reduce" else 1
    least = rounds * (n - 1) / n
    if kind == "all_reduce" and chip.scaleup.switch_reduction and n <= chip.scaleup.domain_size:
        least = min(least, 1.0)  # the switch reduces: each chip still sends its V once and receives the sum once
    assert float(bandwidth_s(terms)) * egress >= least * v * (1 - 1e-9)


@settings(max_examples=300, deadline=None)
@given(_chip_and_n(), st.sampled_from(COLLECTIVES), st.floats(1.0, 1e10),
       st.floats(1.0, 16.0), st.floats(1.0, 16.0))
def test_more_bandwidth_is_never_slower(chip_n, kind, v, f_up, f_out):
    chip, n = chip_n
    if kind == "p2p":
        n = 2 if n <= chip.scaleup.domain_size else n
    before = _terms_or_skip(kind, v, n, chip)
    up = chip.scaleup
    faster = replace(chip, scaleup=replace(up, bytes_per_s=up.bytes_per_s * f_up,
                                           link_bytes_per_s=up.link_bytes_per_s and up.link_bytes_per_s * f_up),
                     scaleout=chip.scaleout and replace(chip.scaleout, bytes_per_s=chip.scaleout.bytes_per_s * f_out))
    after = collective_terms(kind, v, n, faster)
    assert float(t_comm(after)) <= float(t_comm(before)) * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([c for c in CHIPS if c.scaleup.topology == "switch"]), st.integers(2, 7),
       st.sampled_from(["all_gather", "all_reduce", "all_to_all"]), st.floats(1.0, 1e10))
def test_switch_more_chips_never_fewer_bytes(chip, n, kind, v):
    # within a switch domain the per-chip link bytes (n-1)/n V grow with n (all-reduce: each algorithm's time grows
    # with n, so the fastest one's does, though a larger n may switch to an algorithm moving fewer bytes)
    small = collective_terms(kind, v, n, chip)
    big = collective_terms(kind, v, n + 1, chip)
    if kind != "all_reduce":
        assert float(big.link_bytes) >= float(small.link_bytes)
    assert float(t_comm(big)) >= float(t_comm(small)) * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(_chip_and_n(), st.floats(1.0, 1e10))
def test_all_reduce_is_reduce_scatter_plus_all_gather(chip_n, v):
    # book Part 3: AllReduce = ReduceScatter + AllGather, 2x the bytes and 2x the hops
    chip, n = chip_n
    ag = _terms_or_skip("all_gather", v, n, chip)
    ar = collective_terms("all_reduce", v, n, chip)
    rs = collective_terms("reduce_scatter", v, n, chip)
    assert float(bandwidth_s(rs)) == float(bandwidth_s(ag))
    if chip.scaleup.nvlink_switch and n <= chip.scaleup.domain_size:
        # NVLink switch: the fastest of one-shot, two-shot (= reduce-scatter + all-gather) and the switch reduction
        assert float(t_comm(ar)) <= float(t_comm(rs)) + float(t_comm(ag)) * (1 + 1e-12)
        return
    assert float(bandwidth_s(ar)) == pytest.approx(2 * float(bandwidth_s(ag)), rel=1e-12)
    assert ar.hops * ar.latency_s == pytest.approx(2 * ag.hops * ag.latency_s, rel=1e-12)


def test_step_latency_applies_to_direct_nvlink_kernels_not_to_rings():
    # the fitted step latency is the direct kernels' (flag barrier per step); a PCIe ring's steps are NCCL's
    # pipelined ones, priced at the link's latency_s alone. One hand fit on both (CalibratedModel.for_op):
    from llm_roofline.efficiency import FAMILIES, CalibratedModel, FamilyFit
    from llm_roofline.ops import collective
    from llm_roofline.roofline import score_op

    fit = FamilyFit(comm_max=0.5, comm_step_s=2e-6, comm_step_per_doubling_s=0.25e-6, overhead_s=0.5e-6)
    op = collective("comm.all_reduce.attn", "dense", 1, kind="all_reduce", buffer_bytes=8192, chips=8)
    l40s = load_chip("l40s")  # PCIe Gen4 switch, 32e9 B/s one way, 2.5 us per ring step
    t = {c.name: float(score_op(op, c, CalibratedModel(c.name, "hand", {f: fit for f in FAMILIES}).for_op(op, c)).t_s)
         for c in (H100, l40s)}
    # H100: one-shot 1 x (2 + 2 + 0.25 x 3) us + 57,344 / 225e9 s + 0.5 us = 5.504862e-6 s
    assert t["h100-sxm"] == pytest.approx(5.504862e-6, rel=1e-6)
    # L40S: ring 14 x 2.5 us + 2 x 7/8 x 8,192 = 14,336 B / 16e9 = 8.96e-7 s + 0.5 us = 3.6396e-5 s
    assert t["l40s"] == pytest.approx(3.6396e-5, rel=1e-6)
