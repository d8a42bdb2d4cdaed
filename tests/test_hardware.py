"""Chip catalog against the seeds' hardware tables and datasheets; chip-file validation."""

from pathlib import Path

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
    # no driver total: an engine's memory fraction applies to the datasheet HBM
    assert chip.engine_capacity_bytes == 80e9 and chip.engine_capacity_label == "HBM"
    p.write_text(GOOD.replace("hbm_bytes = 80e9", "hbm_bytes = 80e9\ndriver_total_bytes = 85e9"))
    chip = lr.load_chip(str(p))
    assert chip.hbm_bytes == 80e9 and chip.engine_capacity_bytes == 85e9
    assert chip.engine_capacity_label == "driver total"


def test_shipped_driver_totals():
    # torch.cuda.mem_get_info()'s total measured in this project (benchmarks/data/gpu_memory_total_*.json,
    # 2026-11-27): H100 80GB HBM3 85,017,493,504 B = nvidia-smi's 81,559 MiB less its 480 MiB reserved
    # (81,079 x 2^20); H200 143,771 - 616 = 143,155 MiB = 150,109,880,320 B. The chip files keep 5 digits.
    assert lr.load_chip("h100-sxm").engine_capacity_bytes == pytest.approx(81_079 * 2**20, rel=1e-4)
    assert lr.load_chip("h200").engine_capacity_bytes == pytest.approx(143_155 * 2**20, rel=1e-4)
    # nvidia-smi -q captures (NVIDIA/k8s-test-infra): GB200 189,471 - 742 MiB; B200 183,359 - 728 MiB
    assert lr.load_chip("gb200").engine_capacity_bytes == pytest.approx(188_729 * 2**20, rel=1e-4)
    assert lr.load_chip("b200").engine_capacity_bytes == pytest.approx(182_631 * 2**20, rel=1e-4)
    # no sourced driver total: the datasheet figure, named as such
    pcie = lr.load_chip("h100-pcie")
    assert pcie.engine_capacity_bytes == 80e9 and pcie.engine_capacity_label == "HBM"


@pytest.mark.parametrize("mutation,message", [
    (lambda t: t.replace("hbm_bytes_per_s = 3e12\n", ""), "hbm_bytes_per_s"),
    (lambda t: t.replace("hbm_bytes_per_s = 3e12", "hbm_bytes_per_s = -3e12"),
     r"\[memory\].hbm_bytes_per_s must be a number in \[1e\+06, 1e\+16\] bytes/s, got -3"),
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


TORUS = GOOD.replace('topology = "switch"', 'topology = "torus"\naxes = [16, 16]\nlink_bytes_per_s = 45e9\n'
                     'wraparound = "always"')


@pytest.mark.parametrize("text,message", [
    # wrong types: each names the file's key (CHIP_RANGES gives the physical range)
    (GOOD.replace('name = "mychip"', 'name = "mychip"\naliases = "h1"'), "aliases must be a list of non-empty strings"),
    (GOOD.replace('name = "mychip"', 'name = "mychip"\naliases = [1, 2]'), "aliases must be a list"),
    (GOOD.replace('name = "mychip"', 'name = "mychip"\nprice = 3.5'), r"\[price\] must be a table, got 3.5"),
    (GOOD + '[price]\nusd_per_hour = "3.5"\n', r"\[price\].usd_per_hour must be a number"),
    (GOOD + "[price]\nusd_per_hour = 0\n", r"\[price\].usd_per_hour must be a number in \[0, 10000\]"),
    (GOOD + "[price]\nusd_per_hour = 1e5\n", r"usd_per_hour must be a number in \[0, 10000\] USD"),
    (GOOD.replace('name = "mychip"', 'name = "mychip"\nonchip = "l2"'), r"\[onchip\] must be a table"),
    (GOOD + "[onchip]\nbytes = [50e6]\n", r"\[onchip\].bytes must be a number \(bytes\)"),
    (GOOD.replace('name = "mychip"', 'name = "mychip"\nefficiency = 0.5'), r"\[efficiency\] must be a table"),
    (GOOD + "[efficiency.gemm]\ncompute_max = 1.5\n", r"\[efficiency.gemm\].compute_max must be a number in \[0, 1\]"),
    (GOOD + '[efficiency.gemm]\noverhead_s = "fast"\n', r"\[efficiency.gemm\].overhead_s must be a number"),
    # an L2 read at most 11x the DRAM rate (hardware.CHIP_RANGES): 10.5 is a typo or a fit gone flat, not a GPU
    (GOOD + "[efficiency.gemm]\nmemory_l2_extra = 10.5\n",
     r"\[efficiency.gemm\].memory_l2_extra must be a number in \[0, 10\]"),
    (GOOD.replace("display_name", "x").replace('name = "mychip"', 'name = "mychip"\nfamily = 7'), "family must be a string"),
    (TORUS.replace("axes = [16, 16]", "axes = 16"), r"\[scaleup\].axes must be a list of positive integers"),
    (TORUS.replace("axes = [16, 16]", 'axes = ["16"]'), r"\[scaleup\].axes must be a list of positive integers"),
    (TORUS.replace("axes = [16, 16]", "axes = [true, 16]"), r"\[scaleup\].axes must be a list of positive integers"),
    (TORUS.replace("axes = [16, 16]", "axes = [0, 16]"), r"\[scaleup\].axes must be a number in \[1, 1e\+06\]"),
    # physical ranges: 1e-300 B/s would give an infinite TTFT (1e9 bytes / 1e-300 B/s overflows to inf)
    (GOOD.replace("hbm_bytes_per_s = 3e12", "hbm_bytes_per_s = 1e-300"), r"hbm_bytes_per_s must be a number in \[1e\+06"),
    (GOOD.replace("hbm_bytes = 80e9", "hbm_bytes = 80e19"), r"hbm_bytes must be a number in \[1e\+06, 1e\+15\]"),
    (GOOD.replace("hbm_bytes = 80e9", "hbm_bytes = 80e9\ndriver_total_bytes = -1"),
     r"\[memory\].driver_total_bytes must be a number in \[1e\+06, 1e\+15\] bytes"),
    (GOOD.replace("bf16 = 1e15", "bf16 = 1e300"), r"\[compute\].bf16 must be a number in \[1e\+09, 1e\+18\] FLOP/s"),
    (GOOD.replace("bf16 = 1e15", "bf16 = nan"), r"\[compute\].bf16 must be a number in"),
    (GOOD.replace("latency_s = 2e-6", "latency_s = 20"), r"\[scaleup\].latency_s must be a number in \[1e-09, 0.1\] s"),
    (GOOD.replace("domain_size = 8", "domain_size = 1e7"), r"\[scaleup\].domain_size must be a number in \[1, 1e\+06\]"),
    (GOOD + '[scaleout]\nkind = "ib"\nbytes_per_s = 50e9\nlatency_s = 5e-6\ndomain_size = "big"\n',
     r"\[scaleout\].domain_size must be a number"),
    (GOOD.replace('name = "mychip"', 'name = "mychip"\nscaleout = 5'), r"\[scaleout\] must be a table"),
    (GOOD.replace("domain_size = 8", 'domain_size = 8\nswitch_reduction = "yes"'), "switch_reduction must be true or false"),
    # only an NVLink switch reduces (NVLS): set on a PCIe switch it was silently ignored
    (GOOD.replace('kind = "nvlink4"', 'kind = "pcie5"').replace("domain_size = 8", "domain_size = 8\nswitch_reduction = true"),
     "switch_reduction needs an NVLink switch"),
])
def test_chip_file_types_and_physical_ranges(tmp_path, text, message):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(lr.ChipError, match=message):
        lr.load_chip(str(p))


def test_chip_file_not_a_readable_toml_file(tmp_path):
    import os

    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"name = \"x\"\n\xff\xfe\x00\x01")
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes: it must not be opened
    deep = tmp_path / "deep.toml"
    deep.write_text('name = "x"\nx = ' + "[" * 100_000 + "]" * 100_000 + "\n")  # tomllib recurses per bracket
    for path, message in [(deep, "nested too deeply"), (binary, "not UTF-8 text"), (folder, "is a directory"), (fifo, "not a regular file"),
                          (tmp_path / "missing.toml", "does not exist"), (tmp_path, "is a directory")]:
        with pytest.raises(lr.ChipError, match=message):
            lr.load_chip(str(path))


def test_a_chip_in_the_user_folder_is_usable_by_name(tmp_path, monkeypatch):
    # calibrate --write and a hand-written TOML both land in $LLM_ROOFLINE_CHIPS: load_chip and `chips` see them
    import llm_roofline as lr
    from llm_roofline.hardware import CHIPS_ENV

    src = (Path(lr.load_chip("h100-sxm").path)).read_text()
    folder = tmp_path / "chips"
    folder.mkdir()
    text = src.replace('name = "h100-sxm"', 'name = "acme-x1"')
    text = text.replace('aliases = ["h100", "h100-sxm5", "h100-sxm5-80gb"]', 'aliases = ["acme"]')
    (folder / "acme-x1.toml").write_text(text)
    monkeypatch.setenv(CHIPS_ENV, str(folder))
    chip = lr.load_chip("acme-x1")
    assert chip.name == "acme-x1" and lr.load_chip("ACME").name == "acme-x1"
    assert "acme-x1" in {c.name for c in lr.list_chips()} and "h100-sxm" in {c.name for c in lr.list_chips()}
    est = lr.estimate("meta-llama/Llama-3.1-8B", "acme-x1", batch=1, prompt_len=128, gen_len=2, efficiency="ideal")
    assert est.chip == "acme-x1"
    monkeypatch.setenv(CHIPS_ENV, str(tmp_path / "elsewhere"))
    with pytest.raises(lr.ChipError, match="unknown chip 'acme-x1'"):
        lr.load_chip("acme-x1")


@pytest.mark.parametrize("bad", ['"str"', "[1, 2]", "{ a = 1 }", "1979-05-27", "nan", "true"])
def test_efficiency_parameters_of_the_wrong_type_are_one_chip_error(tmp_path, bad):
    # found by benchmarks/fuzz.py after calibration v2 added keys (err_p10, ...): float() raised TypeError
    import llm_roofline as lr

    src = Path(lr.load_chip("h100-sxm").path).read_text()
    assert "err_p10 = " in src
    p = tmp_path / "x.toml"
    p.write_text(src.replace("err_p10 = ", f"err_p10 = {bad} # ", 1))
    with pytest.raises(lr.ChipError, match="err_p10"):
        lr.estimate("meta-llama/Llama-3.2-1B", lr.load_chip(str(p)), batch=1, prompt_len=16, gen_len=2,
                    efficiency="calibrated")


def test_catalog_chips_are_read_only_all_the_way_down():
    # every caller shares the catalog's Chip objects (and the calibrated fits read from them): none can change them
    import dataclasses

    chip = lr.load_chip("h100-sxm")
    assert lr.load_chip("H100") is chip
    with pytest.raises(dataclasses.FrozenInstanceError):
        chip.hbm_bytes = 1.0
    with pytest.raises(TypeError):
        chip.dense_flops_per_s["bf16"] = 1.0
    with pytest.raises(TypeError):
        chip.calibration["gemm"]["compute_max"] = 0.5
    assert lr.load_chip("h100-sxm").calibration["gemm"]["compute_max"] < 1
