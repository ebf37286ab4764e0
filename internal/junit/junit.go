// Package junit is the JUnit XML every report command writes with --format
// junit (test, gate, diff, replay, lint, check, validate, lock): one schema,
// so a CI reads them all the same way.
package junit

import (
	"encoding/xml"
	"io"
)

// Suites is a <testsuites> document of several suites.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Skipped  int      `xml:"skipped,attr,omitempty"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one <testsuite>; written alone, it is a document of its own.
type Suite struct {
	XMLName   xml.Name `xml:"testsuite"`
	Name      string   `xml:"name,attr"`
	Tests     int      `xml:"tests,attr"`
	Failures  int      `xml:"failures,attr"`
	Skipped   int      `xml:"skipped,attr,omitempty"`
	Cases     []Case   `xml:"testcase"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Case is one <testcase>: it passes unless it has failures or is skipped.
type Case struct {
	Name      string    `xml:"name,attr"`
	ClassName string    `xml:"classname,attr"`
	File      string    `xml:"file,attr,omitempty"`
	Line      int       `xml:"line,attr,omitempty"`
	Failures  []Failure `xml:"failure"`
	Skipped   *Skipped  `xml:"skipped,omitempty"`
	SystemOut string    `xml:"system-out,omitempty"`
}

// Failure is one <failure> of a case.
type Failure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Skipped marks a case that was not run, with why.
type Skipped struct {
	Message string `xml:"message,attr"`
}

// Write writes doc (a Suites or a Suite) as an indented XML document
// ending in a newline.
func Write(w io.Writer, doc any) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
