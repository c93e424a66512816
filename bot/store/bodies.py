"""Webhook bodies as the inbox keeps them: the raw bytes in an LZ4 frame (column `packed`, schema 9).

Storing is on the acknowledgement's path. A GitHub delivery is about 12 KB of JSON: as text it fills three
overflow pages, each written to the WAL and copied again by the checkpoint. LZ4 shrinks it about five-fold
in a few microseconds, so it fits in one page; that saves more than compressing costs (zlib, even at level 1,
costs more than it saves). The raw bytes are kept, not their decoded text, so that the stored body is exactly
what was signed. The frame's magic number is the codec's marker: any other codec gets its own magic number.
"""

from __future__ import annotations

import lz4.frame

from bot.store.schema import StoreError

__all__ = ["BodyCodecError", "pack_body", "unpack_body"]

#: The magic number every LZ4 frame starts with (the LZ4 frame format, section "Magic Number").
LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"


class BodyCodecError(StoreError):
    """A stored body in a format this version cannot read (a newer codec, or damaged bytes)."""


def pack_body(raw: bytes) -> bytes:
    """The raw body as an LZ4 frame for the `packed` column."""
    # Fast mode with the content size in the header, so that reading allocates the body once.
    return lz4.frame.compress(raw, store_size=True)


def unpack_body(packed: bytes) -> bytes:
    """The raw body a `pack_body` frame holds; BodyCodecError for bytes that are not such a frame."""
    packed = bytes(packed)  # PostgreSQL's driver may hand a memoryview for BYTEA
    if not packed.startswith(LZ4_FRAME_MAGIC):
        raise BodyCodecError(f"stored body has an unknown codec (first bytes {packed[:4].hex() or 'none'})")
    try:
        return lz4.frame.decompress(packed)
    except RuntimeError as exc:  # what python-lz4 raises for a damaged frame
        raise BodyCodecError(f"stored body is a damaged LZ4 frame: {exc}") from exc
