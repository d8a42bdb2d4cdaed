"""Test session setup: the suite never reads the user's own chip folder (~/.config/llm-roofline/chips), so the
same tests give the same answers on every machine."""

import os
import tempfile

os.environ["LLM_ROOFLINE_CHIPS"] = os.path.join(tempfile.mkdtemp(prefix="llm-roofline-test-chips-"), "chips")
