"""Crypto-shredding of the log: records sealed under per-owner data keys kept off the log (DESIGN §1.9)."""

from altm.bus.sealing._bus import SealedBus, SealedConsumer
from altm.bus.sealing._keys import (
    GUARD,
    MASTER_KEY_ENV,
    KeyStore,
    KeyStoreError,
    Owner,
    SqliteKeyStore,
    decode_master_key,
    guard_kid,
    load_master_key,
    master_id,
)
from altm.bus.sealing._sealer import (
    DERIVED,
    MAGIC,
    SEALED_BY_HEADER,
    SHREDDED_HEADER,
    Sealer,
    SealError,
    is_sealed,
    is_shredded,
    owner_of,
    sealed_by,
)

__all__ = [
    "DERIVED",
    "GUARD",
    "MAGIC",
    "MASTER_KEY_ENV",
    "SEALED_BY_HEADER",
    "SHREDDED_HEADER",
    "KeyStore",
    "KeyStoreError",
    "Owner",
    "SealError",
    "SealedBus",
    "SealedConsumer",
    "Sealer",
    "SqliteKeyStore",
    "decode_master_key",
    "guard_kid",
    "is_sealed",
    "is_shredded",
    "load_master_key",
    "master_id",
    "owner_of",
    "sealed_by",
]
