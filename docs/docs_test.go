package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxReadmeLines keeps the README a first page: the reference lives here.
const maxReadmeLines = 150

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpanRE   = regexp.MustCompile("`[^`]*`")
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	slugDropRE   = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	externalLink = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

// slug is the anchor GitHub gives a heading: lower case, code spans'
// backticks and other punctuation dropped, spaces as hyphens.
func slug(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = slugDropRE.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// page is one Markdown file: its relative link targets and its anchors.
type page struct {
	links   []string
	anchors []string
}

// parse reads the links and headings of Markdown text, outside fenced
// and indented code blocks and code spans.
func parse(text string) page {
	var p page
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			a := slug(m[1])
			if n := seen[a]; n > 0 {
				a = fmt.Sprintf("%s-%d", a, n)
			}
			seen[slug(m[1])]++
			p.anchors = append(p.anchors, a)
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(line, ""), -1) {
			if !externalLink.MatchString(m[1]) {
				p.links = append(p.links, m[1])
			}
		}
	}
	return p
}

// broken lists the links of the file at path (relative to root) that do
// not resolve: a missing file, or an anchor no heading of the target has.
func broken(root, path string) ([]string, error) {
	text, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	var bad []string
	for _, link := range parse(string(text)).links {
		target, anchor, _ := strings.Cut(link, "#")
		file := path
		if target != "" {
			file = filepath.Join(filepath.Dir(path), target)
		}
		if _, err := os.Stat(filepath.Join(root, file)); err != nil {
			bad = append(bad, link+": no such file")
			continue
		}
		if anchor == "" {
			continue
		}
		if !strings.HasSuffix(file, ".md") {
			bad = append(bad, link+": an anchor into a file that is not Markdown")
			continue
		}
		tt, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return nil, err
		}
		if !slices.Contains(parse(string(tt)).anchors, anchor) {
			bad = append(bad, link+": no heading #"+anchor+" in "+file)
		}
	}
	return bad, nil
}

func TestLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no pages in docs/")
	}
	files := []string{"README.md"}
	for _, p := range pages {
		files = append(files, filepath.Join("docs", p))
	}
	for _, f := range files {
		bad, err := broken("..", f)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bad {
			t.Errorf("%s: %s", f, b)
		}
	}
}

func TestReadmeIsAFirstPage(t *testing.T) {
	text, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page in docs/", n, maxReadmeLines)
	}
	links := parse(string(text)).links
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if !slices.ContainsFunc(links, func(l string) bool { return strings.HasPrefix(l, "docs/"+p) }) {
			t.Errorf("docs/%s is not linked from README.md", p)
		}
	}
}

func TestBrokenFindsBadLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.md", "# Title\n\n## The `kernelet run` flags\n\n## Twice\n\n## Twice\n")
	write("a.md", "[ok](b.md) [ok](b.md#the-kernelet-run-flags) [ok](b.md#twice-1) [ok](#here) "+
		"[ok](https://example.com/x) `[code](nowhere.md)`\n\n## Here\n\n    [indented](nowhere.md)\n"+
		"[gone](c.md) [no anchor](b.md#nothere) [self](#nothere)\n")
	bad, err := broken(root, "a.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"c.md: no such file", "b.md#nothere: no heading #nothere in b.md", "#nothere: no heading #nothere in a.md"}
	if !slices.Equal(bad, want) {
		t.Errorf("broken:\n got %q\nwant %q", bad, want)
	}
}
