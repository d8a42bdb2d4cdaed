"""The report folder (report.md, ops.csv, summary.json, charts) and the `report` / `plot` commands."""

import json
import re
from dataclasses import replace

import pandas as pd
import pytest

import llm_roofline as lr
from llm_roofline.cli import main
from llm_roofline.estimate import estimate
from llm_roofline.model.spec import AttentionSpec, FfnSpec, LayerGroup, ModelSpec
from llm_roofline.report.build import write_report
from llm_roofline.report.markdown import report_markdown

H100 = lr.load_chip("h100")


def tiny():
    attn = AttentionSpec("gqa", 8, 2, 32, 32)
    return ModelSpec("tiny", 256, 512, (LayerGroup("dense", 2, attn, FfnSpec("dense", 768, True, "silu")),),
                     max_context=4096)


def _section(md: str, title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", md, flags=re.S | re.M)
    assert m, f"no section {title!r}"
    return m.group(1)


def test_report_files_csv_json_keep_raw_si_and_metadata(tmp_path):
    spec = tiny()
    files = write_report(spec, [H100, "mi300x"], tmp_path, batch=4, prompt_len=128, gen_len=16, charts=("breakdown",),
                         command="test", efficiency="ideal")
    assert {"breakdown", "ops.csv", "summary.json", "report.md"} <= set(files)
    est = estimate(spec, H100, batch=4, prompt_len=128, gen_len=16, efficiency="ideal")
    # ops.csv: one row per chip, phase and op; raw seconds, bytes, FLOP; metadata on every row
    df = pd.read_csv(tmp_path / "ops.csv")
    assert set(df.chip) == {"h100-sxm", "mi300x"}
    h = df[df.chip == "h100-sxm"].reset_index(drop=True)
    assert len(h) == len(est.ops)
    assert h.t_s.tolist() == pytest.approx(est.ops.t_s.tolist(), rel=1e-12)
    assert h.flops.tolist() == pytest.approx(est.ops.flops.tolist(), rel=1e-12)
    for col in ("model", "llm_roofline_version", "tp", "weight_dtype", "kv_dtype", "efficiency", "batch", "prompt_len"):
        assert col in df.columns
    assert set(df.llm_roofline_version) == {lr.__version__}
    # summary.json: raw SI values + metadata
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["llm_roofline_version"] == lr.__version__ and s["model"] == "tiny"
    assert s["chips"] == ["h100-sxm", "mi300x"] and s["command"] == "test"
    r = s["results"][0]
    assert r["ttft_s"] == pytest.approx(est.ttft_s, rel=1e-12) and r["tpot_s"] == pytest.approx(est.tpot_s, rel=1e-12)
    assert r["memory"]["per_chip_bytes"] == pytest.approx(est.memory.per_chip_bytes, rel=1e-12)
    assert r["sharding"] == {"tp": 1, "pp": 1, "ep": 1, "dp": 1, "chips": 1, "sequence_parallel": False}
    assert r["dtypes"] == {"weight": "bf16", "act": "bf16", "kv": "bf16", "compute": "bf16"}
    assert r["efficiency"] == "ideal" and "critical" in r and "ops" not in r
    # report.md: engineering units, right-aligned numbers, the sections the brief asks for
    md = (tmp_path / "report.md").read_text()
    for title in ("Scenario", "Headline", "Charts", "h100-sxm ×1", "mi300x ×1", "Assumptions"):
        _section(md, title)
    for needle in ("### Phases", "Top 8 prefill ops by time", "Top 8 decode ops by time", "### Memory per chip",
                   "### Critical thresholds", "KV read", "GQA FLOP/KV-B", "attn/MLP FLOPs", "time by bound"):
        assert needle in md
    assert "![Time breakdown](breakdown.png)" in md
    # engineering units, three significant digits (a tiny model: µs, MB, GFLOP)
    assert re.search(r"\| +\d\.\d\d µs \|", md) and re.search(r"\| +\d+\.?\d* MB \|", md) and " GFLOP |" in md
    assert "--:|" in md  # numeric columns right-aligned in rendered Markdown
    assert "does not fit" not in _section(md, "Headline").lower()


def test_report_for_a_model_that_does_not_fit_says_so_in_the_headline(tmp_path):
    small = replace(H100, hbm_bytes=2e6, driver_total_bytes=None)  # the tiny model: 3.5 MB of weights in 2 MB
    write_report(tiny(), [small, H100], tmp_path, batch=2, prompt_len=64, gen_len=8, charts=(), efficiency="ideal")
    head = _section((tmp_path / "report.md").read_text(), "Headline")
    assert "**Does not fit on h100-sxm ×1**" in head and "weights alone exceed the usable HBM" in head
    assert "0.00180 GB usable (0.9 x 0.00200 GB HBM)" in head  # gpu_memory_utilization 0.9 of 2 MB
    assert "**NO**" in head
    s = json.loads((tmp_path / "summary.json").read_text())
    assert [r["memory"]["fits"] for r in s["results"]] == [False, True]


def test_report_markdown_without_images_or_decode():
    est = estimate(tiny(), H100, batch=1, prompt_len=64, gen_len=1, efficiency="ideal")  # prefill only: no decode section
    md = report_markdown([est])
    assert "decode ops" not in md and "## Charts" not in md and "TTFT" in md


def test_cli_report_writes_everything_and_flags_no_fit(tmp_path, capsys):
    out = tmp_path / "rep"
    code = main(["report", "meta-llama/Llama-3.1-8B", "--chip", "tpu-v5e", "--batch", "1", "--prompt", "128",
                 "--gen", "8", "--frontier-prompts", "128", "--out", str(out)])
    assert code == 0
    assert "wrote 7 files" in capsys.readouterr().out
    for f in ("report.md", "ops.csv", "summary.json", "roofline.png", "frontier.png", "breakdown.png", "memory.png"):
        assert (out / f).stat().st_size > 0, f
    md = (out / "report.md").read_text()
    # every embedded image is a relative link to a file in the folder
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert sorted(links) == ["breakdown.png", "frontier.png", "memory.png", "roofline.png"]
    assert all((out / link).read_bytes()[:4] == b"\x89PNG" for link in links)
    # Llama-3.1-8B's 16.1 GB of bf16 weights exceed a v5e's 16 GB
    assert "Does not fit on tpu-v5e" in _section(md, "Headline")
    assert "llm-roofline report meta-llama/Llama-3.1-8B --chip tpu-v5e" in md


def test_cli_plot_each_kind_and_errors(tmp_path, capsys):
    for kind in ("breakdown", "memory"):
        png = tmp_path / f"{kind}.png"
        code = main(["plot", kind, "meta-llama/Llama-3.2-1B", "--chip", "h100", "--batch", "2", "--prompt",
                     "128", "--gen", "8", "--out", str(png)])
        assert code == 0 and png.read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    code = main(["plot", "roofline", "meta-llama/Llama-3.2-1B", "--chip", "nochip", "--out", str(tmp_path / "x.png")])
    assert code == 2 and "unknown chip" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["plot", "pie", "meta-llama/Llama-3.2-1B", "--chip", "h100", "--out", str(tmp_path / "x.png")])
    assert e.value.code == 2
