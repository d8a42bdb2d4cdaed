"""Errors for user mistakes. All derive from ValueError; the CLI prints them as one line, exit code 2."""


class RooflineError(ValueError):
    """Base class of every error caused by bad user input."""


class ChipError(RooflineError):
    """A chip name or chip file is unknown or invalid."""


class ModelConfigError(RooflineError):
    """A model config is unknown, malformed, or describes something the spec cannot represent."""


class UnsupportedArchitectureError(ModelConfigError):
    """The config describes an architecture the estimator does not model (encoder-decoder, SSM, ...)."""


class ShardingError(RooflineError):
    """A sharding does not divide the model (heads over tp, experts over ep, layers over pp, ...)."""


class ScenarioError(RooflineError):
    """A scenario argument is out of range (zero or negative sizes, unknown dtype, ...)."""


class OutputError(RooflineError):
    """An output file cannot be written (missing folder, no permission, disk full, a symlink, a device)."""


def shown(value) -> str:
    """A value as an error message echoes it: its repr, cut to 60 characters; an integer of more than 4,300 digits
    (or a list holding one), which Python refuses to print (ValueError), by its size."""
    try:
        text = repr(value)
    except ValueError:
        text = (f"an integer of about {int(value.bit_length() * 0.30103):,} digits" if isinstance(value, int)
                else f"a {type(value).__name__} holding an integer too long to print")
    return text if len(text) <= 60 else text[:57] + "..."


def closest(name: str, candidates, n: int = 3) -> str:
    """Up to n candidates closest to name, formatted for an error message ('' when none is close)."""
    import difflib

    cands = list(candidates)
    hits = difflib.get_close_matches(name.lower(), [c.lower() for c in cands], n=n, cutoff=0.4)
    by_lower = {c.lower(): c for c in cands}
    hits = [by_lower[h] for h in hits]
    if not hits:  # substring matches help for ids like 'llama-3.1-8b'
        hits = [c for c in cands if name.lower() in c.lower()][:n]
    return f" Did you mean: {', '.join(hits)}?" if hits else ""
