package tinker

import (
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdEncoder compresses protobuf forward bodies when the server's
// client/config asks (proto_compress_fwdbwd). EncodeAll is safe for
// concurrent use.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err) // only for invalid options
	}
	return enc
})

// compressZstd returns data as one zstd frame.
func compressZstd(data []byte) []byte {
	return zstdEncoder().EncodeAll(data, make([]byte, 0, len(data)/4+64))
}
