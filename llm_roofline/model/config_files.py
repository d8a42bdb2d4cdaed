"""Locating and reading config.json files: shipped ids, directories, paths, hub downloads."""

from __future__ import annotations

import json
import os
import stat
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ModelConfigError, closest


@lru_cache(maxsize=None)
def shipped_root():
    """The shipped config folder: the installed package llm_roofline.model_configs, or <repo>/model_configs."""
    try:
        from importlib.resources import files

        root = files("llm_roofline.model_configs")
        if root.is_dir():
            return root
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parents[2] / "model_configs"


MAX_CONFIG_BYTES = 64 << 20  # a config.json is kilobytes; 64 MiB is not a config
_INDEX_LOCK = threading.Lock()
_INDEX: dict[str, str] | None = None


def shipped_index() -> dict[str, str]:
    """lower-case id -> id, for every <org>/<name>/config.json under the shipped folder (scanned once, thread-safe)."""
    global _INDEX
    with _INDEX_LOCK:
        if _INDEX is None:
            _INDEX = _scan_shipped()
        return dict(_INDEX)


def _scan_shipped() -> dict[str, str]:
    root = shipped_root()
    index = {}
    if not root.is_dir():
        return index
    for org in root.iterdir():
        if not org.is_dir() or org.name.startswith(("_", ".")):
            continue
        for model in org.iterdir():
            if model.is_dir() and (model / "config.json").is_file():
                ident = f"{org.name}/{model.name}"
                index[ident.lower()] = ident
    return index


def locate(x: str, allow_download: bool) -> tuple[Any, str]:
    """(path of a config.json, model name) for a local path, a shipped id, or a hub id (download)."""
    if "\x00" in x or len(x) > 4096:
        raise ModelConfigError(f"not a model id or path: {x[:60]!r}")
    p = Path(x).expanduser()
    if _present(p):
        if p.is_dir():
            if not (p / "config.json").is_file():
                raise ModelConfigError(f"directory {x!r} holds no config.json")
            return p / "config.json", p.name
        if p.is_file():
            return p, (p.parent.name if p.name == "config.json" else p.stem)
        if p.is_symlink() or p.exists():  # a FIFO, a device, a socket, a dangling or looping link: never opened
            raise ModelConfigError(f"{x!r} is not a regular file or a directory holding config.json")
    shipped = shipped_index()
    ident = shipped.get(x.strip().strip("/").lower())
    if ident is not None:
        org, model = ident.split("/")
        return shipped_root() / org / model / "config.json", ident
    if allow_download and _looks_like_hub_id(x):
        return Path(_download(x)), x
    hint = closest(x, shipped.values())
    how = "" if allow_download else (" (to fetch a hub id's config.json: --allow-download on the command line, "
                                     "allow_download=True in Python; offline, download the repo's config.json and "
                                     "pass its path; gated repos need a Hugging Face token: `hf auth login`)")
    raise ModelConfigError(f"unknown model {x!r}: not a shipped id, a directory or a config.json{how}.{hint}")


def _present(p: Path) -> bool:
    """False when nothing is at p (one lstat: a shipped id is not a local path); True otherwise, and whenever
    lstat fails otherwise (the checks above decide)."""
    try:
        os.lstat(p)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True
    return True


def _looks_like_hub_id(x: str) -> bool:
    parts = x.split("/")
    return len(parts) == 2 and all(parts) and not x.endswith(".json")


def _download(repo: str) -> str:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as e:
        raise ModelConfigError(f"cannot download {repo!r}: huggingface_hub is not installed") from e
    try:
        return hf_hub_download(repo, "config.json")
    except Exception as e:  # offline, gated, missing repo: one line for the user
        raise ModelConfigError(f"cannot download config.json of {repo!r}: {type(e).__name__}: "
                               f"{str(e).splitlines()[0] if str(e) else ''}") from e


def read_json(path) -> dict:
    """The JSON object in a config file: a regular file of at most MAX_CONFIG_BYTES, UTF-8, an object at the top."""
    try:
        info = path.stat() if isinstance(path, Path) else None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise ModelConfigError(f"{path} is not a regular file")
        if info is not None and info.st_size > MAX_CONFIG_BYTES:
            raise ModelConfigError(f"{path} is {info.st_size:,} bytes; a config.json is at most {MAX_CONFIG_BYTES:,}")
        data = path.read_bytes()
    except OSError as e:
        raise ModelConfigError(f"cannot read {path}: {e.strerror or type(e).__name__}") from e
    return parse_json(data, str(path))


def parse_json(data: bytes, where: str) -> dict:
    """A JSON object from UTF-8 bytes; every malformation (encoding, syntax, depth, huge integers) is one line."""
    if len(data) > MAX_CONFIG_BYTES:
        raise ModelConfigError(f"{where} is {len(data):,} bytes; a config.json is at most {MAX_CONFIG_BYTES:,}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ModelConfigError(f"{where} is not UTF-8 text (byte {e.start}); save config.json as UTF-8") from e
    if not text.strip():
        raise ModelConfigError(f"{where} is empty; a config.json holds a JSON object")
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as e:
        raise ModelConfigError(f"{where} is not valid JSON: {e}") from e
    except RecursionError as e:
        raise ModelConfigError(f"{where} is not a config: JSON nested too deep to read") from e
    except ValueError as e:  # an integer literal past Python's digit limit
        raise ModelConfigError(f"{where} is not a config: {str(e).splitlines()[0][:100]}") from e
    if not isinstance(parsed, dict):
        raise ModelConfigError(f"{where} must hold a JSON object, got {type(parsed).__name__}")
    return parsed
