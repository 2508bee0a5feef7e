"""Reading local bytes: streaming sha256, canonical JSON spans and JSON pointers."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonpointer

from voe.canonical import canonical

CHUNK = 1 << 20


@dataclass(frozen=True)
class LocalBytes:
    path: Path
    sha256: str
    size: int
    inode: tuple[int, int] | None = None  # (device, inode) of the file hashed: a parse must be of that same file


def hash_file(path: Path, *, follow_symlinks: bool = False) -> LocalBytes:
    """Stream the file through sha256. Raises OSError when it cannot be read, and NotRegularFile when it is
    not a regular file: a symlink is not followed (unless `follow_symlinks`, for a path the user named), and a
    FIFO, socket or device is opened non-blocking only to be refused, never read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise NotRegularFile(path, "symlink") from exc
        raise
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        kind = entry_kind(st.st_mode)
        if kind != "file":
            raise NotRegularFile(path, kind)
        h = hashlib.sha256()
        size = 0
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            size += len(chunk)
    return LocalBytes(path, h.hexdigest(), size, (st.st_dev, st.st_ino))


class NotRegularFile(OSError):
    """A path that is a symlink, FIFO, socket, device or folder where a regular file was expected."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"is {SPECIAL_NAMES.get(kind, 'not a regular file')}", str(path))
        self.kind = kind


SPECIAL_NAMES = {"symlink": "a symbolic link (not followed)", "fifo": "a FIFO (named pipe; not opened)",
                 "socket": "a socket (not opened)", "device": "a device file (not opened)",
                 "dir": "a folder", "other": "not a regular file (not opened)"}


def entry_kind(mode: int) -> str:
    """What a directory entry is, from its lstat mode: file, dir, symlink, fifo, socket, device or other."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "other"


def list_entries(root: Path, skip: frozenset[str] = frozenset()) -> dict[str, str]:
    return dict(iter_entries(root, skip))


def iter_entries(root: Path, skip: frozenset[str] = frozenset()) -> Iterator[tuple[str, str]]:
    """Every entry under root, as POSIX paths relative to it, with what it is (`entry_kind`). The one folder walk
    of ingest (NERDm record folders, plain folders, the empty-folder check): one scandir per folder instead of a
    stat per component (records list up to hundreds of thousands of components, mostly not held); symlinks are
    listed as `symlink` and never followed, so nothing outside root is listed. Entries named in `skip` are left
    out, folders with their contents. An entry that cannot be examined is listed as a file: reading it then
    reports why."""
    stack = [("", str(root))]
    while stack:
        prefix, folder = stack.pop()
        try:
            it = os.scandir(folder)
        except OSError:
            continue
        with it:
            for entry in it:
                if entry.name in skip:
                    continue
                rel = prefix + entry.name
                try:
                    if entry.is_symlink():
                        kind = "symlink"
                    elif entry.is_dir(follow_symlinks=False):
                        kind = "dir"
                    elif entry.is_file(follow_symlinks=False):
                        kind = "file"
                    else:
                        kind = entry_kind(entry.stat(follow_symlinks=False).st_mode)
                except OSError:
                    kind = "file"
                yield rel, kind
                if kind == "dir":
                    stack.append((rel + "/", entry.path))


def canonical_json(value: Any) -> bytes:
    """The bytes a SourceLocation's span hash is taken over: RFC 8785 (JCS; voe/canonical.py), the one canonical
    JSON of every hash voe publishes."""
    return canonical(value)


def walk_order(relpath: str) -> tuple[tuple[str, ...], str]:
    """Top-down walk order with names sorted: a folder's own entries, then its subfolders' (os.walk's order)."""
    *parents, name = relpath.split("/")
    return tuple(parents), name


def list_files(root: Path) -> set[str]:
    """Every entry under root that is not a folder (files, symlinks, special files), as relative POSIX paths."""
    return {rel for rel, kind in list_entries(root).items() if kind != "dir"}


def span_sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def escape_pointer_token(token: str | int) -> str:
    return jsonpointer.escape(str(token))


def pointer_of(path: Iterable[str | int]) -> str:
    """RFC 6901: the pointer to the value at `path` (keys and indices)."""
    return jsonpointer.JsonPointer.from_parts(list(path)).path


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """RFC 6901 (the `jsonpointer` library). Raises KeyError when the pointer does not resolve."""
    try:
        value = jsonpointer.resolve_pointer(doc, pointer)
    except jsonpointer.JsonPointerException as exc:
        raise KeyError(pointer) from exc
    if isinstance(value, jsonpointer.EndOfList):  # `-`, the element after the last: no value to read
        raise KeyError(pointer)
    return value
