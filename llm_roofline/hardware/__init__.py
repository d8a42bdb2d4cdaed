"""Accelerators: Chip and Link (frozen dataclasses), the TOML catalog, and load_chip / list_chips.

Every number in a chip file is in SI units and carries a source; see chips/README.md for the schema.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import ChipError, closest
from ..units import DTYPES

TOPOLOGIES = ("switch", "full_mesh", "torus")
WRAPAROUND_RULES = ("always", "full_axis", "never")


@dataclass(frozen=True)
class Link:
    """A chip-to-chip link as one chip sees it.

    bytes_per_s: total egress of one chip over this link kind, one direction (H100 NVLink4: 450e9).
    For a torus, link_bytes_per_s is one link, one direction (TPU v5e ICI: 4.5e10), and each axis of
    the torus is a ring whose neighbours are reached in both directions.
    """

    kind: str
    topology: str
    bytes_per_s: float
    latency_s: float
    domain_size: int
    axes: tuple[int, ...] = ()
    link_bytes_per_s: float | None = None
    wraparound: str = "always"
    source: str = ""

    @property
    def collective_bytes_per_s(self) -> float:
        """W in the book's compute-vs-communication rooflines.

        torus (TPU): W_ici = 2 x link_bytes_per_s, one link both directions per axis (book Part 3, "we use the
            bidirectional bandwidth"; Part 5: v5p C / W_ici = 4.59e14 / 1.8e11 = 2550).
        switch / full_mesh (GPU): the per-GPU NVLink (or xGMI / PCIe) egress, ONE direction, bytes_per_s
            (book Part 12 "Rooflines for LLM Scaling on GPUs": W_collective = GPU egress bandwidth,
            H100 450e9, C / W = 990e12 / 450e9 = 2200).
        """
        if self.topology == "torus":
            return 2 * self.link_bytes_per_s
        return self.bytes_per_s


@dataclass(frozen=True)
class Chip:
    name: str
    display_name: str
    vendor: str
    family: str
    aliases: tuple[str, ...]
    dense_flops_per_s: Mapping[str, float]
    hbm_bytes: float
    hbm_bytes_per_s: float
    scaleup: Link
    scaleout: Link | None
    onchip_bytes: float | None = None
    onchip_bytes_per_s: float | None = None
    price_usd_per_hour: float | None = None
    price_source: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    calibration: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""

    def peak_flops_per_s(self, dtype: str) -> float:
        """Dense peak FLOP/s for a compute dtype.

        'vector' (elementwise work outside the matrix units) resolves to the chip's 'vector' entry,
        else its fp32 figure, else bf16. A dtype the chip lacks raises ChipError.
        """
        table = self.dense_flops_per_s
        if dtype == "vector":
            for key in ("vector", "fp32", "bf16"):
                if key in table:
                    return table[key]
        if dtype not in table:
            raise ChipError(f"chip {self.name} has no {dtype} compute; it has {', '.join(table)}")
        return table[dtype]

    def critical_intensity(self, dtype: str = "bf16") -> float:
        """FLOP/byte at which compute time equals HBM time: peak FLOP/s / HBM bytes/s."""
        return self.peak_flops_per_s(dtype) / self.hbm_bytes_per_s

    def scaleup_critical_intensity(self, dtype: str = "bf16") -> float:
        """C / W: FLOP per byte of scale-up traffic at which compute equals communication.

        TPUs: the book's C / W_ici (v5e ~2,200, v5p ~2,550, v6e ~5,100); H100: 989e12 / 450e9 ~ 2,200.
        """
        return self.peak_flops_per_s(dtype) / self.scaleup.collective_bytes_per_s

    def scaleout_critical_intensity(self, dtype: str = "bf16") -> float:
        """C / W_dcn: FLOP per byte of scale-out traffic (v5p ~73,440)."""
        if self.scaleout is None:
            raise ChipError(f"chip {self.name} has no scale-out link")
        return self.peak_flops_per_s(dtype) / self.scaleout.bytes_per_s


# ------------------------------------------------------------------------------------------ loading
def _catalog_dir() -> Path:
    return Path(str(resources.files("llm_roofline.hardware") / "chips"))


def _require(table: Mapping, key: str, where: str, path: str, kind=(int, float)) -> Any:
    if key not in table:
        raise ChipError(f"chip file {path}: missing field {where}{key}")
    value = table[key]
    if kind is str:
        if not isinstance(value, str) or not value:
            raise ChipError(f"chip file {path}: field {where}{key} must be a non-empty string")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ChipError(f"chip file {path}: field {where}{key} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ChipError(f"chip file {path}: field {where}{key} must be positive, got {value!r}")
    return value


def _optional_number(table: Mapping, key: str, where: str, path: str) -> float | None:
    return _require(table, key, where, path) if key in table else None


def _parse_link(table: Mapping, where: str, path: str) -> Link:
    topology = _require(table, "topology", where, path, str)
    if topology not in TOPOLOGIES:
        raise ChipError(f"chip file {path}: {where}topology must be one of {', '.join(TOPOLOGIES)}, got {topology!r}")
    axes: tuple[int, ...] = ()
    link_bps = None
    wrap = "always"
    if topology == "torus":
        raw_axes = table.get("axes")
        if not raw_axes or not all(isinstance(a, int) and a > 0 for a in raw_axes):
            raise ChipError(f"chip file {path}: {where}axes must be a list of positive integers for a torus")
        axes = tuple(raw_axes)
        link_bps = float(_require(table, "link_bytes_per_s", where, path))
        wrap = _require(table, "wraparound", where, path, str)
        if wrap not in WRAPAROUND_RULES:
            raise ChipError(f"chip file {path}: {where}wraparound must be one of {', '.join(WRAPAROUND_RULES)}")
    domain = _require(table, "domain_size", where, path)
    if int(domain) != domain:
        raise ChipError(f"chip file {path}: {where}domain_size must be an integer, got {domain!r}")
    return Link(
        kind=_require(table, "kind", where, path, str),
        topology=topology,
        bytes_per_s=float(_require(table, "bytes_per_s", where, path)),
        latency_s=float(_require(table, "latency_s", where, path)),
        domain_size=int(domain),
        axes=axes,
        link_bytes_per_s=link_bps,
        wraparound=wrap,
        source=str(table.get("source", "")),
    )


def _parse_scaleout(table: Mapping, path: str) -> Link:
    where = "[scaleout]."
    return Link(
        kind=_require(table, "kind", where, path, str),
        topology="switch",
        bytes_per_s=float(_require(table, "bytes_per_s", where, path)),
        latency_s=float(_require(table, "latency_s", where, path)),
        domain_size=int(table.get("domain_size", 1_000_000)),
        source=str(table.get("source", "")),
    )


def chip_from_dict(data: Mapping[str, Any], path: str = "<dict>") -> Chip:
    """Validate a parsed chip file and build a Chip. Errors name the offending field."""
    name = _require(data, "name", "", path, str).lower()
    for section in ("compute", "memory", "scaleup"):
        if not isinstance(data.get(section), dict):
            raise ChipError(f"chip file {path}: missing table [{section}]")
    compute = data["compute"]
    flops: dict[str, float] = {}
    for key, value in compute.items():
        if key == "source" or key.endswith("_source") or key == "note":
            continue
        if key not in DTYPES and key != "vector":
            raise ChipError(f"chip file {path}: unknown dtype [compute].{key}; known: {', '.join(DTYPES)}, vector")
        flops[key] = float(_require(compute, key, "[compute].", path))
    if "bf16" not in flops and "fp16" not in flops:
        raise ChipError(f"chip file {path}: missing field [compute].bf16")
    mem = data["memory"]
    price = data.get("price") or {}
    sources = {s: str(data[s].get("source", "")) for s in ("compute", "memory", "onchip", "scaleup", "scaleout", "price")
               if isinstance(data.get(s), dict)}
    onchip = data.get("onchip") or {}
    return Chip(
        name=name,
        display_name=str(data.get("display_name", name)),
        vendor=str(data.get("vendor", "")),
        family=str(data.get("family", "")),
        aliases=tuple(a.lower() for a in data.get("aliases", [])),
        dense_flops_per_s=MappingProxyType(flops),
        hbm_bytes=float(_require(mem, "hbm_bytes", "[memory].", path)),
        hbm_bytes_per_s=float(_require(mem, "hbm_bytes_per_s", "[memory].", path)),
        scaleup=_parse_link(data["scaleup"], "[scaleup].", path),
        scaleout=_parse_scaleout(data["scaleout"], path) if isinstance(data.get("scaleout"), dict) else None,
        onchip_bytes=_optional_number(onchip, "bytes", "[onchip].", path),
        onchip_bytes_per_s=_optional_number(onchip, "bytes_per_s", "[onchip].", path),
        price_usd_per_hour=_optional_number(price, "usd_per_hour", "[price].", path),
        price_source=" ".join(str(price.get(k, "")) for k in ("source", "date")).strip(),
        sources=MappingProxyType(sources),
        calibration=MappingProxyType(dict(data.get("efficiency") or {})),
        path=path,
    )


def _load_file(path: Path) -> Chip:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ChipError(f"chip file {path}: not valid TOML ({e})") from None
    return chip_from_dict(data, str(path))


@lru_cache(maxsize=None)
def _catalog() -> dict[str, Chip]:
    chips: dict[str, Chip] = {}
    for p in sorted(_catalog_dir().glob("*.toml")):
        chip = _load_file(p)
        chips[chip.name] = chip
    return chips


def _names() -> dict[str, str]:
    """Every accepted name and alias -> canonical name."""
    names = {}
    for chip in _catalog().values():
        names[chip.name] = chip.name
        for a in chip.aliases:
            names[a] = chip.name
    return names


def list_chips() -> list[Chip]:
    """The shipped catalog, sorted by name."""
    return [c for _, c in sorted(_catalog().items())]


def load_chip(name_or_path: "str | Path | Chip") -> Chip:
    """A catalog chip by name or alias (case-insensitive), or a user's chip .toml file."""
    if isinstance(name_or_path, Chip):
        return name_or_path
    text = str(name_or_path).strip()
    p = Path(text).expanduser()
    if text.endswith(".toml") or p.is_file():
        if not p.is_file():
            raise ChipError(f"chip file {text} does not exist")
        return _load_file(p)
    names = _names()
    key = text.lower()
    if key not in names:
        raise ChipError(f"unknown chip {text!r}.{closest(key, names)} (`llm-roofline chips` lists them; "
                        "a path to a .toml file works too)")
    return _catalog()[names[key]]
