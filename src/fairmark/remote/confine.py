"""Files the controller writes with what a host sent (a trial's outputs, a tool's result files, the probe's inputs):
the controller chooses every path itself and takes only bytes from the host.

A host is not trusted with the controller's file system (docs/security.md): a name it sends is a key the
controller asked for, checked as a plain relative name (no absolute path, no `..`, no control character), and the
file is made under a directory the controller chose — each directory on the way opened without following a
symbolic link (O_NOFOLLOW), the file itself created afresh (what was there is unlinked: a link planted in its
place goes, its target is untouched) with O_EXCL | O_NOFOLLOW. Nothing here makes a symbolic link.
"""

from __future__ import annotations

import contextlib
import os
import re

# Characters no name or value a host sends may carry into a file name or a line of a stored text.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class UnsafeName(ValueError):
    """A name from a host that cannot be a file under the controller's directory."""


def parts(rel: str) -> list[str]:
    """The components of a relative name; UnsafeName for an absolute one, `..`, `.`, an empty component (`a//b`),
    a control character or a NUL."""
    if not isinstance(rel, str) or not rel:
        raise UnsafeName(f"not a file name: {rel!r}")
    if CONTROL.search(rel):
        raise UnsafeName(f"control character in file name {rel!r}")
    if rel.startswith("/"):
        raise UnsafeName(f"absolute file name {rel!r}")
    out = rel.split("/")
    if any(p in ("", ".", "..") for p in out):
        raise UnsafeName(f"file name {rel!r} is not a plain relative path (no '..', '.', or '//')")
    return out


def _open_dirs(base: str, names: list[str]) -> int:
    """A descriptor of base/names[0]/…, each component made (0755) when absent and opened without following a
    symbolic link: a link planted on the way (ELOOP / ENOTDIR) is refused, never followed."""
    fd = os.open(base, _DIR_FLAGS)
    try:
        for name in names:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o755, dir_fd=fd)
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise UnsafeName(
                    f"{name!r} on the way is not a directory of its own: {exc.strerror}"
                ) from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_inside(base: str, rel: str, data: bytes) -> str:
    """Write `data` as the new file `rel` under the directory `base` (the controller's); its path."""
    names = parts(rel)
    fd = _open_dirs(base, names[:-1])
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(
                names[-1], dir_fd=fd
            )  # an earlier trial's file, or a link planted there: gone, not followed
        try:
            out = os.open(names[-1], _FILE_FLAGS, 0o644, dir_fd=fd)
        except IsADirectoryError:
            raise UnsafeName(f"{rel!r} is a directory here") from None
        with open(out, "wb") as fh:
            fh.write(data)
    finally:
        os.close(fd)
    return os.path.join(base, *names)


def make_dirs_inside(base: str, rel: str) -> None:
    """The directory `rel` under `base`, made as write_inside makes the directories of a file."""
    os.close(_open_dirs(base, parts(rel)))


def inside(base: str, path: str) -> str | None:
    """`path`'s name relative to the directory `base` when it lies inside it (by its text, normalised: the
    controller's own paths), else None."""
    rel = os.path.relpath(os.path.normpath(path), os.path.normpath(base))
    outside = rel in (os.curdir, os.pardir) or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel)
    return None if outside else rel
