package sluice_test

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadmeSnippetsCompile: every Go block of README.md is compiled code.
// The complete program is examples/quickstart/main.go less its doc
// comment; every other block is in readme_example_test.go, line for line
// (indentation aside), so that a snippet that does not compile fails here.
func TestReadmeSnippetsCompile(t *testing.T) {
	readme := read(t, "README.md")
	compiled := lines(read(t, "readme_example_test.go"))
	program := read(t, "examples/quickstart/main.go")
	program = program[strings.Index(program, "package main"):]
	blocks := goBlocks(readme)
	if len(blocks) < 3 {
		t.Fatalf("README.md has %d Go blocks; expected the program and at least two snippets", len(blocks))
	}
	for i, b := range blocks {
		if strings.HasPrefix(b, "package main") {
			if b != program {
				t.Errorf("README's program (block %d) differs from examples/quickstart/main.go", i)
			}
			continue
		}
		if !contains(compiled, lines(b)) {
			t.Errorf("README's Go block %d is not in readme_example_test.go:\n%s", i, b)
		}
	}
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goBlocks returns the contents of the ```go fences of a Markdown text.
func goBlocks(md string) []string {
	var blocks []string
	rest := md
	for {
		i := strings.Index(rest, "```go\n")
		if i < 0 {
			return blocks
		}
		rest = rest[i+len("```go\n"):]
		j := strings.Index(rest, "```")
		blocks = append(blocks, rest[:j])
		rest = rest[j+3:]
	}
}

// lines splits s into lines without their leading and trailing blanks,
// dropping empty ones.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// contains reports whether want occurs in have as a run of lines.
func contains(have, want []string) bool {
	for i := 0; i+len(want) <= len(have); i++ {
		match := true
		for j := range want {
			if have[i+j] != want[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
