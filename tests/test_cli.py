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
    assert code == 0 and err.count("exceeds the model's maximum context 131072") == 1
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
    # every load above what one H100 serves (Llama-3.2-1B: far below 1e6 requests/s)
    with pytest.raises(ScenarioError, match="every qps saturates it"):
        plot_serving("meta-llama/Llama-3.2-1B", "h100", qps=[1e6, 2e6], prompt_len=256, gen_len=32)


def test_plot_serving_takes_host_none(capsys, tmp_path, monkeypatch):
    # plot serving --host none draws kernels only (engine.NO_HOST), as serve and plan do; the title says so.
    # Llama-3.2-1B (16 layers), 1024-token prompts: one client's prompt is one step past vLLM's 512-token CUDA graphs, so vLLM's
    # host time adds 16 x 0.876 ms = 14.0 ms to its TTFT (its per-step, per-sequence and per-request times are 0)
    import llm_roofline.report.serving_plot as sp

    drawn, finish = [], sp._finish
    monkeypatch.setattr(sp, "_finish", lambda res, path, dpi: drawn.append(res) or finish(res, path, dpi))
    for host in ("vllm", "none"):
        code, _, _ = run(capsys, "plot", "serving", "meta-llama/Llama-3.2-1B", "--chip", "h100", "--prompt", "1024",
                         "--gen", "32", "--efficiency", "ideal", "--host", host, "--out", str(tmp_path / host))
        assert code == 0
    (vllm, none), titles = drawn, [r.figure._suptitle.get_text().replace("\n", " ") for r in drawn]
    assert "host time none (kernels only)" in titles[1] and "host time" not in titles[0]
    assert vllm.data["ttft_s"][0] - none.data["ttft_s"][0] == pytest.approx(16 * 0.876e-3, rel=1e-9)


@pytest.mark.parametrize("name_or_path, shown", [("acme/Tiny-1B", "acme/Tiny-1B"), (None, "cfg"),
                                                 ("/home/me/checkpoints/run3", "cfg"), ("./out", "cfg")])
def test_a_model_from_a_directory_is_named_by_its_config(capsys, tmp_path, name_or_path, shown):
    # Llama-3.2-1B's shipped config copied into a folder "cfg"; `_name_or_path` (what save_pretrained writes) names
    # it when it is a hub id, the folder otherwise (a local path says nothing about the model)
    config = json.loads(open("model_configs/meta-llama/Llama-3.2-1B/config.json").read())
    config.pop("_name_or_path", None)
    if name_or_path:
        config["_name_or_path"] = name_or_path
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text(json.dumps(config))
    for arg in (tmp_path / "cfg", tmp_path / "cfg" / "config.json"):
        code, out, _ = run(capsys, "estimate", str(arg), "--chip", "h100", "--gen", "2", "--format", "json")
        assert code == 0 and json.loads(out)["model"] == shown


def test_progress_only_on_a_terminal_and_erased_at_the_end():
    import time

    from llm_roofline.cli import Progress

    class Stream(io.StringIO):
        def __init__(self, tty):
            super().__init__()
            self.tty = tty

        def isatty(self):
            return self.tty

    term, pipe = Stream(True), Stream(False)
    for stream in (term, pipe):
        with Progress("plan: searching", stream=stream, delay_s=0.05, every_s=0.05):
            time.sleep(0.3)
    assert "llm-roofline: plan: searching ... 0 s" in term.getvalue() and term.getvalue().endswith("\r\033[K")
    assert pipe.getvalue() == ""
    quick = Stream(True)
    with Progress("plan: searching", stream=quick, delay_s=5.0):
        pass  # a command faster than the delay draws nothing
    assert quick.getvalue() == ""


def test_same_point_same_number_from_api_cli_sweep_and_report(capsys, tmp_path):
    # one scenario, every way in, all on the default efficiency (calibrated, the H100's own fit)
    kw = dict(batch=4, prompt_len=512, gen_len=64)
    flags = ["meta-llama/Llama-3.2-1B", "--chip", "h100", "--batch", "4", "--prompt", "512", "--gen", "64"]
    api = lr.estimate("meta-llama/Llama-3.2-1B", "h100-sxm", **kw)
    _, out, _ = run(capsys, "estimate", *flags, "--format", "json")
    cli_est = json.loads(out)
    row = lr.sweep("meta-llama/Llama-3.2-1B", "h100", batch=[4], prompt_len=[512], gen_len=[64]).iloc[0]
    _, out, _ = run(capsys, "sweep", *flags, "--format", "json")
    cli_row, = json.loads(out)
    assert run(capsys, "report", *flags, "--out", str(tmp_path / "r"))[0] == 0
    report, = json.loads((tmp_path / "r" / "summary.json").read_text())["results"]
    for key in ("ttft_s", "tpot_s"):
        want = getattr(api, key)
        for got in (cli_est[key], row[key], cli_row[key], report[key]):
            assert got == pytest.approx(want, rel=1e-12), key
    # ... and every one of them says which mode and which fit
    assert api.efficiency_mode == cli_est["efficiency_mode"] == row["efficiency"] == report["efficiency_mode"] \
        == "calibrated"
    assert api.efficiency == cli_est["efficiency"] == row["fit"] == report["efficiency"] == "calibrated (h100-sxm fit)"
    assert api.ideal["tpot_s"] < api.tpot_s  # the ideal bound rides along
    md = (tmp_path / "r" / "report.md").read_text()
    assert "calibrated (h100-sxm fit)" in md and "ideal roofline bound" in md


def test_plan_fits_a_terminal_and_its_rows_name_mode_and_fit(capsys):
    # static plan with disaggregation (was 311 columns wide) and the serving plan: <= 100 columns
    for argv in (["plan", "meta-llama/Llama-3.1-8B", "--chips", "h100,mi300x", "--prompt", "1024", "--gen", "128",
                  "--tpot-s", "0.02", "--max-chips", "8", "--top", "3", "--disaggregate"],
                 ["plan", "meta-llama/Llama-3.1-70B", "--chips", "h100-sxm,h200,mi300x", "--prompt", "2048", "--gen",
                  "256", "--tpot-s", "0.05", "--qps", "10"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and max(map(len, out.splitlines())) <= 100
        assert "efficiency: calibrated; fit: h100-sxm: calibrated (h100-sxm fit)" in out
    code, out, _ = run(capsys, "plan", "meta-llama/Llama-3.1-8B", "--chips", "h100", "--prompt", "512", "--gen", "64",
                       "--max-chips", "1", "--top", "2", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and {(r["efficiency"], r["fit"]) for r in rows} == {("calibrated", "calibrated (h100-sxm fit)")}


def test_serve_table_fits_a_terminal(capsys):
    # a TPOT of 50.6 ms, a "kv_cache" cap and a 10-character column header made the serving table 101 columns wide
    for argv in (["--qps", "3"], ["--concurrency", "1,64,512", "--prompt", "2048,8192"]):
        code, out, _ = run(capsys, "serve", "meta-llama/Llama-3.1-70B", "--chip", "h100", "--tp", "4", "--prompt",
                           "2048", "--gen", "256", *argv)
        assert code == 0 and max(map(len, out.splitlines())) <= 100, max(out.splitlines(), key=len)


def test_serve_prints_the_band_it_returns(capsys):
    # one calibrated point: the p10-p90 line under the table carries the numbers of --format json's uncertainty
    # (ms, as fmt_seconds writes them); ideal has no band and says nothing
    argv = ["serve", "meta-llama/Llama-3.2-1B", "--chip", "h100", "--concurrency", "8", "--prompt", "512",
            "--gen", "64"]
    code, out, _ = run(capsys, *argv)
    code_j, js, _ = run(capsys, *argv, "--format", "json")
    u = json.loads(js)["uncertainty"]
    flat = " ".join(out.split())
    assert code == code_j == 0 and "p10–p90 (every kernel at its fits' held-out p10 / p90 error" in flat
    assert f"TPOT {fmt_seconds(u['tpot_s']['p10'])}–{fmt_seconds(u['tpot_s']['p90'])}" in flat
    code, out, _ = run(capsys, *argv, "--efficiency", "ideal")
    assert code == 0 and "p10–p90" not in out
    # a serve sweep's table says where its points' bands are; its csv has them (and an estimate sweep's too)
    code, out, _ = run(capsys, "sweep", "meta-llama/Llama-3.2-1B", "--chip", "h100", "--batch", "1,8")
    assert code == 0 and "each point's p10–p90 (ttft_s_p10, ...): --format csv or json." in out
    assert max(map(len, out.splitlines())) <= 100
    code, out, _ = run(capsys, *argv[:5], "1,8", *argv[6:])
    assert code == 0 and "each point's p10–p90 (ttft_s_p10, ...): --format csv or json." in " ".join(out.split())
    code, out, _ = run(capsys, *argv[:5], "1,8", *argv[6:], "--format", "csv")
    assert code == 0 and "ttft_s_p10" in out.splitlines()[0]
    code, out, _ = run(capsys, *argv[:5], "1,8", *argv[6:], "--efficiency", "ideal")  # ideal: no band, no note
    assert code == 0 and "p10–p90" not in out
    # one generated token: no TPOT, so none in the band either (its NaN had read as 'saturated')
    code, out, _ = run(capsys, *argv[:-1], "1")
    band = " ".join(out.split()).split("p10–p90")[1]
    assert code == 0 and "TTFT" in band and "TPOT" not in band and "saturated" not in band


def test_serve_says_which_engine_knobs_it_ran(capsys):
    # vLLM's defaults (EngineArgs.get_batch_defaults): an A100 gets 256 sequences and 2048 tokens per step; a sweep
    # table said nothing of them, one point only of its cap
    code, out, _ = run(capsys, "serve", "meta-llama/Llama-3.2-1B", "--chip", "a100", "--concurrency", "1,8",
                       "--prompt", "256", "--gen", "16")
    flat = " ".join(out.split())
    assert code == 0 and "engine max_num_seqs 256, max_num_batched_tokens 2048 (vLLM's defaults on the chip)" in flat
    code, out, _ = run(capsys, "serve", "meta-llama/Llama-3.2-1B", "--chip", "a100", "--concurrency", "8",
                       "--prompt", "256", "--gen", "16", "--max-num-batched-tokens", "4096")
    assert "engine max_num_seqs 256, max_num_batched_tokens 4096 (the one not given: vLLM's)" in " ".join(out.split())


def test_serve_host_none_leaves_the_kernels_alone(capsys):
    # --host none: no host time anywhere, so with ideal kernels one client's TTFT is estimate's prefill at batch 1 and
    # its TPOT the decode step (serve's docstring: the pure roofline); --host vllm (default) adds 32 layers x 0.876 ms
    # = 28.0 ms to the 1024-token prompt's step (past the 512-token CUDA graphs)
    argv = ["serve", "meta-llama/Llama-3.1-8B", "--chip", "h100-sxm", "--concurrency", "1", "--prompt", "1024",
            "--gen", "2", "--efficiency", "ideal", "--format", "json"]
    est = lr.estimate("meta-llama/Llama-3.1-8B", "h100-sxm", batch=1, prompt_len=1024, gen_len=2, efficiency="ideal")
    none = json.loads(run(capsys, *argv, "--host", "none")[1])
    vllm = json.loads(run(capsys, *argv)[1])
    assert none["ttft_s"] == pytest.approx(est.ttft_s, rel=1e-9)
    assert vllm["ttft_s"] - none["ttft_s"] == pytest.approx(32 * 0.876e-3, rel=1e-9)
    code, out, _ = run(capsys, *argv[:-2], "--host", "none")
    assert code == 0 and "host time none (kernels only)" in " ".join(out.split())


def test_catalog_tables_fit_a_terminal(capsys):
    # `chips` was 282 columns wide (every alias of a100-80gb) and `models` 155 (an unwrapped footer): both <= 100;
    # aliases beyond the first are counted in the table ("+4") and listed in full by --format json
    for argv, needle in ((["chips"], "a100 +4"), (["models"], "128/128")):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and max(map(len, out.splitlines())) <= 100, max(out.splitlines(), key=len)
        assert needle in out
    code, out, _ = run(capsys, "chips", "--format", "json")
    a100 = next(r for r in json.loads(out) if r["name"] == "a100-80gb")
    assert a100["aliases"] == "a100,a100-80g,a100-sxm4-80gb,a100-sxm-80gb,a100-sxm" and "aliases_short" not in a100
    code, out, _ = run(capsys, "models", "--format", "json")
    v3 = next(r for r in json.loads(out) if r["id"] == "deepseek-ai/DeepSeek-V3")
    assert (v3["heads"], v3["kv_heads"]) == (128, 128) and "heads_q_kv" not in v3  # the table's column only
    for command in ("chips", "models"):  # every format of both catalogs renders
        for fmt in ("markdown", "csv"):
            assert run(capsys, command, "--format", fmt)[0] == 0


def test_a_sweep_over_pipeline_stages_shows_which_row_is_which(capsys):
    # the table showed tp alone: a sweep over pp gave rows that looked the same but for their numbers
    assert main(["sweep", "meta-llama/Llama-3.1-8B", "--chip", "h100", "--pp", "1,2", "--batch", "2"]) == 0
    head, _, *rows = capsys.readouterr().out.splitlines()
    assert head.split()[:3] == ["chip", "tp", "pp"]
    assert [r.split()[2] for r in rows[:2]] == ["1", "2"]
    assert main(["sweep", "meta-llama/Llama-3.1-8B", "--chip", "h100", "--batch", "2"]) == 0
    assert capsys.readouterr().out.split()[:3] == ["chip", "tp", "batch"]  # pp, ep, dp all 1: not shown
