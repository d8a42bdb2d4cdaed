"""Safe output writing: every file the package writes goes through here.

A file is written to a temporary file in the destination's own folder and renamed over the destination with
os.replace, so a reader never sees half a file and a failed write leaves the old file as it was. The
destination must be a regular file or absent: a symbolic link is refused (a symlinked summary.json must not
overwrite a file outside the output folder), and so are directories, devices and FIFOs. Every OSError becomes
one OutputError naming the path and the reason.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import Callable, IO

from .bounds import check_dpi, check_figure_pixels
from .errors import OutputError

_TEMP_ATTEMPTS = 8


def check_destination(path) -> Path:
    """path as a Path if a file may be written there: its folder exists and it is absent or a regular file."""
    p = Path(path)
    if str(path) == "" or p.name in ("", ".", ".."):
        raise OutputError(f"cannot write {str(path)!r}: not a file name")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise _output_error(p, e) from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise OutputError(f"refusing to write {p}: it is a symbolic link (remove it or choose another path)")
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"cannot write {p}: it is a directory; give a file name")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(f"cannot write {p}: not a regular file (a device, FIFO or socket)")
    parent = p.parent
    if not parent.is_dir():
        raise OutputError(f"cannot write {p}: folder {parent} does not exist")
    return p


def check_writable_later(path) -> Path:
    """path as a Path if write_* can write it there once ensure_dir has made its folder: the nearest existing folder
    above it takes a new file (a temporary one, made and removed) and, where its own folder exists, it passes
    check_destination; an OutputError otherwise. For work that takes long before it writes (a fit)."""
    p = Path(path)
    try:
        above = p.parent
        while not above.exists() and above != above.parent:
            above = above.parent
        if not above.is_dir():
            raise OutputError(f"cannot write {p}: {above} is not a folder")
    except OSError as e:
        raise _output_error(p, e) from None
    if above == p.parent:
        check_destination(p)
    tmp, f = _open_temp(above / p.name)
    f.close()
    _remove_quietly(tmp)
    return p


def ensure_dir(path) -> Path:
    """Create folder path (and its parents) if missing; an OutputError if that fails or path is not a folder."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"cannot write into {p}: it exists and is not a folder") from None
    except OSError as e:
        raise _output_error(p, e) from None
    return p


def write_with(path, write: Callable[[IO[bytes]], None]) -> str:
    """Call write(binary file) on a temporary file beside path, then rename it to path. Returns str(path)."""
    p = check_destination(path)
    tmp, f = _open_temp(p)
    try:
        with f:
            write(f)
        _keep_mode(p, tmp)
        os.replace(tmp, p)
    except OSError as e:
        _remove_quietly(tmp)
        raise _output_error(p, e) from None
    except BaseException:
        _remove_quietly(tmp)
        raise
    return str(p)


def write_bytes(path, data: bytes) -> str:
    """Write data to path (atomically, never through a symlink). Returns str(path)."""
    return write_with(path, lambda f: f.write(data))


def write_text(path, text: str, encoding: str = "utf-8") -> str:
    """Write text to path as UTF-8 (atomically, never through a symlink). Returns str(path)."""
    return write_bytes(path, text.encode(encoding))


def figure_path(path) -> Path:
    """The file matplotlib's savefig would write: path, with '.png' appended when it has no suffix."""
    p = Path(path)
    if str(path) == "" or p.name in ("", ".", ".."):
        raise OutputError(f"cannot write {str(path)!r}: not a file name")
    return p if p.suffix else p.with_name(p.name + ".png")


def save_figure(figure, path, dpi: int) -> str:
    """figure.savefig to a temporary file, then rename to figure_path(path). Returns the real path written.

    The format comes from the suffix; an unknown suffix is an OutputError listing the supported ones. dpi and the
    image size in pixels are checked against bounds.BOUNDS first (a huge dpi would exhaust memory)."""
    dpi = check_dpi(dpi)
    check_figure_pixels(*figure.get_size_inches(), dpi)
    p = figure_path(path)
    fmt = p.suffix[1:].lower()
    supported = figure.canvas.get_supported_filetypes()
    if fmt not in supported:
        raise OutputError(f"cannot write {p}: unknown image format {fmt!r}; use one of {', '.join(sorted(supported))}")
    return write_with(p, lambda f: figure.savefig(f, dpi=dpi, format=fmt))


# ----------------------------------------------------------------------------------------- helpers
def _output_error(p: Path, e: OSError) -> OutputError:
    reason = e.strerror or str(e) or type(e).__name__
    return OutputError(f"cannot write {p}: {reason}")


def _open_temp(p: Path) -> tuple[Path, IO[bytes]]:
    """A new file '.<name>.<random>.tmp' beside p, created exclusively (mode 0o666 less the umask)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(_TEMP_ATTEMPTS):
        tmp = p.with_name(f".{p.name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        except OSError as e:
            raise _output_error(p, e) from None
        return tmp, os.fdopen(fd, "wb")
    raise OutputError(f"cannot write {p}: no free temporary name in {p.parent}")


def _keep_mode(p: Path, tmp: Path) -> None:
    """An overwritten file keeps its permission bits."""
    try:
        mode = stat.S_IMODE(os.stat(p).st_mode)
    except FileNotFoundError:
        return
    os.chmod(tmp, mode)


def _remove_quietly(tmp: Path) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass
