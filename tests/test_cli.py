"""The CLI contract: formats, exit codes, one-line errors, help that teaches."""

import csv
import io
import json
import re

import numpy as np
import pytest

import llm_roofline as lr
from llm_roofline.cli import main
from llm_roofline.units import fmt_seconds


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_estimate_json_is_to_dict(capsys):
    code, out, _ = run(capsys, "estimate", "meta-llama/Llama-3.2-1B", "--chip", "h100", "--batch", "4", "--prompt",
                       "256", "--gen", "32", "--format", "json")
    assert code == 0
    d = json.loads(out)
    # the CLI's default efficiency is the API's: calibrated, with the ideal bound beside it
    est = lr.estimate("meta-llama/Llama-3.2-1B", "h100", batch=4, prompt_len=256, gen_len=32)
    assert d == json.loads(json.dumps(est.to_dict()))
    assert d["efficiency_mode"] == "calibrated" and d["efficiency"] == "calibrated (h100-sxm fit)"
    assert d["ideal"]["tpot_s"] <= d["tpot_s"]
    assert d["tokens_per_s_per_user"] == pytest.approx(1 / d["tpot_s"], rel=1e-12)
    ideal = lr.estimate("meta-llama/Llama-3.2-1B", "h100", batch=4, prompt_len=256, gen_len=32, efficiency="ideal")
    assert d["ideal"]["tpot_s"] == ideal.tpot_s and ideal.ideal is None


def test_estimate_table_markdown_csv_explain(capsys):
    code, out, _ = run(capsys, "estimate", "meta-llama/Llama-3.2-1B", "--chip", "h100", "--explain")
    assert code == 0 and "TTFT" in out and "decode ops" in out and "2*T*k*n" in out
    code, out, _ = run(capsys, "estimate", "meta-llama/Llama-3.2-1B", "--chip", "h100", "--format", "markdown")
    assert code == 0 and "| op" in out
    code, out, _ = run(capsys, "estimate", "meta-llama/Llama-3.2-1B", "--chip", "h100", "--format", "csv")
    # one row per op, the scenario, the efficiency mode and fit and the headline repeated on every row
    assert code == 0 and out.startswith("model,chip,phase,group,name,kind,count,flops")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["efficiency_mode"] for r in rows} == {"calibrated"}
    assert {r["efficiency"] for r in rows} == {"calibrated (h100-sxm fit)"}
    assert len({r["headline_tpot_s"] for r in rows}) == 1


def test_sweep_writes_csv(capsys, tmp_path):
    out_csv = tmp_path / "s.csv"
    code, out, _ = run(capsys, "sweep", "meta-llama/Llama-3.2-1B", "--chip", "h100,mi300x", "--batch", "1,8",
                       "--prompt", "128,1024", "--gen", "16", "--out", str(out_csv))
    assert code == 0 and "wrote 8 rows" in out
    assert out_csv.read_text().count("\n") == 9


@pytest.mark.parametrize("argv,needle", [
    (["estimate", "meta-llama/Llama-3.1-8", "--chip", "h100"], "meta-llama/Llama-3.1-8B"),
    (["estimate", "meta-llama/Llama-3.1-8B", "--chip", "h1"], "unknown chip"),
    (["estimate", "meta-llama/Llama-3.1-8B", "--chip", "h100", "--batch", "0"], "batch must be an integer in [1, 16,777,216], got 0"),  # bounds: 2**24
    (["estimate", "meta-llama/Llama-3.1-8B", "--chip", "h100", "--kv-dtype", "int3"], "unknown dtype"),
    (["estimate", "meta-llama/Llama-3.1-8B", "--chip", "h100", "--tp", "5"], "not divisible"),
    (["sweep", "meta-llama/Llama-3.1-8B", "--chip", "h100", "--batch", "1,x"], "integers"),
])
def test_user_mistakes_exit_2_with_one_line(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_help_teaches(capsys):
    with pytest.raises(SystemExit) as e:
        main(["estimate", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--tp" in out and "example" in out and "--kv-dtype" in out


def test_calibrate_help_names_every_csv_column(capsys):
    # a user writing a CSV learns every column the fit reads (the optional shape columns too: MoE's ep)
    from llm_roofline.calibrate.measurements import MEASURED_COLUMNS

    with pytest.raises(SystemExit) as e:
        main(["calibrate", "--help"])
    words = set(re.findall(r"[a-z_0-9]+", capsys.readouterr().out))
    assert e.value.code == 0 and [c for c in MEASURED_COLUMNS if c not in words] == []


def test_estimate_is_compact_by_default_and_warns_first(capsys):
    # the default fits a terminal: <= 20 lines of <= 100 columns; --ops restores every operator
    code, out, err = run(capsys, "estimate", "meta-llama/Llama-3.1-8B", "--chip", "h100-sxm")
    lines = out.rstrip("\n").splitlines()
    assert code == 0 and len(lines) <= 20 and max(map(len, lines)) <= 100 and err == ""
    assert "attn.qkv_proj" not in out
    code, out, _ = run(capsys, "estimate", "meta-llama/Llama-3.1-8B", "--chip", "h100-sxm", "--ops")
    assert code == 0 and "attn.qkv_proj" in out and "assumptions:" in out
    # a prompt beyond the model's context: one warning, on stderr, before anything else
    code, out, err = run(capsys, "estimate", "meta-llama/Llama-3.1-8B", "--chip", "h100-sxm", "--prompt", "200000")
    assert code == 0 and err.count("exceeds the model's max_position_embeddings 131072") == 1
    assert err.startswith("llm-roofline: warning:") and "exceeds" not in out
    with pytest.raises(SystemExit) as ex:
        main(["--version"])
    assert ex.value.code == 0 and "llm-roofline 0.1.0" in capsys.readouterr().out


def test_plot_serving_writes_the_latency_throughput_chart(capsys, tmp_path):
    code, out, err = run(capsys, "plot", "serving", "meta-llama/Llama-3.2-1B", "--chip", "h100", "--prompt", "256",
                         "--gen", "32", "--efficiency", "ideal", "--out", str(tmp_path / "s"))
    assert code == 0 and (tmp_path / "s.png").stat().st_size > 10_000 and out.strip() == f"wrote {tmp_path / 's.png'}"


def test_plot_serving_names_the_sharding_and_says_in_one_line_when_nothing_can_be_drawn(capsys, tmp_path):
    from llm_roofline.errors import ScenarioError
    from llm_roofline.report.serving_plot import plot_serving

    # the title names tp and pp (two charts of one model told apart by nothing else before)
    res = plot_serving("meta-llama/Llama-3.2-1B", "h100", concurrency=[1, 2], prompt_len=256, gen_len=32, tp=2, pp=2,
                       efficiency="ideal")
    # and the engine knobs it ran with: vLLM's defaults on an 80 GB H100, 1024 sequences and 8192 tokens per step
    title = res.figure._suptitle.get_text()
    assert "on h100-sxm (tp2 pp2): continuous batching" in title
    assert "engine max_num_seqs 1024, 8192 tokens/step" in title.replace("\n", " ")
    assert "ttft_s_p10" not in res.data  # ideal: no band to shade
    res.close()
    # calibrated: TTFT and TPOT shaded between their p10 and p90 (serve()'s band), which hold the mean
    res = plot_serving("meta-llama/Llama-3.2-1B", "h100", concurrency=[1, 8], prompt_len=256, gen_len=32)
    d, labels = res.data, [t.get_text() for t in res.figure.axes[0].get_legend().get_texts()]
    assert np.all(d["ttft_s_p10"] < d["ttft_s"]) and np.all(d["ttft_s"] < d["ttft_s_p90"])
    assert np.all(d["tpot_s_p10"] < d["tpot_s"]) and np.all(d["tpot_s"] < d["tpot_s_p90"])
    assert "TTFT p10–p90 (kernel fits and serving model error)" in labels
    res.close()
    # Llama-3.1-70B's 141 GB of bf16 weights on one 80 GB H100: no point to draw; it was an internal error (argmax of
    # an empty sequence), exit 1
    code, out, err = run(capsys, "plot", "serving", "meta-llama/Llama-3.1-70B", "--chip", "h100", "--prompt", "256",
                         "--gen", "32", "--out", str(tmp_path / "s"))
    assert code == 2 and err.count("\n") == 1 and "no room for the KV cache of one sequence" in err
    assert not (tmp_path / "s.png").exists()


def test_plot_serving_takes_host_none(capsys, tmp_path, monkeypatch):
    # plot serving --host none draws kernels only (serve.NO_HOST), as serve and plan do; the title says so. Llama-3.2-1B
    # (16 layers), 1024-token prompts: one client's prompt is one step past vLLM's 512-token CUDA graphs, so vLLM's
    # host time adds 16 x 0.876 ms = 14.0 ms to its TTFT (and the fitted per-request 0.03 ms)
    import llm_roofline.report.serving_plot as sp

    drawn, finish = [], sp._finish
    monkeypatch.setattr(sp, "_finish", lambda res, path, dpi: drawn.append(res) or finish(res, path, dpi))
    for host in ("vllm", "none"):
        code, _, _ = run(capsys, "plot", "serving", "meta-llama/Llama-3.2-1B", "--chip", "h100", "--prompt", "1024",
                         "--gen", "32", "--efficiency", "ideal", "--host", host, "--out", str(tmp_path / host))
        assert code == 0
    (vllm, none), titles = drawn, [r.figure._suptitle.get_text().replace("\n", " ") for r in drawn]
    assert "no host time (kernels only)" in titles[1] and "host time" not in titles[0]
    assert vllm.data["ttft_s"][0] - none.data["ttft_s"][0] == pytest.approx(16 * 0.876e-3 + 0.03e-3, rel=0.01)
