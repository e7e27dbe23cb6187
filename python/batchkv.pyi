"""batchkv: an embedded LSM key-value engine built for batched reads.

Keys and values are bytes. Arguments accept ``bytes``, ``bytearray`` and
``memoryview``; results are ``bytes``. Every call that can block (I/O,
flush, compaction, ``multi_get``) releases the GIL.
"""

import os
import pathlib
from types import TracebackType
from typing import Iterator as _Iterator
from typing import Iterable, List, Optional, Tuple, Type, TypeVar, Union

__version__: str

BytesLike = Union[bytes, bytearray, memoryview]
_T = TypeVar("_T")

class Error(Exception):
    """Base class of every batchkv error."""

class IOError(Error):
    """An operating-system I/O error (the message says what was being done)."""

class Corruption(Error):
    """Stored data failed a check; the message names the file and offset."""

class InvalidArgument(Error):
    """An argument or option is invalid; the message names it."""

class Locked(Error):
    """Another handle, in this or another process, holds the database's lock."""

class Closed(Error):
    """The database is closed (or closing)."""

class ReadOnly(Error):
    """The operation needs a writable database."""

class MergeFailed(Error):
    """The merge operator failed for a key."""

class Unsupported(Error):
    """Stored data needs something this build lacks (e.g. ZSTD)."""

class BackgroundError(Error):
    """A background failure (flush, compaction, WAL sync) stopped writes."""

class Conflict(Error):
    """A transaction could not commit: a key it wrote or read with
    ``get_for_update`` was written by someone else after its snapshot.
    Nothing was applied; retry the transaction from the start."""

    key: bytes
    """The conflicting key (the first in (family, key) order)."""
    cf: str
    """The name of the key's column family."""

class Snapshot:
    """A consistent read view: reads given ``snapshot=`` see the database as
    it was when ``Db.snapshot()`` was called. Released when garbage collected."""

    @property
    def sequence(self) -> int:
        """The sequence number this snapshot reads at."""

class ColumnFamily:
    """A handle to a column family; pass it as ``cf=`` to reads, writes and
    iterators."""

    @property
    def name(self) -> str:
        """The family's name."""

class WriteBatch:
    """A list of writes that ``Db.write`` applies atomically, in order."""

    def __init__(self) -> None:
        """An empty batch."""
    def put(self, key: BytesLike, value: BytesLike, cf: Optional[ColumnFamily] = None) -> None:
        """Adds ``key = value``."""
    def delete(self, key: BytesLike, cf: Optional[ColumnFamily] = None) -> None:
        """Adds a delete of ``key``."""
    def delete_range(
        self, start: BytesLike, end: BytesLike, cf: Optional[ColumnFamily] = None
    ) -> None:
        """Adds a delete of every key in ``[start, end)``."""
    def merge(self, key: BytesLike, operand: BytesLike, cf: Optional[ColumnFamily] = None) -> None:
        """Adds a merge of ``operand`` into ``key`` (needs a ``merge_operator``)."""
    def clear(self) -> None:
        """Removes every operation."""
    def __len__(self) -> int:
        """The number of operations in the batch."""
    @property
    def approximate_size(self) -> int:
        """The size of the encoded batch in bytes."""

class Iterator(_Iterator[_T]):
    """An iterator over a key range of one snapshot (from ``items``, ``keys``,
    ``values`` or ``prefix`` of a ``Db`` or a ``Transaction``). Writes made
    after its creation are not seen."""

    def __iter__(self) -> "Iterator[_T]": ...
    def __next__(self) -> _T:
        """The next entry; raises the engine error that ended iteration, if any."""

class Transaction:
    """An optimistic transaction, from ``Db.transaction()``.

    Writes are buffered and applied atomically by ``commit()``. Reads see
    the transaction's own writes over the database as of the snapshot
    taken when it began (snapshot isolation). ``commit()`` raises
    ``Conflict`` and applies nothing if a key the transaction wrote, or
    read with ``get_for_update``, was written by anyone after that
    snapshot; for those keys committed transactions are serializable. Keys
    read with plain ``get`` are not checked (write skew through them is
    possible). Nothing locks or waits: on ``Conflict``, retry.

    As a context manager it commits when the block ends normally and rolls
    back when the block raises. After ``commit()`` (successful or not) or
    a rollback by the context manager, every call raises
    ``InvalidArgument``.
    """

    def get(self, key: BytesLike, cf: Optional[ColumnFamily] = None) -> Optional[bytes]:
        """The value as the transaction sees it (its own write, else the
        database's at its snapshot), or ``None``. Not checked at commit."""
    def get_for_update(
        self, key: BytesLike, cf: Optional[ColumnFamily] = None
    ) -> Optional[bytes]:
        """Like ``get``; ``commit()`` then raises ``Conflict`` if anyone
        writes ``key`` after the snapshot."""
    def multi_get(
        self, keys: Iterable[BytesLike], cf: Optional[ColumnFamily] = None
    ) -> List[Optional[bytes]]:
        """The values of ``keys`` in order: own writes first, one batched
        engine read at the snapshot for the rest, GIL released."""
    def multi_get_for_update(
        self, keys: Iterable[BytesLike], cf: Optional[ColumnFamily] = None
    ) -> List[Optional[bytes]]:
        """``multi_get`` (one batched engine read), tracking every key as
        ``get_for_update`` does: ``commit()`` raises ``Conflict`` if any of
        them is written by anyone after the snapshot."""
    def put(self, key: BytesLike, value: BytesLike, cf: Optional[ColumnFamily] = None) -> None:
        """Buffers ``key = value``."""
    def delete(self, key: BytesLike, cf: Optional[ColumnFamily] = None) -> None:
        """Buffers a delete of ``key`` (an absent key is no error)."""
    def merge(
        self, key: BytesLike, operand: BytesLike, cf: Optional[ColumnFamily] = None
    ) -> None:
        """Buffers a merge; reads of ``key`` in the transaction apply the
        family's ``merge_operator``."""
    def __getitem__(self, key: BytesLike) -> bytes:
        """The value (as ``get``), or ``KeyError``."""
    def __setitem__(self, key: BytesLike, value: BytesLike) -> None:
        """Buffers a put."""
    def __delitem__(self, key: BytesLike) -> None:
        """Buffers a delete."""
    def __contains__(self, key: BytesLike) -> bool:
        """``key in txn`` (as ``get``)."""
    def __iter__(self) -> Iterator[bytes]:
        """All keys of the default family as the transaction sees them."""
    def items(
        self,
        start: Optional[BytesLike] = None,
        end: Optional[BytesLike] = None,
        reverse: bool = False,
        cf: Optional[ColumnFamily] = None,
    ) -> Iterator[Tuple[bytes, bytes]]:
        """``(key, value)`` pairs with ``start <= key < end``: the
        transaction's writes made before this call merged over the
        database at the snapshot."""
    def keys(
        self,
        start: Optional[BytesLike] = None,
        end: Optional[BytesLike] = None,
        reverse: bool = False,
        cf: Optional[ColumnFamily] = None,
    ) -> Iterator[bytes]:
        """Like ``items()``, keys only."""
    def values(
        self,
        start: Optional[BytesLike] = None,
        end: Optional[BytesLike] = None,
        reverse: bool = False,
        cf: Optional[ColumnFamily] = None,
    ) -> Iterator[bytes]:
        """Like ``items()``, values only."""
    def prefix(
        self, prefix: BytesLike, reverse: bool = False, cf: Optional[ColumnFamily] = None
    ) -> Iterator[Tuple[bytes, bytes]]:
        """``(key, value)`` pairs whose key starts with ``prefix``."""
    def set_savepoint(self) -> None:
        """Marks the current state; savepoints nest."""
    def rollback_to_savepoint(self) -> None:
        """Undoes the writes (and ``get_for_update`` tracking) since the last
        savepoint and removes it; ``InvalidArgument`` if none is set."""
    def rollback(self) -> None:
        """Discards every write, tracked key and savepoint; the transaction
        stays usable at its original snapshot."""
    def commit(self) -> None:
        """Applies the writes atomically or raises ``Conflict`` (applying
        nothing); the transaction is finished either way."""
    @property
    def pending_writes(self) -> int:
        """The number of buffered writes."""
    @property
    def snapshot(self) -> Snapshot:
        """The snapshot the transaction reads at."""
    @property
    def finished(self) -> bool:
        """True once committed (or failed to) or rolled back on exit."""
    def __enter__(self) -> "Transaction": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        """Commits on a normal exit (``Conflict`` propagates), rolls back
        if the block raised."""

class Db:
    """An open database.

    ``Db(path, **options)`` opens (or creates, unless
    ``create_if_missing=False``) the database in ``path``. Options are the
    engine's option names, e.g. ``write_buffer_size=64 << 20``,
    ``compression="zstd"``, ``memtable="vector"``; ``merge_operator`` is
    ``"u64add"``, ``"string_append"`` or ``"string_append:<delimiter>"``.
    Use it as a context manager or call ``close()``. Thread-safe.
    """

    def __init__(
        self, path: Union[str, "os.PathLike[str]"], **options: Union[bool, int, float, str]
    ) -> None: ...
    @staticmethod
    def open_as_secondary(
        primary: Union[str, "os.PathLike[str]"],
        secondary: Union[str, "os.PathLike[str]"],
        **options: Union[bool, int, float, str],
    ) -> "Db":
        """Opens a secondary instance of the database in ``primary``: a
        read-only view following a primary (in this process or another)
        that keeps writing, flushing and compacting. ``secondary`` is the
        instance's own directory (created if missing; it holds only a lock
        file). It shows the primary's state as of this call; call
        ``try_catch_up_with_primary()`` to see later writes. Nothing is
        written to ``primary``; writes, ``flush``, ``compact_range`` and
        ``checkpoint`` raise ``ReadOnly``."""
    def try_catch_up_with_primary(self) -> None:
        """Brings a secondary instance up to date: afterwards it shows every
        write the primary acknowledged before the call. Reads and iterators
        begun before it keep what they saw. ``InvalidArgument`` on a
        database not opened with ``Db.open_as_secondary``."""
    def close(self) -> None:
        """Flushes what only memory holds, stops background work, releases
        the lock. Idempotent; later calls raise ``Closed``."""
    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
    @property
    def path(self) -> pathlib.Path:
        """The database directory."""
    def __enter__(self) -> "Db": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool:
        """Closes the database."""
    def get(
        self,
        key: BytesLike,
        snapshot: Optional[Snapshot] = None,
        cf: Optional[ColumnFamily] = None,
    ) -> Optional[bytes]:
        """The value of ``key``, or ``None`` if absent."""
    def put(
        self,
        key: BytesLike,
        value: BytesLike,
        sync: bool = False,
        cf: Optional[ColumnFamily] = None,
    ) -> None:
        """Sets ``key`` to ``value``; ``sync=True`` fsyncs the WAL first."""
    def delete(
        self, key: BytesLike, sync: bool = False, cf: Optional[ColumnFamily] = None
    ) -> None:
        """Deletes ``key`` (an absent key is no error)."""
    def merge(
        self,
        key: BytesLike,
        operand: BytesLike,
        sync: bool = False,
        cf: Optional[ColumnFamily] = None,
    ) -> None:
        """Merges ``operand`` into ``key`` with the database's merge operator."""
    def delete_range(
        self,
        start: BytesLike,
        end: BytesLike,
        sync: bool = False,
        cf: Optional[ColumnFamily] = None,
    ) -> None:
        """Deletes every key in ``[start, end)`` with one write."""
    def write(self, batch: WriteBatch, sync: bool = False) -> None:
        """Applies ``batch`` atomically; the batch is left unchanged."""
    def multi_get(
        self,
        keys: Iterable[BytesLike],
        snapshot: Optional[Snapshot] = None,
        cf: Optional[ColumnFamily] = None,
    ) -> List[Optional[bytes]]:
        """The values of ``keys`` in order (``None`` for absent ones): one
        batched engine lookup at one consistent point, GIL released."""
    def __getitem__(self, key: BytesLike) -> bytes:
        """The value, or ``KeyError``."""
    def __setitem__(self, key: BytesLike, value: BytesLike) -> None:
        """``db[key] = value``."""
    def __delitem__(self, key: BytesLike) -> None:
        """Deletes ``key``; an absent key is no error (as in RocksDB)."""
    def __contains__(self, key: BytesLike) -> bool:
        """``key in db``."""
    def __iter__(self) -> Iterator[bytes]:
        """All keys, ascending."""
    def items(
        self,
        start: Optional[BytesLike] = None,
        end: Optional[BytesLike] = None,
        reverse: bool = False,
        snapshot: Optional[Snapshot] = None,
        cf: Optional[ColumnFamily] = None,
    ) -> Iterator[Tuple[bytes, bytes]]:
        """``(key, value)`` pairs with ``start <= key < end``, ascending or
        (``reverse=True``) descending."""
    def keys(
        self,
        start: Optional[BytesLike] = None,
        end: Optional[BytesLike] = None,
        reverse: bool = False,
        snapshot: Optional[Snapshot] = None,
        cf: Optional[ColumnFamily] = None,
    ) -> Iterator[bytes]:
        """Like ``items()``, keys only."""
    def values(
        self,
        start: Optional[BytesLike] = None,
        end: Optional[BytesLike] = None,
        reverse: bool = False,
        snapshot: Optional[Snapshot] = None,
        cf: Optional[ColumnFamily] = None,
    ) -> Iterator[bytes]:
        """Like ``items()``, values only."""
    def prefix(
        self,
        prefix: BytesLike,
        reverse: bool = False,
        snapshot: Optional[Snapshot] = None,
        cf: Optional[ColumnFamily] = None,
    ) -> Iterator[Tuple[bytes, bytes]]:
        """``(key, value)`` pairs whose key starts with ``prefix``."""
    def snapshot(self) -> Snapshot:
        """A snapshot of the current state."""
    def transaction(self, sync: bool = False) -> Transaction:
        """Begins an optimistic transaction at a snapshot taken now;
        ``sync=True`` makes its commit durable before ``commit()`` returns."""
    def create_column_family(
        self, name: str, **options: Union[bool, int, float, str]
    ) -> ColumnFamily:
        """Creates column family ``name`` (``InvalidArgument`` if it exists)."""
    def get_column_family(self, name: str) -> Optional[ColumnFamily]:
        """The handle of family ``name``, or ``None``."""
    def drop_column_family(self, cf: Union[ColumnFamily, str]) -> None:
        """Drops a column family and its data."""
    def column_families(self) -> List[str]:
        """The names of the column families, ``"default"`` first."""
    def flush(self, cf: Optional[ColumnFamily] = None) -> None:
        """Writes the memtable to an SST file and waits for it."""
    def sync_wal(self) -> None:
        """Fsyncs the WAL."""
    def compact_range(
        self,
        start: Optional[BytesLike] = None,
        end: Optional[BytesLike] = None,
        cf: Optional[ColumnFamily] = None,
    ) -> None:
        """Compacts the keys in ``[start, end]`` down the levels (blocking)."""
    def checkpoint(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes a consistent, openable copy of the database into ``path``."""
    def property(self, name: str, cf: Optional[ColumnFamily] = None) -> Optional[str]:
        """A ``batchkv.`` property (``"batchkv.stats"``, ...), or ``None``."""
