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

func TestResumeMergesTrimsAndAppends(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, steps []int64, torn bool) {
		w, err := create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range steps {
			if err := w.Scalars(st, map[string]float64{"x": float64(st)}); err != nil {
				t.Fatal(err)
			}
		}
		if torn { // half a record, as a process killed mid-write leaves
			w.w.Write([]byte{9, 0, 0, 0, 0, 0, 0, 0, 1, 2})
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A first run reached step 5, its resumed run wrote 3..8 again and died.
	write(filePrefix+"1.a", []int64{0, 1, 2, 3, 4, 5}, false)
	write(filePrefix+"2.a", []int64{3, 4, 5, 6, 7, 8}, true)
	w, err := Resume(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Scalars(5, map[string]float64{"x": 50}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != filePrefix+"1.a" {
		t.Fatalf("files after Resume: %v", entries)
	}
	f, _ := os.Open(filepath.Join(dir, entries[0].Name()))
	defer f.Close()
	evs, err := ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 7 || evs[0].Version == "" {
		t.Fatalf("%d events (want the version and steps 0..5): %+v", len(evs), evs)
	}
	for i, ev := range evs[1:] {
		want := float32(i)
		if i == 5 {
			want = 50
		}
		if ev.Step != int64(i) || ev.Scalars["x"] != want {
			t.Errorf("event %d: step %d x %v", i, ev.Step, ev.Scalars["x"])
		}
	}
	// A new run (maxStep -1) keeps nothing but the version record.
	w, err = Resume(dir, -1)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	f2, _ := os.Open(filepath.Join(dir, entries[0].Name()))
	defer f2.Close()
	if evs, _ := ReadAll(f2); len(evs) != 1 {
		t.Errorf("after Resume(-1): %d events", len(evs))
	}
}
