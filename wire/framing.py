"""Sans-IO framing: a 4-byte big-endian size followed by that many bytes."""
from __future__ import annotations

from wire import types as T


class FrameTooLarge(T.DecodeError):
    pass


class FrameReader:
    """Feed it bytes as they arrive; it hands back complete frames (without the size prefix).

    Frames are ``bytearray`` so the broker can patch record batches in place.
    """

    __slots__ = ("max_size", "_buf", "_need")

    def __init__(self, max_size: int = 100 * 1024 * 1024):
        self.max_size = max_size
        self._buf = bytearray()
        self._need = -1  # size of the frame being assembled, -1 while reading the prefix

    def feed(self, data) -> list:
        buf = self._buf
        buf += data
        frames = []
        pos = 0
        n = len(buf)
        while True:
            if self._need < 0:
                if n - pos < 4:
                    break
                (size,) = T.i32.unpack_from(buf, pos)
                if size < 0 or size > self.max_size:
                    raise FrameTooLarge(f"frame size {size} outside 0..{self.max_size}")
                self._need = size
                pos += 4
            if n - pos < self._need:
                break
            frames.append(buf[pos:pos + self._need])
            pos += self._need
            self._need = -1
        if pos:
            del buf[:pos]
        return frames

    @property
    def pending_size(self) -> int:
        """Declared size of the frame being received (its prefix is read, its body is not
        complete yet), else 0."""
        return max(self._need, 0)

    @property
    def buffered(self) -> int:
        return len(self._buf)


def frame(chunks: list) -> list:
    """Prefix a list of buffers with their total size."""
    total = sum(len(c) for c in chunks)
    return [T.i32.pack(total), *chunks]
