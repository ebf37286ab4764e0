package schemadiff

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"github.com/toolgate/toolgate/internal/junit"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func loadContract(t *testing.T, name string) Contract {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "contracts", name))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseContract(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./schemadiff -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestFormats renders reports in every format and compares them with golden files.
func TestFormats(t *testing.T) {
	t.Parallel()
	reports := []struct {
		name   string
		report func(t *testing.T) Report
	}{
		{"breaking_contract", func(t *testing.T) Report {
			return Diff(loadContract(t, "v2.1.0.json"), loadContract(t, "v2.2.0.json"), Options{Consumers: 2})
		}},
		{"compatible_contract", func(t *testing.T) Report {
			return Diff(loadContract(t, "v2.2.0.json"), loadContract(t, "v2.3.0.json"), Options{Consumers: 2})
		}},
		{"output_schema", func(t *testing.T) Report {
			return DiffSchemas(mustJSON(t, `{"type":"object","properties":{"q":{"type":"string","maxLength":200},"n":{"type":"integer"}}}`),
				mustJSON(t, `{"type":"object","properties":{"q":{"type":"string","maxLength":100},"n":{"type":"number"},"c|d":{"type":"string"}}}`), Output, Options{})
		}},
		{"no_changes", func(t *testing.T) Report {
			return Diff(loadContract(t, "v2.1.0.json"), loadContract(t, "v2.1.0.json"), Options{})
		}},
	}
	for _, rc := range reports {
		for _, format := range Formats {
			t.Run(rc.name+"/"+format, func(t *testing.T) {
				t.Parallel()
				r := rc.report(t)
				var buf bytes.Buffer
				if err := Write(&buf, r, format); err != nil {
					t.Fatal(err)
				}
				switch format {
				case "json":
					var back map[string]any
					if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
						t.Fatal(err)
					}
					for _, k := range []string{"changes", "tier", "required_bump", "declared_bump", "bump_ok"} {
						if _, ok := back[k]; !ok || len(back) != 5 {
							t.Fatalf("JSON keys = %v, want exactly changes, tier, required_bump, declared_bump, bump_ok", back)
						}
					}
				case "junit":
					var s junit.Suite
					if err := xml.Unmarshal(buf.Bytes(), &s); err != nil {
						t.Fatal(err)
					}
					if (s.Failures == 0) != r.BumpOK {
						t.Fatalf("junit failures = %d with bump_ok %t", s.Failures, r.BumpOK)
					}
				}
				golden(t, rc.name+"."+format, buf.Bytes())
			})
		}
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	t.Parallel()
	if err := Write(&bytes.Buffer{}, Report{}, "yaml"); err == nil {
		t.Fatal("want an error for an unknown format")
	}
}
