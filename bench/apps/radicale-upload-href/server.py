"""`server.py PORT [--fixed]`: Radicale 3.6.1 (or 3.7.0); user alice owns the address book "contacts"."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from radicale_app import main  # noqa: E402

if __name__ == "__main__":
    main(HERE, {"alice": "wonderland"}, [("alice", "contacts", "addressbook")])
