"""Critical thresholds of the seeds (section 5 of the roofline summary, Part 1 of the book) and of the
book's Parts 5, 7 and 12, with the hand arithmetic in the comments."""

import numpy as np
import pytest
from dataclasses import replace

from llm_roofline.errors import ShardingError
from llm_roofline.hardware import load_chip
from llm_roofline.sharding import (dcn_critical_batch, dp_critical_batch,
                                   tp_limit_latency, tp_limit_throughput, two_chip_matmul_compute_bound_min_d)

V5P = load_chip("tpu-v5p")  # C = 4.59e14, W_ici = 2 x 9e10 = 1.8e11, HBM 2.765e12, DCN 6.25e9
V5E = load_chip("tpu-v5e")  # C = 1.97e14, W_ici = 9e10, HBM 8.19e11
V6E = load_chip("tpu-v6e")  # C = 9.18e14, W_ici = 1.8e11, HBM 1.6e12
H100 = load_chip("h100-sxm")  # C = 989.4e12, NVLink egress 450e9 one way, IB 50e9 per GPU


def test_collective_bandwidth_is_bidirectional_link_on_tpu_egress_on_gpu():
    assert V5P.scaleup.collective_bytes_per_s == 1.8e11  # book: v5p bidi 1.8e11
    assert V5E.scaleup.collective_bytes_per_s == 9e10  # book: v5e bidi 9e10
    assert H100.scaleup.collective_bytes_per_s == 450e9  # book Part 12: GPU egress 450e9


def test_tp_limit_throughput_v5p_llama70b():
    # seeds 5.3: Y < F / 2550 on v5p; F = 28,672 -> "~11-way". Hand: 28,672 * 1.8e11 / 4.59e14 = 11.2439
    y = tp_limit_throughput(V5P, 28672)
    assert float(y) == pytest.approx(11.2439, rel=1e-4)
    assert float(y) == pytest.approx(11, rel=0.05)
    # book Part 5: n_axes * F / 2550 -> 3 axes: 33.73
    assert float(tp_limit_throughput(V5P, 28672, axes_used=3)) == pytest.approx(33.7318, rel=1e-4)


def test_tp_limit_throughput_h100():
    # book Part 12: Y < F W_collective / C ~ F / 2200 within a node; 28,672 * 450e9 / 989.4e12 = 13.04
    assert float(tp_limit_throughput(H100, 28672)) == pytest.approx(13.0407, rel=1e-4)
    assert float(tp_limit_throughput(H100, 28672)) == pytest.approx(28672 / 2200, rel=0.01)
    with pytest.raises(ShardingError):
        tp_limit_throughput(H100, 28672, axes_used=2)  # a switch has no torus axes
    with pytest.raises(ShardingError):
        tp_limit_throughput(V5P, 28672, axes_used=4)  # v5p has 3


def test_tp_limit_latency_generation():
    # book Part 7: Y < F / (B beta), beta = W_hbm / W_ici "around 8 for TPU v5e and v6e"; F = 16,384, B = 32
    # v5e: beta = 8.19e11 / 9e10 = 9.1 -> 16,384 / (32 * 9.1) = 56.26 (the book's rounded beta = 8 gives 64)
    assert float(tp_limit_latency(V5E, 16384, 32)) == pytest.approx(56.2637, rel=1e-4)
    # v6e: beta = 1.6e12 / 1.8e11 = 8.889 -> 16,384 / (32 * 8.889) = 57.6
    assert float(tp_limit_latency(V6E, 16384, 32)) == pytest.approx(57.6, rel=1e-4)
    # with the book's beta = 8 exactly (W_hbm = 8 * 9e10 = 7.2e11): 16,384 / (32 * 8) = 64
    beta8 = replace(V5E, hbm_bytes_per_s=7.2e11)
    assert float(tp_limit_latency(beta8, 16384, 32)) == pytest.approx(64.0)
    # broadcasts over batch: B = 1, 32, 256 -> 1800.4, 56.26, 7.033
    np.testing.assert_allclose(tp_limit_latency(V5E, 16384, np.array([1, 32, 256])),
                               [1800.4396, 56.2637, 7.0330], rtol=1e-4)


def test_dp_critical_batch():
    # seeds 5.2: B/X > C / W_ici / M_X; v5p 3 axes: 4.59e14 / 1.8e11 / 3 = 850 tokens per chip
    assert dp_critical_batch(V5P, axes=3) == pytest.approx(850.0, rel=1e-9)
    assert dp_critical_batch(V5P) == pytest.approx(2550.0, rel=1e-9)  # book Part 5: 2,550 on one axis
    # book Part 12: H100 within a node, 990e12 / 450e9 = 2200 (catalog 989.4e12 -> 2198.7)
    assert dp_critical_batch(H100) == pytest.approx(2200, rel=0.01)
    with pytest.raises(ShardingError):
        dp_critical_batch(H100, axes=3)


def test_dcn_critical_batch():
    # seeds 5.4: C / W_dcn = 4.59e14 / 6.25e9 = 73,440 tokens per slice
    assert dcn_critical_batch(V5P) == pytest.approx(73440.0, rel=1e-9)
    # H100: 989.4e12 / 50e9 = 19,788 tokens per 8-GPU node = 2,473.5 per GPU (book Part 12: "BS > 2475")
    assert dcn_critical_batch(H100) / 8 == pytest.approx(2475, rel=0.01)
    with pytest.raises(ShardingError):
        dcn_critical_batch(replace(H100, scaleout=None))


def test_two_chip_matmul_network_roofline():
    # seeds Part 1 "network communication rooflines": D/2 > 1.97e14 / 4.5e10 = 4,377.8 -> D > 8,755.6
    d = two_chip_matmul_compute_bound_min_d(1.97e14, 4.5e10)
    assert float(d) == pytest.approx(8755.56, rel=1e-5)
    assert float(d) == pytest.approx(8755, rel=0.02)
    # H100 pair over NVLink: 2 * 989.4e12 / 450e9 = 4,397.3
    assert float(two_chip_matmul_compute_bound_min_d(H100.peak_flops_per_s("bf16"), 450e9)) == pytest.approx(4397.33,
                                                                                                            rel=1e-5)
