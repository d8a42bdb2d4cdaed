"""One deterministic reader: the same config gives the same ModelSpec whatever is installed or imported.

transformers is never on the path of a shipped or local config (issue 13): each subprocess below prints the repr of
every shipped config's spec and every fixture's, once with `import transformers` made to fail and once with
transformers imported first; the outputs must be identical. A third run loads from 8 threads at once in a fresh
process and must give the serial results.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "configs"

_PRELUDE = """
    import json, sys
    from pathlib import Path
    BLOCK = {block}
    if BLOCK:
        class _NoTransformers:
            def find_spec(self, name, path=None, target=None):
                if name == "transformers" or name.startswith("transformers."):
                    raise ImportError("transformers is blocked in this test")
        sys.meta_path.insert(0, _NoTransformers())
    else:
        import transformers  # imported first, as a user's program might
    import llm_roofline as lr
    sources = list(lr.list_models()) + sorted(str(p) for p in Path({fixtures!r}).glob("*.json"))
    def spec_repr(src):
        try:
            return repr(lr.load_model(src))
        except lr.ModelConfigError as e:  # a fixture that is refused on purpose: its message must be stable too
            return "refused: " + str(e)
"""


def _run(code: str, block: bool) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    full = textwrap.dedent(_PRELUDE.format(block=block, fixtures=str(FIXTURES))) + textwrap.dedent(code)
    out = subprocess.run([sys.executable, "-c", full], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_specs_do_not_depend_on_transformers():
    code = """
        for src in sources:
            print(src, spec_repr(src))
        assert BLOCK or "transformers" in sys.modules
        print("transformers imported:", "transformers" in sys.modules)
    """
    blocked = _run(code, block=True).splitlines()
    imported = _run(code, block=False).splitlines()
    assert blocked[-1] == "transformers imported: False"
    assert blocked[:-1] == imported[:-1]
    assert len(blocked) > 25  # every shipped config and fixture was read


def test_loading_from_8_threads_gives_the_serial_results():
    code = """
        from concurrent.futures import ThreadPoolExecutor
        import threading
        names = sources[:8] * 3
        barrier = threading.Barrier(8)
        def load(src):
            barrier.wait() if threading.current_thread() is not threading.main_thread() else None
            return spec_repr(src)
        with ThreadPoolExecutor(8) as pool:  # a fresh process: first use of every lazy cache races here
            first = list(pool.map(load, names[:8]))
            rest = list(pool.map(spec_repr, names[8:]))
        serial = [spec_repr(s) for s in names]
        print(first + rest == serial)
    """
    assert _run(code, block=True).strip() == "True"
