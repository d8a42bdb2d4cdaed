"""Locating and reading config.json files: shipped ids, directories, paths, hub downloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ModelConfigError, closest


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


def shipped_index() -> dict[str, str]:
    """lower-case id -> id, for every <org>/<name>/config.json under the shipped folder."""
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
    p = Path(x).expanduser()
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ModelConfigError(f"directory {x!r} holds no config.json")
        return p / "config.json", p.name
    if p.is_file():
        return p, (p.parent.name if p.name == "config.json" else p.stem)
    shipped = shipped_index()
    ident = shipped.get(x.strip().strip("/").lower())
    if ident is not None:
        org, model = ident.split("/")
        return shipped_root() / org / model / "config.json", ident
    if allow_download and _looks_like_hub_id(x):
        return Path(_download(x)), x
    hint = closest(x, shipped.values())
    how = "" if allow_download else " (pass allow_download=True to fetch a hub id's config.json)"
    raise ModelConfigError(f"unknown model {x!r}: not a shipped id, a directory or a config.json{how}.{hint}")


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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ModelConfigError(f"{path} is not valid JSON: {e}") from e
    except OSError as e:
        raise ModelConfigError(f"cannot read {path}: {e}") from e
    if not isinstance(data, dict):
        raise ModelConfigError(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data
