package tokenizer_test

import (
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/text/tokenizer"
)

// Example trains a small vocabulary on Sokoban-like text, renders a
// conversation with the chat template and reads back the assistant mask and
// the think span.
func Example() {
	var corpus []string
	for i := range 50 {
		corpus = append(corpus,
			"Turn 1:\nState:\n######\n#_O_√#\n#_X_P#\n######\nYou have 10 actions left.",
			fmt.Sprintf("<think>The box is at (2, %d).</think><answer>Up || Left</answer>", i%4+1),
		)
	}
	tok, err := tokenizer.Train(corpus, 320, tokenizer.TrainOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	msgs := []tokenizer.Message{
		{Role: tokenizer.RoleUser, Content: "State:\n#_O√X#\n#P__S#"},
		{Role: tokenizer.RoleAssistant, Content: "<think>The box is at (2, 3).</think><answer>Up || Left</answer>"},
	}
	r, err := tok.RenderTraining(msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	text, _ := tok.Decode(r.IDs)
	fmt.Println(text)

	var pieces []string
	start, end := r.Messages[0].Content()
	for _, id := range r.IDs[start:end] {
		b, _ := tok.TokenBytes(id)
		pieces = append(pieces, fmt.Sprintf("%q", b))
	}
	fmt.Println("user content:", strings.Join(pieces, " "))

	masked := 0
	for _, m := range r.AssistantMask {
		if m {
			masked++
		}
	}
	fmt.Printf("%d ids, %d in the loss mask\n", len(r.IDs), masked)
	s, e := r.Think[0].Inner()
	thought, _ := tok.Decode(r.IDs[s:e])
	fmt.Printf("think: %q\n", thought)
	// Output:
	// <|bos|><|user|>State:
	// #_O√X#
	// #P__S#<|end|><|assistant|><think>The box is at (2, 3).</think><answer>Up || Left</answer><|end|>
	// user content: "State" ":" "\n" "#" "_" "O" "√" "X" "#" "\n" "#" "P" "_" "_" "S" "#"
	// 37 ids, 17 in the loss mask
	// think: "The box is at (2, 3)."
}
