"""The experimental tests keep what they cache out of the user's cache, as tests/conftest.py does."""

import os
import tempfile

os.environ["TOOLEVAL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tooleval-test-cache-")
