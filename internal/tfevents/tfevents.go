// Package tfevents writes TensorBoard event files (scalars only) without a
// protobuf or TensorFlow dependency: each record is a TFRecord frame around a
// hand-encoded tensorflow.Event message.
//
// TFRecord frame: uint64 length, uint32 masked CRC-32C of the length, the
// data, uint32 masked CRC-32C of the data, all little-endian.
// Event: wall_time (field 1, double), step (field 2, int64), file_version
// (field 3, string) or summary (field 5, message); Summary.value (field 1,
// repeated) with tag (field 1, string) and simple_value (field 2, float).
package tfevents

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's CRC-32C with its rotation and offset.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, crcTable)
	return ((c >> 15) | (c << 17)) + 0xa282ead8
}

// Writer appends scalar summaries to one event file.
type Writer struct {
	f   *os.File
	w   *bufio.Writer
	now func() time.Time
}

// filePrefix starts the name of every event file (TensorBoard reads any
// file whose name contains "tfevents").
const filePrefix = "events.out.tfevents."

// Create starts a new event file in dir, named as TensorBoard expects.
func Create(dir string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return create(filepath.Join(dir, newName()))
}

func newName() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s%d.%s.%d", filePrefix, time.Now().Unix(), host, os.Getpid())
}

func create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f, w: bufio.NewWriter(f), now: time.Now}
	if err := w.record(versionEvent(w.wallTime())); err != nil {
		f.Close()
		return nil, err
	}
	return w, w.w.Flush()
}

func versionEvent(wall float64) []byte {
	ev := appendDouble(nil, 1, wall)
	return appendBytes(ev, 3, []byte("brain.Event:2"))
}

// Resume continues the event files of dir after a run restarted from step
// maxStep: it merges every event file of dir into one, keeping the events
// of steps ≤ maxStep (maxStep < 0 keeps none) once each, in step order,
// with their original wall times, and returns a Writer that appends to
// it. A torn record at the end of a file (a process killed mid-write) and
// everything after it are dropped. The merged file replaces the first
// existing file atomically (write, fsync, rename) before the others are
// removed, so a crash midway leaves files that the next Resume merges the
// same way.
func Resume(dir string, maxStep int64) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), filePrefix) {
			files = append(files, e.Name())
		}
	}
	if len(files) == 0 {
		return Create(dir)
	}
	sort.Strings(files)
	var version []byte
	byStep := map[int64][]byte{}
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		for _, rec := range readRecords(data) {
			ev, err := decodeEvent(rec)
			if err != nil {
				break
			}
			switch {
			case ev.Version != "":
				if version == nil {
					version = rec
				}
			case ev.Step <= maxStep:
				if _, dup := byStep[ev.Step]; !dup {
					byStep[ev.Step] = rec
				}
			}
		}
	}
	steps := make([]int64, 0, len(byStep))
	for st := range byStep {
		steps = append(steps, st)
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })

	target := filepath.Join(dir, files[0])
	tmp, err := os.CreateTemp(dir, ".tmp-events-")
	if err != nil {
		return nil, err
	}
	w := &Writer{f: tmp, w: bufio.NewWriter(tmp), now: time.Now}
	if version == nil {
		version = versionEvent(w.wallTime())
	}
	err = w.record(version)
	for _, st := range steps {
		if err == nil {
			err = w.record(byStep[st])
		}
	}
	if err == nil {
		err = w.w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), target)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	for _, name := range files[1:] {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f, w: bufio.NewWriter(f), now: time.Now}, nil
}

// readRecords returns the data of every intact record of a file, stopping
// at the first torn or corrupt one.
func readRecords(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 12 {
		if maskedCRC(b[:8]) != binary.LittleEndian.Uint32(b[8:12]) {
			break
		}
		n := binary.LittleEndian.Uint64(b[:8])
		if n > uint64(len(b)-12) || uint64(len(b)-12)-n < 4 {
			break
		}
		data := b[12 : 12+n]
		if maskedCRC(data) != binary.LittleEndian.Uint32(b[12+n:16+n]) {
			break
		}
		out = append(out, data)
		b = b[16+n:]
	}
	return out
}

func (w *Writer) wallTime() float64 {
	return float64(w.now().UnixNano()) / 1e9
}

// Scalars writes one event holding every scalar in values at step, in tag
// order. NaN and Inf values are written as they are; TensorBoard shows them.
func (w *Writer) Scalars(step int64, values map[string]float64) error {
	tags := make([]string, 0, len(values))
	for t := range values {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	var summary []byte
	for _, tag := range tags {
		v := appendBytes(nil, 1, []byte(tag))
		v = appendFloat(v, 2, float32(values[tag]))
		summary = appendBytes(summary, 1, v)
	}
	ev := appendDouble(nil, 1, w.wallTime())
	ev = appendVarintField(ev, 2, uint64(step))
	ev = appendBytes(ev, 5, summary)
	if err := w.record(ev); err != nil {
		return err
	}
	return w.w.Flush()
}

// Close flushes and closes the file.
func (w *Writer) Close() error {
	if err := w.w.Flush(); err != nil {
		w.f.Close()
		return err
	}
	return w.f.Close()
}

func (w *Writer) record(data []byte) error {
	var hdr [12]byte
	binary.LittleEndian.PutUint64(hdr[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(hdr[8:], maskedCRC(hdr[:8]))
	var foot [4]byte
	binary.LittleEndian.PutUint32(foot[:], maskedCRC(data))
	for _, b := range [][]byte{hdr[:], data, foot[:]} {
		if _, err := w.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendVarintField(b []byte, field int, v uint64) []byte {
	return appendVarint(appendVarint(b, uint64(field)<<3), v)
}

func appendBytes(b []byte, field int, data []byte) []byte {
	b = appendVarint(b, uint64(field)<<3|2)
	b = appendVarint(b, uint64(len(data)))
	return append(b, data...)
}

func appendDouble(b []byte, field int, v float64) []byte {
	b = appendVarint(b, uint64(field)<<3|1)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func appendFloat(b []byte, field int, v float32) []byte {
	b = appendVarint(b, uint64(field)<<3|5)
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}

// Event is a decoded scalar event, for tests and tools.
type Event struct {
	WallTime float64
	Step     int64
	Version  string
	Scalars  map[string]float32
}

// ReadAll decodes every record of an event file written by Writer,
// verifying both checksums of every frame.
func ReadAll(r io.Reader) ([]Event, error) {
	br := bufio.NewReader(r)
	var events []Event
	for {
		var hdr [12]byte
		if _, err := io.ReadFull(br, hdr[:]); err == io.EOF {
			return events, nil
		} else if err != nil {
			return events, fmt.Errorf("tfevents: truncated record header: %w", err)
		}
		if maskedCRC(hdr[:8]) != binary.LittleEndian.Uint32(hdr[8:]) {
			return events, fmt.Errorf("tfevents: record %d: length checksum mismatch", len(events))
		}
		n := binary.LittleEndian.Uint64(hdr[:8])
		if n > 64<<20 {
			return events, fmt.Errorf("tfevents: record %d: implausible length %d", len(events), n)
		}
		data := make([]byte, n+4)
		if _, err := io.ReadFull(br, data); err != nil {
			return events, fmt.Errorf("tfevents: truncated record %d: %w", len(events), err)
		}
		if maskedCRC(data[:n]) != binary.LittleEndian.Uint32(data[n:]) {
			return events, fmt.Errorf("tfevents: record %d: data checksum mismatch", len(events))
		}
		ev, err := decodeEvent(data[:n])
		if err != nil {
			return events, fmt.Errorf("tfevents: record %d: %w", len(events), err)
		}
		events = append(events, ev)
	}
}

// fields iterates over the protobuf fields of b.
func fields(b []byte, fn func(field int, wire int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("bad field key")
		}
		b = b[n:]
		field, wire := int(key>>3), int(key&7)
		switch wire {
		case 0:
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return fmt.Errorf("bad varint")
			}
			b = b[n:]
			if err := fn(field, wire, v, nil); err != nil {
				return err
			}
		case 1:
			if len(b) < 8 {
				return fmt.Errorf("short fixed64")
			}
			if err := fn(field, wire, binary.LittleEndian.Uint64(b), nil); err != nil {
				return err
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return fmt.Errorf("short fixed32")
			}
			if err := fn(field, wire, uint64(binary.LittleEndian.Uint32(b)), nil); err != nil {
				return err
			}
			b = b[4:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return fmt.Errorf("bad length-delimited field")
			}
			if err := fn(field, wire, 0, b[n:n+int(l)]); err != nil {
				return err
			}
			b = b[n+int(l):]
		default:
			return fmt.Errorf("unsupported wire type %d", wire)
		}
	}
	return nil
}

func decodeEvent(b []byte) (Event, error) {
	ev := Event{}
	err := fields(b, func(field, wire int, v uint64, data []byte) error {
		switch field {
		case 1:
			ev.WallTime = math.Float64frombits(v)
		case 2:
			ev.Step = int64(v)
		case 3:
			ev.Version = string(data)
		case 5:
			ev.Scalars = map[string]float32{}
			return fields(data, func(field, wire int, _ uint64, value []byte) error {
				if field != 1 {
					return nil
				}
				var tag string
				var val float32
				err := fields(value, func(field, wire int, v uint64, data []byte) error {
					switch field {
					case 1:
						tag = string(data)
					case 2:
						val = math.Float32frombits(uint32(v))
					}
					return nil
				})
				ev.Scalars[tag] = val
				return err
			})
		}
		return nil
	})
	return ev, err
}
