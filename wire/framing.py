"""Sans-IO framing: a 4-byte big-endian size followed by that many bytes."""
from __future__ import annotations

from josefk.wire import types as T
from josefk.wire.recscan import buffer


class FrameTooLarge(T.DecodeError):
    pass


class FrameReader:
    """Feed it bytes as they arrive; it hands back complete frames (without the size prefix).

    Reads land where `get_buffer` says (as asyncio's BufferedProtocol asks): in a small
    scratch buffer while size prefixes and small requests arrive (several per read), and once
    a frame's prefix is read and its body is incomplete, straight in that frame's own buffer,
    so a large request (a Produce) is copied once, by the read itself: never regrown, never
    sliced out. ``feed`` does the same for bytes read elsewhere. Frames are ``bytearray`` so
    the broker can patch record batches in place.
    """

    SCRATCH_SIZE = 16 * 1024

    __slots__ = ("max_size", "_scratch", "_start", "_end", "_need", "_frame", "_filled")

    def __init__(self, max_size: int = 100 * 1024 * 1024):
        self.max_size = max_size
        self._scratch = bytearray(self.SCRATCH_SIZE)
        self._start = self._end = 0  # bytes not yet parsed: _scratch[_start:_end]
        self._need = -1  # size of the frame whose body is incomplete, -1 while reading a prefix
        self._frame = None  # that frame's buffer, allocated when its body is first read into
        self._filled = 0

    def get_buffer(self) -> memoryview:
        """Where the next read should land (never empty)."""
        if self._need >= 0:
            if self._frame is None:
                self._start_frame()
            return memoryview(self._frame)[self._filled:]
        if self._start:  # less than a size prefix is left: move it to the front
            tail = self._end - self._start
            self._scratch[:tail] = self._scratch[self._start:self._end]
            self._start, self._end = 0, tail
        return memoryview(self._scratch)[self._end:]

    def buffer_updated(self, n: int) -> list:
        """``n`` bytes were read into the last `get_buffer`; returns the frames completed."""
        if self._frame is not None:
            self._filled += n
            if self._filled < len(self._frame):
                return []
            done, self._frame, self._need = self._frame, None, -1
            return [done]
        self._end += n
        frames = []
        buf, pos, end = self._scratch, self._start, self._end
        while end - pos >= 4:
            (size,) = T.i32.unpack_from(buf, pos)
            if size < 0 or size > self.max_size:
                raise FrameTooLarge(f"frame size {size} outside 0..{self.max_size}")
            pos += 4
            if end - pos < size:
                self._need = size
                break
            frames.append(buf[pos:pos + size])
            pos += size
        self._start = pos
        return frames

    def _start_frame(self):
        """Give the frame being received its own buffer, with what the scratch holds of it."""
        self._frame = buffer(self._need)  # not zeroed: the reads fill it whole
        have = self._end - self._start
        self._frame[:have] = memoryview(self._scratch)[self._start:self._end]
        self._filled = have
        self._start = self._end = 0

    def feed(self, data) -> list:
        frames = []
        data = memoryview(data)
        while data:
            buf = self.get_buffer()
            n = min(len(buf), len(data))
            buf[:n] = data[:n]
            frames += self.buffer_updated(n)
            data = data[n:]
        return frames

    @property
    def pending_size(self) -> int:
        """Declared size of the frame being received (its prefix is read, its body is not
        complete yet), else 0."""
        return max(self._need, 0)

    @property
    def buffered(self) -> int:
        """Bytes received that are not part of a frame handed out yet."""
        return self._end - self._start + (self._filled if self._frame is not None else 0)


def frame(chunks: list) -> list:
    """Prefix a list of buffers with their total size."""
    total = sum(map(len, chunks))
    return [T.i32.pack(total), *chunks]
