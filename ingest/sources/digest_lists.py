"""Digest lists an archive carries beside its files: BagIt manifests (`manifest-<alg>.txt`, `tagmanifest-<alg>.txt`),
checksum lists (`SHA256SUMS`, `sha256sums.txt`, `md5sums.txt`, `checksums.txt`) and one-file sidecars
(`table.csv.sha256`). Each line `HEX  path`, `HEX *path` (sha256sum's binary mode), `HEX path`, or the tagged
`SHA256 (path) = HEX` (BSD's `sha256`, `shasum --tag`, `sha256sum --tag`; OpenSSL's `SHA2-256(path)= HEX`) is one
statement: a digest for a path relative to the list's folder; a tag that names another algorithm than the
digest's length is no statement. A sidecar that holds the digest alone names the file it sits
beside.

A file is a digest list by its name and its content together: a name of one of these shapes whose lines hold no
digest (RSpace's `schemas/manifest.txt`, key:value lines describing the export) is not one. Where the name gives no
algorithm (`checksums.txt`) the length of each digest does.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

BY_LENGTH = {32: "md5", 40: "sha1", 64: "sha256", 128: "sha512"}
BAG_MANIFEST = re.compile(r"^(tag)?manifest-(?P<alg>sha256|sha512|sha1|md5)\.txt$", re.I)
SUMS = re.compile(r"^((?P<alg>sha256|sha512|sha1|md5)sums|checksums?)(\.txt)?$", re.I)
SIDECAR = re.compile(r"^(?P<target>.+)\.(?P<alg>sha256|sha512|sha1|md5)$", re.I)
LINE = re.compile(r"^(?P<hex>[0-9a-fA-F]{32,128})(?:[ \t]+\*?(?P<path>.*?))?[ \t\r]*$")
TAGGED = re.compile(r"^(?P<tag>MD5|SHA-?1|SHA(?:2?-)?(?:256|512))[ \t]?\((?P<path>.*)\)[ \t]?=[ \t]*"
                    r"(?P<hex>[0-9a-fA-F]{32,128})[ \t\r]*$", re.I)
MAX_LIST_BYTES = 64 << 20  # a larger list is not read as one


@dataclass(frozen=True)
class Listed:
    """One line of a digest list: its number (from 1), the text, the algorithm, the digest and the path it names
    (as written, relative to the list's folder)."""

    line: int
    text: str
    alg: str
    digest: str
    path: str


def list_kind(name: str) -> tuple[str, str | None] | None:
    """('manifest' | 'sums' | 'sidecar', the algorithm its name gives) for a file name of a digest list's shape."""
    if m := BAG_MANIFEST.match(name):
        return "manifest", m.group("alg").lower()
    if m := SUMS.match(name):
        return "sums", (m.group("alg") or "").lower() or None
    if m := SIDECAR.match(name):
        return "sidecar", m.group("alg").lower()
    return None


def read_list(name: str, data: bytes) -> list[Listed]:
    """The digest lines of the list called `name` (its base name); [] when it holds none (then it is not one)."""
    shape = list_kind(name)
    if shape is None:
        return []
    kind, alg = shape
    beside = m.group("target") if kind == "sidecar" and (m := SIDECAR.match(name)) else ""
    out: list[Listed] = []
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        m = LINE.match(line) or TAGGED.match(line)
        if m is None:
            continue
        digest, path = m.group("hex").lower(), (m.group("path") or "").strip()
        path = path or beside  # a sidecar holding the digest alone is the digest of the file it sits beside
        found = BY_LENGTH.get(len(digest))
        tagged = _tag_alg(m.groupdict().get("tag"))
        if not path or found is None or (alg is not None and found != alg) or (tagged is not None and tagged != found):
            continue
        out.append(Listed(n, line.rstrip("\r\n"), found, digest, path))
    return out


def _tag_alg(tag: str | None) -> str | None:
    """`SHA2-256`, `SHA-256`, `SHA256` -> sha256; `SHA-1` -> sha1."""
    if tag is None:
        return None
    bare = tag.lower().replace("-", "")
    return {"sha2256": "sha256", "sha2512": "sha512"}.get(bare, bare)


def digest_of(path: Path, alg: str) -> str:
    h = hashlib.new(alg)
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
