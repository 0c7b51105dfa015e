"""Expose a directory tree as resources, confined to its root.

:class:`FileRoot` maps client-supplied relative POSIX paths to files under a
root directory and refuses anything that could escape it (``..``, absolute
paths, drive letters, backslashes, NUL bytes, symlinks pointing outside).
"""

from __future__ import annotations

import mimetypes
import os
import re
import stat
from pathlib import Path

__all__ = ["FileRoot", "PathOutsideRoot", "is_text"]

# Fixed answers for common text formats so results do not depend on the
# host's mime.types file; everything else goes through mimetypes.
_MIME_OVERRIDES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".log": "text/plain",
    ".rst": "text/x-rst",
    ".py": "text/x-python",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".html": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".json": "application/json",
    ".xml": "application/xml",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
}
_DEFAULT_MIME = "application/octet-stream"
_DRIVE = re.compile(r"^[A-Za-z]:")


class PathOutsideRoot(PermissionError):
    """A requested path is malformed or would resolve outside the root."""


def _guess_mime(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    return _MIME_OVERRIDES.get(ext) or mimetypes.guess_type(path)[0] or _DEFAULT_MIME


def is_text(data: bytes, mime_type: str) -> bool:
    """True when content should be sent as text rather than base64 blob.

    Text MIME types (text/*, application/json, application/xml, *+json,
    *+xml) are text; otherwise the bytes must decode as UTF-8 and contain no NUL.
    """
    mime = mime_type.split(";", 1)[0].strip().lower()
    if (
        mime.startswith("text/")
        or mime in ("application/json", "application/xml")
        or mime.endswith(("+json", "+xml"))
    ):
        return True
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class FileRoot:
    """A directory whose regular files are readable by relative POSIX path.

    ``root`` must be an existing directory (else ValueError); it is stored
    resolved in ``.root``.
    """

    __slots__ = ("root", "_real", "_prefix")

    def __init__(self, root: str | os.PathLike) -> None:
        """Resolve and check ``root``."""
        path = Path(root)
        if not path.is_dir():
            raise ValueError(f"file root {str(root)!r} is not an existing directory")
        self.root = path.resolve(strict=True)
        self._real = os.path.realpath(self.root)
        self._prefix = self._real if self._real.endswith(os.sep) else self._real + os.sep

    def _inside(self, real: str) -> bool:
        return real == self._real or real.startswith(self._prefix)

    @staticmethod
    def _check_relative(relative: str) -> list[str]:
        """Return the path's components, or raise PathOutsideRoot if unsafe."""
        if not isinstance(relative, str):
            raise TypeError(f"path must be a str, not {type(relative).__name__}")
        if "\x00" in relative:
            raise PathOutsideRoot("path contains a NUL byte")
        if "\\" in relative:
            raise PathOutsideRoot(f"path {relative!r} contains a backslash")
        if relative.startswith("/") or os.path.isabs(relative):
            raise PathOutsideRoot(f"path {relative!r} is absolute")
        if _DRIVE.match(relative):
            raise PathOutsideRoot(f"path {relative!r} starts with a drive letter")
        parts = [p for p in relative.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise PathOutsideRoot(f"path {relative!r} contains '..'")
        return parts

    def resolve(self, relative: str) -> Path:
        """Return the real path of regular file ``relative`` under the root.

        Raises PathOutsideRoot for unsafe paths or ones whose real path
        (following symlinks) leaves the root, FileNotFoundError when missing,
        IsADirectoryError for directories and PermissionError for other
        non-regular files (FIFOs, devices).
        """
        parts = self._check_relative(relative)
        real = os.path.realpath(os.path.join(self._real, *parts))
        if not self._inside(real):
            raise PathOutsideRoot(f"path {relative!r} resolves outside the root")
        try:
            mode = os.stat(real).st_mode
        except FileNotFoundError:
            raise FileNotFoundError(f"no such file: {relative!r}") from None
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(f"{relative!r} is a directory")
        if not stat.S_ISREG(mode):
            raise PermissionError(f"{relative!r} is not a regular file")
        return Path(real)

    def read(self, relative: str) -> tuple[bytes, str]:
        """Return ``(content, mime_type)`` of file ``relative`` (see :meth:`resolve`)."""
        path = self.resolve(relative)
        with open(path, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise PermissionError(f"{relative!r} is not a regular file")
            data = fh.read()
        return data, _guess_mime(relative)

    def list(self) -> list[str]:
        """Return the sorted relative POSIX paths of all regular files under the root.

        Hidden (dot) files and directories are skipped, symlinked directories
        are not descended into, and symlinks are listed only when they resolve
        to a regular file inside the root.
        """
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self._real):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            rel_dir = os.path.relpath(dirpath, self._real)
            prefix = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
            for name in filenames:
                if name.startswith("."):
                    continue
                relative = prefix + name
                try:
                    self.resolve(relative)
                except (OSError, TypeError):
                    continue
                found.append(relative)
        found.sort()
        return found
