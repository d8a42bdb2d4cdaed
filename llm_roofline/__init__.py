"""llm_roofline: analytical LLM inference cost estimator.

    import llm_roofline as lr
    model = lr.load_model("meta-llama/Llama-3.1-8B")
    est = lr.estimate(model, "h100-sxm", batch=8, prompt_len=2048, gen_len=256)
    est.ttft_s, est.tpot_s, est.memory.fits

`import llm_roofline` stays light: pandas, transformers and matplotlib are imported on first use
(most public names resolve lazily, PEP 562).
"""

from importlib import import_module
from threading import RLock

from .errors import (ChipError, ModelConfigError, RooflineError, ScenarioError, ShardingError,
                     UnsupportedArchitectureError)
from .hardware import Chip, Link, list_chips, load_chip
# estimate() and sweep() are imported eagerly: a lazy attribute would be shadowed by the submodule
# llm_roofline.estimate once anything imports it (this costs the numpy import, ~0.15 s).
from .estimate import Estimate, MemorySummary, PhaseSummary, estimate, sweep
# plan() likewise: the submodule llm_roofline.plan would shadow a lazy `plan` attribute
from .plan import Disaggregation, Plan, disaggregation, plan
# serve() likewise: the submodule llm_roofline.serve would shadow a lazy `serve` attribute
from .serve import ServingEstimate, serve

from .version import __version__  # noqa: E402

# public name -> module that defines it (imported on first access)
_LAZY = {
    "load_model": ".model.hf", "list_models": ".model.hf", "ModelSpec": ".model.spec",
    "score": ".roofline", "Efficiency": ".roofline", "IDEAL": ".roofline",
    "Sharding": ".sharding", "build_ops": ".graph", "Phase": ".graph",
    "Dtypes": ".graph",
}

__all__ = [
    "Chip", "Link", "load_chip", "list_chips", "estimate", "sweep", "Estimate", "PhaseSummary", "MemorySummary",
    "plan", "Plan", "disaggregation", "Disaggregation", "serve", "ServingEstimate",
    *_LAZY,
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
