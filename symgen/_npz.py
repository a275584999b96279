"""An ``.npz`` read without trusting it: every member inflated here, in bounded chunks.

``np.load`` leaves a zip member's inflation to :mod:`zipfile`, which inflates all it is asked for
before it checks anything: numpy reads an ``.npy`` 2.0 header in one read of the length the
header's first four bytes give (up to 4 GiB), and zipfile inflates the member's whole stream for
that read before cutting it to the size the zip directory declares (issue 38, finding 14: a 1 MB
file took 1.05 GB before it was refused).  Here nothing is handed to zipfile but the directory:
each member is inflated with :mod:`zlib` at most :data:`CHUNK` bytes at a time, and a member that
inflates past the size its directory declares is refused at that size + 1; its ``.npy`` header
(at most :data:`MAX_HEADER` bytes, numpy's own bound) is parsed from those bytes, so the caller
knows every member's shape and dtype, and can check them against the memory a result may take,
before any array is allocated or any member's data inflated.
"""
from __future__ import annotations

import io
import math
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

__all__ = ["Member", "members", "read_array", "CHUNK", "MAX_HEADER"]

#: Bytes inflated (or read, for a stored member) at a time.
CHUNK = 1 << 16
#: The longest ``.npy`` header read (numpy refuses longer ones by default too).
MAX_HEADER = 10000

_FORMATS = {(1, 0): "<H", (2, 0): "<I"}
_TRY = "save the result again with Result.save"


class Member:
    """One ``.npy`` member: its zip entry, where its data starts, and its header's shape, dtype
    and order (nothing of its data read)."""

    def __init__(self, info: zipfile.ZipInfo, where: str, header_size: int, shape: tuple,
                 dtype: np.dtype, fortran: bool):
        self.info, self.where, self.header_size = info, where, header_size
        self.shape, self.dtype, self.fortran = shape, dtype, fortran

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


def _inflated(fh, info: zipfile.ZipInfo, where: str):
    """The bytes of the zip member ``info`` of the open file ``fh``, in chunks of at most
    :data:`CHUNK` bytes: no more than its directory declares (refused at that size + 1), no
    fewer, and with its CRC-32 checked at the end."""
    if info.flag_bits & 0x1:
        raise ValueError(f"{where} is encrypted; {_TRY}")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ValueError(f"{where} is compressed with zip method {info.compress_type}, not "
                         f"deflate or stored as numpy writes; {_TRY}")
    fh.seek(info.header_offset)
    local = fh.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise ValueError(f"{where}: its local zip header is damaged; {_TRY}")
    fh.seek(info.header_offset + 30 + sum(struct.unpack("<HH", local[26:30])))
    inflate = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
    left, out, crc = info.compress_size, 0, 0
    while True:
        data = inflate.unconsumed_tail if inflate is not None else b""
        if not data and left > 0:
            data = fh.read(min(CHUNK, left))
            if not data:
                raise ValueError(f"{where} is truncated: its compressed data ends early; {_TRY}")
            left -= len(data)
        chunk = data if inflate is None else inflate.decompress(data, CHUNK)
        if not chunk and not data:
            break
        out += len(chunk)
        if out > info.file_size:
            raise ValueError(f"{where} inflates to more than the {info.file_size} bytes its zip "
                             f"directory declares (a zip bomb, or a damaged file; refused at "
                             f"{info.file_size + 1} bytes); {_TRY}")
        crc = zlib.crc32(chunk, crc)
        if chunk:
            yield chunk
        if inflate is not None and inflate.eof:
            break
    if out != info.file_size or (inflate is not None and not inflate.eof):
        raise ValueError(f"{where} is truncated: it inflates to {out} of the {info.file_size} "
                         f"bytes its zip directory declares; {_TRY}")
    if crc != info.CRC:
        raise ValueError(f"{where} fails its CRC-32 check (a damaged file); {_TRY}")


class _Stream:
    """``read(n)`` over the chunks of :func:`_inflated` (n bounded by the caller)."""

    def __init__(self, chunks):
        self._chunks, self._buf = chunks, b""

    def read(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def readinto(self, raw: np.ndarray) -> int:
        """Fill the uint8 array ``raw``; the number of bytes filled."""
        pos = min(len(self._buf), raw.size)
        raw[:pos] = np.frombuffer(self._buf[:pos], np.uint8)
        self._buf = self._buf[pos:]
        while pos < raw.size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            take = min(len(chunk), raw.size - pos)
            raw[pos:pos + take] = np.frombuffer(chunk, np.uint8, take)
            self._buf, pos = chunk[take:], pos + take
        return pos

    def rest(self) -> int:
        """Bytes left (the stream read to its end, so its size and CRC are checked)."""
        return len(self._buf) + sum(len(c) for c in self._chunks)


def _header(stream: _Stream, where: str):
    """(header bytes, shape, fortran order, dtype) of an ``.npy`` stream, its length bounded."""
    fmt = np.lib.format
    magic = stream.read(len(fmt.MAGIC_PREFIX) + 2)
    if len(magic) < 8 or magic[:6] != fmt.MAGIC_PREFIX:
        raise ValueError(f"{where} is not an .npy array")
    version = (magic[6], magic[7])
    if version not in _FORMATS:
        raise ValueError(f"{where} has .npy format {version}")
    size_field = stream.read(struct.calcsize(_FORMATS[version]))
    if len(size_field) != struct.calcsize(_FORMATS[version]):
        raise ValueError(f"{where} is truncated in its .npy header")
    length = struct.unpack(_FORMATS[version], size_field)[0]
    if length > MAX_HEADER:
        raise ValueError(f"{where} has a .npy header of {length} bytes, more than the "
                         f"{MAX_HEADER} an array's header takes (a crafted file?); {_TRY}")
    text = stream.read(length)
    if len(text) != length:
        raise ValueError(f"{where} is truncated in its .npy header")
    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, fortran, dtype = read(io.BytesIO(size_field + text))
    return len(magic) + len(size_field) + length, tuple(shape), fortran, dtype


def members(path: Path, fh, limit: int, too_big) -> dict:
    """{name: :class:`Member`} of the ``.npz`` open as ``fh``: the directory's declared sizes
    (in all at most ``limit`` bytes, else ``too_big(what, nbytes)`` is raised) and each member's
    ``.npy`` header, read without inflating more than the header; no header's shape may need
    more bytes than its member declares (:func:`read_array` refuses one that holds more)."""
    with zipfile.ZipFile(fh) as zf:
        infos = zf.infolist()
    total = sum(info.file_size for info in infos)
    if total > limit:
        raise too_big(f"its arrays (declared {total} bytes uncompressed, "
                      f"{path.stat().st_size} bytes on disk)", total)
    out = {}
    for info in infos:
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        where = f"{path}: member {name!r}"
        if name in out:
            raise ValueError(f"{where} appears twice in the archive; {_TRY}")
        size, shape, fortran, dtype = _header(_Stream(_inflated(fh, info, where)), where)
        if dtype.hasobject:
            raise ValueError(f"{where} holds Python objects")
        member = Member(info, where, size, shape, dtype, fortran)
        if member.nbytes > info.file_size - size:
            raise ValueError(f"{where} declares shape {shape} ({member.nbytes} bytes) but holds "
                             f"{info.file_size - size} bytes")
        out[name] = member
    return out


def read_array(fh, member: Member) -> np.ndarray:
    """The array of ``member`` (checked by :func:`members`), inflated chunk by chunk into an
    array allocated once; the member read to its end (its size and CRC checked)."""
    stream = _Stream(_inflated(fh, member.info, member.where))
    stream.read(member.header_size)
    shape = member.shape[::-1] if member.fortran else member.shape
    array = np.empty(shape, member.dtype)
    got = stream.readinto(array.reshape(-1).view(np.uint8))
    if got != member.nbytes or stream.rest():
        raise ValueError(f"{member.where} does not hold the {member.nbytes} bytes of its shape "
                         f"{member.shape}; {_TRY}")
    return array.T if member.fortran else array
