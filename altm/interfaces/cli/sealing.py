"""``altm sealing``: the key store that seals the log (crypto-shredding): its state, and master key rotation."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

import typer

from altm.bus.sealing import (
    MASTER_KEY_ENV,
    KeyStore,
    KeyStoreError,
    SqliteKeyStore,
    decode_master_key,
    durable_dir,
    load_master_key,
    master_id,
    write_owner_only,
)
from altm.interfaces.cli._common import DEFAULT_DATA_DIR, DataDir, emit_json, fail, settings_for
from altm.wiring import WiringError, open_keystore, resolve

sealing_app = typer.Typer(help="The key store of the log's data keys (erasure destroys keys: crypto-shredding).",
                       no_args_is_help=True)

NEW_MASTER_KEY_ENV = "ALTM_NEW_MASTER_KEY"


def _store_path(data_dir: Path) -> Path:
    settings = resolve(settings_for(data_dir))
    if not settings.seal_log:
        fail("the log is not sealed here (ALTM_SEAL_LOG=false): there is no key store")
    return Path((settings.keystore or "").removeprefix("sqlite:///"))


def _kafka_store(data_dir: Path, *, read_only: bool) -> KeyStore | None:
    """The deployment's key store when it is on Kafka (``ALTM_KEYSTORE=kafka://…``), else None."""
    settings = resolve(settings_for(data_dir))
    if not (settings.keystore or "").startswith("kafka://"):
        return None
    try:
        store = open_keystore(settings, read_only=read_only)
    except WiringError as exc:
        fail(str(exc))
    if store is None:
        fail(f"no key topic on {settings.keystore} yet (it is made when the first record is sealed)")
    return store


def status(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Where the key store is, which master key wraps it, and how many data keys it holds."""
    kafka = _kafka_store(data_dir, read_only=True)
    if kafka is not None:
        try:
            active, retired = kafka.counts()
            emit_json({"key_store": kafka.location, "master_key": MASTER_KEY_ENV,
                       "master_id": master_id(_env_master()), "data_keys": active, "retired_keys": retired,
                       "guard_keys": kafka.guard_count()})
        finally:
            kafka.close()
        return
    path = _store_path(data_dir)
    if not path.exists():
        fail(f"no key store at {path} yet (it is made when the first record is sealed)")
    try:
        store = SqliteKeyStore(path, read_only=True)
    except KeyStoreError as exc:
        fail(str(exc))
    try:
        active, retired = store.counts()
        guards = store.guard_count()
        master = load_master_key(store.master_path, create=False)
    finally:
        store.close()
    emit_json({"key_store": str(path), "master_key": MASTER_KEY_ENV if os.environ.get(MASTER_KEY_ENV)
               else str(store.master_path), "master_id": master_id(master), "data_keys": active,
               "retired_keys": retired, "guard_keys": guards})


def rotate_master(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Wrap every data key with a new master key; the log is not touched.

    Stop every ALTM process that uses the key store first: a running one keeps the old master key. With the
    master key in its file (the default), a new key replaces it; run it again after an interruption. With
    ALTM_MASTER_KEY set, give the new key in ALTM_NEW_MASTER_KEY, then make it ALTM_MASTER_KEY everywhere."""
    kafka = _kafka_store(data_dir, read_only=False)
    if kafka is not None:
        new = _new_master_from_env()
        try:
            count, guards = kafka.rewrap(new), kafka.guard_count()
        finally:
            kafka.close()
        typer.echo(f"{_rewrapped(count, guards)} with master key {master_id(new)}; now set {MASTER_KEY_ENV} to "
                   f"the value of {NEW_MASTER_KEY_ENV} everywhere")
        return
    path = _store_path(data_dir)
    if not path.exists():
        fail(f"no key store at {path}")
    from_env = bool(os.environ.get(MASTER_KEY_ENV))
    new = _new_master_from_env() if from_env else secrets.token_bytes(32)
    try:
        store = SqliteKeyStore(path)
    except KeyStoreError as exc:
        fail(str(exc))
    pending = store.master_path.with_name(store.master_path.name + ".new")
    try:
        if not from_env and pending.exists() and _finish_interrupted(store, pending):
            return
        if not from_env:  # the new key is on disk before any data key is wrapped with it
            write_owner_only(pending, (base64.urlsafe_b64encode(new).decode() + "\n").encode("ascii"))
            durable_dir(pending.parent)
        count, guards = store.rewrap(new), store.guard_count()
        if not from_env:
            pending.replace(store.master_path)
            durable_dir(store.master_path.parent)
    finally:
        store.close()
    typer.echo(f"{_rewrapped(count, guards)} with master key {master_id(new)}"
               + (f"; now set {MASTER_KEY_ENV} to the value of {NEW_MASTER_KEY_ENV} everywhere" if from_env else ""))


def _env_master() -> bytes:
    try:
        return decode_master_key(os.environ.get(MASTER_KEY_ENV, ""), MASTER_KEY_ENV)
    except KeyStoreError as exc:
        fail(str(exc))


def _new_master_from_env() -> bytes:
    text = os.environ.get(NEW_MASTER_KEY_ENV)
    if not text:
        fail(f"{MASTER_KEY_ENV} is set: put the new master key (base64 of 32 bytes) in {NEW_MASTER_KEY_ENV}")
    try:
        return decode_master_key(text, NEW_MASTER_KEY_ENV)
    except KeyStoreError as exc:
        fail(str(exc))


def _rewrapped(count: int, guards: int) -> str:
    """What a rotation rewrapped: data keys (they seal records) and users' guard keys (they hash tombstones)."""
    return f"rewrapped {count} key(s): {count - guards} data key(s), {guards} guard key(s)"


def _finish_interrupted(store: SqliteKeyStore, pending: Path) -> bool:
    """A rotation stopped between rewrapping and replacing the master key file: finish it when the store is
    wrapped by the pending key (True), else drop the pending key, which wraps nothing (False)."""
    key = load_master_key(pending, create=False) if os.environ.get(MASTER_KEY_ENV) is None else None
    if key is not None and store.master_ids() == {master_id(key)}:
        pending.replace(store.master_path)
        typer.echo(f"finished an interrupted rotation: master key {master_id(key)} is in {store.master_path}")
        return True
    pending.unlink()
    return False


def register(app: typer.Typer) -> None:
    sealing_app.command("status")(status)
    sealing_app.command("rotate-master")(rotate_master)
    app.add_typer(sealing_app, name="sealing")
