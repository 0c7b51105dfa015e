"""Expose a directory tree as resources, confined to its root.

:class:`FileRoot` maps client-supplied relative POSIX paths to files under a
root directory and refuses anything that could escape it (``..``, absolute
paths, drive letters, backslashes, NUL bytes, symlinks pointing outside), and
any second spelling of a file (``./a``, ``a//b``, ``a/``).
"""

from __future__ import annotations

import base64
import bisect
import errno
import json
import mimetypes
import os
import re
import stat
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import InvalidParams, ResourceNotFound
from ..extension import Extension
from ..server.resources import RegisteredResource, build_resource
from ..stdio import DEFAULT_MAX_MESSAGE_SIZE
from ..types import BlobResourceContents, TextResourceContents
from ..uri_template import UriTemplate, within_bound

__all__ = [
    "FileRoot",
    "FileRootExtension",
    "FileListing",
    "PathOutsideRoot",
    "FileTooLarge",
    "is_text",
    "file_root",
    "DEFAULT_MAX_FILE_SIZE",
    "MAX_LISTING_DEPTH",
]

#: Room in a message for all but a file's content: the JSON-RPC envelope, the URI (at most 8,192
#: characters, ``MAX_URI_LENGTH``, each escaped in JSON), the MIME type and caching hints.
_ENVELOPE = 64 * 1024
#: The largest file a FileRoot reads (``max_file_size``): a resource is sent whole, in one message,
#: and this one fits the message limit of an mcp_ref client by default (``DEFAULT_MAX_MESSAGE_SIZE``,
#: 4 MiB, over stdio and HTTP): its content takes at most 4/3 of its size there (:func:`_content_of`),
#: so 3,096,576 bytes (2.95 MiB) leave ``_ENVELOPE`` for the rest.
DEFAULT_MAX_FILE_SIZE = (DEFAULT_MAX_MESSAGE_SIZE - _ENVELOPE) * 3 // 4

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
#: Platforms whose usual file systems fold case (and, on macOS, Unicode normalisation): there a
#: FileRoot checks each name as stored, so one file has one spelling (FileRoot._check_names).
_FOLDING_FILE_SYSTEMS = sys.platform in ("darwin", "win32", "cygwin")
#: Where ``os.open`` takes ``dir_fd`` and ``O_NOFOLLOW``/``O_DIRECTORY`` exist (POSIX): a file is
#: opened one component at a time from the root's directory, following no link at any level
#: (FileRoot._open).  Elsewhere (Windows) the checked path is opened whole: see :meth:`FileRoot.read`.
_WALKS_BY_DIR_FD = (
    os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
)
#: The most names a path of a file root's listing holds (``a/b/c.txt`` holds 3): the listing opens no
#: directory deeper than that (:meth:`FileRoot.files`), so its walk keeps at most that many directory
#: listings at once, however deep a tree is made; the files below are left out of the listing, as
#: those of a directory that cannot be read are, and are still read by their URI.
MAX_LISTING_DEPTH = 128
#: A directory of at least this many names (a "wide" one) has its sorted names kept between the
#: pages of a listing (:meth:`FileRoot._sorted_keys`): a page that resumes inside it would otherwise
#: read and sort it whole again (100,000 names: a quarter of a second a page).  A narrower one is
#: cheap to read again and stays out, so it never pushes a wide one out of the cache.
_CACHED_WIDTH = 512
#: The most directories whose names a FileRoot keeps: when one more is kept, the least recently
#: used is dropped.
_CACHED_DIRECTORIES = 16
#: The most names a FileRoot keeps, over all the directories it keeps: a directory wider than this
#: is never kept (each page resuming inside it reads it again), and to keep one more the least
#: recently used are dropped until its names fit.  A name is kept as the directory holds it, without
#: the directory's path (at most 255 bytes on most file systems), so what a root keeps is bounded
#: however deep or wide its tree: about 20 MB at 100 bytes a name, where the count of directories
#: alone let 16 directories of a million names hold some 3 GB until the server ended.
_CACHED_NAMES = 200_000
#: How long kept names are used and kept, in seconds, at most: every directory a listing reads first
#: drops the names kept longer than this (a root no one lists holds them until its next listing).
#: What changes a directory's names changes its modification time, which each use compares (and
#: device and inode), so this bounds how late a listing shows a change that leaves it as it was (a
#: tool restoring a directory's time, a link whose target turned from a file into a directory).
_CACHED_SECONDS = 30.0
#: A directory modified this recently (in nanoseconds) is not kept: a file system stamps times at a
#: coarser step than it makes changes (a clock tick; 2 s on FAT), so a name added in the same step
#: as the listing was read would leave the time unchanged.
_SETTLED_NS = 2_000_000_000
#: What ``open(..., O_NOFOLLOW)`` fails with on a link (ELOOP; EMLINK on FreeBSD; ENOTDIR for a link
#: opened with O_DIRECTORY on some systems).
_A_LINK = {errno.ELOOP, errno.EMLINK, errno.ENOTDIR}


class PathOutsideRoot(PermissionError):
    """A requested path is malformed, hidden, or would resolve outside the root."""


class FileTooLarge(ValueError):
    """The file is larger than the root's ``max_file_size`` (``limit``): it is not read."""

    def __init__(self, relative: str, limit: int):
        super().__init__(f"{relative!r} is larger than the limit of {limit} bytes")
        self.limit = limit


def _has_a_uri(relative: str) -> bool:
    """True when ``relative`` can be written in a URI.  RFC 3986 §2.5: "the data should first be
    encoded as octets according to the UTF-8 character encoding" (RFC 3987 §3.1 likewise), so a
    name that is not UTF-8 on disk (``bad\\xff.txt``, read by ``os.listdir`` as a lone surrogate,
    PEP 383) has no URI: it is neither listed nor read as a resource."""
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


#: The characters of a name kept as they are in a file's URI, as unreserved characters are: RFC 3986
#: §3.3 ``pchar = unreserved / pct-encoded / sub-delims / ":" / "@"`` (sub-delims, §2.2, and the two
#: gen-delims a segment may hold).  So a name holding only pchars is written as the advertised
#: template's RFC 6570 ``{+path}`` expansion writes it (``1:2`` and ``me@host`` as they are).
_PCHARS = "!$&'()*+,;=:@"


class _FileUriTemplate(UriTemplate):
    """A file root's ``prefix{+path}``, whose path is written one segment at a time: every
    character of a name but unreserved ones, sub-delims, ``:`` and ``@`` (:data:`_PCHARS`) is
    percent-encoded (``a#b.txt`` is ``a%23b.txt``, ``[x]`` ``%5Bx%5D``, ``50%`` ``50%25``), the
    ``/`` between names kept.  RFC 3986
    §3.3: a segment holds pchars, and a raw ``#`` or ``?`` would end the path (§3.4, §3.5: what
    follows is a query or a fragment, not part of the resource); 2025-11-25 server/resources:
    "Custom URI schemes MUST be in accordance with RFC3986".  :meth:`match_canonical` checks a
    URI against this expansion, so a read of the raw ``a#b.txt`` spelling finds nothing."""

    __slots__ = ()

    def expand(self, **values: Any) -> str:
        """The URI of the file at relative path ``values["path"]`` (see the class)."""
        path = values.get("path")
        if path is None:
            return super().expand(**values)
        encoded = "/".join(quote(name, safe=_PCHARS) for name in str(path).split("/"))
        return super().expand(path=encoded)  # ``{+path}`` keeps each %XX triplet as it is


def _is_directory(entry: os.DirEntry) -> bool:
    """True when ``entry`` is a directory, or a link to one (as ``os.walk`` sorts them)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _guess_mime(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    return _MIME_OVERRIDES.get(ext) or mimetypes.guess_type(path)[0] or _DEFAULT_MIME


def is_text(data: bytes, mime_type: str) -> bool:
    """True when content should be sent as text rather than base64 blob.

    Only bytes that decode as UTF-8 are text: a ``text`` field is a JSON string, and a file in
    another encoding (Latin-1, UTF-16) sent as text would arrive with U+FFFD in place of its bytes;
    such a file is a blob of the same MIME type, so the client gets its exact bytes (2025-11-25
    server/resources §Resource Contents: text resources carry ``text``, binary ones base64 ``blob``).
    Text MIME types (text/*, application/json, application/xml, *+json, *+xml) are then text;
    any other must also contain no NUL.
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    mime = mime_type.split(";", 1)[0].strip().lower()
    if (
        mime.startswith("text/")
        or mime in ("application/json", "application/xml")
        or mime.endswith(("+json", "+xml"))
    ):
        return True
    return b"\x00" not in data


def _base64_size(size: int) -> int:
    """How many characters ``size`` bytes take in base64 (RFC 4648 §4: 4 for every 3, padded)."""
    return (size + 2) // 3 * 4


def _content_of(uri: str, data: bytes, mime_type: str, limit: int) -> Any:
    """A file's bytes as the contents of ``resources/read``: text when :func:`is_text` and its
    JSON-escaped form (what the message carries: a control character is 6 characters, a character
    beyond ASCII 6 or 12) is no longer than base64 of ``limit`` bytes would be; otherwise a base64
    blob of the same MIME type.  So a file of at most ``limit`` bytes (``max_file_size``) takes at
    most 4/3 of ``limit`` in the message, whatever it holds: the bound
    :data:`DEFAULT_MAX_FILE_SIZE` is chosen by."""
    if is_text(data, mime_type):
        text = data.decode("utf-8")
        # json.dumps escapes as the message's encoder does (ASCII, control characters escaped)
        if len(data) * 6 + 2 <= _base64_size(limit) or len(json.dumps(text)) <= _base64_size(limit):
            return TextResourceContents(uri=uri, text=text, mime_type=mime_type)
    return BlobResourceContents(
        uri=uri, blob=base64.b64encode(data).decode("ascii"), mime_type=mime_type
    )


class FileRoot:
    """A directory whose regular files are readable by relative POSIX path.

    ``root`` must be an existing directory (else ValueError); it is stored
    resolved in ``.root``.  Files over ``max_file_size`` bytes are refused
    (:class:`FileTooLarge`), and hidden paths (a component starting with ``.``:
    ``.env``, ``.git/config``) are refused as outside the root unless
    ``allow_hidden``.  A path has one spelling: ``./a.txt``, ``docs//a.txt`` and
    ``a.txt/`` are refused (:class:`PathOutsideRoot`), never read as ``a.txt``, and
    where the file system folds case or Unicode normalisation each component must
    be spelled as stored.  For the same reason a symbolic link inside the root is
    not followed (:class:`PathOutsideRoot`) unless ``follow_links``: ``pub ->
    private`` would be a second name for every file under ``private/``, and a
    policy that hides ``private/`` judges the name it is given.  With
    ``follow_links`` a link that stays inside the root is served under its own
    name (the operator made that second name); one leading outside never is, nor,
    unless ``allow_hidden``, one leading to a hidden path (``notes.txt -> .env``,
    ``repo -> .git``: the real path is judged too).
    """

    __slots__ = (
        "root",
        "max_file_size",
        "allow_hidden",
        "follow_links",
        "_real",
        "_prefix",
        "_exact_names",
        "clock",
        "_listings",
        "_listings_lock",
    )

    def __init__(
        self,
        root: str | os.PathLike,
        *,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        allow_hidden: bool = False,
        follow_links: bool = False,
    ) -> None:
        """Resolve and check ``root`` (which may itself be reached through a link)."""
        path = Path(root)
        if not path.is_dir():
            raise ValueError(f"file root {str(root)!r} is not an existing directory")
        if max_file_size < 0:
            raise ValueError("max_file_size must be >= 0")
        self.max_file_size = max_file_size
        self.allow_hidden = allow_hidden
        self.follow_links = follow_links
        self.root = path.resolve(strict=True)
        self._real = os.path.realpath(self.root)
        self._prefix = self._real if self._real.endswith(os.sep) else self._real + os.sep
        #: Check each component against its directory's own listing (see :meth:`_check_names`).
        self._exact_names = _FOLDING_FILE_SYSTEMS
        #: The monotonic clock (seconds) that ages the names kept between pages (a test moves it).
        self.clock = time.monotonic
        #: The sorted names of the wide directories read last, least recently used first (see
        #: :meth:`_sorted_names`): path -> ((device, inode, mtime_ns), :attr:`clock` when read,
        #: names).
        self._listings: OrderedDict[str, tuple[tuple[int, int, int], float, Sequence[str]]]
        self._listings = OrderedDict()
        self._listings_lock = threading.Lock()  # pages of one root are read on several threads

    def _check_names(self, relative: str, parts: list[str]) -> None:
        """On a file system that folds case or Unicode normalisation (macOS, Windows), every
        component must be spelled exactly as the directory stores it: ``Secret.txt`` or a
        decomposed ``é`` would open ``secret.txt`` or a composed ``é`` under another name."""
        parent = self._real
        for part in parts:
            try:
                names = os.listdir(parent)
            except OSError:
                raise FileNotFoundError(f"no such file: {relative!r}") from None
            if part not in names:
                raise FileNotFoundError(f"no such file: {relative!r}")
            parent = os.path.join(parent, part)

    def _inside(self, real: str) -> bool:
        return real == self._real or real.startswith(self._prefix)

    def _hidden(self, real: str) -> bool:
        """True when ``real`` (a path inside the root) has, below the root, a component starting
        with ``.``: a hidden file or directory."""
        below = os.path.relpath(real, self._real)
        return below != os.curdir and any(part.startswith(".") for part in below.split(os.sep))

    def _check_relative(self, relative: str) -> list[str]:
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
        parts = relative.split("/")
        if ".." in parts:
            raise PathOutsideRoot(f"path {relative!r} contains '..'")
        if "" in parts or "." in parts:
            # One spelling per file: "./a", "a//b" and "a/" are refused, never read as "a" or "a/b".
            # Whoever judged the path before it got here (an ``authorize`` policy, a rate limit,
            # a subscription) judged that exact string, so the file read must be the one it names.
            raise PathOutsideRoot(f"path {relative!r} is not canonical (an empty or '.' segment)")
        if not self.allow_hidden and any(p.startswith(".") for p in parts):
            raise PathOutsideRoot(f"path {relative!r} is hidden")
        return parts

    def is_canonical(self, relative: str) -> bool:
        """True when ``relative`` is a path this root would look up: the one spelling of a file
        (no empty, ``.`` or ``..`` segment, no backslash, NUL or leading ``/``, not hidden unless
        ``allow_hidden``).  It reads nothing from the disk."""
        try:
            self._check_relative(relative)
        except (PathOutsideRoot, TypeError):
            return False
        return True

    def resolve(self, relative: str) -> Path:
        """Return the real path of regular file ``relative`` under the root.

        Raises PathOutsideRoot for unsafe paths or ones whose real path
        (following symlinks) leaves the root, FileNotFoundError when missing,
        IsADirectoryError for directories and PermissionError for other
        non-regular files (FIFOs, devices).
        """
        return self._resolve(relative, self._exact_names)

    def _resolve(self, relative: str, exact_names: bool) -> Path:
        parts = self._check_relative(relative)
        if exact_names:
            self._check_names(relative, parts)
        named = os.path.join(self._real, *parts)
        real = os.path.realpath(named)
        if not self._inside(real):
            raise PathOutsideRoot(f"path {relative!r} resolves outside the root")
        if real != named and not self.follow_links:
            # One name per file: the path goes through a symbolic link (``pub -> private``), a second
            # name that whoever judged this path (``authorize``) never saw.  Not followed.
            raise PathOutsideRoot(f"path {relative!r} goes through a symbolic link")
        if real != named and not self.allow_hidden and self._hidden(real):
            # A plain name linking to a hidden one (``notes.txt -> .env``, ``repo -> .git``) is
            # judged by where it leads: read() then opens that real path, with no hidden name in it.
            raise PathOutsideRoot(f"path {relative!r} leads to a hidden path")
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
        """Return ``(content, mime_type)`` of file ``relative`` (see :meth:`resolve`).

        The file is opened without following a symlink at any level and without
        blocking, and the opened descriptor must be a regular file: a path (or
        any directory on it) swapped for a FIFO or a link after :meth:`resolve`
        is refused (:class:`PathOutsideRoot` for a link), never followed or
        waited on.  At most ``max_file_size`` bytes are read
        (:class:`FileTooLarge` beyond).

        The real path :meth:`resolve` checked is opened one component at a time
        from a descriptor of the root's directory (``dir_fd``, each with
        ``O_NOFOLLOW``), so a directory replaced by a link between the check and
        the open is never gone through.  Where ``os.open`` has no ``dir_fd``
        (Windows) the checked path is opened whole with ``O_NOFOLLOW`` where it
        exists: only its last component is then protected.
        """
        path = self.resolve(relative)
        try:
            fd = self._open(path)
        except OSError as exc:
            if exc.errno in _A_LINK:
                # a component swapped after resolve() for a link (or a file, ENOTDIR): never followed
                raise PathOutsideRoot(f"path {relative!r} changed as it was opened") from None
            raise
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise PermissionError(f"{relative!r} is not a regular file")
            if info.st_size > self.max_file_size:
                raise FileTooLarge(relative, self.max_file_size)
            data = fh.read(self.max_file_size + 1)
        if len(data) > self.max_file_size:  # it grew since fstat
            raise FileTooLarge(relative, self.max_file_size)
        return data, _guess_mime(relative)

    def _open(self, real: Path) -> int:
        """A descriptor of ``real`` (a path under the root, with no link in it: :meth:`resolve`'s
        answer), opened from the root's directory one component at a time, never following a link
        (see :meth:`read`)."""
        flags = (
            os.O_RDONLY
            | getattr(os, "O_NONBLOCK", 0)
            | getattr(os, "O_NOFOLLOW", 0)
            | getattr(os, "O_BINARY", 0)
        )
        if not _WALKS_BY_DIR_FD:
            return os.open(real, flags)
        *directories, name = os.path.relpath(real, self._real).split(os.sep)
        directory = os.open(self._real, os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY)
        try:
            for part in directories:
                inner = os.open(
                    part, os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY, dir_fd=directory
                )
                os.close(directory)
                directory = inner
            return os.open(name, flags, dir_fd=directory)
        finally:
            os.close(directory)

    def list(self) -> list[str]:
        """Return the sorted relative POSIX paths of all regular files under the root.

        Hidden (dot) files and directories are skipped (unless ``allow_hidden``), symlinked directories
        are not descended into, and symlinks are listed only with ``follow_links``, when they resolve
        to a regular file inside the root (and not hidden, unless ``allow_hidden``).  Directories that
        cannot be read, and those deeper than :data:`MAX_LISTING_DEPTH` names, are skipped.
        """
        return list(self.files())

    def files(self, after: str | None = None) -> Iterator[str]:
        """:meth:`list`'s paths one at a time, in its order, only those after ``after`` (a relative
        path, which need not exist): read lazily, one directory at a time, and each file checked
        (:meth:`resolve`, ``stat`` and all) only when it is reached.  So the first ``n`` files after
        a path cost ``n`` checks and a walk of the names on the way (directories wholly before
        ``after`` are not opened), and memory holds one listing per directory level.  The sorted
        names of the last 16 wide directories read (of 512 names or more; 200,000 names in all at
        most) are kept, up to 30 s, while each directory's modification time stays the same: so the
        pages of one listing do not each read and sort a directory of 100,000 names they resume
        inside (:meth:`_sorted_names`)."""
        for relative in self._names(after):
            try:
                self._resolve(relative, False)  # names as the directory stores them
            except (OSError, TypeError):
                continue
            yield relative

    def _names(self, after: str | None) -> Iterator[str]:
        """The relative paths of the files under the root that are not hidden, unchecked, sorted as
        whole strings (a directory sorts as its name and ``/``: all its files sit together there),
        those after ``after``.  The walk keeps a stack of the directories it is in, one iterator of
        names each (no recursion: a tree of any depth is walked, however deep Python's stack), and
        opens no directory whose path already holds :data:`MAX_LISTING_DEPTH` names."""
        walking = [self._keys(self._real, "", after)]
        while walking:
            key = next(walking[-1], None)
            if key is None:
                walking.pop()  # that directory is done: back to its parent's next name
            elif not key.endswith("/"):
                yield key
            elif key.count("/") < MAX_LISTING_DEPTH:  # else too deep: skipped, as if unreadable
                inside = after is not None and after.startswith(key)
                directory = os.path.join(self._real, *key[:-1].split("/"))
                walking.append(self._keys(directory, key, after if inside else None))

    def _keys(self, directory: str, prefix: str, after: str | None) -> Iterator[str]:
        """The names in ``directory`` (``prefix``: its own relative path and ``/``, or ``""``) as
        ``prefix + name``, a directory's with a ``/`` after, sorted, but for hidden ones and linked
        directories; from ``after`` on: those after it, and the directory holding it."""
        names = self._sorted_names(directory)
        # ``after`` is in this directory (it starts with ``prefix``: see :meth:`_names`), so it
        # compares with ``prefix + name`` as its rest does with ``name``
        rest = None if after is None else after[len(prefix) :]
        start = 0
        if rest is not None:
            # the first name after ``rest``, or the one before it: the directory holding ``rest``
            # (``a/`` for ``a/x``; no other name falls between the two, as a name holds no ``/``)
            start = max(bisect.bisect_right(names, rest) - 1, 0)
        for index in range(start, len(names)):
            name = names[index]
            inside = name.endswith("/") and rest is not None and rest.startswith(name)
            if rest is not None and name <= rest and not inside:
                continue  # at or before ``after``, with everything under it
            yield prefix + name

    def _sorted_names(self, directory: str) -> Sequence[str]:
        """The sorted names in ``directory`` (a directory's with a ``/`` after), but for hidden ones
        and linked directories; never changed once returned.  A wide directory's
        (:data:`_CACHED_WIDTH` names or more) are kept for the next pages: reused while the
        directory's device, inode and modification time are those seen before it was read, for at
        most :data:`_CACHED_SECONDS` (every call drops those kept longer); at most
        :data:`_CACHED_DIRECTORIES` directories and :data:`_CACHED_NAMES` names are kept, the least
        recently used dropped first, and a wider one is never kept; one modified in the last
        :data:`_SETTLED_NS` is not kept."""
        try:
            info = os.stat(directory)
        except OSError:
            return []  # gone since its parent was read: nothing listed from it
        version = (info.st_dev, info.st_ino, info.st_mtime_ns)
        now = self.clock()
        with self._listings_lock:
            self._drop_expired(now)
            kept = self._listings.pop(directory, None)
            if kept is not None and kept[0] == version:
                self._listings[directory] = kept  # the most recently used now
                return kept[2]
        names = self._read_names(directory)
        settled = time.time_ns() - info.st_mtime_ns >= _SETTLED_NS
        if _CACHED_WIDTH <= len(names) <= _CACHED_NAMES and settled:
            with self._listings_lock:
                self._listings.pop(directory, None)  # kept by another thread meanwhile
                self._drop_expired(self.clock())
                held = sum(len(kept[2]) for kept in self._listings.values())
                while (
                    len(self._listings) >= _CACHED_DIRECTORIES or held + len(names) > _CACHED_NAMES
                ):
                    _, (_, _, dropped) = self._listings.popitem(last=False)  # least recently used
                    held -= len(dropped)
                self._listings[directory] = (version, now, names)
        return names

    def _drop_expired(self, now: float) -> None:
        """Drop the names kept :data:`_CACHED_SECONDS` or longer (``now``: :attr:`clock`'s time);
        called with ``_listings_lock`` held."""
        expired = [
            path for path, kept in self._listings.items() if now - kept[1] >= _CACHED_SECONDS
        ]
        for path in expired:
            del self._listings[path]

    def _read_names(self, directory: str) -> Sequence[str]:
        """:meth:`_sorted_names`, read from the disk."""
        names = []
        try:
            with os.scandir(directory) as listing:
                for entry in listing:
                    if entry.name.startswith(".") and not self.allow_hidden:
                        continue
                    if not _is_directory(entry):
                        names.append(entry.name)
                    elif not entry.is_symlink():  # a linked directory is never descended
                        names.append(entry.name + "/")
        except OSError:
            return []  # unreadable, or gone since its parent was read: nothing listed from it
        names.sort()
        return names


# -- as resources of a server ------------------------------------------------------------


class FileListing:
    """The files of a :class:`FileRoot` as ``resources/list`` items (``{"uri", "name"}``), in
    :meth:`FileRoot.files`'s order: called with ``after``, a URI it listed, it goes on from there,
    so a page of ``resources/list`` costs its own size (``resumes``: ``mcp_ref.server.listing``).
    A file is listed under the spelling a read must use (``a%20b.txt``), the one ``authorize``
    judges; one whose name is not UTF-8, or that no URI would read, is left out: so is one whose
    URI is over ``MAX_URI_LENGTH`` (8,192 characters, ``mcp_ref.uri_template``), which no read or
    subscription takes (a deep path of long or percent-encoded names)."""

    __slots__ = ("files", "template")

    #: Called with ``after`` (the last URI of a page), it lists the files after that one's path.
    resumes = True

    def __init__(self, files: FileRoot, template: UriTemplate) -> None:
        """The listing of ``files`` under ``template`` (``prefix{+path}``)."""
        self.files = files
        self.template = template

    def __call__(self, after: str | None = None) -> Iterator[dict]:
        """The listed files, those after the file of URI ``after`` when given (ValueError for a
        URI of no file of this root)."""
        start = None
        if after is not None:
            matched = self.template.match_canonical(after)
            if matched is None:
                raise ValueError("not the URI of a file of this root")
            start = matched["path"]
        return self._items(start)

    def _items(self, after: str | None) -> Iterator[dict]:
        for relative in self.files.files(after):
            if not _has_a_uri(relative):
                continue  # a name that is not UTF-8: no URI reads it, and the rest is still listed
            uri = self.template.expand(path=relative)
            if not within_bound(uri):
                continue  # too long for any read to take (``MAX_URI_LENGTH``): unreadable, not listed
            if self.template.match_canonical(uri) == {"path": relative}:  # else no URI reads it
                yield {"uri": uri, "name": relative}


def file_root(
    root: str,
    uri_prefix: str | None = None,
    *,
    name: str | None = None,
    max_file_size: int | None = None,
    allow_hidden: bool = False,
    follow_links: bool = False,
) -> tuple[str, RegisteredResource, FileListing]:
    """What :meth:`~mcp_ref.server.Server.add_file_root` registers for directory ``root``.

    Returns ``(template, entry, list_files)``: the URI template ``prefix{+path}``, the
    resource template that reads one file (named ``name``, by default after the directory),
    and the listing of its files (:class:`FileListing`).  A path that
    leaves the root, is hidden, missing, unreadable or too long to open
    answers Resource not found (-32002), naming only the URI; so does any
    spelling of a file but its canonical one (``./a.txt``, ``a.txt/``,
    ``docs//a.txt``, ``%61.txt``), and a path through a symbolic link unless
    ``follow_links``; a file over ``max_file_size`` answers
    -32602 with its size and the limit.  Files are listed under their
    canonical URI, each name percent-encoded but for unreserved characters,
    sub-delims, ``:`` and ``@`` (``a%20b.txt`` for ``a b.txt``, ``a%23b.txt`` for ``a#b.txt``:
    :class:`_FileUriTemplate`); a file whose name is not
    UTF-8 has none (:func:`_has_a_uri`): it is left out of the listing and no
    URI reads it.
    """
    files = FileRoot(
        root,
        max_file_size=DEFAULT_MAX_FILE_SIZE if max_file_size is None else max_file_size,
        allow_hidden=allow_hidden,
        follow_links=follow_links,
    )
    prefix = uri_prefix if uri_prefix is not None else files.root.as_uri() + "/"
    template = _FileUriTemplate(prefix + "{+path}")

    def read_file(path: str):
        # Reached only with the canonical spelling (Server.find_resource), and FileRoot refuses any
        # other path ("./a", "a//b", "a/"): the file read is the one authorize judged by this URI.
        uri = template.expand(path=path)
        try:
            data, mime_type = files.read(path)
        except FileTooLarge as exc:
            raise InvalidParams(
                f"Resource too large: {uri} is over this server's limit of {exc.limit} bytes",
                data={"uri": uri},
            ) from None
        except (
            OSError
        ):  # outside the root, hidden, missing, a directory, unreadable, a name too long ...
            raise ResourceNotFound(f"Resource not found: {uri}", data={"uri": uri}) from None
        return _content_of(uri, data, mime_type, files.max_file_size)

    list_files = FileListing(files, template)
    given = {
        "name": name or f"files under {files.root.name}",
        "description": f"Files under {files.root}",
    }
    entry = build_resource(read_file, template.template, given)
    entry.template = template  # matched with the file root's own spelling of a path

    def names_a_file(variables: dict[str, str]) -> bool:
        # a path the root would refuse ("./a", "a//b", "a/", ".env") or one no URI can spell names
        # no resource at all: not found for resources/subscribe and the listen streams too
        path = variables.get("path", "")
        return files.is_canonical(path) and _has_a_uri(path)

    entry.accepts = names_a_file
    return template.template, entry, list_files


class FileRootExtension(Extension):
    """Every file under directory ``root`` as a resource of the server that takes it, confined to
    that directory (``server.add_file_root(root, ...)`` builds one; the options are :func:`file_root`'s).

    URIs are ``uri_prefix + relative/path`` (default: the directory's ``file://`` URI plus ``/``),
    each name in the path percent-encoded but for unreserved characters, sub-delims, ``:`` and
    ``@`` (``a#b.txt`` is ``a%23b.txt``; the raw spelling is not found).
    Paths that leave the root — ``..``, absolute paths, symlinks pointing outside — and hidden
    paths (``.env``, ``.git/...``, unless ``allow_hidden``) are refused as not found, and so is a
    path through a symbolic link inside the root unless ``follow_links`` (a second name for a
    file, which an ``authorize`` policy would judge by that name: one name per file).  With
    ``follow_links``, a link to a hidden path (``notes.txt -> .env``) is refused as hidden.  A file
    whose name is not UTF-8 has no URI: it is not listed and no URI reads it.  A file over
    ``max_file_size`` bytes (default :data:`DEFAULT_MAX_FILE_SIZE`, 2.95 MiB: one that size fits
    an mcp_ref client's default 4 MiB message limit in base64) is refused with -32602.
    It registers, in :meth:`setup`, one resource template reading a file and the listing of the
    files; :attr:`template` is the URI template registered.
    """

    name = "files"

    def __init__(self, root: str, uri_prefix: str | None = None, **options: Any):
        self.template, self.entry, self.list_files = file_root(root, uri_prefix, **options)

    def setup(self, host: Any) -> None:
        """Register the template and the files' listing on ``host`` (a ``Server``)."""
        host.add_resource_entry(self.entry, self.list_files)
