import sys
from pathlib import Path

# harness.py sits next to the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent))
