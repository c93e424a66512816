"""`server.py PORT [--fixed]`: Radicale 3.1.8 (or 3.1.9); user bob's password holds a %XX sequence."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from radicale_app import main  # noqa: E402

if __name__ == "__main__":
    main(HERE, {"bob": "spring%20rain"}, [("bob", "work", "calendar")])
