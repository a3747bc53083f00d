package tinkerapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/klauspost/compress/zstd"
)

// maxZstdWindow bounds the window a compressed body may ask the decoder
// for (zstd's default maximum is 8 MiB for a single frame of unknown
// size; the SDK's frames of one body are smaller).
const maxZstdWindow = 8 << 20

// decompressZstd decompresses a zstd body to at most limit bytes: the
// decoder's memory is bounded by its window and limit, so a small body
// that expands without end (a "zip bomb") is cut at limit and refused
// with 413 before more is allocated.
func decompressZstd(data []byte, limit int64, path string) ([]byte, *httpError) {
	dec, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, "zstd decoder: %v", err)
	}
	defer dec.Close()
	var out bytes.Buffer
	n, err := io.Copy(&out, io.LimitReader(dec, limit+1))
	switch {
	case n > limit:
		return nil, errorf(http.StatusRequestEntityTooLarge, "the decompressed request body is over the limit of %d bytes for %s", limit, path)
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded):
		return nil, errorf(http.StatusRequestEntityTooLarge, "the compressed request body asks for more memory than the limit of %d bytes for %s allows: %v", limit, path, err)
	case err != nil:
		return nil, errorf(http.StatusUnprocessableEntity, "failed to zstd-decompress the request body: %v", err)
	}
	return out.Bytes(), nil
}
