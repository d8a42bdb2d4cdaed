"""Chip catalog against the seeds' hardware tables and datasheets; chip-file validation."""

import pytest

import llm_roofline as lr
from llm_roofline.cli import main


@pytest.mark.parametrize("name,expected", [
    ("tpu-v5e", 240),   # seeds: 1.97e14 / 8.2e11
    ("tpu-v5p", 164),   # seeds: 4.59e14 / 2.8e12
    ("tpu-v6e", 575),   # seeds: 9.2e14 / 1.6e12
    ("h100-sxm", 298),  # seeds: ~1e15 (dense, sparsity removed) / 3.35e12
    ("a100", 153),      # seeds: 312e12 / 2.039e12
])
def test_critical_intensity_matches_seeds(name, expected):
    assert lr.load_chip(name).critical_intensity("bf16") == pytest.approx(expected, rel=0.02)


def test_v100_fp16_critical_intensity():
    # seeds: 125e12 FP16 tensor / 900e9 = 138; Volta has no bf16
    assert lr.load_chip("v100").critical_intensity("fp16") == pytest.approx(138, rel=0.02)


@pytest.mark.parametrize("name,expected", [("tpu-v5e", 2200), ("tpu-v5p", 2550), ("tpu-v6e", 5100)])
def test_ici_critical_intensity_matches_seeds(name, expected):
    # seeds section 5.1: bf16 FLOP/s over the bidirectional ICI bandwidth (9e10, 1.8e11, 1.8e11)
    assert lr.load_chip(name).scaleup_critical_intensity() == pytest.approx(expected, rel=0.02)


def test_dcn_critical_intensity_v5p():
    # seeds 5.4: 4.59e14 / 6.25e9 = 73,440
    assert lr.load_chip("v5p").scaleout_critical_intensity() == pytest.approx(73440, rel=0.01)


# Datasheet figures "with sparsity" (2:4 structured) — these must never be the catalog's dense peaks.
SPARSE_BF16 = {
    "h100-sxm": 1979e12,   # NVIDIA H100 datasheet, SXM: "BF16 Tensor Core 1,979 teraFLOPS*"
    "h100-pcie": 1513e12,  # same datasheet, PCIe: 1,513 TFLOPS*
    "h200": 1979e12,       # NVIDIA H200 datasheet: 1,979 TFLOPS*
    "a100": 624e12,        # NVIDIA A100 datasheet: "BF16 Tensor Core 312 | 624 TF*"
    "a100-40gb": 624e12,
    "b200": 4.5e15,        # NVIDIA HGX B200 datasheet: FP16/BF16 4.5 PFLOPS*
    "l40s": 733e12,        # NVIDIA L40S datasheet: BF16 733 TFLOPS*
    "mi300x": 2614.9e12,   # AMD MI300X datasheet: BF16 with structured sparsity 2,614.9 TFLOPS
}


@pytest.mark.parametrize("name,sparse", SPARSE_BF16.items())
def test_peaks_are_dense(name, sparse):
    dense = lr.load_chip(name).dense_flops_per_s["bf16"]
    assert dense != pytest.approx(sparse, rel=0.01)
    assert dense == pytest.approx(sparse / 2, rel=0.02)  # L40S sheet: 362.05 dense vs 733 sparse (1.2%)


def test_h100_dense_bf16_is_989_tflops():
    assert lr.load_chip("h100").dense_flops_per_s["bf16"] == pytest.approx(989.4e12, rel=1e-3)


def test_aliases_and_required_chips():
    names = {c.name for c in lr.list_chips()}
    for required in ("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "v100-sxm", "a100-40gb", "a100-80gb", "h100-sxm",
                     "h100-pcie", "h200", "b200", "l40s", "rtx-4090", "mi300x"):
        assert required in names
    assert lr.load_chip("H100").name == "h100-sxm"
    assert lr.load_chip("a100").name == "a100-80gb"
    assert lr.load_chip("v5e").name == "tpu-v5e"
    with pytest.raises(lr.ChipError, match="Did you mean"):
        lr.load_chip("h1000")


GOOD = """
name = "mychip"
[compute]
bf16 = 1e15
[memory]
hbm_bytes = 80e9
hbm_bytes_per_s = 3e12
[scaleup]
kind = "nvlink4"
topology = "switch"
bytes_per_s = 450e9
latency_s = 2e-6
domain_size = 8
"""


def test_user_chip_file_loads(tmp_path):
    p = tmp_path / "my_chip.toml"
    p.write_text(GOOD)
    chip = lr.load_chip(str(p))
    assert chip.critical_intensity() == pytest.approx(1e15 / 3e12)


@pytest.mark.parametrize("mutation,message", [
    (lambda t: t.replace("hbm_bytes_per_s = 3e12\n", ""), "hbm_bytes_per_s"),
    (lambda t: t.replace("hbm_bytes_per_s = 3e12", "hbm_bytes_per_s = -3e12"), "hbm_bytes_per_s must be positive"),
    (lambda t: t.replace("bf16 = 1e15", "bf16 = 1e15\nfp7 = 1e15"), "unknown dtype"),
    (lambda t: t.replace("topology = \"switch\"", "topology = \"ring-ish\""), "topology"),
    (lambda t: t.replace("[memory]", "[memoryx]"), r"\[memory\]"),
])
def test_bad_chip_file_names_the_field(tmp_path, mutation, message):
    p = tmp_path / "bad.toml"
    p.write_text(mutation(GOOD))
    with pytest.raises(lr.ChipError, match=message):
        lr.load_chip(str(p))


def test_cli_chips_formats_and_errors(capsys, tmp_path):
    import json

    assert main(["chips", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} >= {"h100-sxm", "tpu-v5e"}
    assert main(["chips", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("name,")
    p = tmp_path / "bad.toml"
    p.write_text(GOOD.replace("latency_s = 2e-6", "latency_s = -1"))
    assert main(["estimate", "meta-llama/Llama-3.1-8B", "--chip", str(p)]) == 2
    err = capsys.readouterr().err
    assert "latency_s" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
