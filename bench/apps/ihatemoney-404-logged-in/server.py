"""`server.py PORT [--fixed]`: I Hate Money 6.0.1 (or 6.1.0) with the flat-share project of the report."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from ihatemoney_app import Api, main  # noqa: E402


def seed(port: int) -> None:
    """A project to log in to, with a participant and a bill."""
    api = Api(port, "flatshare", "rent-split")
    api.create_project("Flatshare", "rent-split")
    ids = [api.member(name) for name in ("Alice", "Bob")]
    api.bill("Internet box", ids[0], ids, 30.0)


if __name__ == "__main__":
    main(HERE, seed)
