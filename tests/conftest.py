"""Test session setup: the suite never reads the user's own chip folder (~/.config/llm-roofline/chips), so the
same tests give the same answers on every machine. The stand-in folder is removed when the session ends."""

import atexit
import os
import shutil
import tempfile

_CHIPS_HOME = tempfile.mkdtemp(prefix="llm-roofline-test-chips-")
atexit.register(shutil.rmtree, _CHIPS_HOME, ignore_errors=True)
os.environ["LLM_ROOFLINE_CHIPS"] = os.path.join(_CHIPS_HOME, "chips")
