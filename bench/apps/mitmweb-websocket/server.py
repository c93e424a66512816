"""`server.py PORT [--fixed]`: mitmweb 10.1.2 (or 10.1.3) with a few captured flows."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from mitmweb_app import main  # noqa: E402

if __name__ == "__main__":
    main(HERE, flows=5)
