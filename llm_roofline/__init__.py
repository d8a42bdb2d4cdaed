"""llm_roofline: analytical LLM inference cost estimator.

    import llm_roofline as lr
    chip = lr.load_chip("h100-sxm")
    chip.critical_intensity("bf16")   # ~295 FLOP/byte

Heavy imports (transformers, matplotlib, pandas) happen inside the functions that need them.
"""

from .errors import (ChipError, ModelConfigError, RooflineError, ScenarioError, ShardingError,
                     UnsupportedArchitectureError)
from .hardware import Chip, Link, list_chips, load_chip
from .model.hf import list_models, load_model
from .roofline import IDEAL, Efficiency, score

__version__ = "0.1.0"

__all__ = [
    "Chip", "Link", "Efficiency", "IDEAL", "score", "load_chip", "list_chips", "load_model", "list_models",
    "RooflineError", "ChipError", "ModelConfigError", "UnsupportedArchitectureError", "ShardingError",
    "ScenarioError", "__version__",
]
