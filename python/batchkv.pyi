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
    ``values`` or ``prefix``). Writes made after its creation are not seen."""

    def __iter__(self) -> "Iterator[_T]": ...
    def __next__(self) -> _T:
        """The next entry; raises the engine error that ended iteration, if any."""

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
