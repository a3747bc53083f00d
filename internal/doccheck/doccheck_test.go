package doccheck

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// A document is a file whose links are checked: its path relative to the
// module root and the lines that hold prose (all of a markdown file, the
// comments of a YAML file).
type document struct {
	rel      string
	markdown bool
	lines    []string // 1-based through line(i)
}

// moduleRoot walks up from the test's directory to the directory holding
// go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("doccheck: no go.mod above the test's directory")
		}
		dir = parent
	}
}

// documents lists README.md, docs/*.md and configs/*.yaml.
func documents(t *testing.T, root string) []document {
	t.Helper()
	var rels []string
	for _, pattern := range []string{"README.md", "docs/*.md", "configs/*.yaml", "configs/*.yml"} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(root, m)
			rels = append(rels, filepath.ToSlash(rel))
		}
	}
	sort.Strings(rels)
	var docs []document
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		d := document{rel: rel, markdown: strings.HasSuffix(rel, ".md")}
		d.lines = strings.Split(string(data), "\n")
		if !d.markdown {
			for i, l := range d.lines {
				d.lines[i] = yamlComment(l)
			}
		}
		docs = append(docs, d)
	}
	return docs
}

// yamlComment returns the comment of a YAML line ("" for a line without
// one). A # starts a comment at the start of the line or after a space,
// outside quotes.
func yamlComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			if i == 0 || line[i-1] == ' ' || line[i-1] == ':' || line[i-1] == '[' || line[i-1] == ',' {
				quote = r
			}
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[i+1:]
		}
	}
	return ""
}

var (
	// [text](target) and ![alt](target); the target ends at the first
	// space (a title may follow) or at the closing parenthesis.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// A path to a file of the repository written in prose or code: at
	// least one directory and a known extension (or README.md), and an
	// optional #anchor. A bare file name (types.py) may name another
	// project's file and is not checked.
	pathRef = regexp.MustCompile(`(?:^|[\s` + "`" + `'"(\[,;:=])((?:\.{1,2}/)?(?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\.(?:md|ya?ml|go|sh|py)|README\.md)(#[A-Za-z0-9_-]+)?`)
	// ATX headings.
	heading = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	// HTML anchors: <a name="x"> or id="x".
	htmlAnchor = regexp.MustCompile(`<a\s[^>]*(?:name|id)="([^"]+)"`)
	fence      = regexp.MustCompile("^\\s{0,3}(```|~~~)")
	// Web addresses, whose paths belong to other sites.
	webURL = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s)>\]]+`)
)

// placeholderRoots are first path segments that name what a user creates
// (run directories, downloaded models), not files of the repository.
var placeholderRoots = map[string]bool{
	"runs": true, "models": true, "RUN": true, "RUN_DIR": true, "DIR": true,
	"run": true, "my": true, "path": true, "HF_DIR": true,
}

// unshipped are top-level directories that a working copy may hold but
// the repository does not ship: a reference into one does not resolve for
// a user.
var unshipped = map[string]bool{"shared": true}

// shipped reports whether a root-relative path lies outside unshipped.
func shipped(resolved string) bool {
	first, _, _ := strings.Cut(resolved, "/")
	return !unshipped[first]
}

// problem is one reference that does not resolve.
type problem struct {
	where, ref, why string
}

func TestDocLinks(t *testing.T) {
	root := moduleRoot(t)
	docs := documents(t, root)
	if len(docs) < 3 {
		t.Fatalf("doccheck: found only %d documents under %s", len(docs), root)
	}
	anchors := map[string]map[string]bool{} // markdown file (root-relative) → its anchors
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(data))
		anchors[rel] = a
		return a, nil
	}

	var problems []problem
	links := 0
	for _, d := range docs {
		inFence := false
		for i, line := range d.lines {
			where := fmt.Sprintf("%s:%d", d.rel, i+1)
			if d.markdown && fence.MatchString(line) {
				inFence = !inFence
				// Fenced code is checked for paths below, not for links.
			}
			var targets []string
			if d.markdown && !inFence {
				prose := stripCodeSpans(line)
				for _, m := range inlineLink.FindAllStringSubmatch(prose, -1) {
					targets = append(targets, m[1])
				}
				if m := refLink.FindStringSubmatch(prose); m != nil {
					targets = append(targets, m[1])
				}
			}
			for _, target := range targets {
				links++
				if why := checkLink(root, d.rel, target, anchorsOf); why != "" {
					problems = append(problems, problem{where, target, why})
				}
			}
			// Paths mentioned in prose, code spans, code blocks and YAML
			// comments: each must name a file of the repository, relative
			// to the module root or to the document's directory.
			for _, m := range pathRef.FindAllStringSubmatch(webURL.ReplaceAllString(line, " "), -1) {
				p, frag := m[1], strings.TrimPrefix(m[2], "#")
				if isLinkTarget(line, p) {
					continue // checked above, relative to the document only
				}
				first, _, _ := strings.Cut(strings.TrimPrefix(p, "./"), "/")
				if placeholderRoots[first] {
					continue
				}
				links++
				if why := checkPath(root, d.rel, p, frag, anchorsOf); why != "" {
					problems = append(problems, problem{where, m[1] + m[2], why})
				}
			}
		}
	}
	for _, p := range problems {
		t.Errorf("%s: %s: %s", p.where, p.ref, p.why)
	}
	t.Logf("checked %d links and path references in %d documents", links, len(docs))
}

// isLinkTarget reports whether p appears in line as the target of a
// markdown link.
func isLinkTarget(line, p string) bool {
	return strings.Contains(line, "]("+p) || strings.Contains(line, "](<"+p)
}

// checkLink resolves a markdown link target found in the document rel and
// returns why it does not resolve ("" when it does).
func checkLink(root, rel, target string, anchorsOf func(string) (map[string]bool, error)) string {
	if i := strings.Index(target, ":"); i > 0 && !strings.ContainsAny(target[:i], "/#.") {
		return "" // a scheme: http:, https:, mailto: are not fetched
	}
	path, frag, _ := strings.Cut(target, "#")
	if path == "" { // #anchor in the same document
		if !strings.HasSuffix(rel, ".md") {
			return ""
		}
		return checkAnchor(rel, frag, anchorsOf)
	}
	if strings.HasPrefix(path, "/") {
		return "absolute path: links must be relative to the document"
	}
	resolved := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(rel), path)))
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return "points outside the repository"
	}
	if !shipped(resolved) {
		return resolved + " is not shipped with the repository"
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(resolved))); err != nil {
		return fmt.Sprintf("%s does not exist", resolved)
	}
	if frag != "" && strings.HasSuffix(resolved, ".md") {
		return checkAnchor(resolved, frag, anchorsOf)
	}
	return ""
}

// checkPath resolves a path mentioned in the document rel, relative to
// the module root or to the document's directory.
func checkPath(root, rel, p, frag string, anchorsOf func(string) (map[string]bool, error)) string {
	for _, base := range []string{".", filepath.Dir(rel)} {
		resolved := filepath.ToSlash(filepath.Clean(filepath.Join(base, p)))
		if resolved == ".." || strings.HasPrefix(resolved, "../") || !shipped(resolved) {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(resolved))); err == nil {
			if frag != "" && strings.HasSuffix(resolved, ".md") {
				return checkAnchor(resolved, frag, anchorsOf)
			}
			return ""
		}
	}
	return "no such file in the repository"
}

func checkAnchor(rel, frag string, anchorsOf func(string) (map[string]bool, error)) string {
	a, err := anchorsOf(rel)
	if err != nil {
		return err.Error()
	}
	if !a[strings.ToLower(frag)] {
		return fmt.Sprintf("%s has no heading with the anchor #%s", rel, frag)
	}
	return ""
}

// stripCodeSpans blanks the inline code spans of a markdown line, whose
// brackets are not links.
func stripCodeSpans(line string) string {
	var b strings.Builder
	in := false
	for _, r := range line {
		if r == '`' {
			in = !in
			b.WriteRune(r)
			continue
		}
		if in {
			b.WriteRune(' ')
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives the headings of a
// markdown document (and its explicit HTML anchors).
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(strings.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[strings.ToLower(m[1])] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	}
	return anchors
}

var (
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
	emphasis   = regexp.MustCompile(`(\*{1,3}|_{2,3})([^*_]+)(\*{1,3}|_{2,3})`)
	codeTicked = regexp.MustCompile("`+")
)

// slug is GitHub's anchor for a heading: the heading's text (links,
// emphasis, code marks and HTML tags removed), lower-cased, every
// character but letters, digits, marks, '_', '-' and spaces dropped, and
// spaces turned into hyphens.
func slug(text string) string {
	text = mdLink.ReplaceAllString(text, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	text = emphasis.ReplaceAllString(text, "$2")
	text = codeTicked.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_', unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Turn-level credit", "turn-level-credit"},
		{"Checking any model: `trainer eval`", "checking-any-model-trainer-eval"},
		{"Filtering (150 steps, 3 seeds)", "filtering-150-steps-3-seeds"},
		{"When filtering helps: FrozenLake slip rates (150 steps, 3 seeds)", "when-filtering-helps-frozenlake-slip-rates-150-steps-3-seeds"},
		{"**Bold** and [a link](x.md)", "bold-and-a-link"},
		{"snake_case and 1.5×", "snake_case-and-15"},
		{"Environments over the wire (OpenEnv)", "environments-over-the-wire-openenv"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
	a := headingAnchors("# Title\n## Setup\n```\n# not a heading\n```\n### Setup\n")
	for _, want := range []string{"title", "setup", "setup-1"} {
		if !a[want] {
			t.Errorf("headingAnchors: missing %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Errorf("headingAnchors: a comment in a code block counted as a heading")
	}
}

func TestCheckerCatchesBrokenReferences(t *testing.T) {
	root := moduleRoot(t)
	anchorsOf := func(rel string) (map[string]bool, error) {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		return headingAnchors(string(data)), nil
	}
	for _, c := range []struct {
		target string
		ok     bool
	}{
		{"training.md", true},
		{"training.md#turn-level-credit", true},
		{"training.md#no-such-section", false},
		{"no-such-file.md", false},
		{"../../shared/DESIGN.md", false},
		{"../configs/sokoban.yaml", true},
		{"https://example.com/x.md", true},
	} {
		why := checkLink(root, "docs/x.md", c.target, anchorsOf)
		if (why == "") != c.ok {
			t.Errorf("checkLink(docs/x.md, %q) = %q, want ok %v", c.target, why, c.ok)
		}
	}
	if why := checkPath(root, "configs/x.yaml", "reference/serving.md", "", anchorsOf); why == "" {
		t.Errorf("checkPath accepted a path to a file the repository does not ship")
	}
	if why := checkPath(root, "configs/x.yaml", "shared/DESIGN.md", "", anchorsOf); why == "" {
		t.Errorf("checkPath accepted a path into shared/, which is not shipped")
	}
	if why := checkPath(root, "configs/x.yaml", "docs/training.md", "lora-adapters", anchorsOf); why != "" {
		t.Errorf("checkPath(docs/training.md#lora-adapters) = %q", why)
	}
	if got := yamlComment(`  url: "a # b"  # the comment`); got != " the comment" {
		t.Errorf("yamlComment = %q", got)
	}
}
