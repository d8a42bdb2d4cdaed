"""llm_roofline: analytical LLM inference cost estimator.

    import llm_roofline as lr
    model = lr.load_model("meta-llama/Llama-3.1-8B")
    est = lr.estimate(model, "h100-sxm", batch=8, prompt_len=2048, gen_len=256)
    est.ttft_s, est.tpot_s, est.memory.fits

`import llm_roofline` stays light: the chip catalog's types and the errors are imported with it; every other public
name (estimate, sweep, plan, serve, load_model, ...) resolves on first use (PEP 562), and pandas, transformers and
matplotlib only when a function needs them.
"""

import sys
import types
from importlib import import_module
from threading import RLock

from .errors import (ChipError, ModelConfigError, RooflineError, ScenarioError, ShardingError,
                     UnsupportedArchitectureError)
from .hardware import Chip, Link, list_chips, load_chip
from .version import __version__

# public name -> module that defines it (imported on first access)
_LAZY = {
    "estimate": ".estimate", "sweep": ".sweep", "Estimate": ".estimate", "PhaseSummary": ".estimate",
    "MemorySummary": ".estimate",
    "plan": ".plan", "Plan": ".plan", "disaggregation": ".plan", "Disaggregation": ".plan",
    "serve": ".serve", "ServingEstimate": ".serve",
    "load_model": ".model.hf", "list_models": ".model.hf", "ModelSpec": ".model.spec",
    "score": ".roofline", "Efficiency": ".roofline", "IDEAL": ".roofline",
    "Sharding": ".sharding", "build_ops": ".graph", "Phase": ".graph",
    "Dtypes": ".graph",
}

__all__ = [
    "Chip", "Link", "load_chip", "list_chips", *_LAZY,
    "RooflineError", "ChipError", "ModelConfigError", "UnsupportedArchitectureError", "ShardingError",
    "ScenarioError", "__version__",
]


_LAZY_LOCK = RLock()  # threads resolving lazy names at once import each module once, in one thread


def __getattr__(name):
    if name in _LAZY:
        with _LAZY_LOCK:
            if name not in globals():
                globals()[name] = getattr(import_module(_LAZY[name], __name__), name)
        return globals()[name]
    raise AttributeError(f"module 'llm_roofline' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    """The package module. Importing a submodule sets it as an attribute of its package; three submodules share
    their name with a public function (llm_roofline.estimate, .plan, .serve), and `lr.estimate` must stay the
    function: such an import leaves the attribute to __getattr__ above. The submodules stay in sys.modules."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _LAZY.get(name) == "." + name:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
