"""Images and audio in a tool's result: :class:`Image`, :class:`Audio`, and ``bytes`` told apart
by their first bytes.

Loaded when first needed (a tool that returns ``bytes``, ``Image`` or ``Audio``); the names are
also importable from :mod:`mcp_ref.types` and ``mcp_ref``.
"""

from __future__ import annotations

import base64
from typing import Any, ClassVar, cast

from .types import AudioContent, ImageContent

__all__ = ["Image", "Audio", "sniff_mime_type", "media_block", "BYTES_RESULT_URI"]

#: The first bytes of the media formats a tool's ``bytes`` result is recognised as.
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"),
    (b"\xff\xf3", "audio/mpeg"),
    (b"\xff\xf2", "audio/mpeg"),
)
_FORMATS = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "svg": "image/svg+xml",
    "bmp": "image/bmp",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "ogg": "audio/ogg",
    "flac": "audio/flac",
    "m4a": "audio/mp4",
    "aac": "audio/aac",
    "webm": "audio/webm",
}
#: The URI of a tool's ``bytes`` result of no recognised format, sent as an embedded blob.
BYTES_RESULT_URI = "mcp-ref:tool-result"


def sniff_mime_type(data: bytes) -> str | None:
    """The MIME type the first bytes of ``data`` name (PNG, JPEG, GIF, WebP, WAV, MP3, Ogg, FLAC), or None."""
    if data[:4] == b"RIFF" and data[8:12] in (b"WEBP", b"WAVE"):
        return "image/webp" if data[8:12] == b"WEBP" else "audio/wav"
    return next((mime for magic, mime in _SIGNATURES if data.startswith(magic)), None)


def media_block(data: bytes) -> dict[str, Any]:
    """``bytes`` as a content block: image or audio when the format is recognised, else an embedded blob."""
    encoded = base64.b64encode(data).decode("ascii")
    mime = sniff_mime_type(data)
    if mime is None:
        return {
            "type": "resource",
            "resource": {
                "uri": BYTES_RESULT_URI,
                "mimeType": "application/octet-stream",
                "blob": encoded,
            },
        }
    return {"type": mime.partition("/")[0], "data": encoded, "mimeType": mime}


def _media(kind: str, path: Any, data: bytes | None, format: str | None) -> tuple[str, str]:
    """(base64 data, MIME type) for :class:`Image` and :class:`Audio`."""
    if (path is None) == (data is None):
        raise ValueError(f"{kind.title()}() takes a path or data=, not both or neither")
    if path is not None:
        from pathlib import Path

        path = Path(path)
        data = path.read_bytes()
        format = format or path.suffix.lstrip(".")
    data = cast(bytes, data)  # exactly one of path / data was given (checked above)
    mime = _FORMATS.get((format or "").lower()) or sniff_mime_type(data)
    if mime is None and format:
        mime = f"{kind}/{format.lower()}"
    if mime is None or not mime.startswith(kind + "/"):
        raise ValueError(
            f"{kind.title()}(): cannot tell the {kind} format; pass format= (e.g. 'png')"
            if mime is None
            else f"{kind.title()}(): this is {mime}, not an {kind}"
        )
    return base64.b64encode(data).decode("ascii"), mime


class _FromFile:
    """The constructor :class:`Image` and :class:`Audio` share: a file's ``path``, or ``data``."""

    type: ClassVar[str]

    def __init__(
        self,
        path: Any = None,
        *,
        data: bytes | None = None,
        format: str | None = None,
        annotations: dict[str, Any] | None = None,
    ):
        encoded, mime = _media(self.type, path, data, format)
        # the content class after this one in the MRO: ImageContent or AudioContent
        super().__init__(data=encoded, mime_type=mime, annotations=annotations)  # type: ignore[call-arg]


class Image(_FromFile, ImageContent):
    """An image in a tool's result: ``Image(path="chart.png")`` or ``Image(data=png_bytes, format="png")``.

    The format comes from ``format``, else the file's suffix, else the data's first bytes.
    It is an :class:`ImageContent`, so it goes anywhere one does.
    """


class Audio(_FromFile, AudioContent):
    """Audio in a tool's result: ``Audio(path="note.wav")`` or ``Audio(data=wav_bytes, format="wav")`` (2025-03-26 on)."""
