"""The root a sealed policy runs in (replay/sealed.py), set up from inside its namespaces.

`unshare --user --map-root-user --net --mount --pid --fork` starts this module as the first process of new
user, network, mount and PID namespaces: no network (the local Neo4j and its verifier-only properties are out of
reach), no other process visible (the runner's memory and working folder among them). Here a new root is
built on an empty tmpfs: the system's own folders read-only (/usr and its links, /etc), a few devices (null,
zero, random, urandom, full, tty; a private /dev/shm), a fresh /proc and /tmp, every `--keep` folder at its own
path, read-only (the Python installation, the code the child imports), and the `--writable` one (the folder
with the user's module). Nothing else of the machine is in it: not the package folder, not voe's cache with the
local Neo4j's store and the LLM cache, not the user's home or project, not another package anywhere on disk.
The old root is detached after `pivot_root`, and the command after `--` runs in a further user and mount
namespace, where the new root's mounts are locked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")


SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _tool(name: str) -> str:
    return shutil.which(name) or shutil.which(name, path=SYSTEM_PATH) or f"/usr/bin/{name}"


def _mount(*args: str) -> None:
    subprocess.run([_tool("mount"), *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _read_only(src: Path, spot: Path) -> None:
    """`src` at `spot`, read-only: a bind mount is made first and made read-only after (a policy runs as the
    owner of the files it sees, and must not leave code behind for a later run that is not sealed)."""
    _mount("--bind", str(src), str(spot))
    _mount("-o", "remount,bind,ro", str(spot))


def build_root(root: Path, keeps: list[Path], writable: list[Path]) -> None:
    _mount("-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs", str(root))
    for name in SYSTEM:
        src = Path("/") / name
        if src.is_symlink():
            (root / name).symlink_to(os.readlink(src))
        elif src.is_dir():
            (root / name).mkdir()
            _read_only(src, root / name)
    (root / "dev").mkdir()
    for device in ("null", "zero", "random", "urandom", "full", "tty"):  # what a program needs, not the disks
        if (Path("/dev") / device).exists():
            (root / "dev" / device).touch()
            _mount("--bind", f"/dev/{device}", str(root / "dev" / device))
    (root / "dev" / "shm").mkdir()
    _mount("-t", "tmpfs", "-o", "size=64m,mode=1777", "tmpfs", str(root / "dev" / "shm"))
    (root / "proc").mkdir()
    _mount("-t", "proc", "proc", str(root / "proc"))
    (root / "tmp").mkdir(mode=0o1777)
    for keep in sorted(keeps, key=lambda p: len(p.parts)):
        if not keep.is_dir() or any(keep.is_relative_to(Path("/") / s) for s in SYSTEM):
            continue
        spot = root / keep.relative_to("/")
        spot.mkdir(parents=True, exist_ok=True)
        if keep in writable:
            _mount("--bind", str(keep), str(spot))
        else:
            _read_only(keep, spot)
    (root / ".old").mkdir()


def main(argv: list[str]) -> int:
    if "--" not in argv or "--root" not in argv:
        print("usage: python -m voe.replay.sandbox --root DIR [--keep DIR]... [--writable DIR]... -- COMMAND...",
              file=sys.stderr)
        return 2
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1:]
    root = Path(opts[opts.index("--root") + 1])
    keeps = [Path(opts[i + 1]) for i, o in enumerate(opts) if o == "--keep"]
    writable = [Path(opts[i + 1]) for i, o in enumerate(opts) if o == "--writable"]
    cwd = Path.cwd()
    # the programs are found now, by their real paths: PATH may name folders the new root does not hold (CI's
    # PATH is a folder of links under /tmp)
    unshare, pivot_root, umount, mount = (os.path.realpath(_tool(n)) for n in ("unshare", "pivot_root", "umount",
                                                                                "mount"))
    # a name is looked up and its link followed (PATH's folder may be gone after pivot_root); an absolute path
    # stays as it is: a venv's python is a link whose place tells Python which site-packages are its own
    if command and not os.path.isabs(command[0]) and (program := shutil.which(command[0])) is not None:
        command = [os.path.realpath(program), *command[1:]]
    _mount("--make-rprivate", "/")
    build_root(root, [*keeps, *writable], writable)
    os.chdir(root)
    subprocess.run([pivot_root, ".", ".old"], check=True)
    os.chroot(".")
    subprocess.run([mount, "--make-rprivate", "/.old"], check=True)
    subprocess.run([umount, "-l", "/.old"], check=True)
    os.rmdir("/.old")
    os.chdir(cwd if cwd.is_dir() else "/tmp")
    os.execv(unshare, [unshare, "--user", "--map-root-user", "--mount", *command])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
