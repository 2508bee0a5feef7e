"""The one rule for an --out folder (runs, exports, imported runs, served runs): what may be written into it and what
`--force` may replace. A folder that holds something is never written over without a word, and `--force` replaces
only an earlier artifact of the same kind: a mistyped `--out ~ --force` must not delete a home folder."""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

from voe.errors import InputError, UsageError

RUN_MARKERS = ("run.json", "run.plan.json")  # a finished run, or an agent or python: run interrupted before its run.json
CRATE_MARKERS = ("ro-crate-metadata.json",)
# the file that says a folder holds an artifact of each kind: what --force may replace
ARTIFACT_MARKERS = {"package": ("manifest.json",), "report": ("report.md", "report.html"),
                    "training set": ("training.json",), "labels": ("labels.json",),
                    # `voe audit`'s (a run's folder holds an audit.json too: never the mark of a defect report)
                    "defect report": ("audit.md", "letters.txt")}


def claim_out(out: Path, *, markers: tuple[str, ...], what: str, force: bool, resume: bool | None = None,
              flag: str = "--force") -> None:
    """Check `out` before any work. Absent or empty: take it. A symbolic link or a file: refused (InputError).
    Holding something: refused (UsageError) unless `resume` (None: the command has no --resume) or `force`; with
    `force` only a folder holding one of `markers`, and never the working, home or root folder (InputError)."""
    if out.is_symlink():
        raise InputError(f"the {what} folder is a symbolic link; name the folder itself", path=str(out))
    if out.exists() and not out.is_dir():
        raise InputError(f"the {what} folder is a file", path=str(out))
    if not out.exists() or not any(out.iterdir()) or resume:
        return
    if not force:
        hint = f"{flag} replaces it" + ("; --resume continues an interrupted agent or python: run"
                                        if resume is not None and flag == "--force" else "")
        raise UsageError(f"{out} exists and is not empty: {hint}")
    held = not any((out / m).is_file() for m in markers)
    if held or out.resolve() in (Path.cwd().resolve(), Path.home().resolve(), Path(out.resolve().anchor)):
        raise InputError(f"{flag} replaces an earlier {what} only (a folder holding {' or '.join(markers)}); this "
                         "folder is not one", path=str(out))


def set_aside(out: Path) -> Path | None:
    """Move an earlier `out` out of the way in one rename (beside it, so on the same file system); the caller removes
    it with `discard` once the new one is in place. None when there is nothing to move."""
    if not out.exists():
        return None
    old = out.with_name(f".{out.name}.replaced-{os.getpid()}-{secrets.token_hex(4)}")
    os.replace(out, old)
    return old


def discard(old: Path | None) -> None:
    if old is not None:
        shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)


def fresh_folder(out: Path, suffix: str) -> Path:
    """A new empty folder beside `out`, made by mkdir (so with the user's umask, as `out` itself would be)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = out.with_name(f".{out.name}.{secrets.token_hex(6)}{suffix}")
        try:
            tmp.mkdir()
            return tmp
        except FileExistsError:
            continue


def resumable_folder(out: Path) -> Path:
    """Where a resumable `python:` run of `out` is written until it is whole (beside `out`: the earlier run there
    stays whole until the swap; an interrupt keeps this folder for `--resume`)."""
    return out.with_name(f".{out.name}.resumable.partial")


def swap_in(staging: Path, out: Path) -> None:
    """`staging` becomes `out`; an earlier `out` is set aside first and removed after, or put back if the swap fails."""
    old = set_aside(out)
    try:
        os.replace(staging, out)
    except OSError:
        if old is not None:
            os.replace(old, out)
        raise
    discard(old)


def clear_for_rewrite(out: Path) -> None:
    """For writers that build `out` in place (an agent run, whose parts --resume continues; a served run): an earlier
    artifact claimed with --force goes whole first, so none of its files mix with the new ones."""
    discard(set_aside(out))


def start_run_over(out: Path, policy: str) -> None:
    """A forced (not resumed) run of `policy` into `out` starts over: an agent run writes in place, so the earlier
    run goes whole first; a python: run is written beside `out` and swapped in, so only the interrupted run kept
    beside it goes (the earlier run stays whole until the swap). Other runs are staged and need nothing."""
    if policy.startswith("openai:"):
        clear_for_rewrite(out)
    elif policy.startswith("python:"):
        shutil.rmtree(resumable_folder(out), ignore_errors=True)
