package tfevents

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestMaskedCRCKnownValue(t *testing.T) {
	// CRC-32C("123456789") = 0xe3069283; masked per TFRecord.
	c := uint32(0xe3069283)
	want := ((c >> 15) | (c << 17)) + 0xa282ead8
	if got := maskedCRC([]byte("123456789")); got != want {
		t.Errorf("maskedCRC = %#x, want %#x", got, want)
	}
}

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Scalars(3, map[string]float64{"train/success": 0.25, "actor/entropy": 1.5}); err != nil {
		t.Fatal(err)
	}
	if err := w.Scalars(4, map[string]float64{"train/success": 0.5}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	data, _ := os.ReadFile(files[0])
	events, err := ReadAll(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || events[0].Version != "brain.Event:2" {
		t.Fatalf("events %+v", events)
	}
	if events[1].Step != 3 || events[1].Scalars["train/success"] != 0.25 || events[1].Scalars["actor/entropy"] != 1.5 {
		t.Errorf("event 1 = %+v", events[1])
	}
	if events[2].Step != 4 || events[2].Scalars["train/success"] != 0.5 {
		t.Errorf("event 2 = %+v", events[2])
	}
	// A flipped byte is caught by the checksum.
	data[len(data)-6] ^= 0xff
	if _, err := ReadAll(bytes.NewReader(data)); err == nil {
		t.Error("corruption not detected")
	}
	if _, err := ReadAll(bytes.NewReader(data[:len(data)-3])); err == nil {
		t.Error("truncation not detected")
	}
}
