"""Every command the README shows runs as written (network-free, on the shipped data): each `llm-roofline ...`
line of its fenced blocks exits 0, and each Python block runs. The README cannot drift from the code again."""

import re
import shlex
from pathlib import Path

import pytest

from llm_roofline.cli import main

REPO = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"^```[^\n]*\n(.*?)^```", (REPO / "README.md").read_text(), re.M | re.S)


def _commands() -> list[str]:
    out = []
    for block in BLOCKS:
        for line in block.splitlines():
            for part in line.split("&&"):
                part = part.split("  #")[0].strip()
                if part.startswith("llm-roofline "):
                    out.append(part)
    return out


def _python_blocks() -> list[str]:
    return [b for b in BLOCKS if "import llm_roofline" in b]


def test_the_readme_shows_commands_and_python():
    assert len(_commands()) >= 10 and _python_blocks()


@pytest.fixture
def in_a_fresh_folder(tmp_path, monkeypatch):
    # a user's clone: the repo's benchmarks/data is there; outputs land in a scratch folder, and so does the user
    # chip folder: a README `calibrate --write` must not turn the shipped h100-sxm into the sample's fit for the
    # tests that run after this one
    (tmp_path / "benchmarks").symlink_to(REPO / "benchmarks")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LLM_ROOFLINE_CHIPS", str(tmp_path / "chips"))
    return tmp_path


@pytest.mark.parametrize("command", _commands())
def test_readme_command_runs(command, in_a_fresh_folder, capsys):
    code = main(shlex.split(command)[1:])
    out, err = capsys.readouterr()
    assert code == 0, f"{command}\n{err[-2000:]}"
    assert out.strip(), command


@pytest.mark.parametrize("block", _python_blocks())
def test_readme_python_runs(block, in_a_fresh_folder):
    exec(compile(block, "README.md", "exec"), {})
