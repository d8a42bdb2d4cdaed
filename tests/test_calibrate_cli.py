"""The calibrate command and package: the shipped sample CSV runs from a clone, --write goes to the user chip
directory and never into the package, --convert-vidur, and the package's layering and paths."""

import ast
import re
import tomllib
from pathlib import Path

import pandas as pd
import pytest

import llm_roofline as lr
from llm_roofline.calibrate import CHIPS_ENV, Calibration, calibrate, user_chips_dir
from llm_roofline.cli import main
from llm_roofline.errors import OutputError, RooflineError

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "benchmarks/data/measured_h100_sample.csv"  # relative to the repository root, as the README runs it
VIDUR = ROOT.parent / "shared" / "calibration" / "vidur"
PACKAGE = ROOT / "llm_roofline"


def test_sample_csv_is_small_and_documented():
    p = ROOT / SAMPLE
    assert p.stat().st_size < 100_000
    df = pd.read_csv(p)
    assert 100 <= len(df) <= 500 and set(df["gpu"]) == {"h100"}
    assert "7d47513363ec447a741ac5e47241580b47724fbf" in (p.parent / "README.md").read_text()


def test_readme_command_runs_verbatim_from_the_repo_root(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv(CHIPS_ENV, str(tmp_path / "chips"))
    assert main(["calibrate", SAMPLE, "--chip", "h100-sxm"]) == 0
    out = capsys.readouterr().out
    assert "calibrating h100-sxm on benchmarks/data/measured_h100_sample.csv: 335 rows of gpu h100" in out
    assert "before: calibrated (h100-sxm fit)" in out and "[efficiency.gemm] compute_max = " in out
    assert f"not written (pass --write to write the chip file with these tables to {tmp_path / 'chips'}" in out
    assert not (tmp_path / "chips").exists()  # nothing written without --write


def test_sample_fit_beats_the_ideal_roofline_and_goes_to_the_user_chip_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv(CHIPS_ENV, str(tmp_path / "chips"))
    shipped = Path(lr.load_chip("h100-sxm").path)
    before = shipped.read_bytes()
    c = calibrate(SAMPLE, "h100-sxm", write=True, date="d")
    assert isinstance(c, Calibration) and c.rows == 335 and c.had_calibration
    # the families with rows in the sample (none of mla_glue: validate_mla.py's module rows; no attention rows)
    assert set(c.result.fits) == {"gemm", "elementwise", "activation", "rope", "norm", "embedding", "collective"}
    for row in c.errors:  # in sample, every family: the fit is closer than the ideal roofline
        assert row["after_median_pct"] < row["ideal_median_pct"], row
    assert c.source.startswith("Vidur (microsoft/vidur 7d47513") and "SKU uncertain" in c.sku_note
    # --write: to the user chip directory, the package's file untouched
    dest = tmp_path / "chips" / "h100-sxm.toml"
    assert c.written == str(dest) and shipped.read_bytes() == before
    written = lr.load_chip(str(dest))
    assert written.name == "h100-sxm"
    assert written.calibration["gemm"]["compute_max"] == c.result.fits["gemm"].compute_max
    # everything above the efficiency tables is the shipped file's, byte for byte
    text, src = dest.read_text(), shipped.read_text()
    marker = "# ---- calibrated kernel efficiency"
    assert text[: text.index(marker)] == src[: src.index(marker)]
    # the families the sample does not measure keep the shipped file's tables, values and notes: its measured
    # FlashAttention fit, not the one fit() derives from gemm (before: dropped, decode attention then borrowed
    # from a100-80gb and prefill attention priced at gemm's efficiency)
    new, old = tomllib.loads(text)["efficiency"], tomllib.loads(src)["efficiency"]
    kept = ("gemm_fp8", "moe", "moe_quant", "attention", "attention_decode", "attention_decode_fp8", "moe_fp8",
            "gemm_fp8_block", "all_to_all", "mla_glue", "moe_int4")
    assert c.kept == kept
    for fam in kept:
        assert new[fam] == old[fam], fam
    assert new["gemm"] != old["gemm"] and "kept from the chip file: gemm_fp8, moe," in new["fitted_on"]


def test_a_chip_without_an_attention_fit_gets_the_one_derived_from_gemm(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    src = Path(lr.load_chip("h100-sxm").path).read_text()
    bare = tmp_path / "bare.toml"  # the chip file without its calibrated tables
    bare.write_text(src[: src.index("# ---- calibrated kernel efficiency")])
    c = calibrate(SAMPLE, str(bare), write=True, chips_dir=tmp_path / "out", date="d")
    assert c.kept == ()
    eff = tomllib.loads(Path(c.written).read_text())["efficiency"]
    assert eff["attention"]["fitted_on"].startswith("NOT MEASURED: gemm's")
    assert eff["attention"]["compute_max"] == eff["gemm"]["compute_max"]
    assert "attention_decode" not in eff and "not measured (borrowed): gemm_fp8," in eff["fitted_on"]


def test_families_fits_the_named_families_alone_and_keeps_the_rest(monkeypatch, tmp_path, capsys):
    """--families norm,activation on the memory-bound rows timed on a lent H100 (benchmarks/data/
    gpu_check_h100-sxm_memory.csv: fused RMSNorm at 2.82-2.98 TB/s from 1,024 tokens, 0.84-0.89 of the 3.35 TB/s
    peak): those two families are fitted (memory_max in 0.8-0.95), the rope rows in the same file are not, and the
    written chip file keeps h100-sxm's own rope fit (Vidur's, memory_max 0.5111). A name that is no family, and a
    family without rows, are one-line errors."""
    monkeypatch.setenv(CHIPS_ENV, str(tmp_path))
    csv = ROOT / "benchmarks" / "data" / "gpu_check_h100-sxm_memory.csv"
    c = calibrate(csv, "h100-sxm", families=["norm", "activation"], write=True)
    assert set(c.result.points) == {"norm", "activation"} and c.rows == 24  # 2 shapes x 6 token counts each
    assert 0.8 <= c.result.fits["norm"].memory_max <= 0.95
    written = lr.load_chip(str(tmp_path / "h100-sxm.toml")).calibration
    assert written["rope"]["memory_max"] == pytest.approx(0.5111)
    for bad, said in (("nrm", "unknown families ['nrm']"), ("gemm", "no rows of gemm")):
        assert main(["calibrate", str(csv), "--chip", "h100-sxm", "--families", bad]) == 2
        assert said in capsys.readouterr().err


def test_a_fit_of_absurd_rows_still_writes_a_chip_file_that_loads(monkeypatch, tmp_path):
    # MoE rows whose walked and per-token elements (1e308) no kernel has: the simplex drives compute_tokens_half to
    # its ceiling, which was 1e15 while a chip file holds at most 1e9 tokens (CHIP_RANGES), so the file --write
    # produced failed to load; every parameter is now capped at the chip file's range
    monkeypatch.setenv(CHIPS_ENV, str(tmp_path / "chips"))
    csv = tmp_path / "absurd.csv"
    csv.write_text("family,op,model,gpu,dtype,tp,m,k,n,flops,bytes,kernels,nodes,measured_s,routed,experts,ep,"
                   "token_elems,walked\n"
                   "moe,x,a,,bf16,1,4,2048,768,1e9,1e8,2,1,1e-4,32,128,1e308,1e308,1e308\n"
                   "moe,x,b,,bf16,1,8,2048,768,2e9,1e8,2,1,2e-4,64,128,2,1e308,1e3\n")
    c = calibrate(str(csv), "a100-80gb", write=True, date="d")
    assert c.result.fits["moe"].compute_tokens_half <= 1e9
    assert lr.load_chip(c.written).calibration["moe"]["compute_tokens_half"] <= 1e9


@pytest.fixture
def no_fit(monkeypatch):
    """calibrate's fit replaced by a failure: a test passes only if calibrate stops before fitting."""
    def fit(*args, **kwargs):
        raise AssertionError("fitted before checking the destination")
    monkeypatch.setattr("llm_roofline.calibrate.fitting.fit", fit)


def test_write_refuses_the_package_directory_before_fitting(monkeypatch, no_fit):
    monkeypatch.chdir(ROOT)
    with pytest.raises(RooflineError, match="inside the installed package"):
        calibrate(SAMPLE, "h100-sxm", write=True, chips_dir=PACKAGE / "hardware" / "chips")


def test_write_refuses_a_destination_it_cannot_write_before_fitting(monkeypatch, no_fit, tmp_path, capsys):
    # a fit of the AIC tables takes minutes: a --write that cannot land is refused first
    monkeypatch.chdir(ROOT)
    (tmp_path / "h100-sxm.toml").mkdir()  # the chip file's name taken by a folder
    with pytest.raises(OutputError, match="it is a directory"):
        calibrate(SAMPLE, "h100-sxm", write=True, chips_dir=tmp_path)
    (tmp_path / "file").write_text("")  # a folder to create under a file
    monkeypatch.setenv(CHIPS_ENV, str(tmp_path / "file" / "chips"))
    with pytest.raises(OutputError, match=r"file is not a folder"):
        calibrate(SAMPLE, "h100-sxm", write=True)
    assert main(["calibrate", SAMPLE, "--chip", "h100-sxm", "--write"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a folder" in err
    # a folder name longer than a file system takes (255 bytes): an OutputError, not the OSError of the lookup
    with pytest.raises(OutputError, match="File name too long"):
        calibrate(SAMPLE, "h100-sxm", write=True, chips_dir=tmp_path / ("x" * 300))
    # without --write nothing is checked: the fit runs (and here fails)
    with pytest.raises(AssertionError, match="fitted before"):
        calibrate(SAMPLE, "h100-sxm")


def test_user_chips_dir_rule(monkeypatch, tmp_path):
    monkeypatch.setenv(CHIPS_ENV, str(tmp_path))
    assert user_chips_dir() == tmp_path
    monkeypatch.delenv(CHIPS_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert user_chips_dir() == tmp_path / "cfg" / "llm-roofline" / "chips"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert user_chips_dir() == Path.home() / ".config" / "llm-roofline" / "chips"


def test_cli_usage_errors(capsys, tmp_path):
    assert main(["calibrate", "--chip", "h100"]) == 2  # no CSV
    assert main(["calibrate", str(tmp_path / "x.csv")]) == 2  # no --chip
    assert main(["calibrate", "--convert-vidur", str(tmp_path / "none"), str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "needs a measured CSV and --chip" in err and "no Vidur profiles" in err


@pytest.mark.skipif(not VIDUR.is_dir(), reason="shared calibration data not present")
def test_convert_vidur_cli_and_the_sample_regenerates(tmp_path, capsys):
    out = tmp_path / "vidur.csv"
    assert main(["calibrate", "--convert-vidur", str(VIDUR), str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote 118192 rows to {out}: a100/activation 5439")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_sample", ROOT / "benchmarks" / "make_sample.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    again = tmp_path / "sample.csv"
    assert mod.main(["--data", str(VIDUR), "--out", str(again)]) == 0
    assert again.read_bytes() == (ROOT / SAMPLE).read_bytes()


# ------------------------------------------------------------------------------ layering and paths
def _imports(path: Path) -> set[str]:
    mods = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            mods.add("." * node.level + (node.module or ""))
    return mods


def test_calibrate_package_layering():
    allowed = {"efficiency", "expert_kernels", "gemm_tiles", "attention_shapes", "chip_fits", "roofline", "collectives",
               "hardware", "units", "errors", "files"}
    for f in sorted((PACKAGE / "calibrate").glob("*.py")):
        for m in _imports(f):
            if m.startswith("..") and m != "..":
                assert m[2:].split(".")[0] in allowed, (f.name, m)


def test_no_machine_paths_in_the_calibration_code():
    files = list((PACKAGE / "calibrate").glob("*.py")) + [PACKAGE / "report" / "calibration.py",
                                                           PACKAGE / "efficiency.py", PACKAGE / "chip_fits.py"]
    for f in files:
        assert not re.search(r"\.\./shared|/work/|/tmp/", f.read_text()), f
