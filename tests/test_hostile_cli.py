"""Hostile command lines (issue 12): every user mistake exits 2 with one error line, never a traceback.

argparse's own errors (a malformed int, an unknown choice) print its usage block first; that block is allowed,
the error itself is still one line. Run in-process through cli.main (fast); a few through a subprocess too.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_roofline.cli import main

M = "meta-llama/Llama-3.1-8B"  # 32 attention heads, 8 KV heads, 32 layers (model_configs/.../config.json)
SMALL = "meta-llama/Llama-3.2-1B"
REPO = Path(__file__).resolve().parents[1]


def run(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as e:  # argparse
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def error_lines(err: str) -> list[str]:
    """stderr without argparse's usage block (lines starting 'usage:' and their indented continuations)."""
    return [ln for ln in err.strip().splitlines() if ln.strip() and not ln.startswith(("usage:", " "))]


@pytest.fixture
def hostile_paths(tmp_path):
    """Destinations and chip files that must be refused."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    (tmp_path / "link.csv").symlink_to(outside)
    (tmp_path / "a_folder").mkdir()
    (tmp_path / "a_file").write_text("")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00name = 1")
    (tmp_path / "dir.toml").mkdir()
    os.mkfifo(tmp_path / "fifo.toml")
    return tmp_path


BIG_GRID = ",".join(str(b) for b in range(1, 1001))  # 1,000 batches x 2,001 prompts = 2,001,000 > 2,000,000 points

CASES = [
    # --- from the issue: README examples and crash classes
    (["memory", M, "--chip", "h100", "--tp", "3"], "attention heads = 32 is not divisible by 3"),
    (["memory", M, "--chip", "h100", "--pp", "0"], "--pp must be an integer in [1, 65,536], got 0"),
    (["memory", M, "--chip", "h100", "--weight-dtype", "a,b"], "unknown dtype 'a'"),
    (["memory", M, "--chip", "h100", "--context", "1e20"], "--context expects comma-separated integers"),
    (["memory", M, "--chip", "h100", "--context", "100000000000000000000"],
     "--context must be an integer in [1, 2,147,483,648], got 100000000000000000000"),  # 2**31
    (["estimate", M, "--chip", "h100", "--prompt", str(10**20)], "prompt_len must be an integer in [1, 2,147,483,648]"),
    (["estimate", M, "--chip", "h100", "--batch", str(2**63)], "batch must be an integer in [1, 16,777,216]"),
    (["sweep", M, "--chip", "h100", "--out", "{tmp}/missing/s.csv"], "does not exist"),
    (["sweep", M, "--chip", "h100", "--out", "{tmp}/dir.toml"], "is a directory"),
    (["sweep", M, "--chip", "h100", "--out", "/dev/full"], "not a regular file"),
    (["sweep", M, "--chip", "h100", "--out", "/proc/x.csv"], "cannot write /proc/x.csv"),
    (["sweep", M, "--chip", "h100", "--out", "{tmp}/link.csv"], "it is a symbolic link"),
    (["plot", "roofline", M, "--chip", "h100", "--dpi", "100000", "--out", "{tmp}/r.png"],
     "dpi must be an integer in [30, 600], got 100000"),
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--tp", "0"], "--tp must be an integer in [1,"),
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--top", "-1"], "--top must be an integer in [0,"),
    (["sweep", M, "--chip", "h100", "--batch", "1,,2"], "no empty item"),
    (["estimate", "org/not-shipped", "--chip", "h100", "--allow-download"], "Hugging Face Hub is unreachable"),
    # --- bad numbers
    (["estimate", M, "--chip", "h100", "--batch", "-1"], "batch must be an integer in [1, 16,777,216], got -1"),
    (["estimate", M, "--chip", "h100", "--batch", "nan"], "invalid int value: 'nan'"),
    (["estimate", M, "--chip", "h100", "--batch", "1e400"], "invalid int value: '1e400'"),
    (["estimate", M, "--chip", "h100", "--prompt", "abc"], "invalid int value: 'abc'"),
    (["estimate", M, "--chip", "h100", "--gen", "0"], "gen_len must be an integer in [1,"),
    (["estimate", M, "--chip", "h100", "--tp", "65537"], "tp must be an integer in [1, 65,536], got 65537"),
    (["estimate", M, "--chip", "h100", "--batch", "3", "--pp", "2"], "batch must be a multiple of pp x attention_dp = 2"),
    (["sweep", M, "--chip", "h100", "--batch", "1,2,"], "no empty item"),
    (["sweep", M, "--chip", "h100", "--prompt", "0"], "--prompt must be an integer in [1, 2,147,483,648], got 0"),
    (["sweep", M, "--chip", "h100", "--gen", "2147483649"], "--gen must be an integer in [1, 2,147,483,648]"),
    (["sweep", M, "--chip", "h100", "--tp", "2", "--ep", "4"], "moe_ep=4 must divide the 2 chips"),
    (["sweep", M, "--chip", "h100", "--batch", BIG_GRID, "--prompt", ",".join(map(str, range(1, 2002)))],
     "2,001,000 grid points is above the bound of 2,000,000"),
    (["sweep", M, "--chip", ",", "--batch", "1"], "expected at least one chip"),
    # serving layouts: validated where used, refused where a command would ignore them
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--qps", "1", "--attention-dp", "0"],
     "attention_dp must be an integer in [1, 65,536], got 0"),
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--static", "--attention-dp", "2"],
     "--attention-dp, --moe-dispatch and --host none need the serving model"),
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--static", "--moe-dispatch", "all_to_all"],
     "--attention-dp, --moe-dispatch and --host none need the serving model"),
    # --host none drops host time where there is none to drop (static batches, the non-serving charts): it was ignored
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--static", "--host", "none"],
     "--attention-dp, --moe-dispatch and --host none need the serving model"),
    (["plot", "roofline", M, "--chip", "h100", "--out", "{tmp}/r.png", "--host", "none"],
     "--host none is for the serving chart (plot serving)"),
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--qps", "1", "--moe-ep", "0"],
     "unrecognized arguments: --moe-ep 0"),
    (["memory", M, "--chip", "h100", "--attention-dp", "2"], "unrecognized arguments: --attention-dp 2"),
    (["estimate", M, "--chip", "h100", "--routing-skew", "nan"], "routing_skew must be a number in [1, moe_ep=1]"),
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--qps", "nan"], "qps must be a number in (0, 1,000,000,000] requests/s, got nan"),
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--price", "h100=abc"], "--price expects CHIP=USD"),
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--gpu-memory-utilization", "1.5"], "gpu_memory_utilization must be a number in (0, 1]"),
    (["plan", M, "--chips", "h100", "--prompt", "128", "--gen", "8", "--max-chips", "0"], "--max-chips must be an"),
    (["memory", M, "--chip", "h100", "--gpu-memory-utilization", "0"], "gpu_memory_utilization must be a number in (0, 1]"),
    (["memory", M, "--chip", "h100", "--gen", "-5"], "--gen must be an integer in [1,"),
    # an empty number list was an internal error (IndexError); a knob above the chip's default token budget says so
    (["serve", M, "--chip", "h100", "--concurrency", ","], "take numbers"),
    (["serve", M, "--chip", "h100", "--concurrency", "8", "--max-num-seqs", ""], "take numbers"),
    (["serve", M, "--chip", "a100", "--concurrency", "8", "--max-num-seqs", "4096"],
     "vLLM's default on a100-80gb: give max_num_batched_tokens too"),
    # a huge knob was refused as an internal "decode_batch must be ..." after the step tables were sized
    (["serve", M, "--chip", "h100", "--concurrency", "8", "--max-num-seqs", str(10**15)],
     "max_num_seqs must be an integer in [1, 16,777,216], got 1000000000000000"),
    (["serve", M, "--chip", "h100", "--concurrency", "8", "--max-num-batched-tokens", str(10**8)],
     "max_num_batched_tokens must be an integer in [1, 16,777,216]"),
    # --- unknown names, bad formats, bad files
    (["estimate", M, "--chip", "h1"], "unknown chip 'h1'"),
    (["estimate", "meta-llama/Llama-9", "--chip", "h100"], "unknown model 'meta-llama/Llama-9'"),
    (["estimate", M, "--chip", "h100", "--format", "xml"], "invalid choice: 'xml'"),
    (["serve", M, "--chip", "h100", "--concurrency", "8", "--moe-dispatch", "deepep"], "invalid choice: 'deepep'"),
    (["estimate", M, "--chip", "{tmp}/binary.toml"], "not UTF-8 text"),
    (["estimate", M, "--chip", "{tmp}/dir.toml"], "is a directory"),
    (["estimate", M, "--chip", "{tmp}/fifo.toml"], "not a regular file"),
    (["estimate", M, "--chip", "{tmp}/none.toml"], "does not exist"),
    # a folder given as the measured CSV was reported as missing
    (["calibrate", "{tmp}/dir.toml", "--chip", "h100"], "dir.toml is a directory"),
    (["calibrate", "{tmp}/none.csv", "--chip", "h100"], "none.csv does not exist"),
    (["report", SMALL, "--chip", "h100", "--out", "/dev/full"], "exists and is not a folder"),
    (["report", SMALL, "--chip", "h100", "--out", "{tmp}/a_file"], "exists and is not a folder"),
    (["plot", "roofline", SMALL, "--chip", "h100", "--dpi", "0", "--out", "{tmp}/r.png"], "dpi must be an integer"),
    # the memory chart built its footprint at prompt 0 and failed inside matplotlib (an internal error, exit 1)
    (["plot", "memory", SMALL, "--chip", "h100", "--prompt", "0", "--out", "{tmp}/m.png"],
     "prompt_len must be an integer in [1, 2,147,483,648], got 0"),
    (["plot", "roofline", SMALL, "--chip", "h100", "--out", "{tmp}/dir.toml"], "is a directory"),
    (["plot", "roofline", SMALL, "--chip", "h100", "--out", "{tmp}/link.csv"], "symbolic link"),
]


@pytest.mark.parametrize("argv,needle", CASES, ids=[" ".join(a[:1] + a[2:])[:60] for a, _ in CASES])
def test_hostile_command_line_exits_2_with_one_line(capsys, monkeypatch, hostile_paths, argv, needle):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the same answer with or without a network
    argv = [a.replace("{tmp}", str(hostile_paths)) for a in argv]
    code, out, err = run(capsys, argv)
    lines = error_lines(err)
    assert code == 2, (code, err)
    assert "Traceback" not in err + out
    assert len(lines) == 1 and lines[0].startswith("llm-roofline"), err
    assert needle in lines[0], lines[0]
    assert (hostile_paths / "outside.txt").read_text() == "precious"  # never written through the symlink


@pytest.mark.parametrize("argv", [["estimate", M, "--chip", "h100", "--prompt", "1" + "0" * 5000],
                                  ["estimate", M, "--chip", "h100", "--format", "x" * 300],
                                  ["estimate", M, "--chip", "h100", "y" * 300]], ids=["int", "choice", "unrecognized"])
def test_a_rejected_argument_is_echoed_cut(capsys, argv):
    """argparse echoed a 5,001-character --prompt whole: a 5,000-character error line. Cut as errors.shown cuts a value:
    60 characters, the last 3 '...' (with argparse's opening quote, 56 of the argument's)."""
    code, out, err = run(capsys, argv)
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1, err
    assert argv[-1][:56] + "..." in lines[0] and argv[-1][:58] not in lines[0] and len(lines[0]) < 200, lines[0]


def test_readme_examples_run(capsys, tmp_path):
    # README.md's quick-start lines (report/plan/calibrate are covered elsewhere) and the sweep example
    for argv in (["estimate", "meta-llama/Llama-3.1-70B", "--chip", "h100", "--tp", "4", "--batch", "16", "--prompt",
                  "4096", "--gen", "512"],
                 ["sweep", M, "--chip", "h100,mi300x", "--batch", "1,8,64,256", "--prompt", "512,8192", "--out",
                  str(tmp_path / "sweep.csv")],
                 ["sweep", M, "--chip", "h100", "--tp", "2", "--batch", "8"],
                 ["memory", M, "--chip", "h100", "--context", "8192,32768,131072"]):
        code, out, err = run(capsys, argv)
        assert code == 0 and err == "", (argv, err)
    # 2 chips x 4 batches x 2 prompts = 16 rows + 1 header line
    assert (tmp_path / "sweep.csv").read_text().count("\n") == 17


def test_memory_with_some_invalid_rows_still_prints_the_valid_ones(capsys):
    # tp=3 does not divide 32 heads, tp=2 does: one row with the note, one with numbers
    code, out, _ = run(capsys, ["memory", M, "--chip", "h100", "--tp", "2,3", "--context", "8192"])
    assert code == 0 and "not divisible by 3" in out
    assert "nan" not in out.lower().replace("nano", "")  # a valid row has no note, not "nan"


def test_plot_prints_the_path_it_wrote(capsys, tmp_path):
    code, out, _ = run(capsys, ["plot", "breakdown", SMALL, "--chip", "h100", "--dpi", "30", "--out",
                                str(tmp_path / "chart")])
    assert code == 0 and out.strip() == f"wrote {tmp_path / 'chart.png'}"  # matplotlib appends .png
    assert (tmp_path / "chart.png").is_file() and not (tmp_path / "chart").exists()


def test_sweep_out_overwrites_a_regular_file_atomically(capsys, tmp_path):
    dest = tmp_path / "s.csv"
    dest.write_text("old")
    code, out, _ = run(capsys, ["sweep", SMALL, "--chip", "h100", "--batch", "1,2", "--out", str(dest)])
    assert code == 0 and f"wrote 2 rows to {dest}" in out
    assert dest.read_text().count("\n") == 3 and sorted(p.name for p in tmp_path.iterdir()) == ["s.csv"]


def test_internal_error_is_one_line_exit_1(capsys, monkeypatch):
    import llm_roofline.cli as cli

    def bug(args):
        raise KeyError("oops")

    monkeypatch.setattr(cli, "cmd_chips", bug)
    code, _, err = run(capsys, ["chips"])
    assert code == 1 and "Traceback" not in err
    assert err.strip() == ("llm-roofline: internal error: KeyError: 'oops' (please report it; "
                           "LLM_ROOFLINE_TRACEBACK=1 shows the traceback)")


def test_system_errors_are_one_line_exit_2(capsys, monkeypatch):
    import llm_roofline.cli as cli

    for exc in (RecursionError("maximum recursion depth exceeded"), MemoryError(), UnicodeError("bad"),
                PermissionError(13, "Permission denied")):
        monkeypatch.setattr(cli, "cmd_chips", lambda args, exc=exc: (_ for _ in ()).throw(exc))
        code, _, err = run(capsys, ["chips"])
        assert code == 2 and len(err.strip().splitlines()) == 1 and type(exc).__name__ in err


def test_help_documents_exit_codes_and_bounds(capsys):
    code, out, _ = run(capsys, ["--help"])
    assert code == 0 and "Exit codes" in out and "internal error" in out and "2^24" in out


@pytest.mark.parametrize("argv", [
    ["memory", M, "--chip", "h100", "--tp", "3"],
    ["plot", "memory", M, "--chip", "h100", "--dpi", "100000", "--out", "x.png"],
    ["sweep", M, "--chip", "h100", "--out", "/dev/full"],
    # a load no deployment serves: the queueing solve runs the saturated point to inf (numpy printed 3 warnings)
    ["serve", M, "--chip", "h100", "--qps", "1e300"],
])
def test_hostile_subprocess_has_no_traceback(argv):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "llm_roofline", *argv], capture_output=True, text=True, env=env,
                       cwd=REPO, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr + r.stdout
    assert len(r.stderr.strip().splitlines()) == 1


def test_allow_download_offline_fails_fast_with_one_line(capsys, monkeypatch):
    """No network: one line within the connect timeout (3 s), not 24 s of retries (issue 12)."""
    import socket
    import time

    for var in ("HF_HUB_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)

    def unreachable(address, timeout=None):
        assert timeout == 3.0 and address == ("huggingface.co", 443)
        raise OSError(101, "Network is unreachable")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    t0 = time.perf_counter()
    code, _, err = run(capsys, ["estimate", "org/not-shipped", "--chip", "h100", "--allow-download"])
    assert time.perf_counter() - t0 < 3.0
    assert code == 2 and err.strip() == (
        "llm-roofline: error: cannot download 'org/not-shipped': the Hugging Face Hub is unreachable "
        "(huggingface.co:443: Network is unreachable); download its config.json yourself and pass the file or its "
        "folder instead")
    # a shipped id never needs the hub, even with --allow-download
    code, _, err = run(capsys, ["estimate", SMALL, "--chip", "h100", "--allow-download", "--gen", "2"])
    assert code == 0 and err == ""


def test_a_load_far_past_saturation_prints_short_numbers(capsys):
    # 1e30 clients: the queue's waits run to ~1e29 s (about 1e30 clients / 10 req/s), which sig3 wrote out as
    # 29-digit integers; from 1e9 on it gives an exponent, below it the digits as before (1234 -> '1230')
    from llm_roofline.units import sig3

    assert (sig3(9.86e28), sig3(-2.5e12), sig3(1234.0), sig3(999_999_999.0)) == ("9.86e+28", "-2.5e+12", "1230",
                                                                                    "1000000000")
    code, out, _ = run(capsys, ["serve", M, "--chip", "h100", "--concurrency", "1e30"])
    assert code == 0 and re.search(r"\de\+2\d s", out) and not re.search(r"\d{13}", out)
