package view

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"text/template"
)

// assets are the page's files: its HTML template, styles and scripts.
//
//go:embed assets
var assets embed.FS

// scripts are the page's scripts, in the order they load.
var scripts = []string{"core.js", "chart.js", "curves.js", "transcripts.js", "collapse.js", "summary.js", "main.js"}

var pageTemplate = template.Must(template.ParseFS(assets, "assets/index.html"))

// script is one script of the page, by name or inlined.
type script struct {
	Name   string
	Source string
}

// pageData fills the page template: linked assets for the server, the
// assets and the data inlined for an export.
type pageData struct {
	Title   string
	Inline  bool
	CSS     string
	Scripts []script
	// Data is the JSON of an export's replies (see Export).
	Data string
}

// renderPage writes the page; with inline, its assets and data are in it.
func renderPage(title string, inline bool, data []byte) ([]byte, error) {
	p := pageData{Title: title, Inline: inline, Data: string(data)}
	if inline {
		css, err := assets.ReadFile("assets/view.css")
		if err != nil {
			return nil, err
		}
		p.CSS = string(css)
	}
	for _, name := range scripts {
		sc := script{Name: name}
		if inline {
			src, err := assets.ReadFile("assets/" + name)
			if err != nil {
				return nil, err
			}
			sc.Source = string(src)
		}
		p.Scripts = append(p.Scripts, sc)
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return nil, fmt.Errorf("view page: %w", err)
	}
	return b.Bytes(), nil
}

func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	page, err := renderPage("agentrl view", false, nil)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page)
}

// static serves the page's styles and scripts.
var static = func() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err)
	}
	return http.FileServerFS(sub)
}()

func (s *Server) handleStatic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	static.ServeHTTP(w, r)
}
