"""Accelerators: Chip and Link (frozen dataclasses), the TOML catalog, and load_chip / list_chips.

Every number in a chip file is in SI units and carries a source; see chips/README.md for the schema.
"""

from __future__ import annotations

import math
import os
import stat
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import ChipError, ScenarioError, closest, shown
from ..units import DTYPES

TOPOLOGIES = ("switch", "full_mesh", "torus")
WRAPAROUND_RULES = ("always", "full_axis", "never")

# Physical range of every number a chip file may hold: key -> (smallest, largest, unit). Generous: a value
# outside is a typo (a unit slip of 1e3 or more), not a chip. A '>' marks an exclusive lower end.
# [compute] covers every dtype key; 'link.' keys hold for [scaleup] and [scaleout]; 'efficiency.' for every
# [efficiency.<family>] table.
CHIP_RANGES: dict[str, tuple[float, float, str]] = {
    "compute": (1e9, 1e18, "FLOP/s"),
    "memory.hbm_bytes": (1e6, 1e15, "bytes"),
    "memory.driver_total_bytes": (1e6, 1e15, "bytes"),
    "memory.hbm_bytes_per_s": (1e6, 1e16, "bytes/s"),
    "onchip.bytes": (1e3, 1e13, "bytes"),
    "onchip.bytes_per_s": (1e6, 1e17, "bytes/s"),
    "onchip.units": (1, 1e5, "SMs / compute units"),
    "link.bytes_per_s": (1e6, 1e16, "bytes/s"),
    "link.link_bytes_per_s": (1e6, 1e16, "bytes/s"),
    "link.latency_s": (1e-9, 1e-1, "s"),
    "link.domain_size": (1, 1e6, "chips"),
    "link.axes": (1, 1e6, "chips"),
    "price.usd_per_hour": (0, 1e4, "USD per chip-hour, > 0"),
    "efficiency.compute_max": (0, 1, "fraction of peak, > 0"),
    "efficiency.memory_max": (0, 1, "fraction of peak, > 0"),
    "efficiency.comm_max": (0, 1, "fraction of peak, > 0"),
    "efficiency.compute_tokens_half": (0, 1e9, "tokens"),
    "efficiency.memory_tokens_half": (0, 1e9, "tokens"),
    "efficiency.overhead_s": (0, 1, "s"),
    # fit only (the kernel tables' replays from L2): an L2 at most 11x the DRAM rate. H100's measured L2 reads 5.5 TB/s,
    # 1.6x its HBM (h100-sxm.toml [onchip]); the L40S decode rows read theirs at 5.3x its GDDR6. Above the rate the
    # rows' floors and compute take over, the loss goes flat and an unbounded fit wandered off (L40S moe: 507)
    "efficiency.memory_l2_extra": (0, 10, "x the HBM rate, the gain of an L2 read"),
    "efficiency.memory_token_tile": (0, 4096, "tokens per tile of a fused expert kernel"),
    "efficiency.memory_serial": (0, 1, "share of the hidden load time charged (0 overlapped, 1 not)"),
}
_EXCLUSIVE_LOW = ("price.usd_per_hour", "efficiency.compute_max", "efficiency.memory_max", "efficiency.comm_max")
MAX_CHIP_FILE_BYTES = 10_000_000  # shipped files are < 10 kB


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
    # the switch itself reduces (NVLink SHARP, NVSwitch gen 3 and later: multimem loads reduce in the switch,
    # stores multicast), so an all-reduce moves V each way per GPU instead of 2(n-1)/n V (collectives.py)
    switch_reduction: bool = False

    @property
    def nvlink_switch(self) -> bool:
        """An NVLink switch: every GPU of the domain reaches every other at full bandwidth in one step (PCIe switches
        run NCCL rings: peer-to-peer over PCIe is not used for direct collectives)."""
        return self.topology == "switch" and "nvlink" in self.kind.lower()

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
    onchip_units: int | None = None  # SMs (compute units) that run a kernel's CTAs: gemm_tiles' waves
    price_usd_per_hour: float | None = None
    price_source: str = ""
    driver_total_bytes: float | None = None
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

    @property
    def engine_capacity_bytes(self) -> float:
        """The memory a serving engine's memory fraction applies to (vLLM: gpu_memory_utilization x the total
        torch.cuda.mem_get_info reports): the driver's total where the chip file sources it ([memory]
        driver_total_bytes: H100 SXM 85.0e9 for the datasheet's 80 GB), else the datasheet capacity (hbm_bytes)."""
        return self.hbm_bytes if self.driver_total_bytes is None else self.driver_total_bytes

    @property
    def engine_capacity_label(self) -> str:
        """What engine_capacity_bytes is, for text: 'driver total' or 'HBM' (the datasheet figure)."""
        return "HBM" if self.driver_total_bytes is None else "driver total"

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
    from importlib import resources  # imported on first use, as tomllib: `import llm_roofline` stays light

    return Path(str(resources.files("llm_roofline.hardware") / "chips"))


def _require(table: Mapping, key: str, where: str, path: str, kind=(int, float), rng: str | None = None) -> Any:
    """table[key], which must exist: a non-empty string (kind=str) or a number within CHIP_RANGES[rng]."""
    if key not in table:
        raise ChipError(f"chip file {path}: missing field {where}{key}")
    value = table[key]
    if kind is str:
        if not isinstance(value, str) or not value:
            raise ChipError(f"chip file {path}: field {where}{key} must be a non-empty string, got {shown(value)}")
        return value
    return _in_range(value, rng or _range_key(where, key), f"{where}{key}", path)


def _range_key(where: str, key: str) -> str:
    """CHIP_RANGES key of a field: '[memory].' + 'hbm_bytes' -> 'memory.hbm_bytes'; links share 'link.'."""
    table = where.strip("[].").split(".")[0]
    return f"{'link' if table in ('scaleup', 'scaleout') else table}.{key}"


def _in_range(value: Any, rng: str, field_name: str, path: str) -> float:
    lo, hi, unit = CHIP_RANGES[rng]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ChipError(f"chip file {path}: field {field_name} must be a number ({unit}), got {shown(value)}")
    low_ok = value > lo if rng in _EXCLUSIVE_LOW else value >= lo
    if not (math.isfinite(value) and low_ok and value <= hi):
        raise ChipError(f"chip file {path}: field {field_name} must be a number in [{lo:g}, {hi:g}] {unit}, "
                        f"got {value!r}")
    return value




def _optional_number(table: Mapping, key: str, where: str, path: str) -> float | None:
    return _require(table, key, where, path) if key in table else None


def _units(onchip: Mapping, path: str) -> int | None:
    """[onchip].units, a whole number of SMs, or None when absent."""
    units = _optional_number(onchip, "units", "[onchip].", path)
    if units is not None and int(units) != units:
        raise ChipError(f"chip file {path}: [onchip].units must be a whole number of SMs, got {units!r}")
    return None if units is None else int(units)


def _optional_table(data: Mapping, key: str, path: str) -> Mapping:
    """data[key] when it is a TOML table, {} when absent; a ChipError for any other type."""
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ChipError(f"chip file {path}: [{key}] must be a table, got {shown(value)}")
    return value


def _optional_str(data: Mapping, key: str, path: str, default: str = "") -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise ChipError(f"chip file {path}: field {key} must be a string, got {shown(value)}")
    return value


def _optional_bool(data: Mapping, key: str, path: str, default: bool = False) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ChipError(f"chip file {path}: field {key} must be true or false, got {shown(value)}")
    return value


def _aliases(data: Mapping, path: str) -> tuple[str, ...]:
    value = data.get("aliases", [])
    if not isinstance(value, list) or not all(isinstance(a, str) and a.strip() for a in value):
        raise ChipError(f"chip file {path}: field aliases must be a list of non-empty strings, got {shown(value)}")
    return tuple(a.strip().lower() for a in value)


def _torus_axes(table: Mapping, where: str, path: str) -> tuple[int, ...]:
    raw = table.get("axes")
    if not isinstance(raw, list) or not raw or not all(isinstance(a, int) and not isinstance(a, bool) for a in raw):
        raise ChipError(f"chip file {path}: {where}axes must be a list of positive integers for a torus, "
                        f"got {shown(raw)}")
    return tuple(int(_in_range(a, "link.axes", f"{where}axes", path)) for a in raw)


def _efficiency_table(data: Mapping, path: str) -> dict:
    """[efficiency] with every number of its [efficiency.<family>] tables checked against CHIP_RANGES (the
    families and parameter names are checked where they are used, llm_roofline.calibrate)."""
    table = _optional_table(data, "efficiency", path)
    for fam, sub in table.items():
        if not isinstance(sub, dict):
            if fam != "fitted_on" and not isinstance(sub, str):
                raise ChipError(f"chip file {path}: [efficiency].{fam} must be a table or a string, got {shown(sub)}")
            continue
        for key, value in sub.items():
            if f"efficiency.{key}" in CHIP_RANGES:
                _in_range(value, f"efficiency.{key}", f"[efficiency.{fam}].{key}", path)
    # read-only all the way down: a catalog chip is shared by every caller
    return {fam: MappingProxyType(dict(sub)) if isinstance(sub, dict) else sub for fam, sub in table.items()}


def _parse_link(table: Mapping, where: str, path: str) -> Link:
    topology = _require(table, "topology", where, path, str)
    if topology not in TOPOLOGIES:
        raise ChipError(f"chip file {path}: {where}topology must be one of {', '.join(TOPOLOGIES)}, got {topology!r}")
    axes: tuple[int, ...] = ()
    link_bps = None
    wrap = "always"
    if topology == "torus":
        axes = _torus_axes(table, where, path)
        link_bps = float(_require(table, "link_bytes_per_s", where, path))
        wrap = _require(table, "wraparound", where, path, str)
        if wrap not in WRAPAROUND_RULES:
            raise ChipError(f"chip file {path}: {where}wraparound must be one of {', '.join(WRAPAROUND_RULES)}")
    domain = _require(table, "domain_size", where, path)
    if int(domain) != domain:
        raise ChipError(f"chip file {path}: {where}domain_size must be an integer, got {domain!r}")
    link = Link(
        kind=_require(table, "kind", where, path, str),
        topology=topology,
        bytes_per_s=float(_require(table, "bytes_per_s", where, path)),
        latency_s=float(_require(table, "latency_s", where, path)),
        domain_size=int(domain),
        axes=axes,
        link_bytes_per_s=link_bps,
        wraparound=wrap,
        source=_optional_str(table, "source", path),
        switch_reduction=_optional_bool(table, "switch_reduction", path),
    )
    if link.switch_reduction and not link.nvlink_switch:
        raise ChipError(f"chip file {path}: {where}switch_reduction needs an NVLink switch (topology 'switch', an "
                        f"nvlink kind), got {link.topology} {link.kind!r}")
    return link


def _parse_scaleout(table: Mapping, path: str) -> Link:
    where = "[scaleout]."
    return Link(
        kind=_require(table, "kind", where, path, str),
        topology="switch",
        bytes_per_s=float(_require(table, "bytes_per_s", where, path)),
        latency_s=float(_require(table, "latency_s", where, path)),
        domain_size=int(_require({"domain_size": 1_000_000, **table}, "domain_size", where, path)),
        source=_optional_str(table, "source", path),
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
        flops[key] = float(_require(compute, key, "[compute].", path, rng="compute"))
    if "bf16" not in flops and "fp16" not in flops:
        raise ChipError(f"chip file {path}: missing field [compute].bf16")
    mem = data["memory"]
    price = _optional_table(data, "price", path)
    onchip = _optional_table(data, "onchip", path)
    scaleout = _optional_table(data, "scaleout", path)
    sources = {s: str(data[s].get("source", "")) for s in ("compute", "memory", "onchip", "scaleup", "scaleout", "price")
               if isinstance(data.get(s), dict)}
    return Chip(
        name=name,
        display_name=_optional_str(data, "display_name", path, name),
        vendor=_optional_str(data, "vendor", path),
        family=_optional_str(data, "family", path),
        aliases=_aliases(data, path),
        dense_flops_per_s=MappingProxyType(flops),
        hbm_bytes=float(_require(mem, "hbm_bytes", "[memory].", path)),
        hbm_bytes_per_s=float(_require(mem, "hbm_bytes_per_s", "[memory].", path)),
        scaleup=_parse_link(data["scaleup"], "[scaleup].", path),
        scaleout=_parse_scaleout(scaleout, path) if scaleout else None,
        onchip_bytes=_optional_number(onchip, "bytes", "[onchip].", path),
        onchip_bytes_per_s=_optional_number(onchip, "bytes_per_s", "[onchip].", path),
        onchip_units=_units(onchip, path),
        price_usd_per_hour=_optional_number(price, "usd_per_hour", "[price].", path),
        price_source=" ".join(str(price.get(k, "")) for k in ("source", "date")).strip(),
        driver_total_bytes=_optional_number(mem, "driver_total_bytes", "[memory].", path),
        sources=MappingProxyType(sources),
        calibration=MappingProxyType(_efficiency_table(data, path)),
        path=path,
    )


def _stat(p: Path) -> os.stat_result | None:
    """os.stat(p), or None when p does not exist or cannot name a file (NUL byte, name too long)."""
    try:
        return os.stat(p)
    except (OSError, ValueError):
        return None


def _read_chip_text(path: Path) -> str:
    """The text of a chip file: a regular file (never opened when it is a FIFO or device: no hang), at most
    MAX_CHIP_FILE_BYTES, UTF-8. Every failure is a one-line ChipError."""
    st = _stat(path)
    if st is None:
        raise ChipError(f"chip file {path} does not exist")
    if stat.S_ISDIR(st.st_mode):
        raise ChipError(f"chip file {path} is a directory, not a .toml file")
    if not stat.S_ISREG(st.st_mode):
        raise ChipError(f"chip file {path} is not a regular file (a FIFO, device or socket)")
    if st.st_size > MAX_CHIP_FILE_BYTES:
        raise ChipError(f"chip file {path} is {st.st_size:,} bytes; a chip file is at most {MAX_CHIP_FILE_BYTES:,}")
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_CHIP_FILE_BYTES + 1)
    except OSError as e:
        raise ChipError(f"chip file {path}: cannot read it ({e.strerror or type(e).__name__})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ChipError(f"chip file {path}: not UTF-8 text (byte {e.start}); a chip file is TOML") from None


def _load_file(path: Path) -> Chip:
    import tomllib

    text = _read_chip_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ChipError(f"chip file {path}: not valid TOML ({' '.join(str(e).split())})") from None
    except RecursionError:  # deeply nested arrays or tables
        raise ChipError(f"chip file {path}: not valid TOML (nested too deeply)") from None
    return chip_from_dict(data, str(path))


CHIPS_ENV = "LLM_ROOFLINE_CHIPS"


def user_chips_dir() -> Path:
    """The user's chip folder (`calibrate --write` writes there; `load_chip` and `llm-roofline chips` read it):
    $LLM_ROOFLINE_CHIPS if set and not empty; else %APPDATA%/llm-roofline/chips on Windows; else
    $XDG_CONFIG_HOME/llm-roofline/chips, XDG_CONFIG_HOME defaulting to ~/.config (Linux and macOS alike)."""
    env = os.environ.get(CHIPS_ENV, "").strip()
    if env:
        return Path(os.path.expanduser(env))
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"], "llm-roofline", "chips")
    base = os.environ.get("XDG_CONFIG_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".config")
    return Path(os.path.expanduser(base), "llm-roofline", "chips")


def _toml_files(folder: Path) -> list[Path]:
    """The plain *.toml files of a folder, sorted (none when it is missing or unreadable)."""
    try:
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".toml"))
    except OSError:
        return []
    return [folder / n for n in names if _is_file(folder / n)]


@lru_cache(maxsize=None)
def _shipped() -> dict[str, Chip]:
    return {chip.name: chip for chip in map(_load_file, _toml_files(_catalog_dir()))}


@lru_cache(maxsize=8)
def _user(folder: str, stamp: tuple) -> dict[str, Chip]:
    return {chip.name: chip for chip in map(_load_file, _toml_files(Path(folder)))}


def _catalog() -> Mapping[str, Chip]:
    """The shipped chips and the user's (user_chips_dir()); a user file with a shipped chip's name wins (a
    calibrated copy written by `calibrate --write`). Read again only when the user folder changes."""
    return _catalog_names()[0]


def _catalog_names() -> tuple[Mapping[str, Chip], Mapping[str, str]]:
    """(_catalog(), its _names()), made again only when the user folder changes (its files' names and times)."""
    folder = user_chips_dir()
    return _merged(str(folder), tuple((p.name, p.stat().st_mtime_ns) for p in _toml_files(folder)))


@lru_cache(maxsize=8)
def _merged(folder: str, stamp: tuple) -> tuple[Mapping[str, Chip], Mapping[str, str]]:
    catalog = {**_shipped(), **(_user(folder, stamp) if stamp else {})}
    return MappingProxyType(catalog), MappingProxyType(_names(catalog))  # kept: read-only


def _names(catalog: Mapping[str, Chip] | None = None) -> dict[str, str]:
    """Every accepted name and alias -> canonical name (of `catalog`, default the current one)."""
    names = {}
    for chip in (_catalog() if catalog is None else catalog).values():
        names[chip.name] = chip.name
        for a in chip.aliases:
            names[a] = chip.name
    return names


def _is_file(p: Path) -> bool:
    st = _stat(p)
    return st is not None and stat.S_ISREG(st.st_mode)


def list_chips() -> list[Chip]:
    """The catalog (shipped chips and the user's chip folder), sorted by name."""
    return [c for _, c in sorted(_catalog().items())]


def load_chip(name_or_path: "str | Path | Chip") -> Chip:
    """A chip by name or alias (case-insensitive) from the shipped catalog or the user's chip folder
    (user_chips_dir()), or a chip .toml file by path."""
    if isinstance(name_or_path, Chip):
        return name_or_path
    text = str(name_or_path).strip()
    p = Path(text).expanduser()
    if text.endswith(".toml") or ((os.sep in text or "/" in text) and _stat(p) is not None) or _is_file(p):
        return _load_file(p)
    catalog, names = _catalog_names()
    key = text.lower()
    if key not in names:
        raise ChipError(f"unknown chip {text!r}.{closest(key, names)} (`llm-roofline chips` lists them; "
                        f"a path to a .toml file works too, or put one in {user_chips_dir()})")
    return catalog[names[key]]


def load_chips(chips) -> list[Chip]:
    """load_chip of one chip (a name, alias, path or Chip) or of each of a list of them, a chip named twice once (an
    alias of one given: 'h100,h100-sxm'); anything else, an empty list or two different chips of one name (which a
    table keyed by name could not tell apart) is one ChipError."""
    if isinstance(chips, (str, Path, Chip)):
        chips = [chips]
    if not isinstance(chips, (list, tuple)) or not chips:
        raise ChipError(f"give one or more chips (names, aliases, paths or Chip objects), got {shown(chips)}")
    out: dict[str, Chip] = {}
    for chip in map(load_chip, chips):
        if out.setdefault(chip.name, chip) != chip:
            raise ChipError(f"two different chips are named {chip.name!r}: give each its own name")
    return list(out.values())


@dataclass(frozen=True)
class Price:
    """A chip's price per chip-hour (None: none known) and where it comes from."""

    usd_per_hour: float | None
    source: str


def chip_prices(chips, overrides: dict | None = None) -> dict[str, Price]:
    """Price per chip-hour of each chip: the chip file's [price] (source and date), or an override (None: no price,
    the plan then ranks by chips)."""
    if overrides is not None and not isinstance(overrides, Mapping):
        raise ScenarioError(f"prices must be a mapping of chip -> USD per chip-hour, got {shown(overrides)}")
    over = {}
    for key, usd in (overrides or {}).items():
        if usd is None:
            over[load_chip(key).name] = None
            continue
        try:
            value = float(usd)
        except (TypeError, ValueError):
            value = math.nan  # reported below, as any other value that is not a positive price
        if not math.isfinite(value) or value <= 0:
            raise ScenarioError(f"price for {key} must be a positive number of USD per chip-hour, got {usd!r}")
        over[load_chip(key).name] = value
    out = {}
    for c in chips:
        c = load_chip(c)
        if c.name in over:
            out[c.name] = Price(over[c.name], "user override" if over[c.name] else "no price (user override)")
        elif c.price_usd_per_hour is not None:
            out[c.name] = Price(float(c.price_usd_per_hour), c.price_source or "chip file (no source given)")
        else:
            out[c.name] = Price(None, "no price in the chip file; give one with --price %s=USD (prices={'%s': USD} in Python)" % (c.name, c.name))
    return out
