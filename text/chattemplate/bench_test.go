package chattemplate

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkRenderRealTemplates renders each real chat template on a
// conversation of 20 turns with tools, reasoning and a tool call: the
// time of one pass over all of them.
func BenchmarkRenderRealTemplates(b *testing.B) {
	tmpls := loadRealTemplates(b)
	msgs := []Message{sys("You are a helpful assistant.")}
	for i := range 10 {
		q := fmt.Sprintf("question %d: %s", i, strings.Repeat("some words, été 中文, and more. ", 8))
		a := asst(fmt.Sprintf("answer %d: %s", i, strings.Repeat("more words in reply. ", 12)))
		a.ReasoningContent = sp(fmt.Sprintf("reasoning %d", i))
		msgs = append(msgs, user(q), a)
	}
	ctx := Context{Messages: msgs, Tools: []any{weatherTool, searchTool}, AddGenerationPrompt: true}
	var ok []*Template
	for _, rt := range tmpls {
		if _, err := rt.tmpl.Render(ctx); err == nil {
			ok = append(ok, rt.tmpl)
		}
	}
	if len(ok) < len(tmpls)/2 {
		b.Fatalf("only %d of %d templates render", len(ok), len(tmpls))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range ok {
			if _, err := t.Render(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}
