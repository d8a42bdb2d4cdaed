"""The memory a GPU's driver reports, against the chip file's datasheet figure: the total that serving engines
take their memory fraction of (vLLM: gpu_memory_utilization x torch.cuda.mem_get_info()[1]; SGLang:
mem_fraction_static of the same total). Maintainers run it where they have a GPU (PyTorch with CUDA).

    python3 benchmarks/gpu_memory_total.py [OUT.json]

Prints and writes: nvidia-smi's memory.total / memory.reserved (MiB), cudaMemGetInfo's total and free after the
CUDA context is made (bytes), the device properties' total_memory, and the memory in use once cuBLAS has run one
bf16 product (the context and library workspaces an engine starts with, outside its fraction's accounting).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llm_roofline.errors import RooflineError  # noqa: E402
from llm_roofline.files import write_text  # noqa: E402

_SMI_FIELDS = ("name", "memory.total", "memory.reserved", "memory.used", "memory.free", "driver_version")


def _nvidia_smi() -> dict:
    out = {}
    for field in _SMI_FIELDS:  # one query each: an older driver refuses a field it does not know
        try:
            r = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader,nounits", "-i", "0"],
                               capture_output=True, text=True, timeout=30)
            out[field] = r.stdout.strip() if r.returncode == 0 else f"error: {r.stderr.strip()[:200]}"
        except (OSError, subprocess.TimeoutExpired) as e:
            out[field] = f"error: {e}"
    return out


def main(argv: list[str]) -> int:
    try:
        if argv:
            write_text(argv[0], "")  # an unwritable OUT.json fails in one line before the GPU is touched
        import torch
    except (RooflineError, ImportError) as e:
        print(f"gpu_memory_total: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gpu_memory_total: needs PyTorch with a CUDA GPU (none here)", file=sys.stderr)
        return 2
    smi_before = _nvidia_smi()
    torch.cuda.init()
    free0, total = torch.cuda.mem_get_info(0)
    props = torch.cuda.get_device_properties(0)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()
    torch.cuda.synchronize()
    free1, _ = torch.cuda.mem_get_info(0)
    torch_bytes = torch.cuda.memory_reserved(0)
    res = dict(device=props.name, sms=props.multi_processor_count, torch=torch.__version__,
               cuda=torch.version.cuda, nvidia_smi=smi_before, mem_get_info_total_bytes=int(total),
               mem_get_info_total_gib=total / 2**30, props_total_memory_bytes=int(props.total_memory),
               in_use_after_context_bytes=int(total - free0),
               in_use_after_cublas_bytes=int(total - free1), torch_reserved_bytes=int(torch_bytes),
               non_torch_after_cublas_bytes=int(total - free1 - torch_bytes))
    try:
        smi_total_mib = float(smi_before["memory.total"])
        res["smi_total_bytes"] = int(smi_total_mib * 2**20)
        res["smi_minus_mem_get_info_mib"] = smi_total_mib - total / 2**20
    except ValueError:
        pass
    text = json.dumps(res, indent=1)
    print(text)
    if argv:
        write_text(argv[0], text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
