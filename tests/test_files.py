"""files.py: atomic writes beside the destination, never through a symlink; OSErrors become one OutputError."""

import os
import stat

import pytest

import llm_roofline as lr
from llm_roofline import files
from llm_roofline.errors import OutputError


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_write_text_and_bytes_round_trip(tmp_path):
    p = tmp_path / "a.txt"
    assert files.write_text(p, "héllo\n") == str(p)
    assert p.read_bytes() == "héllo\n".encode("utf-8")  # UTF-8: é is 2 bytes, 7 bytes in all
    assert len(p.read_bytes()) == 7
    assert files.write_bytes(p, b"\x00\x01") == str(p)
    assert p.read_bytes() == b"\x00\x01" and _leftovers(tmp_path) == []


def test_overwrite_keeps_permission_bits(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("old")
    os.chmod(p, 0o640)
    files.write_text(p, "new")
    assert p.read_text() == "new" and stat.S_IMODE(os.stat(p).st_mode) == 0o640


@pytest.fixture
def symlinked_summary(tmp_path):
    """A report folder whose summary.json is a symbolic link to a precious file outside it: (folder, outside)."""
    outside = tmp_path / "outside.json"
    outside.write_text("precious")
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "summary.json").symlink_to(outside)
    return folder, outside


def test_symlink_destination_is_refused_and_target_untouched(symlinked_summary):
    folder, outside = symlinked_summary
    with pytest.raises(OutputError, match="refusing to write .*summary.json: it is a symbolic link"):
        files.write_text(folder / "summary.json", "{}")
    assert outside.read_text() == "precious"


@pytest.mark.parametrize("make,message", [
    (lambda d: d / "missing" / "x.csv", "folder .*missing does not exist"),
    (lambda d: d, "it is a directory"),
    (lambda d: _fifo(d), r"not a regular file \(a device, FIFO or socket\)"),
    (lambda d: "/dev/full", "not a regular file"),
    (lambda d: "/proc/no_such_dir_here/x.csv", "does not exist"),
    (lambda d: "", "not a file name"),
])
def test_unwritable_destinations_are_one_line(tmp_path, make, message):
    with pytest.raises(OutputError, match=message) as e:
        files.write_text(make(tmp_path), "x")
    assert "\n" not in str(e.value)


def _fifo(d):
    p = d / "pipe"
    os.mkfifo(p)
    return p


def test_failed_write_leaves_old_file_and_no_temp(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("old")

    def boom(f):
        f.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match="cannot write .*a.txt: No space left on device"):
        files.write_with(p, boom)
    assert p.read_text() == "old" and _leftovers(tmp_path) == []


def test_unwritable_folder_is_one_line(tmp_path):
    """/proc accepts no new files even for root: the OSError of creating the temporary file becomes one line."""
    with pytest.raises(OutputError, match="cannot write /proc/x.csv"):
        files.write_text("/proc/x.csv", "x")


def test_ensure_dir(tmp_path):
    assert files.ensure_dir(tmp_path / "a" / "b").is_dir()
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputError, match="exists and is not a folder"):
        files.ensure_dir(tmp_path / "f")


def test_figure_path_and_save_figure(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    assert files.figure_path("x") == files.figure_path("x.png")  # matplotlib appends .png to a bare name
    with pytest.raises(OutputError, match="not a file name"):
        files.figure_path("")
    assert str(files.figure_path("dir/x.svg")) == "dir/x.svg"
    fig = plt.figure(figsize=(1, 1))
    try:
        out = files.save_figure(fig, tmp_path / "chart", 50)
        assert out == str(tmp_path / "chart.png")
        assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the PNG signature
        with pytest.raises(OutputError, match="unknown image format 'xyz'"):
            files.save_figure(fig, tmp_path / "chart.xyz", 50)
        with pytest.raises(lr.ScenarioError, match=r"dpi must be an integer in \[30, 600\], got 100000"):
            files.save_figure(fig, tmp_path / "big.png", 100_000)  # the API path too, not only the CLI
        fig.set_size_inches(200, 2)  # (200 x 600) x (2 x 600) = 144 M pixels > 100 M
        with pytest.raises(lr.ScenarioError, match="144,000,000 pixels"):
            files.save_figure(fig, tmp_path / "wide.png", 600)
    finally:
        plt.close(fig)
    assert _leftovers(tmp_path) == []


def test_report_refuses_symlinked_summary(symlinked_summary):
    out, outside = symlinked_summary
    from llm_roofline.report.build import write_report

    with pytest.raises(lr.RooflineError, match="symbolic link"):
        write_report("meta-llama/Llama-3.2-1B", ["h100"], out, batch=1, prompt_len=128, gen_len=8, charts=())
    assert outside.read_text() == "precious"
